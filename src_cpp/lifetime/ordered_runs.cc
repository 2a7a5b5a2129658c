#include "lifetime/ordered_runs.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include "base/few_on_stack.h"

namespace cq {

void OrderedRuns::PushHead(uint64_t id, const Run& r) {
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
    for (int64_t i = 0; i < run.batch.length; ++i) {
      if (h[i] == kNoHolder) continue;
      if (h[i] >= held_pending_.size())
        held_pending_.resize(std::max<size_t>(h[i] + size_t{1}, held_pending_.size() * 2), {kNoRun, 0});
      pending_count_ += held_pending_[h[i]].run == kNoRun;
      held_pending_[h[i]] = {id, i};
    }
  }
  PushHead(id, run);
}

EndBatch OrderedRuns::AddEnds(const EndBatch& ends) {
  if (pending_count_ == 0) return ends;
  std::vector<HolderId> pass_ids;
  std::vector<Time> pass_ends;
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId h = ends.ids()[k];
    const Time end = ends.ends.At(k);
    if (h >= held_pending_.size() || held_pending_[h].run == kNoRun) {
      pass_ids.push_back(h);
      pass_ends.push_back(end);
      continue;
    }
    const auto [id, row] = held_pending_[h];
    Forget(h);
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
  if (b.holders.empty() || pending_count_ == 0) return;
  const HolderId* h = b.holders.as<const HolderId>();
  for (int64_t r = from; r < to; ++r)
    if (h[r] != kNoHolder) Forget(h[r]);
}

