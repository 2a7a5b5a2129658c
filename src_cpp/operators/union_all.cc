#include "operators/union_all.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"

namespace cq {

UnionAll::UnionAll(const Schema& schema, BatchKind kind, int inputs)
    : schema_(schema), kind_(kind), inputs_(inputs), shared_(std::make_shared<const Schema>(schema)) {}

void UnionAll::Push(int, const Batch& batch, Emitter&) { waiting_.Add(batch); }

void UnionAll::PushEnds(int, const EndBatch& ends, Emitter& out) {
  EndBatch rest = waiting_.AddEnds(ends);
  if (rest.length) out.EmitEnds(std::move(rest));
}

void UnionAll::AdvanceTo(Time progress, Emitter& out) {
  Batch b = waiting_.Release(progress);
  if (b.length == 0) return;
  b.schema = shared_;  // the union's column names (the first input's)
  out.Emit(std::move(b));
}

namespace {
// The row form: each input's rows wait in a FIFO (an input comes in time order), and go out merged
// by time, equal times in arrival order, as OrderedRuns has them.
class UnionAllRows final : public RowOperator {
 public:
  UnionAllRows(const Schema& schema, size_t inputs)
      : schema_(std::make_shared<const Schema>(schema)), store_(RowLayout(schema)), ports_(inputs) {}

  void Push(int port, const Row& row, RowEmitter& out) override {
    if (!(out.now() < row.sync)) {
      // The region runs this row's instant: nothing earlier can come any more, so it goes on at
      // once, after the rows of its instant that came before it.
      if (store_.size() != 0) Release({row.sync.tick, row.sync.step + 1}, out);
      out.Emit(row);
      return;
    }
    Keep(port, row, out);
  }

  void PushEnd(int, HolderId id, Time end, RowEmitter& out) override {
    if (id < held_.size() && held_[id].port != kNone.port) {
      // Its row still waits here: it leaves with its end, and the end goes no further.
      Port& p = ports_[held_[id].port];
      Item& it = p.items[held_[id].abs - p.base];
      it.other = end;
      it.holder = kNoHolder;
      held_[id] = kNone;
      return;
    }
    out.EmitEnd(id, end);
  }

  // Most calls find nothing waiting: they stay this small.
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (store_.size() != 0) Release(progress, out);
  }

  bool advances_when_due() const override { return true; }
  // Only a kept row changes when it fires next; a row it releases early (in Push) only makes a
  // firing the executor asks about in vain.
  bool wakes_itself() const override { return true; }
  Time next_firing(int64_t) const override {
    if (store_.size() == 0) return Time::Infinity();
    Time t = Time::Infinity();
    for (const Port& p : ports_)
      if (p.head < p.items.size()) t = std::min(t, p.items[p.head].sync);
    return t;
  }

  void Snapshot(SnapshotWriter& w) const override {
    store_.Snapshot(w, schema_);
    w.U64(arrivals_);
    w.U64(ports_.size());
    for (const Port& p : ports_) w.PodVec(p.items.data() + p.head, p.items.size() - p.head);
  }
  void Restore(SnapshotReader& r) override {
    store_.Restore(r, *schema_);
    arrivals_ = r.U64();
    CQ_SNAPSHOT_CHECK(r.Count(8) == ports_.size(), "a union's inputs differ");
    held_.clear();
    size_t waiting = 0;
    std::vector<uint8_t> named;  // each kept row waits once
    for (size_t k = 0; k < ports_.size(); ++k) {
      Port& p = ports_[k];
      p = Port{};
      r.PodVec(p.items, "a union's waiting rows", [&](const Item& it) {
        return SnapshotReader::ValidTime(it.sync) && SnapshotReader::ValidTime(it.other) &&
               (it.holder == kNoHolder || r.ValidHolder(it.holder));
      });
      for (size_t i = 0; i < p.items.size(); ++i) {
        const Item& it = p.items[i];
        CQ_SNAPSHOT_CHECK(store_.live(it.slot) && it.seq < arrivals_ && (i == 0 || !(it.sync < p.items[i - 1].sync)),
                          "a union's waiting rows are inconsistent");
        if (it.slot >= named.size()) named.resize(it.slot + size_t{1}, 0);
        CQ_SNAPSHOT_CHECK(!named[it.slot]++, "a union's kept row waits twice");
        if (it.holder != kNoHolder) {
          if (it.holder >= held_.size()) held_.resize(it.holder + 1, kNone);
          held_[it.holder] = {static_cast<uint32_t>(k), i};
        }
      }
      waiting += p.items.size();
    }
    CQ_SNAPSHOT_CHECK(waiting == store_.size(), "a union's waiting rows are inconsistent");
  }

