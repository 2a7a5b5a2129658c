#include "operators/negative_row_window.h"

#include <cstring>

#include "batch/row_hash.h"
#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/registry.h"

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
  for (const auto& [key, q] : partitions_) {
    w.Str(key);
    w.PodVec(q.items.data() + q.head, q.size());
  }
}

void NegativeRowWindow::Restore(SnapshotReader& r) {
  next_seq_ = r.U32();
  ReadNumberedBatches(r, schema_, next_seq_, true, kept_, "a row window's kept batches");
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
