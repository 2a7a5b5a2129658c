#pragma once
// Crossing between batches and rows, where a loop region meets the rest of the graph
// (rows/ROWS.md): rows entering a region are read out of their batches one at a time, rows leaving
// it are gathered into batches again.
#include <memory>
#include <optional>
#include <vector>

#include "batch/batch.h"
#include "batch/value_store.h"
#include "rows/row.h"

namespace cq {

// Reads one column's values into Values.
struct ColumnReader {
  const Column* c;
  Value At(int64_t row) const {
    if (c->type == TypeId::kNull || !c->IsValid(row)) return Value::Null();
    switch (c->type) {
      case TypeId::kInt64: return Value::Int(c->i64()[row]);
      case TypeId::kFloat64: return Value::Double(c->f64()[row]);
      case TypeId::kBool: return Value::Bool(c->BoolAt(row));
      case TypeId::kUtf8: return Value::String(c->StrAt(row));  // the caller owns this reference
      case TypeId::kNull: break;
    }
    return Value::Null();
  }
};

// f(row) for physical row `p` of `b`. The row's strings live until f returns.
template <typename F>
void WithRow(const Batch& b, int64_t p, F&& f) {
  const size_t w = b.columns.size();
  ValueBuffer values(w);
  bool strings = false;
  for (size_t c = 0; c < w; ++c) {
    values[c] = ColumnReader{&b.columns[c]}.At(p);
    strings |= b.columns[c].type == TypeId::kUtf8;
  }
  Row row;
  row.values = values.data();
  row.sync = b.StartAt(p);
  if (b.kind == BatchKind::kLifetime) {
    if (b.EndPending(p)) row.holder = b.holders.as<const HolderId>()[p];
    else row.other = b.EndAt(p);
  }
  f(static_cast<const Row&>(row));
  if (strings)
    for (size_t c = 0; c < w; ++c)
      if (values[c].valid && b.columns[c].type == TypeId::kUtf8) ReleaseString(values[c].s);
}

// f(row) for every selected row of `b`, in order.
template <typename F>
void ForEachRow(const Batch& b, F&& f) {
  const int64_t n = b.num_rows();
  for (int64_t k = 0; k < n; ++k) WithRow(b, b.Physical(k), f);
}

// Rows gathered into one batch: appended one at a time, handed over together. `duration` is the
// constant duration the plan gives the edge's lifetimes, if any: a batch whose rows all have it
// says so (consumers planned for constant durations rely on it), otherwise ends are written out.
// A row that arrives with a pending holder keeps it unless its end is fixed while it is still
// here (FixEnd), in which case it leaves with that end and no holder.
class RowBatchBuilder {
 public:
  RowBatchBuilder(std::shared_ptr<const Schema> schema, BatchKind kind, std::optional<Duration> duration);
  void Append(const Row& row);
  // Writes `end` into the row held here under `id` and returns true; false when no such row is
  // here (it was handed over already, or never came).
  bool FixEnd(HolderId id, Time end);
  int64_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  // The rows so far as one batch (length 0 when none); the builder is empty afterwards.
  Batch Finish();

 private:
  std::shared_ptr<const Schema> schema_;
  BatchKind kind_;
  std::optional<Duration> duration_;
  std::vector<ValueStore> cols_;
  TimeBuilder sync_, other_;
  std::vector<HolderId> holders_;
  int64_t pending_ = 0;
  bool uniform_ = true;          // every row so far ends at its start + duration_
  std::vector<int32_t> row_of_;  // by holder id: the row held here under it, or -1
  int64_t n_ = 0;
  int64_t hint_ = 0;  // rows of the last batch: room made at the next one's first row
};

}  // namespace cq
