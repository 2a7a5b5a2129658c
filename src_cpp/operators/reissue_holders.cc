#include "operators/reissue_holders.h"

#include <algorithm>
#include <string>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"

namespace cq {

ReissueHolders::ReissueHolders(const Schema& input, BatchKind kind, HolderTable* holders)
    : schema_(input), kind_(kind), holders_(holders) {}

void ReissueHolders::Push(int, const Batch& batch, Emitter& out) {
  if (batch.num_rows() == 0) return;
  if (batch.holders.empty()) {  // every end known: nothing to tell apart
    out.Forward(batch);
    return;
  }
  Batch b = batch.Compact();
  const HolderId* in = b.holders.as<const HolderId>();
  int64_t pending = 0;
  for (int64_t i = 0; i < b.length; ++i) pending += in[i] != kNoHolder;
  std::vector<HolderId> fresh(static_cast<size_t>(pending));
  holders_->Allocate(pending, fresh.data());
  Buffer ids = Buffer::Allocate(b.length * static_cast<int64_t>(sizeof(HolderId)));
  HolderId* h = ids.as<HolderId>();
  int64_t k = 0;
  for (int64_t i = 0; i < b.length; ++i) {
    if (in[i] == kNoHolder) {
      h[i] = kNoHolder;
      continue;
    }
    h[i] = fresh[static_cast<size_t>(k++)];
    const bool added = issued_.emplace(in[i], h[i]).second;
    CQ_CHECK(added, "expiration holder " + std::to_string(in[i]) + " reached a reissue twice");
  }
  b.holders = ids;
  out.Emit(std::move(b));
}

void ReissueHolders::PushEnds(int, const EndBatch& ends, Emitter& out) {
  std::vector<uint32_t> rows;
  std::vector<HolderId> mine;
  for (int64_t k = 0; k < ends.length; ++k) {
    auto it = issued_.find(ends.ids()[k]);
    if (it == issued_.end()) continue;  // a tuple that never came this way
    rows.push_back(static_cast<uint32_t>(k));
    mine.push_back(it->second);
    issued_.erase(it);
  }
  if (mine.empty()) return;
  EndBatch e;
  e.length = static_cast<int64_t>(mine.size());
  e.holders = Buffer::Allocate(e.length * static_cast<int64_t>(sizeof(HolderId)));
  std::copy(mine.begin(), mine.end(), e.holders.as<HolderId>());
  e.ends = GatherTime(ends.ends, rows.data(), e.length);
  out.EmitEnds(std::move(e));
  holders_->Release(mine.data(), e.length);  // as every producer does once an end is out
}

// The row form shares the map of ids given out.
class ReissueHolders::Rows final : public RowOperator {
 public:
  explicit Rows(ReissueHolders* r) : r_(r) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    if (!in.pending()) {
      out.Emit(in);
      return;
    }
    Row r = in;
    r.holder = r_->holders_->AllocateOne();
    const bool added = r_->issued_.emplace(in.holder, r.holder).second;
    CQ_CHECK(added, "expiration holder " + std::to_string(in.holder) + " reached a reissue twice");
    out.Emit(r);
  }
  void PushEnd(int, HolderId id, Time end, RowEmitter& out) override {
    auto it = r_->issued_.find(id);
    if (it == r_->issued_.end()) return;  // a tuple that never came this way
    const HolderId mine = it->second;
    r_->issued_.erase(it);
    out.EmitEnd(mine, end);
    r_->holders_->ReleaseOne(mine);
  }
  bool stateful() const override { return false; }  // (its map is the batch form's)

 private:
  ReissueHolders* r_;
};

std::unique_ptr<RowOperator> ReissueHolders::ToRows() { return std::make_unique<Rows>(this); }

void ReissueHolders::Snapshot(SnapshotWriter& w) const {
  w.U64(issued_.size());
  for (const auto* e : SortedEntries(issued_)) {
    w.U32(e->first);
    w.U32(e->second);
  }
}

void ReissueHolders::Restore(SnapshotReader& r) {
  issued_.clear();
  const uint64_t n = r.Count(8, "the reissued holders");
  for (uint64_t i = 0; i < n; ++i) {
    const HolderId from = r.Holder();
    const HolderId to = r.Holder();
    CQ_SNAPSHOT_CHECK(issued_.emplace(from, to).second, "a reissued expiration holder appears twice");
  }
}

void RegisterReissueHolders(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "reissue_holders", .description = "a second read of a relation in one union"},
             [](const OperatorSpec&, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "reissue_holders takes one input");
               return std::make_unique<ReissueHolders>(*in[0].schema, in[0].kind, ctx.holders);
             });
}

}  // namespace cq
