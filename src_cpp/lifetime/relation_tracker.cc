#include "lifetime/relation_tracker.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "base/errors.h"
#include "batch/row_equal.h"

namespace cq {

namespace {
// A copy of the first n times of `c` in buffers nothing else shares, with kPending (Time's
// MinusInfinity) for the rows whose holder in `holders` (when given) says their end is pending.
TimeColumn OwnCopy(const TimeColumn& c, int64_t n, const HolderId* holders = nullptr) {
  TimeColumn own;
  own.ticks = Buffer::Allocate(n * 8);
  if (c.has_steps()) own.steps = Buffer::Allocate(n * 8);
  int64_t* et = own.ticks.as<int64_t>();
  int64_t* es = own.has_steps() ? own.steps.as<int64_t>() : nullptr;
  if (!holders) {
    std::memcpy(et, c.ticks.data, static_cast<size_t>(n) * 8);
    if (es) std::memcpy(es, c.steps.data, static_cast<size_t>(n) * 8);
    return own;
  }
  // A column at a time, without a branch on the holders (which rows are pending is data).
  const int64_t* ct = c.tick_data();
  for (int64_t i = 0; i < n; ++i) et[i] = holders[i] != kNoHolder ? Time::kMinTick : ct[i];
  if (es) {
    const int64_t* cs = c.step_data();
    for (int64_t i = 0; i < n; ++i) es[i] = holders[i] != kNoHolder ? 0 : cs[i];
  }
  return own;
}

// `in`'s rows with their ends in columns of the tracker's own (see SetEnd), a pending one as
// kPending. A constant duration is materialized into fresh columns; other ends are copied.
Batch OwnEnds(const Batch& in) {
  Batch c = in.Compact().WithMaterializedEnd();
  const HolderId* h = c.holders.empty() ? nullptr : c.holders.as<const HolderId>();
  if (!in.constant_duration || h) c.other = OwnCopy(c.other, c.length, h);
  return c;
}
}  // namespace

RelationTracker::RelationTracker(ExpirationPolicy policy, bool track_alive)
    : track_alive_(track_alive), expiring_(policy) {}

uint32_t RelationTracker::RetainOwn(const Batch& in) {
  FlushReleases();
  Batch c = OwnEnds(in);
  const int64_t n = c.length;
  return Retain(std::move(c), n);
}

void RelationTracker::SetPending(HolderId id, Pending p) {
  if (id >= pending_.size()) pending_.resize(std::max<size_t>(id + size_t{1}, pending_.size() * 2), {{0, kNone}, 0});
  pending_[id] = p;
}

void RelationTracker::Push(const Batch& in) {
  if (in.num_rows() == 0) return FlushReleases();
  const uint32_t seq = RetainOwn(in);
  const Batch& b = batch(seq);
  const int64_t n = b.length;
  const HolderId* h = b.holders.empty() ? nullptr : b.holders.as<const HolderId>();

  const size_t mid = held_.size();
  held_.resize(mid + static_cast<size_t>(n));
  Held* out = held_.data() + mid;
  if (b.sync.has_steps()) {
    for (int64_t i = 0; i < n; ++i) out[i] = {b.sync.At(i), {seq, static_cast<uint32_t>(i)}};
  } else {
    const int64_t* st = b.sync.tick_data();
    for (int64_t i = 0; i < n; ++i) out[i] = {{st[i], 0}, {seq, static_cast<uint32_t>(i)}};
  }
  if (h) {
    for (int64_t i = 0; i < n; ++i)
      if (h[i] != kNoHolder) SetPending(h[i], {{seq, static_cast<uint32_t>(i)}, 1});
  }
  if (mid > held_head_ && out[0].start < held_[mid - 1].start) {
    std::inplace_merge(held_.begin() + static_cast<std::ptrdiff_t>(held_head_),
                       held_.begin() + static_cast<std::ptrdiff_t>(mid), held_.end(),
                       [](const Held& a, const Held& b) { return a.start < b.start; });
  }
}

void RelationTracker::SetEnd(RowRef r, Time end) {
  Batch& b = retained_[r.seq - retained_.front().seq].batch;
  if (end.step != 0 && !b.other.has_steps()) b.other.steps = Buffer::AllocateZeroed(b.length * 8);
  b.other.ticks.as<int64_t>()[r.row] = end.tick;
  if (b.other.has_steps()) b.other.steps.as<int64_t>()[r.row] = end.step;
}

void RelationTracker::PushEnds(const EndBatch& ends) {
  FlushReleases();
  const HolderId* ids = ends.ids();
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId id = ids[k];
    if (id >= pending_.size() || pending_[id].ref.row == kNone) continue;  // filtered out upstream
    const Pending p = pending_[id];
    pending_[id].ref.row = kNone;
    const Time end = ends.ends.At(k);
    if (p.held) {
      SetEnd(p.ref, end);
    } else if (!end.IsInfinite()) {
      expiring_.Insert({end, p.ref});
    } else if (!track_alive_) {
      Release(p.ref);  // never ends: nothing more to see of it
    }
  }
}

