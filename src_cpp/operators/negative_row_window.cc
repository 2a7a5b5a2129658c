#include "operators/negative_row_window.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "rows/batch_rows.h"
#include "rows/row_operator.h"

namespace cq {

NegativeRowWindow::NegativeRowWindow(int64_t rows, std::vector<int> keys, const Schema& input)
    : store_(RowLayout(input)), rows_(rows), keys_(std::move(keys)), schema_(std::make_shared<const Schema>(input)) {
  CQ_CHECK(rows_ > 0, "a row window holds at least one row");
  if (keys_.empty()) queues_.emplace_back();  // one partition
}

NegativeRowWindow::~NegativeRowWindow() = default;

NegativeRowWindow::Fifo<NegativeRowWindow::Ref>& NegativeRowWindow::QueueOf(const Batch& b, int64_t row,
                                                                            std::string* key) {
  if (keys_.empty()) return b_.all;
  key->clear();
  for (int k : keys_) AppendKey(b.columns[k], row, key);
  return b_.partitions[*key];
}

void NegativeRowWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  if (RowsHold()) TakeFromRows();
  Ring<Kept>& kept = b_.kept;
  const uint32_t seq = next_seq_++;
  kept.push_back({seq, b, n});

  // In arrival order: each arrival first pushes out the tuple N places before it in its partition
  // (a negative stamped with the arrival's time), then goes out as a positive.
  std::vector<BatchRow> rows;
  std::vector<Time> sync, other;
  rows.reserve(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    const Time t = b.sync.At(i);
    Fifo<Ref>& q = QueueOf(b, i, &key_);
    if (static_cast<int64_t>(q.size()) == rows_) {
      const Ref old = q.Pop();
      rows.push_back({old.seq, old.row});
      sync.push_back(t);
      other.push_back(kept[old.seq - kept.front().seq].batch.sync.At(old.row));
    }
    q.items.push_back({seq, static_cast<uint32_t>(i)});
    rows.push_back({seq, static_cast<uint32_t>(i)});
    sync.push_back(t);
    other.push_back(Time::Infinity());
  }
  Batch o;
  o.kind = BatchKind::kLifetime;
  o.schema = b.schema;
  o.length = static_cast<int64_t>(rows.size());
  // The negatives copy the values of the leaving tuples: the method's overhead.
  o.columns =
      GatherRows([&](uint32_t k) -> const Batch& { return kept[k - kept.front().seq].batch; }, rows, schema_->size());
  o.sync = MakeTimeColumn(sync);
  o.other = MakeTimeColumn(other);
  out.Emit(std::move(o));
  for (size_t k = 0; k < rows.size(); ++k)
    if (!other[k].IsInfinite()) --kept[rows[k].batch - kept.front().seq].live;
  while (!kept.empty() && kept.front().live == 0) kept.pop_front();
}

// ---- row form ----------------------------------------------------------------------------------

// Each arrival, in order: the tuple N places before it in its partition leaves as a negative
// stamped with the arrival's time, then the arrival goes out as a positive.
//
// A tuple that comes back into the window while it emits (a loop through a delay) is kept and
// handled once the emission under way is over, as its own push: the window's output stays in
// arrival order, a negative never overtakes its positive, and a slot is freed only when no row of
// this window is on its way downstream.
class NegativeRowWindow::Rows final : public RowOperator {
 public:
  explicit Rows(NegativeRowWindow* w) : w_(w) {}

  void Push(int, const Row& in, RowEmitter& out) override {
    NegativeRowWindow& w = *w_;
    if (w.b_.holds()) w.TakeFromBatches();
    const Arrival a{w.store_.Add(in.values), 0, in.sync};
    if (depth_ > 0) {
      later_.push_back(a);
      return;
    }
    ++depth_;
    Arrive(a, out);
    for (size_t k = 0; k < later_.size(); ++k) {
      const Arrival next = later_[k];  // (a copy: later_ may grow meanwhile)
      Arrive(next, out);
    }
    later_.clear();
    --depth_;
    for (uint32_t s : ended_) w.store_.Remove(s);
    ended_.clear();
  }
  // Nothing is ever due by itself: a tuple leaves only when a later one arrives.
  bool advances_when_due() const override { return true; }
  // (Snapshot and Restore: nothing of its own. The state is the window's, which writes it.)

 private:
  void Arrive(const Arrival& a, RowEmitter& out) {
    NegativeRowWindow& w = *w_;
    const Value* values = w.store_.Get(a.slot);
    Fifo<Arrival>& q = w.queues_[w.RowQueueOf(values)];
    Row neg;
    const bool full = static_cast<int64_t>(q.size()) == w.rows_;
    if (full) {
      const Arrival old = q.Pop();
      neg.values = w.store_.Get(old.slot);
      neg.sync = a.start;
      neg.other = old.start;
      ended_.push_back(old.slot);
    }
    q.items.push_back(a);
    // The state is final before anything goes out (q is not used past this point).
    if (full) out.Emit(neg);
    Row pos;
    pos.values = values;
    pos.sync = a.start;
    out.Emit(pos);
  }

  NegativeRowWindow* w_;
  std::vector<Arrival> later_;   // arrivals during an emission of this window
  std::vector<uint32_t> ended_;  // slots of the negatives sent, freed when no emission is under way
  int depth_ = 0;
};

uint32_t NegativeRowWindow::RowQueueOf(const Value* v) {
  if (keys_.empty()) return 0;
  key_.clear();
  for (int k : keys_) AppendKeyValue(store_.layout().types()[k], v[k], &key_);
  auto [it, fresh] = index_.try_emplace(key_, static_cast<uint32_t>(queues_.size()));
  if (fresh) queues_.emplace_back();
  return it->second;
}

