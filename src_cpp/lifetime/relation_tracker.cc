#include "lifetime/relation_tracker.h"

#include <algorithm>

#include "batch/row_equal.h"
#include "engine/errors.h"

namespace cq {

RelationTracker::RelationTracker(ExpirationPolicy policy, bool track_alive)
    : track_alive_(track_alive), expiring_(policy) {}

void RelationTracker::Push(const Batch& in) {
  FlushReleases();
  if (in.num_rows() == 0) return;
  const uint32_t seq = Retain(in.Compact(), in.num_rows());
  const Batch& b = batch(seq);
  const int64_t n = b.length;
  const HolderId* h = b.holders.empty() ? nullptr : b.holders.as<const HolderId>();
  for (int64_t i = 0; i < n; ++i) {
    const bool pending = h && h[i] != kNoHolder;
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slab_.size());
      slab_.emplace_back();
    }
    slab_[slot] = {{seq, static_cast<uint32_t>(i)}, pending ? Time::MinusInfinity() : b.EndAt(i)};
    if (pending) held_pending_[h[i]] = slot;
    const HeapItem item{b.StartAt(i), arrivals_++, slot};
    if (fifo_head_ == fifo_.size() || !(item.start < fifo_.back().start)) {
      fifo_.push_back(item);
    } else {
      heap_.push_back(item);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<HeapItem>());
    }
  }
}

const RelationTracker::HeapItem* RelationTracker::NextHeld() const {
  const HeapItem* f = fifo_head_ < fifo_.size() ? &fifo_[fifo_head_] : nullptr;
  if (heap_.empty()) return f;
  if (!f || *f > heap_.front()) return &heap_.front();
  return f;
}

void RelationTracker::PopHeld(const HeapItem* item) {
  if (!heap_.empty() && item == &heap_.front()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<HeapItem>());
    heap_.pop_back();
    return;
  }
  if (++fifo_head_ == fifo_.size()) {
    fifo_.clear();
    fifo_head_ = 0;
  } else if (fifo_head_ >= 4096 && fifo_head_ * 2 >= fifo_.size()) {
    fifo_.erase(fifo_.begin(), fifo_.begin() + static_cast<std::ptrdiff_t>(fifo_head_));
    fifo_head_ = 0;
  }
}

void RelationTracker::PushEnds(const EndBatch& ends) {
  FlushReleases();
  const HolderId* ids = ends.ids();
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId id = ids[k];
    const Time end = ends.ends.At(k);
    if (id < undetermined_.size() && undetermined_[id].row != kNone) {
      RowRef r = undetermined_[id];
      undetermined_[id].row = kNone;
      if (end.IsInfinite()) {
        if (!track_alive_) Release(r);  // never ends: nothing more to see of it
      } else {
        expiring_.Insert({end, r});
      }
      continue;
    }
    if (auto it = held_pending_.find(id); it != held_pending_.end()) {
      slab_[it->second].end = end;
      held_pending_.erase(it);
    }
  }
}

void RelationTracker::Started(RowRef r, Time start, Time end) {
  if (track_alive_) {
    alive_pos_[Key(r)] = alive_.size();
    alive_.push_back(r);
  }
  if (!end.IsInfinite()) {
    expiring_.Insert({end, r});
  } else if (!track_alive_) {
    Release(r);
  }
}