 private:
  // A row of a later instant waits for it.
  [[gnu::noinline]] void Keep(int port, const Row& row, RowEmitter& out) {
    out.Wake();  // its next firing may be this row's instant
    Port& p = ports_[static_cast<size_t>(port)];
    const uint64_t abs = p.base + p.items.size();
    p.items.push_back({store_.Add(row.values), row.sync, row.other, row.holder, arrivals_++});
    if (row.pending()) {
      if (row.holder >= held_.size()) held_.resize(std::max<size_t>(row.holder + 1, held_.size() * 2), kNone);
      held_[row.holder] = {static_cast<uint32_t>(port), abs};
    }
  }

  // The rows waiting below `progress`, merged by time.
  [[gnu::noinline]] void Release(Time progress, RowEmitter& out) {
    for (;;) {
      Port* best = nullptr;
      for (Port& p : ports_) {
        if (p.head == p.items.size()) continue;
        const Item& h = p.items[p.head];
        if (!(h.sync < progress)) continue;
        if (!best) {
          best = &p;
          continue;
        }
        const Item& b = best->items[best->head];
        if (h.sync < b.sync || (h.sync == b.sync && h.seq < b.seq)) best = &p;
      }
      if (!best) break;
      const Item it = best->items[best->head++];
      if (best->head == best->items.size()) {
        best->base += best->items.size();
        best->items.clear();
        best->head = 0;
      }
      if (it.holder != kNoHolder) held_[it.holder] = kNone;
      Row r;
      r.values = store_.Get(it.slot);
      r.sync = it.sync;
      r.other = it.other;
      r.holder = it.holder;
      out.Emit(r);
      store_.Remove(it.slot);
    }
  }

  struct Item {
    uint32_t slot;
    Time sync, other;
    HolderId holder;
    uint64_t seq;  // arrival order, which breaks ties
  };
  struct Port {
    std::vector<Item> items;  // waiting from `head` on; items[0] is the base-th ever
    size_t head = 0;
    uint64_t base = 0;
  };
  struct Where {
    uint32_t port;
    uint64_t abs;
  };
  static constexpr Where kNone{0xFFFFFFFFu, 0};

  std::shared_ptr<const Schema> schema_;
  RowStore store_;
  std::vector<Port> ports_;
  std::vector<Where> held_;  // by holder id: where its row waits
  uint64_t arrivals_ = 0;
};
}  // namespace

std::unique_ptr<RowOperator> UnionAll::ToRows() {
  return std::make_unique<UnionAllRows>(schema_, static_cast<size_t>(inputs_));
}

void RegisterUnionAll(OperatorRegistry& r) {
  r.Register("union_all", [](const OperatorSpec&, const std::vector<OperatorInput>& in,
                             const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() >= 2, "UNION ALL takes two inputs or more");
    for (const auto& i : in) {
      CQ_CHECK(i.kind == in[0].kind, "UNION ALL of a stream and a relation");
      CQ_CHECK(i.schema->size() == in[0].schema->size(), "UNION ALL inputs differ in width");
      for (size_t c = 0; c < i.schema->size(); ++c)
        CQ_CHECK((*i.schema)[c].type == (*in[0].schema)[c].type, "UNION ALL inputs differ in types");
    }
    return std::make_unique<UnionAll>(*in[0].schema, in[0].kind, static_cast<int>(in.size()));
  });
}


// The rows waiting to go out in time order.
void UnionAll::Snapshot(SnapshotWriter& w) const { waiting_.Snapshot(w); }
void UnionAll::Restore(SnapshotReader& r) { waiting_.Restore(r, schema_, kind_); }
}  // namespace cq
