#include "operators/row_window.h"

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "operators/rows_from_batches.h"

namespace cq {

RowWindow::RowWindow(int64_t rows, const Schema& input, HolderTable* holders)
    : rows_(rows), schema_(input), holders_(holders) {
  CQ_CHECK(rows_ > 0, "a row window holds at least one row");
}

void RowWindow::Push(int, const Batch& in, Emitter& out) {
  Batch storage;
  const Batch& batch = in.CompactInto(storage);
  const int64_t n = batch.length;
  if (n == 0) return;
  const int64_t N = rows_, p = count_;
  const bool steps = batch.sync.has_steps();

  // 1. Pending tuples whose N-th successor is in this batch: combined position c < p ends at the
  //    start of new row c + N - p.
  const int64_t resolved = std::max<int64_t>(0, std::min(p, p + n - N));
  if (resolved > 0) {
    EndBatch ends;
    ends.length = resolved;
    ends.holders = Buffer::Allocate(resolved * sizeof(HolderId));
    HolderId* ids = ends.holders.as<HolderId>();
    std::vector<uint32_t> idx(resolved);
    for (int64_t c = 0; c < resolved; ++c) {
      ids[c] = Slot(c);
      idx[c] = static_cast<uint32_t>(c + N - p);
    }
    ends.ends = GatherTime(batch.sync, idx.data(), resolved);
    out.EmitEnds(ends);
    holders_->Release(ids, resolved);  // every consumer has seen the ends: ids may be reused
    head_ = (head_ + resolved) % static_cast<int64_t>(ring_.size());
    count_ -= resolved;
  }

  // 2. The new tuples: those with N successors inside the batch get their end now, the last
  //    min(n, N) get a holder.
  const int64_t known = std::max<int64_t>(0, n - N);
  Batch o = batch;
  o.kind = BatchKind::kLifetime;
  o.constant_duration.reset();
  o.other.ticks = Buffer::Allocate(n * 8);
  if (steps) o.other.steps = Buffer::Allocate(n * 8);
  int64_t* et = o.other.ticks.as<int64_t>();
  const int64_t* st = batch.sync.tick_data();
  for (int64_t k = 0; k < known; ++k) et[k] = st[k + N];
  if (steps) {
    int64_t* es = o.other.steps.as<int64_t>();
    for (int64_t k = 0; k < known; ++k) es[k] = batch.sync.step_data()[k + N];
    for (int64_t k = known; k < n; ++k) es[k] = 0;
  }
  for (int64_t k = known; k < n; ++k) et[k] = Time::kInfTick;  // pending: see `holders`
  o.holders = Buffer::Allocate(n * sizeof(HolderId));
  HolderId* h = o.holders.as<HolderId>();
  for (int64_t k = 0; k < known; ++k) h[k] = kNoHolder;
  holders_->Allocate(n - known, h + known);
  for (int64_t k = known; k < n; ++k) Append(h[k]);
  out.Emit(std::move(o));
}

void RowWindow::Append(HolderId h) {
  if (count_ == static_cast<int64_t>(ring_.size())) {
    // Grow (up to N) only as far as the data needs: [Rows 10000000] over a short input stays small.
    std::vector<HolderId> bigger;
    bigger.reserve(static_cast<size_t>(std::min<int64_t>(rows_, std::max<int64_t>(16, 2 * count_))));
    for (int64_t c = 0; c < count_; ++c) bigger.push_back(Slot(c));
    bigger.resize(bigger.capacity());
    ring_ = std::move(bigger);
    head_ = 0;
  }
  Slot(count_) = h;
  ++count_;
}

void RowWindow::AdvanceTo(Time progress, Emitter& out) {
  // At close the tuples still in the window never end: their ends become final as ∞.
  if (!progress.IsInfinite() || count_ == 0) return;
  EndBatch ends;
  ends.length = count_;
  ends.holders = Buffer::Allocate(count_ * sizeof(HolderId));
  ends.ends.ticks = Buffer::Allocate(count_ * 8);
  for (int64_t c = 0; c < count_; ++c) {
    ends.holders.as<HolderId>()[c] = Slot(c);
    ends.ends.ticks.as<int64_t>()[c] = Time::kInfTick;
  }
  out.EmitEnds(ends);
  holders_->Release(ends.holders.as<HolderId>(), count_);
  count_ = 0;
  head_ = 0;
}

// The row form works on the same ring: the N-th earlier tuple ends where this one starts.
class RowWindow::Rows final : public RowOperator {
 public:
  explicit Rows(RowWindow* w) : w_(w) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    RowWindow& w = *w_;
    Row r = in;
    r.holder = w.holders_->AllocateOne();  // before the ended id is let go, as the batch form does
    if (w.count_ == w.rows_) {
      const HolderId old = w.Slot(0);
      w.head_ = (w.head_ + 1) % static_cast<int64_t>(w.ring_.size());
      --w.count_;
      out.EmitEnd(old, in.sync);
      w.holders_->ReleaseOne(old);
    }
    w.Append(r.holder);
    out.Emit(r);
  }
  bool advances_when_due() const override { return true; }  // (at close only)
  bool fires() const override { return false; }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (!progress.IsInfinite()) return;
    RowsFromBatches ends(&out);
    w_->AdvanceTo(progress, ends);
  }

 private:
  RowWindow* w_;
};

std::unique_ptr<RowOperator> RowWindow::ToRows() { return std::make_unique<Rows>(this); }

std::string RowWindow::Explain() const { return "Window [Rows " + std::to_string(rows_) + "]"; }

void RegisterRowWindow(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "row_window",
              .description = "the window [Rows n]",
              .output = D::Output::kRelation,
              .partition = D::Partition::kNever,
              .arrival_order = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a row window reads one stream");
               return std::make_unique<RowWindow>(s.params["rows"].integer(), *in[0].schema, ctx.holders);
             });
}

// The ring as it is: the pending holders of the last rows, oldest first from head_.
void RowWindow::Snapshot(SnapshotWriter& w) const {
  w.PodVec(ring_);
  w.I64(head_);
  w.I64(count_);
}

void RowWindow::Restore(SnapshotReader& r) {
  r.PodVec(ring_);
  head_ = r.I64();
  count_ = r.I64();
  const auto size = static_cast<int64_t>(ring_.size());
  CQ_SNAPSHOT_CHECK(
      count_ >= 0 && count_ <= size && count_ <= rows_ && (size == 0 ? head_ == 0 : head_ >= 0 && head_ < size),
      "a row window's ring is out of range");
  for (int64_t k = 0; k < count_; ++k)
    CQ_SNAPSHOT_CHECK(r.ValidHolder(Slot(k)), "a row window's pending holder ids are out of range");
}
}  // namespace cq
