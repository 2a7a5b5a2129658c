#pragma once
// The Negative Tuple method's InstantTracker (paper 003 §2): the input carries a positive tuple at
// each start (its end open) and a negative tuple, with the same values, at each end. An instant's
// starts and ends are simply the positives and negatives stamped with it; nothing waits for an
// expiration, but every tuple travels twice and RSTREAM must find a negative's positive by value.
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

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
  void ForEachKept(const KeptVisitor& f) const override;
  void Adopt(const Batch& started) override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const Schema& expect) override;

 private:
  struct Instant {
    std::vector<RowRef> positives, negatives;
    std::vector<uint64_t> positive_hashes, negative_hashes;  // track_alive: value hashes
  };
  bool track_alive_;
  std::map<Time, Instant> pending_;  // events of instants not complete yet
  HashMultimap<RowRef> alive_;       // by value hash (track_alive)
};

// The Negative Tuple method's promise, checked on a restored tracker: replaying its instants in time
// order (positives join, then negatives leave), every negative finds a positive of its value among
// those alive or come before it — else the instant would fail when it comes. Values are compared by
// hash (equal values have equal hashes, so a sound state always passes). `alive` is the hashes
// alive now; `instants` visits each pending instant's positive and negative hashes in time order.
template <typename Instants>
bool NegativesFindPositives(std::vector<uint64_t> alive, Instants&& instants) {
  std::unordered_map<uint64_t, int64_t> count;
  for (uint64_t h : alive) ++count[h];
  bool ok = true;
  instants([&](const std::vector<uint64_t>& positives, const std::vector<uint64_t>& negatives) {
    for (uint64_t h : positives) ++count[h];
    for (uint64_t h : negatives) ok = ok && count[h]-- > 0;
  });
  return ok;
}

}  // namespace cq
