#include "lifetime/ordered_runs.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

namespace cq {

void OrderedRuns::PushHead(uint64_t id) {
  const Run& r = runs_.at(id);
  heap_.push_back({r.batch.StartAt(r.offset), id});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

void OrderedRuns::Add(const Batch& batch) {
  if (batch.num_rows() == 0) return;
  const uint64_t id = next_run_++;
  Run& run = runs_[id];
  run.batch = batch.Compact();
  pending_runs_ += !run.batch.holders.empty();
  PushHead(id);
}

EndBatch OrderedRuns::AddEnds(const EndBatch& ends) {
  if (pending_runs_ == 0) return ends;
  // Ends are rare next to rows and held rows few: look the ids up by scanning what is held.
  std::unordered_map<HolderId, int64_t> wanted;  // id -> position in `ends`
  for (int64_t k = 0; k < ends.length; ++k) wanted[ends.ids()[k]] = k;
  std::vector<uint8_t> taken(ends.length, 0);
  for (auto& [id, run] : runs_) {
    Batch& b = run.batch;
    if (b.holders.empty()) continue;
    for (int64_t row = run.offset; row < b.length; ++row) {
      auto it = wanted.find(b.holders.as<const HolderId>()[row]);
      if (it == wanted.end()) continue;
      const Time end = ends.ends.At(it->second);
      taken[it->second] = 1;
      if (!run.own_ends) {
        // Other consumers share these buffers: write into copies. Pending rows get a placeholder.
        std::vector<Time> other(b.length);
        const HolderId* old = b.holders.as<const HolderId>();
        for (int64_t i = 0; i < b.length; ++i) other[i] = old[i] != kNoHolder ? Time::Infinity() : b.EndAt(i);
        Buffer holders = Buffer::Allocate(b.length * sizeof(HolderId));
        std::memcpy(holders.data, old, b.length * sizeof(HolderId));
        b.holders = holders;
        b.other = MakeTimeColumn(other);
        b.constant_duration.reset();
        run.own_ends = true;
      }
      if (end.step != 0 && !b.other.has_steps()) b.other.steps = Buffer::AllocateZeroed(b.length * 8);
      b.holders.as<HolderId>()[row] = kNoHolder;
      b.other.ticks.as<int64_t>()[row] = end.tick;
      if (b.other.has_steps()) b.other.steps.as<int64_t>()[row] = end.step;
    }
  }
  std::vector<HolderId> pass_ids;
  std::vector<Time> pass_ends;
  for (int64_t k = 0; k < ends.length; ++k)
    if (!taken[k]) {
      pass_ids.push_back(ends.ids()[k]);
      pass_ends.push_back(ends.ends.At(k));
    }
  EndBatch pass;
  pass.length = static_cast<int64_t>(pass_ids.size());
  if (pass.length == 0) return pass;
  pass.holders = Buffer::Allocate(pass.length * sizeof(HolderId));
  std::memcpy(pass.holders.data, pass_ids.data(), pass_ids.size() * sizeof(HolderId));
  pass.ends = MakeTimeColumn(pass_ends);
  return pass;
}

Batch OrderedRuns::Release(Time next) {
  // The runs with rows below `next`, merged by a linear pick among them (there are few).
  std::vector<uint64_t> live;
  while (!heap_.empty() && heap_.front().first < next) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    live.push_back(heap_.back().second);
    heap_.pop_back();
  }
  if (live.empty()) return Batch{};
  std::sort(live.begin(), live.end());  // arrival order breaks ties
  std::vector<Run*> runs;
  for (uint64_t id : live) runs.push_back(&runs_.at(id));
  Batch out;
  if (runs.size() == 1) {
    Run& r = *runs[0];
    int64_t k = r.offset;
    while (k < r.batch.length && r.batch.StartAt(k) < next) ++k;
    out = r.batch.Slice(r.offset, k - r.offset);
    r.offset = k;
  } else {
    std::vector<BatchRow> rows;
    std::vector<Time> heads(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) heads[i] = runs[i]->batch.StartAt(runs[i]->offset);
    for (;;) {
      size_t best = runs.size();
      for (size_t i = 0; i < runs.size(); ++i)
        if (heads[i] < next && (best == runs.size() || heads[i] < heads[best])) best = i;
      if (best == runs.size()) break;
      Run& r = *runs[best];
      rows.push_back({static_cast<uint32_t>(best), static_cast<uint32_t>(r.offset)});
      heads[best] = ++r.offset < r.batch.length ? r.batch.StartAt(r.offset) : Time::Infinity();
    }
    out = Gather(runs, rows);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->offset < runs[i]->batch.length) {
      PushHead(live[i]);
    } else {
      pending_runs_ -= !runs[i]->batch.holders.empty();
      runs_.erase(live[i]);
    }
  }
  return out;
}

Batch OrderedRuns::Gather(const std::vector<Run*>& runs, const std::vector<BatchRow>& rows) const {
  std::vector<const Batch*> batches;
  bool same_duration = true, any_holders = false;
  const Batch& first = runs[0]->batch;
  for (const Run* r : runs) {
    const Batch& b = r->batch;
    batches.push_back(&b);
    same_duration &= b.constant_duration.has_value() && first.constant_duration == b.constant_duration;
    any_holders |= !b.holders.empty();
  }
  Batch out;
  out.kind = first.kind;
  out.schema = first.schema;
  out.length = static_cast<int64_t>(rows.size());
  out.columns = GatherRows([&](uint32_t k) -> const Batch& { return *batches[k]; }, rows, first.columns.size());
  std::vector<Time> sync(rows.size()), ends;
  for (size_t k = 0; k < rows.size(); ++k) sync[k] = batches[rows[k].batch]->StartAt(rows[k].row);
  out.sync = MakeTimeColumn(sync);
  if (out.kind == BatchKind::kLifetime) {
    if (same_duration && !any_holders) {
      out.constant_duration = first.constant_duration;
    } else {
      ends.resize(rows.size());
      for (size_t k = 0; k < rows.size(); ++k) {
        const Batch& b = *batches[rows[k].batch];
        ends[k] = b.holders.empty() || b.holders.as<const HolderId>()[rows[k].row] == kNoHolder
                      ? b.EndAt(rows[k].row)
                      : Time::Infinity();
      }
      out.other = MakeTimeColumn(ends);
    }
    if (any_holders) {
      out.holders = Buffer::Allocate(out.length * sizeof(HolderId));
      HolderId* h = out.holders.as<HolderId>();
      for (size_t k = 0; k < rows.size(); ++k) {
        const Batch& b = *batches[rows[k].batch];
        h[k] = b.holders.empty() ? kNoHolder : b.holders.as<const HolderId>()[rows[k].row];
      }
    }
  }
  return out;
}

}  // namespace cq