Batch OrderedRuns::Release(Time next) {
  // The runs with rows below `next`, merged (Merge) into one gather. Inside loops this runs once
  // per instant for a row or two, so its lists are kept between calls.
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
      PushHead(id, r);
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
  Merge(runs, next);
  Batch out = Gather(runs, which_.data(), rows_.data(), static_cast<int64_t>(which_.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    ForgetPending(runs[i]->batch, first[i], runs[i]->offset);
    if (runs[i]->offset < runs[i]->batch.length) {
      PushHead(live[i], *runs[i]);
    } else {
      DropRun(live[i]);
    }
  }
  return out;
}

void OrderedRuns::Merge(const std::vector<Run*>& runs, Time next) {
  ScratchList<uint32_t>& which = which_;
  ScratchList<uint32_t>& rows = rows_;
  which.clear();
  rows.clear();
  // Each run's rows below `next`: [offset, stop), found by bisection (a run is in time order).
  bool ticks = true;  // no row has an ε-step: rows compare by their ticks
  FewOnStack<int64_t, 4> stop(runs.size());
  size_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Batch& b = runs[i]->batch;
    ticks &= !b.sync.has_steps();
    int64_t lo = runs[i]->offset, hi = b.length;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (b.StartAt(mid) < next) lo = mid + 1;
      else hi = mid;
    }
    stop[i] = lo;
    total += static_cast<size_t>(lo - runs[i]->offset);
  }
  uint32_t* w = which.Append(total);
  uint32_t* r = rows.Append(total);
  // Runs that follow one another in time (each run's first row not before the previous one's last)
  // make a chain, sorted by (time, arrival) as the output is: the chunks of one input, or the rows a
  // release left at its bound and the next push of the same input. When the runs form at most two
  // chains, as a union of two inputs does however they were pushed, they are merged two-way, run
  // pair by run pair, and equal times between the pair go in arrival order.
  FewOnStack<uint32_t, 4> chain0(runs.size()), chain1(runs.size());
  size_t n0 = 0, n1 = 0;
  bool two = true;
  Time last0, last1;
  for (size_t i = 0; i < runs.size() && two; ++i) {
    if (runs[i]->offset == stop[i]) continue;
    const Batch& b = runs[i]->batch;
    const Time first = b.StartAt(runs[i]->offset), last = b.StartAt(stop[i] - 1);
    if (n0 == 0 || last0 <= first) {
      chain0[n0++] = static_cast<uint32_t>(i);
      last0 = last;
    } else if (n1 == 0 || last1 <= first) {
      chain1[n1++] = static_cast<uint32_t>(i);
      last1 = last;
    } else {
      two = false;
    }
  }
  if (two) {
    MergeChains(runs, stop.data(), chain0.data(), n0, chain1.data(), n1, ticks, w, r);
    return;
  }
  if (runs.size() > 4) {
    // Many runs: the heartbeat executor hands over one timestamp per batch, and a union gets an
    // input pushed in several chunks. A k-way merge over a min-heap of the runs' heads by (time,
    // arrival), where each pop hands out the whole stretch of its run that comes before every
    // other head: runs that do not interleave go out a stretch at a time, not row by row.
    std::vector<std::pair<Time, uint32_t>>& heads = heads_;
    heads.clear();
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i]->offset < stop[i])
        heads.push_back({runs[i]->batch.StartAt(runs[i]->offset), static_cast<uint32_t>(i)});
    std::make_heap(heads.begin(), heads.end(), std::greater<>());
    size_t k = 0;
    while (!heads.empty()) {
      std::pop_heap(heads.begin(), heads.end(), std::greater<>());
      const uint32_t i = heads.back().second;
      heads.pop_back();
      const Batch& b = runs[i]->batch;
      int64_t o = runs[i]->offset;
      const int64_t e = stop[i];
      if (heads.empty()) {
        for (; o < e; ++o, ++k) w[k] = i, r[k] = static_cast<uint32_t>(o);
      } else {
        const std::pair<Time, uint32_t> bound = heads.front();
        do {
          w[k] = i;
          r[k++] = static_cast<uint32_t>(o++);
        } while (o < e && std::pair<Time, uint32_t>{b.StartAt(o), i} < bound);
        if (o < e) {
          heads.push_back({b.StartAt(o), i});
          std::push_heap(heads.begin(), heads.end(), std::greater<>());
        }
      }
      runs[i]->offset = o;
    }
    return;
  }
  // A few runs: a linear pick of the earliest head for every row, among the runs with rows left,
  // kept in locals in arrival order (which breaks ties) and dropped as they run out.
  size_t live = 0;
  uint32_t id[4];
  int64_t off[4], end[4];
  Time heads[4];
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->offset == stop[i]) continue;
    id[live] = static_cast<uint32_t>(i);
    off[live] = runs[i]->offset;
    end[live] = stop[i];
    heads[live++] = runs[i]->batch.StartAt(runs[i]->offset);
  }
  for (size_t k = 0; live > 0; ++k) {
    size_t best = 0;
    for (size_t x = 1; x < live; ++x)
      if (heads[x] < heads[best]) best = x;
    w[k] = id[best];
    r[k] = static_cast<uint32_t>(off[best]);
    if (++off[best] < end[best]) {
      heads[best] = runs[id[best]]->batch.StartAt(off[best]);
      continue;
    }
    for (size_t x = best + 1; x < live; ++x) {
      id[x - 1] = id[x];
      off[x - 1] = off[x];
      end[x - 1] = end[x];
      heads[x - 1] = heads[x];
    }
    --live;
  }
  for (size_t i = 0; i < runs.size(); ++i) runs[i]->offset = stop[i];
}

void OrderedRuns::MergeChains(const std::vector<Run*>& runs, const int64_t* stop, const uint32_t* chain0, size_t n0,
                              const uint32_t* chain1, size_t n1, bool ticks, uint32_t* w, uint32_t* r) {
  size_t k = 0, a = 0, c = 0;  // a, c: the current run of each chain
  while (a < n0 && c < n1) {
    const uint32_t ra = chain0[a], rc = chain1[c];
    const Batch& x = runs[ra]->batch;
    const Batch& y = runs[rc]->batch;
    int64_t i = runs[ra]->offset, j = runs[rc]->offset;
    const int64_t ni = stop[ra], nj = stop[rc];
    // Equal times go in arrival order: y's row first only if y's run came first.
    const bool tie = rc < ra;
    // Without a branch on the data: which chain comes next is as good as random.
    auto merge = [&](auto y_first) {
      while (i < ni && j < nj) {
        const bool second = y_first(i, j);
        w[k] = second ? rc : ra;
        r[k] = static_cast<uint32_t>(second ? j : i);
        j += second;
        i += !second;
        ++k;
      }
    };
    if (ticks) {  // no ε-step anywhere: rows compare by their ticks
      const int64_t* xt = x.sync.tick_data();
      const int64_t* yt = y.sync.tick_data();
      merge([&](int64_t i, int64_t j) { return (yt[j] < xt[i]) | (tie & (yt[j] == xt[i])); });
    } else {
      merge([&](int64_t i, int64_t j) {
        const Time s = y.StartAt(j), t = x.StartAt(i);
        return s < t || (tie && s == t);
      });
    }
    runs[ra]->offset = i;
    runs[rc]->offset = j;
    a += i == ni;
    c += j == nj;
  }
  // What is left of either chain follows in order.
  for (const auto& [chain, n, from] : {std::tuple{chain0, n0, a}, std::tuple{chain1, n1, c}}) {
    for (size_t q = from; q < n; ++q) {
      Run& run = *runs[chain[q]];
      for (int64_t i = run.offset; i < stop[chain[q]]; ++i, ++k) w[k] = chain[q], r[k] = static_cast<uint32_t>(i);
      run.offset = stop[chain[q]];
    }
  }
}

