#include "operators/negative_row_window.h"

#include <cstring>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "rows/row_operator.h"

namespace cq {

NegativeRowWindow::NegativeRowWindow(int64_t rows, std::vector<int> keys, const Schema& input)
    : rows_(rows), keys_(std::move(keys)), schema_(input) {
  CQ_CHECK(rows_ > 0, "a row window holds at least one row");
}

NegativeRowWindow::Queue& NegativeRowWindow::QueueOf(const Batch& b, int64_t row, std::string* key) {
  if (keys_.empty()) return all_;
  key->clear();
  for (int k : keys_) AppendKey(b.columns[k], row, key);
  return partitions_[*key];
}

void NegativeRowWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  const uint32_t seq = next_seq_++;
  kept_.push_back({seq, b, n});

  // In arrival order: each arrival first pushes out the tuple N places before it in its partition
  // (a negative stamped with the arrival's time), then goes out as a positive.
  std::vector<BatchRow> rows;
  std::vector<Time> sync, other;
  rows.reserve(2 * n);
  std::string key;
  for (int64_t i = 0; i < n; ++i) {
    const Time t = b.sync.At(i);
    Queue& q = QueueOf(b, i, &key);
    if (static_cast<int64_t>(q.size()) == rows_) {
      const Ref old = q.items[q.head++];
      rows.push_back({old.seq, old.row});
      sync.push_back(t);
      other.push_back(kept_[old.seq - kept_.front().seq].batch.sync.At(old.row));
      if (q.head > 64 && q.head * 2 > q.items.size()) {
        q.items.erase(q.items.begin(), q.items.begin() + static_cast<std::ptrdiff_t>(q.head));
        q.head = 0;
      }
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
  o.columns = GatherRows([&](uint32_t k) -> const Batch& { return kept_[k - kept_.front().seq].batch; },
                         rows, schema_.size());
  o.sync = MakeTimeColumn(sync);
  o.other = MakeTimeColumn(other);
  out.Emit(std::move(o));
  for (size_t k = 0; k < rows.size(); ++k)
    if (!other[k].IsInfinite()) --kept_[rows[k].batch - kept_.front().seq].live;
  while (!kept_.empty() && kept_.front().live == 0) kept_.pop_front();
}

// ---- row form ----------------------------------------------------------------------------------

namespace {

// Each arrival, in order: the tuple N places before it in its partition leaves as a negative
// stamped with the arrival's time, then the arrival goes out as a positive. The last N tuples of
// each partition are kept (values in a RowStore; per partition a FIFO of slots and starts).
//
// A tuple that comes back into the window while it emits (a loop through a delay) is kept and
// handled once the emission under way is over, as its own push: the window's output stays in
// arrival order, a negative never overtakes its positive, and a slot is freed only when no row of
// this window is on its way downstream.
class NegativeRowWindowRows final : public RowOperator {
 public:
  NegativeRowWindowRows(int64_t rows, std::vector<int> keys, const Schema& schema)
      : rows_(rows), keys_(std::move(keys)), schema_(std::make_shared<const Schema>(schema)),
        store_(RowLayout(schema)) {
    if (keys_.empty()) queues_.emplace_back();  // one partition
  }

  void Push(int, const Row& in, RowEmitter& out) override {
    const Arrival a{store_.Add(in.values), 0, in.sync};
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
    for (uint32_t s : ended_) store_.Remove(s);
    ended_.clear();
  }
  // Nothing is ever due by itself: a tuple leaves only when a later one arrives.
  bool advances_when_due() const override { return true; }

  // The store, then each partition's key and FIFO (oldest first).
  void Snapshot(SnapshotWriter& w) const override {
    store_.Snapshot(w, schema_);
    w.U64(queues_.size());
    if (keys_.empty()) {
      const Queue& q = queues_[0];
      w.PodVec(q.items.data() + q.head, q.size());
      return;
    }
    for (const auto* e : SortedEntries(index_)) {
      const Queue& q = queues_[e->second];
      w.Str(e->first);
      w.PodVec(q.items.data() + q.head, q.size());
    }
  }
  void Restore(SnapshotReader& r) override {
    store_.Restore(r, *schema_);
    const size_t n = r.Count(8);  // (each at least its length)
    queues_.clear();
    index_.clear();
    bool ok = keys_.empty() ? n == 1 : true;
    size_t kept = 0;
    std::vector<uint8_t> seen;
    for (size_t k = 0; k < n && ok; ++k) {
      if (!keys_.empty()) ok &= index_.try_emplace(r.Str(), static_cast<uint32_t>(k)).second;
      queues_.emplace_back();
      Queue& q = queues_.back();
      r.PodVec(q.items);
      // (a partition, once made, always holds a tuple or more)
      ok &= (keys_.empty() || !q.items.empty()) && static_cast<int64_t>(q.items.size()) <= rows_;
      for (size_t i = 0; i < q.items.size() && ok; ++i) {
        const uint32_t s = q.items[i].slot;
        ok &= store_.live(s) && SnapshotReader::ValidTime(q.items[i].start) &&
              (i == 0 || !(q.items[i].start < q.items[i - 1].start));
        if (ok && s >= seen.size()) seen.resize(s + 1, 0);
        ok = ok && !seen[s]++;
      }
      kept += q.items.size();
    }
    CQ_SNAPSHOT_CHECK(ok && kept == store_.size(), "a row window's kept rows are inconsistent");
  }

 private:
  struct Arrival {
    uint32_t slot;
    uint32_t unused;  // (no padding: snapshots write these as they are)
    Time start;
  };
  struct Queue {
    std::vector<Arrival> items;  // from `head` on
    size_t head = 0;
    size_t size() const { return items.size() - head; }
  };

  uint32_t QueueOf(const Value* v) {
    if (keys_.empty()) return 0;
    key_.clear();
    for (int k : keys_) AppendKeyValue(store_.layout().types()[k], v[k], &key_);
    auto [it, fresh] = index_.try_emplace(key_, static_cast<uint32_t>(queues_.size()));
    if (fresh) queues_.emplace_back();
    return it->second;
  }

  void Arrive(const Arrival& a, RowEmitter& out) {
    const Value* values = store_.Get(a.slot);
    Queue& q = queues_[QueueOf(values)];
    Row neg;
    const bool full = static_cast<int64_t>(q.size()) == rows_;
    if (full) {
      const Arrival old = q.items[q.head++];
      if (q.head > 64 && q.head * 2 > q.items.size()) {
        q.items.erase(q.items.begin(), q.items.begin() + static_cast<std::ptrdiff_t>(q.head));
        q.head = 0;
      }
      neg.values = store_.Get(old.slot);
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

  int64_t rows_;
  std::vector<int> keys_;  // empty: one partition
  std::shared_ptr<const Schema> schema_;
  RowStore store_;
  std::vector<Queue> queues_;
  std::unordered_map<std::string, uint32_t> index_;  // partition key bytes -> queues_ index
  std::string key_;
  std::vector<Arrival> later_;   // arrivals during an emission of this window
  std::vector<uint32_t> ended_;  // slots of the negatives sent, freed when no emission is under way
  int depth_ = 0;
};

}  // namespace

std::unique_ptr<RowOperator> NegativeRowWindow::ToRows() {
  return std::make_unique<NegativeRowWindowRows>(rows_, keys_, schema_);
}

void RegisterNegativeRowWindow(OperatorRegistry& r) {
  r.Register("negative:row_window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                       const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    return std::make_unique<NegativeRowWindow>(s.params["rows"].integer(), std::vector<int>{}, *in[0].schema);
  });
  r.Register("negative:partition_row_window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                                 const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    std::vector<int> keys;
    for (const json::Value& k : s.params["keys"].array()) keys.push_back(static_cast<int>(k.integer()));
    return std::make_unique<NegativeRowWindow>(s.params["rows"].integer(), std::move(keys), *in[0].schema);
  });
}

// The kept batches (rows whose negative is still to come) and each partition's queue of them.
void NegativeRowWindow::Snapshot(SnapshotWriter& w) const {
  w.U32(next_seq_);
  WriteNumberedBatches(w, kept_);
  w.PodVec(all_.items.data() + all_.head, all_.size());
  w.U64(partitions_.size());
  for (const auto* e : SortedEntries(partitions_)) {
    const Queue& q = e->second;
    w.Str(e->first);
    w.PodVec(q.items.data() + q.head, q.size());
  }
}

void NegativeRowWindow::Restore(SnapshotReader& r) {
  next_seq_ = r.U32();
  ReadNumberedBatches(r, schema_, BatchKind::kStream, next_seq_, true, kept_, "a row window's kept batches");
  auto holds = [&](const Queue& q) {
    bool ok = static_cast<int64_t>(q.size()) <= rows_;
    for (const Ref& x : q.items)
      ok &= !kept_.empty() && x.seq >= kept_.front().seq && x.seq - kept_.front().seq < kept_.size() &&
            x.row < static_cast<uint64_t>(kept_[x.seq - kept_.front().seq].batch.length);
    return ok;
  };
  CQ_SNAPSHOT_CHECK(kept_.empty() || kept_.back().seq + 1 == next_seq_, "a row window's kept batches are out of sequence");
  all_ = Queue{};
  r.PodVec(all_.items);
  bool ok = holds(all_);
  partitions_.clear();
  for (size_t n = r.Count(16); n > 0; --n) {
    std::string key = r.Str();
    Queue& q = partitions_[std::move(key)];
    r.PodVec(q.items);
    ok &= holds(q);
  }
  CQ_SNAPSHOT_CHECK(ok, "a row window's queues refer to rows it does not keep");
}
}  // namespace cq
