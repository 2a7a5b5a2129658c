#include "operators/union_all.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "rows/batch_rows.h"
#include "rows/row_operator.h"

namespace cq {

UnionAll::UnionAll(const Schema& schema, BatchKind kind, int inputs)
    : kind_(kind), inputs_(inputs), shared_(std::make_shared<const Schema>(schema)), store_(RowLayout(schema)),
      ports_(static_cast<size_t>(inputs)) {}

UnionAll::~UnionAll() = default;

void UnionAll::Push(int, const Batch& batch, Emitter&) {
  if (RowsHold()) TakeFromRows();
  waiting_.Add(batch);
}

void UnionAll::PushEnds(int, const EndBatch& ends, Emitter& out) {
  if (RowsHold()) TakeFromRows();
  EndBatch rest = waiting_.AddEnds(ends);
  if (rest.length) out.EmitEnds(std::move(rest));
}

void UnionAll::AdvanceTo(Time progress, Emitter& out) {
  if (RowsHold()) TakeFromRows();
  Batch b = waiting_.Release(progress);
  if (b.length == 0) return;
  b.schema = shared_;  // the union's column names (the first input's)
  out.Emit(std::move(b));
}

Time UnionAll::next_firing(int64_t) const { return RowsHold() ? RowsHead() : waiting_.head(); }

// ---- row form ----------------------------------------------------------------------------------

Time UnionAll::RowsHead() const {
  Time t = Time::Infinity();
  for (const Port& p : ports_)
    if (p.head < p.items.size()) t = std::min(t, p.items[p.head].sync);
  return t;
}

void UnionAll::Keep(size_t port, const Row& row) {
  Port& p = ports_[port];
  const uint64_t abs = p.base + p.items.size();
  p.items.push_back({store_.Add(row.values), row.sync, row.other, row.holder, arrivals_++});
  if (row.pending()) {
    if (row.holder >= held_.size()) held_.resize(std::max<size_t>(row.holder + 1, held_.size() * 2), kNone);
    held_[row.holder] = {static_cast<uint32_t>(port), abs};
  }
}

template <typename F>
void UnionAll::ReleaseRows(Time progress, F&& f) {
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
    f(it);
    store_.Remove(it.slot);
  }
}

// Each input's rows wait in a FIFO (an input comes in time order), and go out merged by time,
// equal times in arrival order, as OrderedRuns has them.
class UnionAll::Rows final : public RowOperator {
 public:
  explicit Rows(UnionAll* u) : u_(u) {}

  // Rows the batch form kept are taken over first, on a tail call: a call that came back here
  // would make every row save registers for it.
  void Push(int port, const Row& row, RowEmitter& out) override {
    UnionAll& u = *u_;
    if (!u.waiting_.empty()) [[unlikely]]
      return TakenOver(port, row, out);
    if (!(out.now() < row.sync)) {
      // The region runs this row's instant: nothing earlier can come any more, so it goes on at
      // once, after the rows of its instant that came before it.
      if (u.RowsHold()) Release({row.sync.tick, row.sync.step + 1}, out);
      out.Emit(row);
      return;
    }
    Keep(port, row, out);
  }

  void PushEnd(int port, HolderId id, Time end, RowEmitter& out) override {
    UnionAll& u = *u_;
    if (!u.waiting_.empty()) [[unlikely]]
      return TakenOver(port, id, end, out);
    if (id < u.held_.size() && u.held_[id].port != kNone.port) {
      // Its row still waits here: it leaves with its end, and the end goes no further.
      Port& p = u.ports_[u.held_[id].port];
      Item& it = p.items[u.held_[id].abs - p.base];
      it.other = end;
      it.holder = kNoHolder;
      u.held_[id] = kNone;
      return;
    }
    out.EmitEnd(id, end);
  }

  // Most calls find nothing waiting: they stay this small.
  void AdvanceTo(Time progress, RowEmitter& out) override {
    UnionAll& u = *u_;
    if (!u.waiting_.empty()) [[unlikely]]
      TakeOver(out);
    if (u.RowsHold()) Release(progress, out);
  }

