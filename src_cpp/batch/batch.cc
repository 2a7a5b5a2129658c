#include "batch/batch.h"

#include <algorithm>

namespace cq {

TimeColumn GatherTime(const TimeColumn& tc, const uint32_t* idx, int64_t n) {
  TimeColumn out;
  if (tc.empty()) return out;
  out.ticks = Buffer::Allocate(n * 8);
  const int64_t* src = tc.tick_data();
  int64_t* dst = out.ticks.as<int64_t>();
  for (int64_t k = 0; k < n; ++k) dst[k] = src[idx[k]];
  if (tc.has_steps()) {
    out.steps = Buffer::Allocate(n * 8);
    const int64_t* ss = tc.step_data();
    int64_t* ds = out.steps.as<int64_t>();
    for (int64_t k = 0; k < n; ++k) ds[k] = ss[idx[k]];
  }
  return out;
}

TimeColumn SliceTime(const TimeColumn& tc, int64_t offset, int64_t n) {
  TimeColumn out;
  if (tc.empty()) return out;
  out.ticks = Buffer::Slice(tc.ticks, offset * 8, n * 8);
  if (tc.has_steps()) out.steps = Buffer::Slice(tc.steps, offset * 8, n * 8);
  return out;
}

Batch Batch::Compact() const {
  if (!has_selection) return *this;
  Batch out;
  out.kind = kind;
  out.schema = schema;
  out.length = selection_count;
  out.constant_duration = constant_duration;
  const uint32_t* idx = sel();
  out.columns.reserve(columns.size());
  for (const Column& c : columns) out.columns.push_back(Gather(c, idx, selection_count));
  out.sync = GatherTime(sync, idx, selection_count);
  out.other = GatherTime(other, idx, selection_count);
  if (!holders.empty()) {
    out.holders = Buffer::Allocate(selection_count * sizeof(HolderId));
    const HolderId* src = holders.as<const HolderId>();
    HolderId* dst = out.holders.as<HolderId>();
    for (int64_t k = 0; k < selection_count; ++k) dst[k] = src[idx[k]];
  }
  return out;
}

Batch Batch::Slice(int64_t offset, int64_t n) const {
  if (offset == 0 && n == num_rows()) return *this;
  Batch out;
  out.kind = kind;
  out.schema = schema;
  out.constant_duration = constant_duration;
  if (has_selection) {  // the rows stay where they are; only the selection is cut
    out.columns = columns;
    out.length = length;
    out.sync = sync;
    out.other = other;
    out.holders = holders;
    out.has_selection = true;
    out.selection = Buffer::Slice(selection, offset * 4, n * 4);
    out.selection_count = n;
    return out;
  }
  out.length = n;
  out.columns.reserve(columns.size());
  for (const Column& c : columns) out.columns.push_back(SliceColumn(c, offset, n));
  out.sync = SliceTime(sync, offset, n);
  out.other = SliceTime(other, offset, n);
  if (!holders.empty())
    out.holders = Buffer::Slice(holders, offset * static_cast<int64_t>(sizeof(HolderId)),
                                n * static_cast<int64_t>(sizeof(HolderId)));
  return out;
}

Batch Batch::WithMaterializedEnd() const {
  if (!constant_duration) return *this;
  Batch out = *this;
  out.constant_duration.reset();
  const Duration d = *constant_duration;
  out.other.ticks = Buffer::Allocate(length * 8);
  int64_t* et = out.other.ticks.as<int64_t>();
  bool steps = sync.has_steps() || d.steps != 0;
  int64_t* es = nullptr;
  if (steps) {
    out.other.steps = Buffer::Allocate(length * 8);
    es = out.other.steps.as<int64_t>();
  }
  if (d.infinite) {  // (past here the compiler knows d is finite and drops the test from each sum)
    std::fill(et, et + length, Time::kInfTick);
    if (es) std::fill(es, es + length, 0);
    return out;
  }
  // The start arrays read directly, with no per-row test of their layout; starts on ticks alone
  // (the commonest case) in a loop of their own.
  const int64_t* st = sync.tick_data();
  if (sync.has_steps()) {
    const int64_t* ss = sync.step_data();
    for (int64_t i = 0; i < length; ++i) {
      const Time e = Time{st[i], ss[i]} + d;
      et[i] = e.tick;
      es[i] = e.step;
    }
  } else {
    for (int64_t i = 0; i < length; ++i) {
      const Time e = Time{st[i], 0} + d;
      et[i] = e.tick;
      if (es) es[i] = e.step;
    }
  }
  return out;
}

}  // namespace cq

namespace cq {

TimeColumn MakeTimeColumn(const std::vector<Time>& times) {
  const int64_t n = static_cast<int64_t>(times.size());
  TimeColumn t;
  t.ticks = Buffer::Allocate(n * 8);
  bool steps = false;
  for (const Time& x : times) steps |= x.step != 0;
  if (steps) t.steps = Buffer::Allocate(n * 8);
  for (int64_t i = 0; i < n; ++i) {
    t.ticks.as<int64_t>()[i] = times[i].tick;
    if (steps) t.steps.as<int64_t>()[i] = times[i].step;
  }
  return t;
}

void TimeBuilder::EnableSteps() {
  has_steps_ = true;
  while (steps_.size() < ticks_.size()) steps_.Append(0);
}

TimeColumn TimeBuilder::Finish() {
  TimeColumn c;
  c.ticks = ticks_.Finish();
  Buffer steps = steps_.Finish();
  if (has_steps_) c.steps = std::move(steps);
  has_steps_ = false;
  return c;
}

}  // namespace cq
