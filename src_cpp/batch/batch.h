#pragma once
// The one batch format every operator exchanges (ARCHITECTURE.md §3.3, after Trill's
// SyncTime/OtherTime): user columns + two time columns + an optional selection vector.
//
//   stream batch    sync = the tuple's timestamp, no `other`
//   lifetime batch  sync = start, other = end of the half-open lifetime [start, end)
//
// `end` has three representations, so that operators pay only for what the plan needs:
//   * implicit: `constant_duration` is set and end = start + d (the [Range T], [Now] and
//     [Range Unbounded] windows produce this; nothing is stored per row);
//   * materialized: `other` holds a tick (and optionally a step) per row; Time::Infinity() for
//     tuples that never end;
//   * pending: `holders` holds an ExpirationHolder id per row (kNoHolder where the end is known);
//     the end is fixed later by the holder's producer (paper 003 §4.1; see lifetime/).
// Rows are in non-decreasing `sync` order inside a batch and across the batches of one edge.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/few_on_stack.h"
#include "base/inline_vector.h"
#include "batch/column.h"
#include "time/time.h"

namespace cq {

// A pending end's holder, as a batch's `holders` column carries it: an id of the engine's holder
// table (lifetime/expiration_holder.h), or kNoHolder where the row's end is known.
using HolderId = uint32_t;
inline constexpr HolderId kNoHolder = std::numeric_limits<HolderId>::max();

// Ticks and steps of one time column. `steps` is empty when every step is 0, which is always the
// case outside loops, so the common path carries one int64 per row.
struct TimeColumn {
  Buffer ticks;
  Buffer steps;

  bool empty() const { return ticks.empty(); }
  bool has_steps() const { return !steps.empty(); }
  const int64_t* tick_data() const { return ticks.as<const int64_t>(); }
  const int64_t* step_data() const { return steps.as<const int64_t>(); }
  Time At(int64_t i) const { return {tick_data()[i], has_steps() ? step_data()[i] : 0}; }
};

TimeColumn GatherTime(const TimeColumn& tc, const uint32_t* idx, int64_t n);
TimeColumn SliceTime(const TimeColumn& tc, int64_t offset, int64_t n);

// A batch's columns, the first two inline (see InlineVector): the loops of paper 000 carry two;
// wider batches keep theirs on the heap, as before, and move as cheaply.
using Columns = InlineVector<Column, 2>;

enum class BatchKind : uint8_t { kStream, kLifetime };

struct Batch {
  BatchKind kind = BatchKind::kStream;
  std::shared_ptr<const Schema> schema;
  Columns columns;
  int64_t length = 0;  // physical rows in the columns
  TimeColumn sync;
  TimeColumn other;
  std::optional<Duration> constant_duration;
  Buffer holders;  // HolderId per row, or empty when no end is pending

  // Selected physical rows in order; `has_selection == false` means all rows [0, length).
  bool has_selection = false;
  Buffer selection;  // uint32
  int64_t selection_count = 0;

  int64_t num_rows() const { return has_selection ? selection_count : length; }
  const uint32_t* sel() const { return selection.as<const uint32_t>(); }
  int64_t Physical(int64_t k) const { return has_selection ? sel()[k] : k; }

  Time StartAt(int64_t physical) const { return sync.At(physical); }
  Time EndAt(int64_t physical) const {
    if (constant_duration) return sync.At(physical) + *constant_duration;
    return other.At(physical);
  }
  bool EndPending(int64_t physical) const {
    return !holders.empty() && holders.as<const HolderId>()[physical] != kNoHolder;
  }

  // A compact copy of the selected rows (zero-copy when nothing is deselected).
  Batch Compact() const;
  // The batch itself when nothing is deselected, else a compact copy put in `storage`: operators
  // that only read spare the copy (and its reference counting) on the common path.
  const Batch& CompactInto(Batch& storage) const {
    if (!has_selection) return *this;
    storage = Compact();
    return storage;
  }
  // Selected rows [offset, offset + n) (in selection order), sharing this batch's buffers.
  Batch Slice(int64_t offset, int64_t n) const;
  // `other` filled in from `constant_duration` (needed when lifetimes of different durations meet).
  Batch WithMaterializedEnd() const;
};

// End times fixed for tuples emitted earlier with a pending holder: holder ids and their ends.
struct EndBatch {
  Buffer holders;  // HolderId
  TimeColumn ends;
  int64_t length = 0;
  const HolderId* ids() const { return holders.as<const HolderId>(); }
};

}  // namespace cq

