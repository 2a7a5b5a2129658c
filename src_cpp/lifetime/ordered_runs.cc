#include "lifetime/ordered_runs.h"

#include <algorithm>
#include <cstring>
#include <functional>

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
  if (!run.batch.holders.empty()) {
    const HolderId* h = run.batch.holders.as<const HolderId>();
    for (int64_t i = 0; i < run.batch.length; ++i)
      if (h[i] != kNoHolder) held_pending_[h[i]] = {id, i};
  }
  PushHead(id);
}

EndBatch OrderedRuns::AddEnds(const EndBatch& ends) {
  if (held_pending_.empty()) return ends;
  std::vector<HolderId> pass_ids;
  std::vector<Time> pass_ends;
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId h = ends.ids()[k];
    const Time end = ends.ends.At(k);
    auto it = held_pending_.find(h);
    if (it == held_pending_.end()) {
      pass_ids.push_back(h);
      pass_ends.push_back(end);
      continue;
    }
    const auto [id, row] = it->second;
    held_pending_.erase(it);
    Run& run = runs_.at(id);
    Batch& b = run.batch;
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
  EndBatch pass;
  pass.length = static_cast<int64_t>(pass_ids.size());
  if (pass.length == 0) return pass;
  pass.holders = Buffer::Allocate(pass.length * sizeof(HolderId));
  std::memcpy(pass.holders.data, pass_ids.data(), pass_ids.size() * sizeof(HolderId));
  pass.ends = MakeTimeColumn(pass_ends);
  return pass;
}

Batch OrderedRuns::Release(Time next) {
  std::vector<Segment> segments;
  while (!heap_.empty() && heap_.front().first < next) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const uint64_t id = heap_.back().second;
    heap_.pop_back();
    Run& run = runs_.at(id);
    const Batch& b = run.batch;
    // Take rows while they come before every other run's next row (and below `next`).
    const std::pair<Time, uint64_t> other = heap_.empty() ? std::pair{next, uint64_t{0}} : heap_.front();
    int64_t k = run.offset;
    while (k < b.length) {
      const Time t = b.StartAt(k);
      if (!(t < next) || !(std::pair{t, id} < other)) break;
      ++k;
    }
    if (!b.holders.empty()) {
      const HolderId* h = b.holders.as<const HolderId>();
      for (int64_t i = run.offset; i < k; ++i)
        if (h[i] != kNoHolder) held_pending_.erase(h[i]);
    }
    segments.push_back({id, run.offset, k});
    run.offset = k;
    if (k < b.length) PushHead(id);
  }
  Batch out = segments.empty() ? Batch{} : Gather(segments);
  for (const Segment& s : segments)  // a run may have given several segments
    if (auto it = runs_.find(s.run); it != runs_.end() && it->second.offset == it->second.batch.length)
      runs_.erase(it);
  return out;
}

Batch OrderedRuns::Gather(const std::vector<Segment>& segments) const {
  // One run, or runs that follow one another: consecutive rows of one batch need no gather.
  if (segments.size() == 1) {
    const Segment& s = segments[0];
    return runs_.at(s.run).batch.Slice(s.from, s.to - s.from);
  }
  std::vector<const Batch*> batches;
  std::vector<BatchRow> rows;
  bool same_duration = true, any_holders = false;
  const Batch& first = runs_.at(segments[0].run).batch;
  for (const Segment& s : segments) {
    const Batch& b = runs_.at(s.run).batch;
    batches.push_back(&b);
    for (int64_t i = s.from; i < s.to; ++i)
      rows.push_back({static_cast<uint32_t>(batches.size() - 1), static_cast<uint32_t>(i)});
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
