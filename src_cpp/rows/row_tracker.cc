#include "rows/row_tracker.h"

#include <algorithm>

#include "base/errors.h"
#include "base/few_on_stack.h"
#include "batch/snapshot.h"
#include "lifetime/negative_tracker.h"

namespace cq {

void RowTracker::AppendBagDifference(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                                     std::vector<uint32_t>& out) const {
  if (b.empty()) {
    out.insert(out.end(), a.begin(), a.end());
    return;
  }
  if (a.size() == 1 && b.size() == 1) {  // a loop's instant: a row against a row
    if (!layout().Equal(values(b[0]), values(a[0]))) out.push_back(a[0]);
    return;
  }
  const RowLayout& l = layout();
  if (a.size() * b.size() <= kFewPairs) {
    FewOnStack<uint8_t, 64> used(b.size(), 0);  // which rows of b have cancelled one of a
    for (uint32_t x : a) {
      bool cancelled = false;
      for (size_t k = 0; k < b.size() && !cancelled; ++k) {
        ++bag_work_;
        if (!used[k] && l.Equal(values(b[k]), values(x))) used[k] = cancelled = true;
      }
      if (!cancelled) out.push_back(x);
    }
    return;
  }
  // Many against many (an instant of a batch of rows: a loop turns them all at once): the rows of
  // b are counted by value in a hash table, and each row of a takes one of its value's count, so
  // the cost is linear in the rows, not their product — however often a value repeats (one entry
  // per value: a run of equal keys would make every probe and removal walk it). The same rows of
  // a are cancelled (the first ones of each value, as many as b holds).
  by_value_.clear();
  counts_.clear();
  auto find = [&](uint64_t h, const Value* v) {
    int64_t found = -1;
    by_value_.ForEachWith(h, [&](uint32_t k) {
      ++bag_work_;
      if (found < 0 && l.Equal(values(counts_[k].slot), v)) found = k;
    });
    return found;
  };
  for (uint32_t y : b) {
    const Value* v = values(y);
    const uint64_t h = l.Hash(v);
    const int64_t k = find(h, v);
    if (k >= 0) {
      ++counts_[k].n;
    } else {
      by_value_.Insert(h, static_cast<uint32_t>(counts_.size()));
      counts_.push_back({y, 1});
    }
  }
  for (uint32_t x : a) {
    const Value* v = values(x);
    const int64_t k = find(l.Hash(v), v);
    if (k >= 0 && counts_[k].n > 0) --counts_[k].n;
    else out.push_back(x);
  }
}

// ---- direct ----------------------------------------------------------------------------------

void RowRelationTracker::Push(const Row& row) {
  const Held h{row.sync, row.pending() ? Time::MinusInfinity() : row.other, store_.Add(row.values), row.holder};
  if (!HasFrom(fifo_, fifo_head_) || !(h.start < fifo_.back().start)) {
    if (row.pending()) Put(held_pending_, row.holder, static_cast<uint32_t>(fifo_base_ + fifo_.size()));
    fifo_.push_back(h);
  } else {
    late_.push_back({h, arrivals_});
    std::push_heap(late_.begin(), late_.end(), std::greater<Late>());
  }
  ++arrivals_;
}

void RowRelationTracker::PopLate() {
  std::pop_heap(late_.begin(), late_.end(), std::greater<Late>());
  late_.pop_back();
}

void RowRelationTracker::CompactFifo() {
  // (PopHeld empties a FIFO it has drained itself, and calls this only past 4,096 pops.)
  if (fifo_head_ * 2 >= fifo_.size()) {
    fifo_.erase(fifo_.begin(), fifo_.begin() + static_cast<std::ptrdiff_t>(fifo_head_));
    fifo_base_ += fifo_head_;
    fifo_head_ = 0;
  }
}

void RowRelationTracker::PushEnd(HolderId id, Time end) {
  if (id < undetermined_.size() && undetermined_[id] != kNone) {
    const uint32_t slot = undetermined_[id];
    undetermined_[id] = kNone;
    if (end.IsInfinite()) {
      if (!track_alive_) Release(slot);  // never ends: nothing more to see of it
    } else {
      expiring_.Insert({end, slot});
    }
    return;
  }
  // Its start is still held: the end is written there (the id may be reused once it is out).
  if (id < held_pending_.size() && held_pending_[id] != kNone) {
    const uint64_t k = static_cast<uint32_t>(held_pending_[id] - static_cast<uint32_t>(fifo_base_));
    held_pending_[id] = kNone;
    if (k >= fifo_head_ && k < fifo_.size() && fifo_[k].holder == id) {
      fifo_[k].end = end;
      fifo_[k].holder = kNoHolder;
      return;
    }
  }
  for (Late& l : late_) {  // (rare: a held start that came out of order)
    if (l.held.holder != id || l.held.end != Time::MinusInfinity()) continue;
    l.held.end = end;
    l.held.holder = kNoHolder;
    return;
  }
}

void RowRelationTracker::AddAlive(uint32_t slot) {
  if (slot >= alive_pos_.size()) alive_pos_.resize(std::max<size_t>(slot + 1, alive_pos_.size() * 2), kNone);
  alive_pos_[slot] = static_cast<uint32_t>(alive_.size());
  alive_.push_back(slot);
}

void RowRelationTracker::RemoveAlive(uint32_t slot) {
  CQ_CHECK(slot < alive_pos_.size() && alive_pos_[slot] != kNone, "an ending tuple was not alive");
  const uint32_t pos = alive_pos_[slot];
  alive_pos_[slot] = kNone;
  if (pos + 1 != alive_.size()) {
    alive_[pos] = alive_.back();
    alive_pos_[alive_[pos]] = pos;
  }
  alive_.pop_back();
}

// Flattened: GCC called std::vector's push_back out of line here, a call for every row that
// starts, ends or is released (the lists keep their capacity: the call mostly stored one word).
[[gnu::flatten]] void RowRelationTracker::AdvanceTo(Time progress, const Visitor& visit) {
  // A visitor's emission may come back into the tracker through a loop, but only to Push (rows
  // of a later instant) or PushEnd: neither touches these lists.
  std::vector<uint32_t>& starts = starts_;
  std::vector<uint32_t>& ends = ends_;
  for (;;) {
    const Held* h;
    const Time t = NextInstant(h);
    if (!(t < progress)) break;
    starts.clear();
    ends.clear();
    expiring_.ExpireThrough(t, [&](const Entry& e) {
      if (!starts_only_ || e.end == t) ends.push_back(e.slot);
      else Release(e.slot);  // ended at an instant without starts: in no D(t) that matters
    });
    for (; h && h->start == t; h = NextHeld()) {
      const Held held = *h;
      PopHeld(h);
      const bool pending = held.end == Time::MinusInfinity();
      if (pending) {
        if (held.holder < held_pending_.size()) held_pending_[held.holder] = kNone;
        Put(undetermined_, held.holder, held.slot);
      } else if (held.end == t) {
        Release(held.slot);  // a ghost: in I(t) and D(t) at once, so in neither
        continue;
      }
      starts.push_back(held.slot);
      if (track_alive_) AddAlive(held.slot);
      if (!pending) {
        if (!held.end.IsInfinite()) expiring_.Insert({held.end, held.slot});
        else if (!track_alive_) Release(held.slot);
      }
    }
    if (track_alive_)
      for (uint32_t s : ends) RemoveAlive(s);
    visit(t, starts, ends);
    Release(ends);
  }
}

void RowRelationTracker::ForEachKnownChange(const std::function<void(Time, uint32_t, int)>& f) const {
  auto held = [&](const Held& h) {
    f(h.start, h.slot, 1);
    if (h.end != Time::MinusInfinity() && !h.end.IsInfinite()) f(h.end, h.slot, -1);
  };
  for (size_t k = fifo_head_; k < fifo_.size(); ++k) held(fifo_[k]);
  for (const Late& l : late_) held(l.held);
  expiring_.ForEach([&](const Entry& e) { f(e.end, e.slot, -1); });
}

void RowRelationTracker::ForEachKept(const KeptVisitor& f) const {
  auto held = [&](const Held& h) {
    if (h.end == Time::MinusInfinity()) f(h.slot, h.start, Time::Infinity(), h.holder, false);
    else f(h.slot, h.start, h.end, kNoHolder, false);
  };
  for (size_t k = fifo_head_; k < fifo_.size(); ++k) held(fifo_[k]);
  for (const Late& l : late_) held(l.held);
  std::vector<uint8_t> ending;  // by slot: a started row with an end to come
  auto mark = [&](uint32_t s) {
    if (s >= ending.size()) ending.resize(s + size_t{1}, 0);
    ending[s] = 1;
  };
  for (size_t id = 0; id < undetermined_.size(); ++id) {
    if (undetermined_[id] == kNone) continue;
    f(undetermined_[id], Time::MinusInfinity(), Time::Infinity(), static_cast<HolderId>(id), true);
    mark(undetermined_[id]);
  }
  expiring_.ForEach([&](const Entry& e) {
    f(e.slot, Time::MinusInfinity(), e.end, kNoHolder, true);
    mark(e.slot);
  });
  for (uint32_t s : alive_)
    if (s >= ending.size() || !ending[s]) f(s, Time::MinusInfinity(), Time::Infinity(), kNoHolder, true);
}

void RowRelationTracker::Adopt(const Row& row) {
  if (!row.pending() && row.other.IsInfinite() && !track_alive_) return;  // never ends: nothing to see of it
  const uint32_t slot = store_.Add(row.values);
  if (track_alive_) AddAlive(slot);
  if (row.pending()) Put(undetermined_, row.holder, slot);
  else if (!row.other.IsInfinite()) expiring_.Insert({row.other, slot});
}

// ---- negative --------------------------------------------------------------------------------

void RowNegativeTracker::Push(const Row& row) {
  // Every tuple is stamped with its instant (`sync`): a positive's end is open, a negative's
  // `other` is the start it ends.
  const uint32_t slot = store_.Add(row.values);
  Instant& at = pending_[row.sync];
  (row.other.IsInfinite() ? at.positives : at.negatives).push_back(slot);
}

void RowNegativeTracker::AdvanceTo(Time progress, const Visitor& visit) {
  while (!pending_.empty() && pending_.begin()->first < progress) {
    auto node = pending_.extract(pending_.begin());
    const Time t = node.key();
    const Instant& at = node.mapped();
    if (track_alive_) {
      // R(t): positives join, then negatives leave (a ghost's positive and negative are both at t).
      for (uint32_t p : at.positives) alive_.Insert(layout().Hash(values(p)), p);
      for (uint32_t q : at.negatives) {
        uint32_t p;
        const bool found =
            alive_.Take(layout().Hash(values(q)), [&](uint32_t x) { return layout().Equal(values(x), values(q)); }, &p);
        CQ_CHECK(found, "a negative tuple without its positive");
        Release(p);
      }
    }
    visit(t, at.positives, at.negatives);
    for (uint32_t q : at.negatives) Release(q);
    if (!track_alive_)
      for (uint32_t p : at.positives) Release(p);
  }
}

void RowNegativeTracker::Alive(std::vector<uint32_t>& out) const {
  out.clear();
  alive_.ForEach([&](uint32_t s) { out.push_back(s); });
}

void RowNegativeTracker::ForEachKnownChange(const std::function<void(Time, uint32_t, int)>& f) const {
  for (const auto& [t, at] : pending_) {
    for (uint32_t s : at.positives) f(t, s, 1);
    for (uint32_t s : at.negatives) f(t, s, -1);
  }
}

void RowNegativeTracker::ForEachKept(const KeptVisitor& f) const {
  for (const auto& [t, at] : pending_) {
    for (uint32_t s : at.positives) f(s, t, Time::Infinity(), kNoHolder, false);
    for (uint32_t s : at.negatives) f(s, t, t, kNoHolder, false);  // (a negative's own end is not kept)
  }
  alive_.ForEach([&](uint32_t s) { f(s, Time::MinusInfinity(), Time::Infinity(), kNoHolder, true); });
}

void RowNegativeTracker::Adopt(const Row& row) {
  if (!track_alive_) return;  // (positives alive are kept only to be tracked)
  const uint32_t slot = store_.Add(row.values);
  alive_.Insert(layout().Hash(values(slot)), slot);
}

std::unique_ptr<RowTracker> MakeRowTracker(bool negative, ExpirationPolicy policy, bool track_alive,
                                           const Schema& stored, bool starts_only) {
  if (negative) return std::make_unique<RowNegativeTracker>(stored, track_alive);
  return std::make_unique<RowRelationTracker>(stored, policy, track_alive, starts_only);
}

}  // namespace cq
