#include "operators/negative_row_window.h"

#include <cstring>

#include "engine/errors.h"
#include "operators/registry.h"

namespace cq {

NegativeRowWindow::NegativeRowWindow(int64_t rows, std::vector<int> keys, const Schema& input)
    : rows_(rows), keys_(std::move(keys)), schema_(input) {
  CQ_CHECK(rows_ > 0, "a row window holds at least one row");
}

NegativeRowWindow::Queue& NegativeRowWindow::QueueOf(const Batch& b, int64_t row, std::string* key) {
  if (keys_.empty()) return all_;
  key->clear();
  for (int k : keys_) {
    const Column& c = b.columns[k];
    if (!c.IsValid(row)) {
      key->push_back('\0');
      continue;
    }
    key->push_back('\1');
    switch (c.type) {
      case TypeId::kInt64: key->append(reinterpret_cast<const char*>(&c.i64()[row]), 8); break;
      case TypeId::kFloat64: {
        double v = c.f64()[row];
        if (v == 0) v = 0;
        key->append(reinterpret_cast<const char*>(&v), 8);
        break;
      }
      case TypeId::kBool: key->push_back(c.BoolAt(row) ? '\1' : '\0'); break;
      case TypeId::kUtf8: {
        std::string_view s = c.StrAt(row);
        const uint32_t len = static_cast<uint32_t>(s.size());
        key->append(reinterpret_cast<const char*>(&len), 4);
        key->append(s);
        break;
      }
      case TypeId::kNull: break;
    }
  }
  return partitions_[*key];
}

void NegativeRowWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  const uint32_t seq = next_seq_++;
  kept_.push_back({seq, b, n});

  // Positives: the tuples themselves, ends open.
  Batch pos = b;
  pos.kind = BatchKind::kLifetime;
  pos.other = {};
  pos.constant_duration = Duration::Infinite();
  out.Emit(pos);

  // Negatives: each arrival pushes out the tuple N places before it (in its partition).
  std::vector<Ref> gone;
  std::vector<uint32_t> by;  // the arriving row that ends it
  std::string key;
  for (int64_t i = 0; i < n; ++i) {
    Queue& q = QueueOf(b, i, &key);
    if (static_cast<int64_t>(q.size()) == rows_) {
      gone.push_back(q.items[q.head++]);
      by.push_back(static_cast<uint32_t>(i));
      if (q.head > 64 && q.head * 2 > q.items.size()) {
        q.items.erase(q.items.begin(), q.items.begin() + static_cast<std::ptrdiff_t>(q.head));
        q.head = 0;
      }
    }
    q.items.push_back({seq, static_cast<uint32_t>(i)});
  }
  if (!gone.empty()) {
    const int64_t m = static_cast<int64_t>(gone.size());
    Batch neg;
    neg.kind = BatchKind::kLifetime;
    neg.schema = b.schema;
    neg.length = m;
    // Copy the values of the leaving tuples, run by run of one batch.
    std::vector<std::vector<Column>> parts;
    std::vector<uint32_t> idx;
    std::vector<int64_t> start_ticks, start_steps;
    bool steps = false;
    size_t k = 0;
    while (k < gone.size()) {
      const uint32_t s = gone[k].seq;
      idx.clear();
      while (k < gone.size() && gone[k].seq == s) idx.push_back(gone[k++].row);
      Kept& kept = kept_[s - kept_.front().seq];
      std::vector<Column> cols;
      for (const Column& c : kept.batch.columns) cols.push_back(Gather(c, idx.data(), static_cast<int64_t>(idx.size())));
      parts.push_back(std::move(cols));
      for (uint32_t r : idx) {
        const Time st = kept.batch.sync.At(r);
        start_ticks.push_back(st.tick);
        start_steps.push_back(st.step);
        steps |= st.step != 0;
      }
      kept.live -= static_cast<int64_t>(idx.size());
    }
    for (size_t c = 0; c < schema_.size(); ++c) {
      std::vector<const Column*> ptrs;
      for (const auto& p : parts) ptrs.push_back(&p[c]);
      neg.columns.push_back(ptrs.size() == 1 ? *ptrs[0] : Concat(ptrs.data(), static_cast<int64_t>(ptrs.size())));
    }
    neg.sync = GatherTime(b.sync, by.data(), m);
    neg.other.ticks = Buffer::Allocate(m * 8);
    std::memcpy(neg.other.ticks.data, start_ticks.data(), static_cast<size_t>(m) * 8);
    if (steps) {
      neg.other.steps = Buffer::Allocate(m * 8);
      std::memcpy(neg.other.steps.data, start_steps.data(), static_cast<size_t>(m) * 8);
    }
    out.Emit(std::move(neg));
    while (!kept_.empty() && kept_.front().live == 0) kept_.pop_front();
  }
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

}  // namespace cq
