#pragma once
// The direct method's InstantTracker: lifetimes [start, end) with known or pending ends.
//
// An instant is complete when no start and no end at it can arrive any more: the input's progress
// is past it. Then every pending end that equals it has been fixed too, because the tuple that
// fixes an end to t arrives at t (paper 003 §4.3: a fixed end is never below the input time).
// So starts are held back until their instant completes; rows are kept by reference to their
// batch (no copy); known ends wait in an ExpirationSet; pending ends in the undetermined set, a
// flat array indexed by holder id, until the producer fixes them.
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"

namespace cq {

class RelationTracker final : public InstantTracker {
 public:
  // `track_alive`: keep the set of tuples alive (RSTREAM needs R(t) itself, not only its changes).
  RelationTracker(ExpirationPolicy policy, bool track_alive);

  void Push(const Batch& batch) override;
  void PushEnds(const EndBatch& ends) override;
  void AdvanceTo(Time progress, const Visitor& visit) override;
  Time next_instant() const override;
  std::vector<RowRef> alive() const override;
  bool any_alive() const override { return !alive_.empty(); }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const Schema& expect) override;

 private:
  struct Entry {
    Time end;
    RowRef ref;
  };
  static uint64_t Key(RowRef r) { return (static_cast<uint64_t>(r.seq) << 32) | r.row; }
  void Started(RowRef r, Time start, Time end);  // a start's instant was processed
  void Ended(RowRef r);                           // an end's instant was processed

  bool track_alive_;
  // Starts whose instant is not complete yet, in start order. A pending end fixed while its start
  // is held is written here at once: the holder id may be recycled as soon as its end is out.
  struct Held {
    RowRef ref;
    Time end;  // MinusInfinity(): still pending
  };
  // Held rows live in a slab and are handed out in (start, arrival) order. Input arrives in start
  // order on the common path (one port, or a union that merged its inputs): those rows queue in
  // a FIFO, which costs O(1) per row. Only a start below the FIFO's tail (several inputs
  // interleaving) goes to a min-heap; the next row out is the smaller of the two heads.
  std::vector<Held> slab_;
  std::vector<uint32_t> free_slots_;
  struct HeapItem {
    Time start;
    uint64_t order;
    uint32_t slot;
    bool operator>(const HeapItem& o) const {
      return start != o.start ? o.start < start : order > o.order;
    }
  };
  std::vector<HeapItem> heap_;
  std::vector<HeapItem> fifo_;  // non-decreasing start; consumed from fifo_head_
  size_t fifo_head_ = 0;
  uint64_t arrivals_ = 0;
  // The held row that comes out next: the FIFO's or the heap's head, whichever is smaller.
  const HeapItem* NextHeld() const;
  void PopHeld(const HeapItem* item);
  std::unordered_map<HolderId, uint32_t> held_pending_;  // holder -> slot in slab_
  std::vector<RowRef> undetermined_;  // by holder id; row == kNone when empty
  ExpirationSet<Entry> expiring_;
  // track_alive: alive rows, with their position for O(1) removal.
  std::vector<RowRef> alive_;
  std::unordered_map<uint64_t, size_t> alive_pos_;
  std::vector<RowRef> starts_, ends_;  // AdvanceTo's lists, kept for their capacity
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
};

}  // namespace cq