void RelationTracker::AddAlive(RowRef r) {
  alive_pos_[Key(r)] = alive_.size();
  alive_.push_back(r);
}

void RelationTracker::RemoveAlive(RowRef r) {
  auto it = alive_pos_.find(Key(r));
  CQ_CHECK(it != alive_pos_.end(), "an ending tuple was not alive");
  const size_t pos = it->second;
  alive_pos_.erase(it);
  if (pos + 1 != alive_.size()) {
    alive_[pos] = alive_.back();
    alive_pos_[Key(alive_[pos])] = pos;
  }
  alive_.pop_back();
}

Time RelationTracker::next_instant() const {
  Time t = expiring_.next_end();
  if (HasFrom(held_, held_head_)) t = std::min(t, held_[held_head_].start);
  return t;
}

void RelationTracker::Collect(Time progress, Changes& out) {
  FlushReleases();
  out.clear();
  // The starts: every held row below the progress, in order. Their ends join the lanes first, so
  // that those below the progress come out with the rest.
  const size_t stop =
      static_cast<size_t>(std::partition_point(held_.begin() + static_cast<std::ptrdiff_t>(held_head_), held_.end(),
                                               [&](const Held& h) { return h.start < progress; }) -
                          held_.begin());
  RowRef* starts = out.starts.Append(stop - held_head_);
  Time* start_at = out.start_at.Append(stop - held_head_);
  size_t m = 0;
  uint32_t seq = kNone;
  const int64_t *et = nullptr, *es = nullptr;
  const HolderId* hs = nullptr;
  for (size_t k = held_head_; k < stop; ++k) {
    const Held& h = held_[k];
    if (h.ref.seq != seq) {  // rows come a batch at a time: its columns are looked up once
      seq = h.ref.seq;
      const Batch& b = batch(seq);
      et = b.other.tick_data();
      es = b.other.has_steps() ? b.other.step_data() : nullptr;
      hs = b.holders.empty() ? nullptr : b.holders.as<const HolderId>();
    }
    const uint32_t row = h.ref.row;
    const Time end{et[row], es ? es[row] : 0};
    if (end == kPending) {
      pending_[hs[row]].held = 0;  // now undetermined: its end goes to the lanes when fixed
    } else if (end == h.start) {
      Release(h.ref);  // a ghost: in I(t) and D(t) at once, so in neither
      continue;
    }
    starts[m] = h.ref;
    start_at[m] = h.start;
    ++m;
    if (track_alive_) AddAlive(h.ref);
    if (end == kPending) continue;
    if (!end.IsInfinite()) expiring_.Insert({end, h.ref});
    else if (!track_alive_) Release(h.ref);
  }
  out.starts.Truncate(m);
  out.start_at.Truncate(m);
  held_head_ = stop;
  TrimFront(held_, held_head_);
  // The ends below the progress, merged from the lanes.
  // Room for every end held, so that the merge writes without checking for room.
  const size_t room = expiring_.size();
  RowRef* ends = out.ends.Append(room);
  Time* end_at = out.end_at.Append(room);
  size_t q = 0;
  expiring_.ExpireBefore(progress, [&](const Entry& e) {
    ends[q] = e.ref;
    end_at[q++] = e.end;
    if (track_alive_) RemoveAlive(e.ref);
  });
  Release(ends, q);
  out.ends.Truncate(q);
  out.end_at.Truncate(q);
}

void RelationTracker::AdvanceTo(Time progress, const Visitor& visit) {
  // Loops call this at every instant: the lists keep their capacity between calls (taken out of
  // the tracker while in use, so that a visitor calling back in would get lists of its own).
  Changes c = std::move(changes_);
  std::vector<RowRef> starts = std::move(starts_), ends = std::move(ends_);
  Collect(progress, c);
  size_t i = 0, j = 0;
  while (i < c.starts.size() || j < c.ends.size()) {
    Time t = Time::Infinity();
    if (i < c.starts.size()) t = c.start_at[i];
    if (j < c.ends.size()) t = std::min(t, c.end_at[j]);
    starts.clear();
    ends.clear();
    for (; i < c.starts.size() && c.start_at[i] == t; ++i) starts.push_back(c.starts[i]);
    for (; j < c.ends.size() && c.end_at[j] == t; ++j) ends.push_back(c.ends[j]);
    visit(t, starts, ends);
  }
  starts.clear();
  ends.clear();
  starts_ = std::move(starts);
  ends_ = std::move(ends);
  c.clear();
  changes_ = std::move(c);
}