std::unique_ptr<RowOperator> NegativeRowWindow::ToRows() { return std::make_unique<Rows>(this); }

// ---- taking the tuples over ------------------------------------------------------------------

void NegativeRowWindow::TakeFromBatches() {
  auto take = [&](const Fifo<Ref>& from, Fifo<Arrival>& to) {
    for (size_t i = from.head; i < from.items.size(); ++i) {
      const Ref x = from.items[i];
      const Batch& b = b_.kept[x.seq - b_.kept.front().seq].batch;
      Arrival a{0, 0, b.sync.At(x.row)};
      WithRow(b, x.row, [&](const Row& r) { a.slot = store_.Add(r.values); });
      to.items.push_back(a);
    }
  };
  // (The row layout holds nothing: no partition, or the one partition empty.)
  if (keys_.empty()) take(b_.all, queues_[0]);
  for (const auto& [key, q] : b_.partitions) {
    index_.emplace(key, static_cast<uint32_t>(queues_.size()));
    take(q, queues_.emplace_back());
  }
  b_ = Batches{};
}

void NegativeRowWindow::BatchesOfRows(Batches* out) const {
  // One batch in time order (a stream's, as snapshots check), the partitions' tuples merged by
  // start, partitions in key order where starts are equal: the same state gives the same batch.
  struct Entry {
    Time start;
    uint32_t slot;
    Fifo<Ref>* to;
  };
  std::vector<Entry> all;
  auto give = [&](const Fifo<Arrival>& from, Fifo<Ref>& to) {
    for (size_t i = from.head; i < from.items.size(); ++i)
      all.push_back({from.items[i].start, from.items[i].slot, &to});
  };
  if (keys_.empty()) give(queues_[0], out->all);
  for (const auto* e : SortedEntries(index_)) give(queues_[e->second], out->partitions[e->first]);
  std::stable_sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.start < b.start; });
  RowBatchBuilder builder(schema_, BatchKind::kStream, std::nullopt);
  for (uint32_t k = 0; k < all.size(); ++k) {
    Row r;
    r.values = store_.Get(all[k].slot);
    r.sync = all[k].start;
    builder.Append(r);
    all[k].to->items.push_back({next_seq_, k});  // (a partition's in its order: the sort is stable)
  }
  out->kept.push_back({next_seq_, builder.Finish(), static_cast<int64_t>(all.size())});
}

void NegativeRowWindow::TakeFromRows() {
  BatchesOfRows(&b_);
  ++next_seq_;
  ClearRows();
}

void NegativeRowWindow::ClearRows() {
  store_.Clear();
  queues_.clear();
  index_.clear();
  if (keys_.empty()) queues_.emplace_back();
}

void RegisterNegativeRowWindow(OperatorRegistry& r) {
  r.RegisterNegative("row_window",
                     [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                        const OperatorContext&) -> std::unique_ptr<Operator> {
                       CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
                       return std::make_unique<NegativeRowWindow>(s.params["rows"].integer(), std::vector<int>{},
                                                                  *in[0].schema);
                     });
  r.RegisterNegative("partition_row_window",
                     [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                        const OperatorContext&) -> std::unique_ptr<Operator> {
                       CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
                       std::vector<int> keys;
                       for (const json::Value& k : s.params["keys"].array())
                         keys.push_back(static_cast<int>(k.integer()));
                       return std::make_unique<NegativeRowWindow>(s.params["rows"].integer(), std::move(keys),
                                                                  *in[0].schema);
                     });
}

// The kept batches (rows whose negative is still to come) and each partition's queue of them.
// Tuples the row form holds are written as one such batch.
void NegativeRowWindow::Snapshot(SnapshotWriter& w) const {
  if (!RowsHold()) {
    WriteBatches(w, b_, next_seq_);
    return;
  }
  Batches b;
  BatchesOfRows(&b);
  WriteBatches(w, b, next_seq_ + 1);
}

void NegativeRowWindow::WriteBatches(SnapshotWriter& w, const Batches& b, uint32_t next_seq) const {
  w.U32(next_seq);
  WriteNumberedBatches(w, b.kept);
  w.PodVec(b.all.items.data() + b.all.head, b.all.size());
  w.U64(b.partitions.size());
  for (const auto* e : SortedEntries(b.partitions)) {
    const Fifo<Ref>& q = e->second;
    w.Str(e->first);
    w.PodVec(q.items.data() + q.head, q.size());
  }
}

void NegativeRowWindow::Restore(SnapshotReader& r) {
  ClearRows();
  b_ = Batches{};
  next_seq_ = r.U32();
  Ring<Kept>& kept = b_.kept;
  ReadNumberedBatches(r, *schema_, BatchKind::kStream, next_seq_, true, kept, "a row window's kept batches");
  auto holds = [&](const Fifo<Ref>& q) {
    bool ok = static_cast<int64_t>(q.size()) <= rows_;
    for (const Ref& x : q.items)
      ok &= !kept.empty() && x.seq >= kept.front().seq && x.seq - kept.front().seq < kept.size() &&
            x.row < static_cast<uint64_t>(kept[x.seq - kept.front().seq].batch.length);
    return ok;
  };
  CQ_SNAPSHOT_CHECK(kept.empty() || kept.back().seq + 1 == next_seq_,
                    "a row window's kept batches are out of sequence");
  r.PodVec(b_.all.items);
  bool ok = holds(b_.all);
  for (size_t n = r.Count(16); n > 0; --n) {
    std::string key = r.Str();
    Fifo<Ref>& q = b_.partitions[std::move(key)];
    r.PodVec(q.items);
    ok &= holds(q);
  }
  CQ_SNAPSHOT_CHECK(ok, "a row window's queues refer to rows it does not keep");
}
}  // namespace cq