namespace cq {

// A row of one of several batches: which batch (as its owner numbers them) and which row.
struct BatchRow {
  uint32_t batch;
  uint32_t row;
};

// The columns of `rows`, in that order (rows of several batches, interleaved any way).
// `batch_of(i)` returns the batch numbered i.
inline uint32_t BatchOfRow(const BatchRow& r) { return r.batch; }

// `Row` is BatchRow or any row reference with a `row` field and a BatchOfRow overload (found by
// argument-dependent lookup), so that callers need not convert their references first.
template <typename BatchOf, typename Row>
Columns GatherRows(const BatchOf& batch_of, const std::vector<Row>& rows, size_t width) {
  // Number the distinct batches, then take every column in one pass. Rows may come from very
  // many small batches (the heartbeat executor's one-timestamp items): a hash map numbers them.
  std::vector<const Batch*> batches;
  std::unordered_map<const Batch*, uint32_t> number;
  FewOnStack<uint32_t, 16> which(rows.size()), idx(rows.size());  // each row's batch number, row
  uint32_t last = 0;
  bool have_last = false;
  for (size_t k = 0; k < rows.size(); ++k) {
    const uint32_t batch_k = BatchOfRow(rows[k]);
    if (!have_last || batch_k != last) {
      const Batch* b = &batch_of(batch_k);
      // Loops gather a row or two from one or two batches: a look along the list beats hashing
      // (and the table's allocations) until there are many.
      size_t pos;
      if (batches.size() < 16) {
        pos = static_cast<size_t>(std::find(batches.begin(), batches.end(), b) - batches.begin());
      } else {
        if (number.empty())
          for (size_t i = 0; i < batches.size(); ++i) number.emplace(batches[i], static_cast<uint32_t>(i));
        pos = number.try_emplace(b, static_cast<uint32_t>(batches.size())).first->second;
      }
      if (pos == batches.size()) batches.push_back(b);
      last = batch_k;
      have_last = true;
      which[k] = static_cast<uint32_t>(pos);
    } else {
      which[k] = which[k - 1];
    }
    idx[k] = rows[k].row;
  }
  Columns out;
  out.reserve(width);
  std::vector<const Column*> srcs(batches.size());
  for (size_t c = 0; c < width; ++c) {
    for (size_t b = 0; b < batches.size(); ++b) srcs[b] = &batches[b]->columns[c];
    out.push_back(GatherMulti(srcs, which.data(), idx.data(), static_cast<int64_t>(rows.size())));
  }
  return out;
}

// A time column of the given times.
TimeColumn MakeTimeColumn(const std::vector<Time>& times);

// A time column built a time at a time, with steps only once some time has a non-zero step.
class TimeBuilder {
 public:
  // Called for every output row of the operators that build times (the aggregate's results):
  // always inline, which GCC's size heuristics otherwise decide differently from build to build.
  [[gnu::always_inline]] void Append(Time t) {
    if (t.step != 0 && !has_steps_) EnableSteps();
    ticks_.Append(t.tick);
    if (has_steps_) steps_.Append(t.step);
  }
  void Set(int64_t i, Time t) {
    if (t.step != 0 && !has_steps_) EnableSteps();
    ticks_[i] = t.tick;
    if (has_steps_) steps_[i] = t.step;
  }
  void Reserve(int64_t n) { ticks_.Reserve(n); }
  int64_t size() const { return ticks_.size(); }
  // The times so far; the builder is empty afterwards.
  TimeColumn Finish();

 private:
  void EnableSteps();
  BufferBuilder<int64_t> ticks_, steps_;
  bool has_steps_ = false;
};

}  // namespace cq
