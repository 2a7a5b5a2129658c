#pragma once
// The Negative Tuple method's InstantTracker (paper 003 §2): the input carries a positive tuple at
// each start (its end open) and a negative tuple, with the same values, at each end. An instant's
// starts and ends are simply the positives and negatives stamped with it; nothing waits for an
// expiration, but every tuple travels twice and RSTREAM must find a negative's positive by value.
#include <map>

#include "base/hash_multimap.h"
#include "lifetime/instant_tracker.h"

namespace cq {

class NegativeTracker final : public InstantTracker {
 public:
  explicit NegativeTracker(bool track_alive) : track_alive_(track_alive) {}
  void Push(const Batch& batch) override;
  void PushEnds(const EndBatch&) override {}  // negative tuples carry the ends
  void AdvanceTo(Time progress, const Visitor& visit) override;
  Time next_instant() const override;
  std::vector<RowRef> alive() const override;
  bool any_alive() const override { return !alive_.empty(); }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const Schema& expect) override;

 private:
  struct Instant {
    std::vector<RowRef> positives, negatives;
    std::vector<uint64_t> positive_hashes, negative_hashes;  // track_alive: value hashes
  };
  bool track_alive_;
  std::map<Time, Instant> pending_;  // events of instants not complete yet
  HashMultimap<RowRef> alive_;  // by value hash (track_alive)
};

}  // namespace cq
