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

OrderedRuns::Run& OrderedRuns::NewRun(uint64_t id) {
  if (spare_.empty()) return runs_[id];
  auto node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = id;
  return runs_.insert(std::move(node)).position->second;
}

void OrderedRuns::DropRun(uint64_t id) {
  auto node = runs_.extract(id);
  node.mapped() = Run{};  // its rows go now, not when the node is reused
  if (spare_.size() < 8) spare_.push_back(std::move(node));
}

void OrderedRuns::Add(const Batch& batch) {
  if (batch.num_rows() == 0) return;
  const uint64_t id = next_run_++;
  Run& run = NewRun(id);
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

void OrderedRuns::ForgetPending(const Batch& b, int64_t from, int64_t to) {
  // Rows gone out: their ends pass on from now.
  if (b.holders.empty() || held_pending_.empty()) return;
  const HolderId* h = b.holders.as<const HolderId>();
  for (int64_t r = from; r < to; ++r)
    if (h[r] != kNoHolder) held_pending_.erase(h[r]);
}

Batch OrderedRuns::Release(Time next) {
  // The runs with rows below `next`, merged by a linear pick among them (there are few). Inside
  // loops this runs once per instant for a row or two, so its lists are kept between calls.
  std::vector<uint64_t>& live = live_;
  live.clear();
  while (!heap_.empty() && heap_.front().first < next) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    live.push_back(heap_.back().second);
    heap_.pop_back();
  }
  if (live.empty()) return Batch{};
  if (live.size() == 1) {
    const uint64_t id = live[0];
    Run& r = runs_.at(id);
    int64_t k = r.offset;
    while (k < r.batch.length && r.batch.StartAt(k) < next) ++k;
    ForgetPending(r.batch, r.offset, k);
    if (k < r.batch.length) {
      Batch out = r.batch.Slice(r.offset, k - r.offset);
      r.offset = k;
      PushHead(id);
      return out;
    }
    // The whole rest of the run goes out: a run released whole moves its batch out, no copy.
    Batch out = r.offset == 0 ? std::move(r.batch) : r.batch.Slice(r.offset, k - r.offset);
    DropRun(id);
    return out;
  }
  std::sort(live.begin(), live.end());  // arrival order breaks ties
  std::vector<Run*>& runs = picked_;
  std::vector<int64_t>& first = first_;  // each run's offset before this call
  runs.clear();
  first.clear();
  for (uint64_t id : live) {
    runs.push_back(&runs_.at(id));
    first.push_back(runs.back()->offset);
  }
  std::vector<BatchRow>& rows = rows_;
  rows.clear();
  if (runs.size() <= 4) {
    // A few runs (the inputs of a union): a linear pick of the earliest head for every row.
    Time heads[4];
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
  } else {
    // Many runs (the heartbeat executor hands over one timestamp per batch): each run's rows in
    // arrival order of the runs, then a stable sort by time, so ties keep arrival order.
    std::vector<std::pair<Time, BatchRow>> keyed;
    for (size_t i = 0; i < runs.size(); ++i) {
      Run& r = *runs[i];
      for (; r.offset < r.batch.length && r.batch.StartAt(r.offset) < next; ++r.offset)
        keyed.push_back({r.batch.StartAt(r.offset), {static_cast<uint32_t>(i), static_cast<uint32_t>(r.offset)}});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& k : keyed) rows.push_back(k.second);
  }
  Batch out = Gather(runs, rows);
  for (size_t i = 0; i < runs.size(); ++i) {
    ForgetPending(runs[i]->batch, first[i], runs[i]->offset);
    if (runs[i]->offset < runs[i]->batch.length) {
      PushHead(live[i]);
    } else {
      DropRun(live[i]);
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

void OrderedRuns::Snapshot(SnapshotWriter& w) const {
  w.U64(next_run_);
  w.U64(runs_.size());
  for (const auto& [id, run] : runs_) {
    w.U64(id);
    w.WriteBatch(run.batch);
    w.I64(run.offset);
    w.Bool(run.own_ends);
  }
  w.U64(heap_.size());
  for (const auto& [t, id] : heap_) {
    w.Pod(t);
    w.U64(id);
  }
  w.U64(held_pending_.size());
  for (const auto& [h, at] : held_pending_) {
    w.U32(h);
    w.U64(at.first);
    w.I64(at.second);
  }
}

void OrderedRuns::Restore(SnapshotReader& r, const Schema& expect) {
  runs_.clear();
  heap_.clear();
  held_pending_.clear();
  next_run_ = r.U64();
  for (size_t n = r.Count(1); n > 0; --n) {
    const uint64_t id = r.U64();
    Run& run = runs_[id];
    run.batch = r.ReadBatch(&expect);
    run.offset = r.I64();
    run.own_ends = r.Bool();
    CQ_SNAPSHOT_CHECK(id < next_run_ && run.offset >= 0 && run.offset < run.batch.length && !run.batch.has_selection,
                      "a held run is out of range");
  }
  for (size_t n = r.Count(24); n > 0; --n) {
    const Time t = r.Pod<Time>();
    const uint64_t id = r.U64();
    CQ_SNAPSHOT_CHECK(runs_.count(id), "the run heap names a run that is not held");
    heap_.push_back({t, id});
  }
  for (size_t n = r.Count(20); n > 0; --n) {
    const HolderId h = r.U32();
    const uint64_t id = r.U64();
    const int64_t row = r.I64();
    auto it = runs_.find(id);
    CQ_SNAPSHOT_CHECK(it != runs_.end() && row >= 0 && row < it->second.batch.length &&
                          !it->second.batch.holders.empty(),
                      "a pending holder names a row that is not held");
    held_pending_[h] = {id, row};
  }
}

}  // namespace cq