void RelationTracker::Ended(RowRef r) {
  if (track_alive_) {
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
}

Time RelationTracker::next_instant() const {
  Time t = expiring_.next_end();
  if (const HeapItem* h = NextHeld()) t = std::min(t, h->start);
  return t;
}

void RelationTracker::AdvanceTo(Time progress, const Visitor& visit) {
  FlushReleases();
  // Loops call this at every instant: the lists keep their capacity between calls (taken out of
  // the tracker while in use, so that a visitor calling back in would get lists of its own).
  std::vector<RowRef> starts = std::move(starts_), ends = std::move(ends_);
  for (;;) {
    const Time t = next_instant();
    if (!(t < progress)) break;
    starts.clear();
    ends.clear();
    expiring_.ExpireThrough(t, [&](const Entry& e) { ends.push_back(e.ref); });
    for (const HeapItem* h = NextHeld(); h && h->start == t; h = NextHeld()) {
      const uint32_t slot = h->slot;
      PopHeld(h);
      const RowRef r = slab_[slot].ref;
      const Time end = slab_[slot].end;
      free_slots_.push_back(slot);
      const Batch& b = batch(r.seq);
      const bool pending = end == Time::MinusInfinity();
      if (pending) {
        const HolderId id = b.holders.as<const HolderId>()[r.row];
        held_pending_.erase(id);
        if (id >= undetermined_.size())
          undetermined_.resize(std::max<size_t>(id + 1, undetermined_.size() * 2), {0, kNone});
        undetermined_[id] = r;
      }
      if (!pending && end == t) {
        Release(r);  // a ghost: in I(t) and D(t) at once, so in neither
        continue;
      }
      starts.push_back(r);
      if (pending) {
        if (track_alive_) {
          alive_pos_[Key(r)] = alive_.size();
          alive_.push_back(r);
        }
      } else {
        Started(r, t, end);
      }
    }
    for (const RowRef& r : ends) Ended(r);
    visit(t, starts, ends);
    for (const RowRef& r : ends) Release(r);
  }
  starts.clear();
  ends.clear();
  starts_ = std::move(starts);
  ends_ = std::move(ends);
}

std::vector<RelationTracker::RowRef> RelationTracker::alive() const { return alive_; }

void RelationTracker::Snapshot(SnapshotWriter& w) const {
  SnapshotRetained(w);
  w.PodVec(slab_);
  w.PodVec(free_slots_);
  w.PodVec(heap_);
  w.PodVec(fifo_.data() + fifo_head_, fifo_.size() - fifo_head_);  // the part not handed out yet
  w.U64(arrivals_);
  w.U64(held_pending_.size());
  for (const auto& [h, slot] : held_pending_) {
    w.U32(h);
    w.U32(slot);
  }
  w.PodVec(undetermined_);
  expiring_.Snapshot(w);
  w.PodVec(alive_);
}

void RelationTracker::Restore(SnapshotReader& r, const Schema& expect) {
  RestoreRetained(r, expect);
  r.PodVec(slab_);
  r.PodVec(free_slots_);
  r.PodVec(heap_);
  r.PodVec(fifo_);
  fifo_head_ = 0;
  arrivals_ = r.U64();
  held_pending_.clear();
  for (size_t n = r.Count(8); n > 0; --n) {
    const HolderId h = r.U32();
    held_pending_[h] = r.U32();
  }
  r.PodVec(undetermined_);
  expiring_.Restore(r);
  r.PodVec(alive_);
  // Only what is in use is checked: free slots keep stale references.
  bool ok = true;
  for (uint32_t s : free_slots_) ok &= s < slab_.size();
  for (const HeapItem& x : heap_) ok &= x.slot < slab_.size() && Holds(slab_[x.slot].ref);
  for (const HeapItem& x : fifo_) ok &= x.slot < slab_.size() && Holds(slab_[x.slot].ref);
  ok &= std::is_heap(heap_.begin(), heap_.end(), std::greater<HeapItem>());
  for (size_t k = 1; k < fifo_.size(); ++k) ok &= !(fifo_[k].start < fifo_[k - 1].start);
  for (const auto& [h, slot] : held_pending_) ok &= slot < slab_.size();
  for (const RowRef& x : undetermined_) ok &= x.row == kNone || Holds(x);
  expiring_.ForEach([&](const Entry& e) { ok &= Holds(e.ref); });
  for (const RowRef& x : alive_) ok &= Holds(x);
  CQ_SNAPSHOT_CHECK(ok, "a relation tracker refers to rows it does not hold");
  alive_pos_.clear();
  for (size_t k = 0; k < alive_.size(); ++k) alive_pos_[Key(alive_[k])] = k;
}
}  // namespace cq