Batch OrderedRuns::Gather(const std::vector<Run*>& runs, const uint32_t* which, const uint32_t* rows, int64_t n) const {
  bool same_duration = true, any_holders = false, sync_steps = false, end_steps = false;
  const Batch& first = runs[0]->batch;
  // What the per-row loops read of each run, unpacked once.
  struct View {
    const int64_t *st, *ss, *et, *es;
    const HolderId* h;
    std::optional<Duration> d;
  };
  FewOnStack<View, 4> views(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const Batch& b = runs[i]->batch;
    same_duration &= b.constant_duration.has_value() && first.constant_duration == b.constant_duration;
    any_holders |= !b.holders.empty();
    sync_steps |= b.sync.has_steps();
    end_steps |= b.constant_duration
                     ? !b.constant_duration->infinite && (b.constant_duration->steps || b.sync.has_steps())
                     : b.other.has_steps();
    views[i] = {b.sync.tick_data(),
                b.sync.has_steps() ? b.sync.step_data() : nullptr,
                b.other.empty() ? nullptr : b.other.tick_data(),
                b.other.has_steps() ? b.other.step_data() : nullptr,
                b.holders.empty() ? nullptr : b.holders.as<const HolderId>(),
                b.constant_duration};
  }
  Batch out;
  out.kind = first.kind;
  out.schema = first.schema;
  out.length = n;
  out.sync.ticks = Buffer::Allocate(n * 8);
  int64_t* st = out.sync.ticks.as<int64_t>();
  // Each run's holders in a list of their own, so that the per-row loop makes one load per row
  // where a View would take two.
  FewOnStack<const HolderId*, 4> holders(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) holders[i] = views[i].h;
  // The start ticks go with the columns, in the same pass when it can take them.
  const size_t width = first.columns.size();
  FewOnStack<const Column*, 4> sources(runs.size());
  FewOnStack<const int64_t*, 4> ticks(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    sources[i] = runs[i]->batch.columns.data();
    ticks[i] = views[i].st;
  }
  out.columns.resize(width);
  GatherColumns(sources.data(), runs.size(), width, which, rows, n, out.columns.data(), ticks.data(), st);
  if (sync_steps) {
    out.sync.steps = Buffer::Allocate(n * 8);
    int64_t* ss = out.sync.steps.as<int64_t>();
    for (int64_t k = 0; k < n; ++k) ss[k] = views[which[k]].ss ? views[which[k]].ss[rows[k]] : 0;
  }
  if (out.kind != BatchKind::kLifetime) return out;
  if (same_duration && !any_holders) {
    out.constant_duration = first.constant_duration;
  } else {
    // Ends materialized; a pending row gets a placeholder (its holder says its end is unknown).
    out.other.ticks = Buffer::Allocate(n * 8);
    int64_t* et = out.other.ticks.as<int64_t>();
    int64_t* es = nullptr;
    if (end_steps) es = (out.other.steps = Buffer::Allocate(n * 8)).as<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      const View& v = views[which[k]];
      const uint32_t i = rows[k];
      Time e;
      if (v.h && v.h[i] != kNoHolder) e = Time::Infinity();
      else if (v.d) e = Time{v.st[i], v.ss ? v.ss[i] : 0} + *v.d;
      else e = {v.et[i], v.es ? v.es[i] : 0};
      et[k] = e.tick;
      if (es) es[k] = e.step;
    }
  }
  if (any_holders) {
    out.holders = Buffer::Allocate(out.length * sizeof(HolderId));
    HolderId* h = out.holders.as<HolderId>();
    for (int64_t k = 0; k < n; ++k) {
      const HolderId* hw = holders[which[k]];
      h[k] = hw ? hw[rows[k]] : kNoHolder;
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
  w.U64(pending_count_);
  for (size_t h = 0; h < held_pending_.size(); ++h) {
    if (held_pending_[h].run == kNoRun) continue;
    w.U32(static_cast<HolderId>(h));
    w.U64(held_pending_[h].run);
    w.I64(held_pending_[h].row);
  }
}

void OrderedRuns::Restore(SnapshotReader& r, const Schema& expect, BatchKind kind) {
  runs_.clear();
  heap_.clear();
  held_pending_.clear();
  pending_count_ = 0;
  next_run_ = r.U64();
  // The runs, by id (as the map holds them): each a compact batch in time order from its offset
  // on; one whose ends were written into keeps its own holders and ends.
  uint64_t last = 0;
  for (size_t n = r.Count(1, "the held runs"); n > 0; --n) {
    const uint64_t id = r.Below(next_run_, "a held run's id");
    CQ_SNAPSHOT_CHECK(runs_.empty() || id > last, "the held runs are not in the order of their ids");
    last = id;
    Run& run = runs_[id];
    run.batch = r.ReadBatch(expect, kind);
    run.offset = r.I64In(0, run.batch.length - 1, "a held run's offset");
    run.own_ends = r.Bool();
    CQ_SNAPSHOT_CHECK(!run.batch.has_selection, "a held run is not compact");
    CQ_SNAPSHOT_CHECK(!run.own_ends || (!run.batch.holders.empty() && !run.batch.constant_duration &&
                                        Covers(run.batch.other.ticks, run.batch.length, 8)),
                      "a held run that keeps its own ends has none");
  }
  // The heap: each run once, at the time of its next row, in heap order.
  CQ_SNAPSHOT_CHECK(r.Count(24, "the run heap") == runs_.size(), "the run heap does not hold every run once");
  std::set<uint64_t> in_heap;
  for (size_t n = runs_.size(); n > 0; --n) {
    const Time t = r.TimeValue("a run's next time");
    const uint64_t id = r.U64();
    auto it = runs_.find(id);
    CQ_SNAPSHOT_CHECK(it != runs_.end() && in_heap.insert(id).second, "the run heap does not hold every run once");
    SnapshotReader::Expect(t, it->second.batch.StartAt(it->second.offset), "a run's time in the heap");
    heap_.push_back({t, id});
  }
  CQ_SNAPSHOT_CHECK(std::is_heap(heap_.begin(), heap_.end(), std::greater<>()), "the run heap is not a heap");
  // The rows held with a pending end: every one of them, by its holder.
  for (size_t n = r.Count(20, "the pending holders"); n > 0; --n) {
    const HolderId h = r.Holder();
    const uint64_t id = r.U64();
    const int64_t row = r.I64();
    auto it = runs_.find(id);
    CQ_SNAPSHOT_CHECK(it != runs_.end() && row >= it->second.offset && row < it->second.batch.length &&
                          it->second.batch.EndPending(row) && it->second.batch.holders.as<const HolderId>()[row] == h,
                      "a pending holder names a row that is not held, or not under it");
    CQ_SNAPSHOT_CHECK(h >= held_pending_.size() || held_pending_[h].run == kNoRun, "a pending holder is held twice");
    if (h >= held_pending_.size()) held_pending_.resize(h + size_t{1}, {kNoRun, 0});
    held_pending_[h] = {id, row};
    ++pending_count_;
  }
  size_t pending = 0;
  for (const auto& [id, run] : runs_)
    for (int64_t i = run.offset; i < run.batch.length; ++i) pending += run.batch.EndPending(i);
  SnapshotReader::Expect(pending_count_, pending, "the pending holders (one per held row with a pending end)");
}

}  // namespace cq