std::vector<RelationTracker::RowRef> RelationTracker::alive() const { return alive_; }

void RelationTracker::ForEachKept(const KeptVisitor& f) const {
  auto end_of = [&](RowRef r) { return batch(r.seq).other.At(r.row); };
  auto holder_of = [&](RowRef r) { return batch(r.seq).holders.as<const HolderId>()[r.row]; };
  for (size_t k = held_head_; k < held_.size(); ++k) {
    const Held& h = held_[k];
    const Time end = end_of(h.ref);
    if (end == kPending) f(h.ref, h.start, Time::Infinity(), holder_of(h.ref), false);
    else f(h.ref, h.start, end, kNoHolder, false);
  }
  std::unordered_set<uint64_t> ending;  // started rows with an end to come (the alive ones less these never end)
  for (size_t id = 0; id < pending_.size(); ++id) {
    const Pending& p = pending_[id];
    if (p.ref.row == kNone || p.held) continue;
    f(p.ref, batch(p.ref.seq).sync.At(p.ref.row), Time::Infinity(), static_cast<HolderId>(id), true);
    ending.insert(Key(p.ref));
  }
  expiring_.ForEach([&](const Entry& e) {
    f(e.ref, batch(e.ref.seq).sync.At(e.ref.row), e.end, kNoHolder, true);
    ending.insert(Key(e.ref));
  });
  for (const RowRef& r : alive_)
    if (!ending.count(Key(r))) f(r, batch(r.seq).sync.At(r.row), Time::Infinity(), kNoHolder, true);
}

void RelationTracker::Adopt(const Batch& in) {
  if (in.num_rows() == 0) return FlushReleases();
  const uint32_t seq = RetainOwn(in);
  const Batch& b = batch(seq);
  const int64_t n = b.length;
  const HolderId* h = b.holders.empty() ? nullptr : b.holders.as<const HolderId>();
  for (int64_t i = 0; i < n; ++i) {
    const RowRef r{seq, static_cast<uint32_t>(i)};
    if (track_alive_) AddAlive(r);
    if (h && h[i] != kNoHolder) {
      SetPending(h[i], {r, 0});
      continue;
    }
    const Time end = b.other.At(i);
    if (!end.IsInfinite()) expiring_.Insert({end, r});
    else if (!track_alive_) Release(r);
  }
}

void RelationTracker::Snapshot(SnapshotWriter& w) const {
  SnapshotRetained(w);
  w.PodVec(held_.data() + held_head_, held_.size() - held_head_);  // the part not handed out yet
  w.PodVec(pending_);
  expiring_.Snapshot(w);
  w.PodVec(alive_);
}

void RelationTracker::Restore(SnapshotReader& r, const Schema& expect) {
  RestoreRetained(r, expect);
  bool ok = true;
  for (Retained& x : retained_) {
    // The ends are written into: the tracker's own copy, not a buffer the snapshot may share.
    Batch& b = x.batch;
    ok &= !b.constant_duration && Covers(b.other.ticks, b.length, 8) &&
          (!b.other.has_steps() || Covers(b.other.steps, b.length, 8));
    if (!ok) break;
    b.other = OwnCopy(b.other, b.length);
  }
  CQ_SNAPSHOT_CHECK(ok, "a relation tracker's rows have no end times");
  r.PodVec(held_, "a tracker's held starts", [](const Held& h) { return SnapshotReader::ValidTime(h.start); });
  held_head_ = 0;
  r.PodVec(pending_);  // (by holder id: its size is bounded by the bytes like any vector)
  expiring_.Restore(r);
  r.PodVec(alive_);
  // Only what is in use is checked.
  for (size_t k = 0; k < held_.size(); ++k)
    ok &= Holds(held_[k].ref) && (k == 0 || !(held_[k].start < held_[k - 1].start));
  for (size_t id = 0; id < pending_.size(); ++id) {
    const Pending& p = pending_[id];
    if (p.ref.row == kNone) continue;
    ok &= p.held <= 1 && Holds(p.ref);
    if (!ok) break;
    const Batch& b = batch(p.ref.seq);
    ok &= !b.holders.empty() && b.holders.as<const HolderId>()[p.ref.row] == id;
  }
  expiring_.ForEach([&](const Entry& e) { ok &= Holds(e.ref); });
  for (const RowRef& x : alive_) ok &= Holds(x);
  CQ_SNAPSHOT_CHECK(ok, "a relation tracker refers to rows it does not hold");
  alive_pos_.clear();
  for (size_t k = 0; k < alive_.size(); ++k) alive_pos_[Key(alive_[k])] = k;
}
}  // namespace cq
