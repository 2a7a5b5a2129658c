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

#include "engine/snapshot.h"
#include "time/time.h"

namespace cq {

enum class ExpirationPolicy : uint8_t { kFifo, kLazy, kInsertionSort };

template <typename Entry>  // Entry has a `Time end` member
class ExpirationSet {
 public:
  explicit ExpirationSet(ExpirationPolicy policy = ExpirationPolicy::kLazy) : policy_(policy) {}

  void Insert(const Entry& e) {
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

  // Calls f(entry) for every entry with end <= t, in end order, and removes them.
  template <typename F>
  void ExpireThrough(Time t, F&& f) {
    if (!(t < unsorted_min_)) Merge();
    while (head_ < sorted_.size() && !(t < sorted_[head_].end)) f(sorted_[head_++]);
    if (head_ > 4096 && head_ * 2 > sorted_.size()) {
      sorted_.erase(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // The earliest end in the set (Time::Infinity() when empty).
  Time next_end() const {
    Time t = unsorted_min_;
    if (head_ < sorted_.size() && sorted_[head_].end < t) t = sorted_[head_].end;
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
  void Restore(SnapshotReader& r) {
    const auto policy = r.Pod<uint8_t>();
    CQ_SNAPSHOT_CHECK(policy <= static_cast<uint8_t>(ExpirationPolicy::kInsertionSort), "unknown expiration policy");
    policy_ = static_cast<ExpirationPolicy>(policy);
    r.PodVec(sorted_);
    head_ = 0;
    r.PodVec(unsorted_);
    unsorted_min_ = r.Pod<Time>();
  }

 private:
  void Merge() {
    if (unsorted_.empty()) return;
    auto by_end = [](const Entry& a, const Entry& b) { return a.end < b.end; };
    // Ends that came in order (constant-duration lifetimes, the commonest case) need neither the
    // sort nor the merge: the checks are linear and the sort is not.
    if (!std::is_sorted(unsorted_.begin(), unsorted_.end(), by_end))
      std::sort(unsorted_.begin(), unsorted_.end(), by_end);
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
};

}  // namespace cq