  bool advances_when_due() const override { return true; }
  // Only a kept row changes when it fires next; a row it releases early (in Push) only makes a
  // firing the executor asks about in vain.
  bool wakes_itself() const override { return true; }
  Time next_firing(int64_t last_tick) const override { return u_->next_firing(last_tick); }
  // (Snapshot and Restore: nothing of its own. The state is the union's, which writes it.)

 private:
  // A row of a later instant waits for it.
  [[gnu::noinline]] void Keep(int port, const Row& row, RowEmitter& out) {
    out.Wake();  // its next firing may be this row's instant
    u_->Keep(static_cast<size_t>(port), row);
  }
  // The rows waiting below `progress`, merged by time.
  [[gnu::noinline]] void Release(Time progress, RowEmitter& out) {
    const UnionAll& u = *u_;
    u_->ReleaseRows(progress, [&](const Item& it) {
      Row r;
      r.values = u.store_.Get(it.slot);
      r.sync = it.sync;
      r.other = it.other;
      r.holder = it.holder;
      out.Emit(r);
    });
  }
  [[gnu::noinline]] void TakeOver(RowEmitter& out) {
    u_->TakeFromBatches();
    out.Wake();
  }
  [[gnu::noinline]] void TakenOver(int port, const Row& row, RowEmitter& out) {
    TakeOver(out);
    Push(port, row, out);
  }
  [[gnu::noinline]] void TakenOver(int port, HolderId id, Time end, RowEmitter& out) {
    TakeOver(out);
    PushEnd(port, id, end, out);
  }

  UnionAll* u_;
};

std::unique_ptr<RowOperator> UnionAll::ToRows() { return std::make_unique<Rows>(this); }

// ---- taking the rows over --------------------------------------------------------------------

void UnionAll::TakeFromBatches() {
  // Merged, they are in time order: one FIFO past the inputs' holds them, before every later
  // arrival at an equal time, as the batch form has them.
  if (ports_.size() == static_cast<size_t>(inputs_)) ports_.emplace_back();
  const size_t carry = ports_.size() - 1;
  waiting_.ReleaseEach(Time::Infinity(),
                       [&](const Batch& b, int64_t k) { WithRow(b, k, [&](const Row& r) { Keep(carry, r); }); });
  CQ_CHECK(waiting_.empty(), "a union holds rows at the end of time");
}

Batch UnionAll::BatchOfRows() const {
  std::vector<const Item*> all;
  for (const Port& p : ports_)
    for (size_t i = p.head; i < p.items.size(); ++i) all.push_back(&p.items[i]);
  std::sort(all.begin(), all.end(),
            [](const Item* a, const Item* b) { return a->sync < b->sync || (a->sync == b->sync && a->seq < b->seq); });
  RowBatchBuilder builder(shared_, kind_, std::nullopt);
  for (const Item* it : all) {
    Row r;
    r.values = store_.Get(it->slot);
    r.sync = it->sync;
    r.other = it->other;
    r.holder = it->holder;
    builder.Append(r);
  }
  return builder.Finish();
}

void UnionAll::TakeFromRows() {
  waiting_.Add(BatchOfRows());
  ClearRows();
}

void UnionAll::ClearRows() {
  store_.Clear();
  ports_.assign(static_cast<size_t>(inputs_), Port{});
  held_.clear();
}

void RegisterUnionAll(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "union_all",
              .description = "UNION ALL",
              .lifetimes = D::Lifetimes::kUnion,
              .columns = D::Columns::kMerge,
              .keeps_identity = true},
             [](const OperatorSpec&, const std::vector<OperatorInput>& in,
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

// The rows waiting to go out in time order, as the batch form holds them (those the row form
// holds as one run).
void UnionAll::Snapshot(SnapshotWriter& w) const {
  if (!RowsHold()) {
    waiting_.Snapshot(w);
    return;
  }
  OrderedRuns runs;
  runs.Add(BatchOfRows());
  runs.Snapshot(w);
}

void UnionAll::Restore(SnapshotReader& r) {
  ClearRows();
  waiting_.Restore(r, *shared_, kind_);
}
}  // namespace cq
