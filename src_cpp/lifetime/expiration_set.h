#pragma once
// An expiration set (paper 003 §4.2): tuples whose end is known, handed back in end order as time
// passes their ends. Three policies, chosen where the operator is planned:
//   kFifo           ends arrive in order (constant-duration lifetimes): a queue, nothing to sort.
//   kLazy           the paper's lazy sorting: a sorted part, plus an unsorted part that remembers
//                   its earliest end; the unsorted part is sorted and merged only when time
//                   reaches that earliest end. (Ends that arrive in order go straight to the
//                   sorted part.)
//   kInsertionSort  every insert finds its place at once (the baseline the paper measured to
//                   collapse beyond ~100-row windows); kept for the reproduction.
#include <algorithm>
#include <vector>

#include "batch/snapshot.h"
#include "time/time.h"

namespace cq {

// Whether `v` holds an element at `head` or after: the queues here pop from a head index, and with
// entries of 24 or 40 bytes `head < v.size()` costs a division on paths every instant takes, where
// comparing with the end pointer does not.
template <typename T>
inline bool HasFrom(const std::vector<T>& v, size_t head) {
  return v.data() + head != v.data() + v.size();
}

// Lets go of the entries of `v` before `head` once they are all gone, or once they are more than
// half of it (past 4,096): a head-index queue stays O(1) a pop without growing for ever.
template <typename T>
inline void TrimFront(std::vector<T>& v, size_t& head) {
  if (!HasFrom(v, head)) {
    v.clear();
    head = 0;
  } else if (head > 4096 && head * 2 > v.size()) {
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
}

enum class ExpirationPolicy : uint8_t { kFifo, kLazy, kInsertionSort };

// Sorts `v` by end (equal ends in any order, as std::sort). Ends that are ticks without ε-steps
// over a span not much wider than their number (a join's ends: each row's start plus a window,
// in nearly arrival order) are counted and placed, linear in both; anything else (steps, ∞,
// sparse ends) takes std::sort.
template <typename Entry>
void SortByEnd(std::vector<Entry>& v, std::vector<Entry>& scratch) {
  const size_t n = v.size();
  auto by_end = [](const Entry& a, const Entry& b) { return a.end < b.end; };
  if (n < 64) {
    std::sort(v.begin(), v.end(), by_end);
    return;
  }
  int64_t lo = v[0].end.tick, hi = lo;
  bool ticks = true;
  for (const Entry& e : v) {
    ticks &= e.end.step == 0 && !e.end.IsInfinite();
    lo = std::min(lo, e.end.tick);
    hi = std::max(hi, e.end.tick);
  }
  // (hi - lo computed unsigned: ticks may span the whole int64 range.)
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (!ticks || span >= 4 * n) {
    std::sort(v.begin(), v.end(), by_end);
    return;
  }
  std::vector<uint32_t> at(span + 2, 0);
  for (const Entry& e : v) ++at[static_cast<uint64_t>(e.end.tick) - static_cast<uint64_t>(lo) + 1];
  for (size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
  scratch.resize(n);
  for (const Entry& e : v) scratch[at[static_cast<uint64_t>(e.end.tick) - static_cast<uint64_t>(lo)]++] = e;
  v.swap(scratch);
}

template <typename Entry>  // Entry has a `Time end` member
class ExpirationSet {
 public:
  explicit ExpirationSet(ExpirationPolicy policy = ExpirationPolicy::kLazy) : policy_(policy) {}

  void Insert(const Entry& e) {
    // An end in order (the common case under kFifo and kLazy) goes on the sorted part, inline.
    if (policy_ != ExpirationPolicy::kInsertionSort && unsorted_.empty() &&
        (!HasFrom(sorted_, head_) || !(e.end < sorted_.back().end))) {
      sorted_.push_back(e);
      return;
    }
    InsertSlow(e);
  }

 private:
  [[gnu::noinline]] void InsertSlow(const Entry& e) {
    switch (policy_) {
      case ExpirationPolicy::kFifo:
        // Out-of-order ends demote the queue to lazy sorting rather than corrupt it.
        if (sorted_.size() > head_ && e.end < sorted_.back().end) {
          policy_ = ExpirationPolicy::kLazy;
          Insert(e);
          return;
        }
        sorted_.push_back(e);
        return;
      case ExpirationPolicy::kInsertionSort: {
        // As the paper's baseline: walk the sorted list from its earliest end to the place.
        auto at = sorted_.begin() + static_cast<std::ptrdiff_t>(head_);
        while (at != sorted_.end() && !(e.end < at->end)) ++at;
        sorted_.insert(at, e);
        return;
      }
      case ExpirationPolicy::kLazy:
        // An end that comes in order (nothing unsorted waits, and it is not before the last sorted
        // one) is already in its place: constant-duration lifetimes never sort or merge anything.
        if (unsorted_.empty() && (sorted_.size() == head_ || !(e.end < sorted_.back().end))) {
          sorted_.push_back(e);
          return;
        }
        unsorted_.push_back(e);
        if (e.end < unsorted_min_) unsorted_min_ = e.end;
        return;
    }
  }

 public:
  // Calls f(entry) for every entry with end <= t, in end order, and removes them.
  template <typename F>
  void ExpireThrough(Time t, F&& f) {
    if (!(t < unsorted_min_)) Merge();
    while (HasFrom(sorted_, head_) && !(t < sorted_[head_].end)) f(sorted_[head_++]);
    if (head_ > 4096 && head_ * 2 > sorted_.size()) {
      sorted_.erase(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // Calls f(entry) for every entry with end <= t, in end order, and keeps them.
  template <typename F>
  void ForEachThrough(Time t, F&& f) {
    if (!(t < unsorted_min_)) Merge();
    for (size_t i = head_; HasFrom(sorted_, i) && !(t < sorted_[i].end); ++i) f(sorted_[i]);
  }

  // The earliest end in the set (Time::Infinity() when empty).
  Time next_end() const {
    Time t = unsorted_min_;
    if (HasFrom(sorted_, head_) && sorted_[head_].end < t) t = sorted_[head_].end;
    return t;
  }
  size_t size() const { return sorted_.size() - head_ + unsorted_.size(); }
  bool empty() const { return size() == 0; }

  // Every entry, in no particular order (RSTREAM's view of what is alive).
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = head_; i < sorted_.size(); ++i) f(sorted_[i]);
    for (const Entry& e : unsorted_) f(e);
  }

  // Engine snapshots: the set as it is (sorted and unsorted parts, and the policy, which a FIFO
  // demoted to lazy sorting has changed).
  void Snapshot(SnapshotWriter& w) const {
    w.Pod(policy_);
    w.PodVec(sorted_.data() + head_, sorted_.size() - head_);
    w.PodVec(unsorted_);
    w.Pod(unsorted_min_);
  }
  // Restore checks what the set relies on: the sorted part in end order, an unsorted part only
  // under lazy sorting, and its earliest end remembered (else it would never be merged).
  void Restore(SnapshotReader& r) {
    policy_ = r.Enum(ExpirationPolicy::kInsertionSort, "an expiration set's policy");
    auto valid = [](const Entry& e) { return SnapshotReader::ValidTime(e.end); };
    r.PodVec(sorted_, "an expiration set's sorted ends", valid);
    head_ = 0;
    r.PodVec(unsorted_, "an expiration set's unsorted ends", valid);
    unsorted_min_ = r.TimeValue("an expiration set's earliest unsorted end");
    CQ_SNAPSHOT_CHECK(
        std::is_sorted(sorted_.begin(), sorted_.end(), [](const Entry& a, const Entry& b) { return a.end < b.end; }),
        "an expiration set's sorted ends are out of order");
    Time min = Time::Infinity();
    for (const Entry& e : unsorted_) min = std::min(min, e.end);
    CQ_SNAPSHOT_CHECK(unsorted_.empty() || policy_ == ExpirationPolicy::kLazy,
                      "an expiration set has unsorted ends it never sorts");
    SnapshotReader::Expect(unsorted_min_, min, "an expiration set's earliest unsorted end");
  }

 private:
  void Merge() {
    if (unsorted_.empty()) return;
    auto by_end = [](const Entry& a, const Entry& b) { return a.end < b.end; };
    // Ends that came in order (constant-duration lifetimes, the commonest case) need neither the
    // sort nor the merge: the checks are linear and the sort is not.
    if (!std::is_sorted(unsorted_.begin(), unsorted_.end(), by_end)) SortByEnd(unsorted_, scratch_);
    if (head_ > 0) {
      sorted_.erase(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    const size_t mid = sorted_.size();
    const bool after = mid == 0 || !(unsorted_.front().end < sorted_.back().end);
    sorted_.insert(sorted_.end(), unsorted_.begin(), unsorted_.end());
    if (!after)
      std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(mid), sorted_.end(), by_end);
    unsorted_.clear();
    unsorted_min_ = Time::Infinity();
  }

  ExpirationPolicy policy_;
  std::vector<Entry> sorted_;
  size_t head_ = 0;
  std::vector<Entry> unsorted_;
  Time unsorted_min_ = Time::Infinity();
  std::vector<Entry> scratch_;  // SortByEnd's, kept for its capacity
};

// Known ends for a tracker that expires many instants at once (RelationTracker::Collect): a few
// lanes, each a FIFO in end order, and an end joins the first lane whose last end is not after it
// (first fit, as in patience sorting). Ends from a few interleaved sources that are each in order
// (ε-long [Now] rows merged by a union with aggregate results ending later, say) then neither
// sort nor merge on insertion; they are merged once as they expire. An end that fits no lane goes
// to an ExpirationSet under the plan's policy, which also takes every end under kInsertionSort (the
// paper's baseline keeps its cost). Equal ends come out in insertion order across lanes (a later
// end of the same value never joins an earlier lane, since lanes' last ends only grow), before
// those of the fallback set.
template <typename Entry>  // Entry has a `Time end` member
class ExpirationLanes {
 public:
  explicit ExpirationLanes(ExpirationPolicy policy = ExpirationPolicy::kLazy)
      : rest_(policy), max_lanes_(policy == ExpirationPolicy::kInsertionSort ? 0 : kLanes) {}

  void Insert(const Entry& e) {
    for (size_t k = 0; k < max_lanes_; ++k) {
      Lane& l = lanes_[k];
      if (!HasFrom(l.items, l.head) || !(e.end < l.items.back().end)) {
        l.items.push_back(e);
        return;
      }
    }
    rest_.Insert(e);
  }

  // The earliest end (Time::Infinity() when empty).
  Time next_end() const {
    Time t = rest_.next_end();
    for (size_t k = 0; k < max_lanes_; ++k)
      if (HasFrom(lanes_[k].items, lanes_[k].head) && lanes_[k].items[lanes_[k].head].end < t)
        t = lanes_[k].items[lanes_[k].head].end;
    return t;
  }

  // Calls f(entry) for every entry with end < t, in end order, and removes them.
  template <typename F>
  void ExpireBefore(Time t, F&& f) {
    scratch_.clear();
    for (Time e = rest_.next_end(); e < t; e = rest_.next_end())
      rest_.ExpireThrough(e, [&](const Entry& x) { scratch_.push_back(x); });
    Lane* busy[kLanes];  // the lanes with an entry below t
    size_t nbusy = 0;
    for (size_t k = 0; k < max_lanes_; ++k)
      if (Due(lanes_[k], t)) busy[nbusy++] = &lanes_[k];
    // The one- and two-lane merges keep positions and arrays in locals: f writes to memory, and
    // the compiler would otherwise read the lanes back after every call (f does not come back in).
    if (nbusy == 1 && scratch_.empty()) {
      // One source: its due entries as they lie.
      Lane& l = *busy[0];
      const Entry* p = l.items.data();
      const size_t n = l.items.size();
      size_t i = l.head;
      while (i < n && p[i].end < t) f(p[i++]);
      l.head = i;
    } else if (nbusy == 2 && scratch_.empty()) {
      // Two sources (a union of two inputs): a two-way merge, the earlier lane first on ties.
      Lane &a = *busy[0], &b = *busy[1];
      const Entry* pa = a.items.data();
      const Entry* pb = b.items.data();
      const size_t na = a.items.size(), nb = b.items.size();
      size_t i = a.head, j = b.head;
      while (i < na && j < nb) {
        const Entry& x = pa[i];
        const Entry& y = pb[j];
        if (!(x.end < t) && !(y.end < t)) break;
        if (y.end < x.end) {
          f(y);
          ++j;
        } else {
          f(x);
          ++i;
        }
      }
      while (i < na && pa[i].end < t) f(pa[i++]);
      while (j < nb && pb[j].end < t) f(pb[j++]);
      a.head = i;
      b.head = j;
    } else if (nbusy + !scratch_.empty() > 0) {
      size_t s = 0;
      for (;;) {
        const Entry* best = nullptr;
        Lane* from = nullptr;
        for (size_t k = 0; k < max_lanes_; ++k) {
          Lane& l = lanes_[k];
          if (HasFrom(l.items, l.head) && l.items[l.head].end < t && (!best || l.items[l.head].end < best->end)) {
            best = &l.items[l.head];
            from = &l;
          }
        }
        if (s < scratch_.size() && (!best || scratch_[s].end < best->end)) {
          best = &scratch_[s];
          from = nullptr;
        }
        if (!best) break;
        f(*best);
        if (from) ++from->head;
        else ++s;
      }
    }
    for (size_t k = 0; k < max_lanes_; ++k) TrimFront(lanes_[k].items, lanes_[k].head);
  }

  size_t size() const {
    size_t n = rest_.size();
    for (const Lane& l : lanes_) n += l.items.size() - l.head;
    return n;
  }
  bool empty() const { return size() == 0; }

  // Every entry, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Lane& l : lanes_)
      for (size_t i = l.head; i < l.items.size(); ++i) f(l.items[i]);
    rest_.ForEach(f);
  }

  // Engine snapshots: the lanes (each in end order, checked) and the fallback set.
  void Snapshot(SnapshotWriter& w) const {
    for (const Lane& l : lanes_) w.PodVec(l.items.data() + l.head, l.items.size() - l.head);
    rest_.Snapshot(w);
  }
  void Restore(SnapshotReader& r) {
    bool ok = true;
    for (size_t k = 0; k < kLanes; ++k) {
      Lane& l = lanes_[k];
      r.PodVec(l.items, "an expiration lane", [](const Entry& e) { return SnapshotReader::ValidTime(e.end); });
      l.head = 0;
      ok &=
          (k < max_lanes_ || l.items.empty()) &&
          std::is_sorted(l.items.begin(), l.items.end(), [](const Entry& a, const Entry& b) { return a.end < b.end; });
    }
    CQ_SNAPSHOT_CHECK(ok, "an expiration lane is out of order");
    rest_.Restore(r);
  }

 private:
  static constexpr size_t kLanes = 4;
  struct Lane {
    std::vector<Entry> items;
    size_t head = 0;
  };
  static bool Due(const Lane& l, Time t) { return HasFrom(l.items, l.head) && l.items[l.head].end < t; }

  Lane lanes_[kLanes];
  ExpirationSet<Entry> rest_;
  size_t max_lanes_;
  std::vector<Entry> scratch_;  // the fallback set's due entries, merged with the lanes'
};

}  // namespace cq
