#pragma once
// The direct method's InstantTracker: lifetimes [start, end) with known or pending ends.
//
// An instant is complete when no start and no end at it can arrive any more: the input's progress
// is past it. Then every pending end that equals it has been fixed too, because the tuple that
// fixes an end to t arrives at t (paper 003 §4.3: a fixed end is never below the input time).
// So starts are held back until their instant completes; rows are kept by reference to their
// batch (no copy); known ends wait in expiration lanes; pending ends are found by holder id in a
// flat array until the producer fixes them.
//
// Outside loops a call covers thousands of instants, so the tracker works on whole lists: the
// held starts below the progress in one pass (their ends join the expiration lanes), then every
// end below the progress in one merge of the lanes (Collect). Only the per-instant visitor
// (DSTREAM, RSTREAM) splits the lists again.
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
  void Collect(Time progress, Changes& out) override;
  Time next_instant() const override;
  std::vector<RowRef> alive() const override;
  bool any_alive() const override { return !alive_.empty(); }
  void ForEachKept(const KeptVisitor& f) const override;
  void Adopt(const Batch& started) override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const Schema& expect) override;

 private:
  struct Entry {
    Time end;
    RowRef ref;
  };
  // Retains a copy of `in`'s rows with their ends in columns of the tracker's own; its number.
  uint32_t RetainOwn(const Batch& in);
  static uint64_t Key(RowRef r) { return (static_cast<uint64_t>(r.seq) << 32) | r.row; }
  void AddAlive(RowRef r);
  void RemoveAlive(RowRef r);
  // The end of a retained row, kept in its batch's `other` column, which the tracker owns (a
  // copy made at Push): an end fixed while the row is held is written there, since the holder
  // id may be recycled as soon as its end is out. A pending end reads as kPending.
  static constexpr Time kPending = Time::MinusInfinity();
  void SetEnd(RowRef r, Time end);

  bool track_alive_;
  // Starts whose instant is not complete yet, in (start, arrival) order from held_head_ on. Input
  // comes in start order (operator.h), so a push appends; a batch that starts below the tail
  // (possible only through restored or hand-fed state) is merged in, keeping arrival order among
  // equal starts.
  struct Held {
    Time start;
    RowRef ref;
  };
  std::vector<Held> held_;
  size_t held_head_ = 0;
  // Pending ends by holder id: the row, and whether its start is still held (else it started and
  // waits, undetermined, for its end). row == kNone: no row of this tracker has the id.
  struct Pending {
    RowRef ref;
    uint32_t held;
  };
  std::vector<Pending> pending_;
  void SetPending(HolderId id, Pending p);
  ExpirationLanes<Entry> expiring_;
  // track_alive: alive rows, with their position for O(1) removal.
  std::vector<RowRef> alive_;
  std::unordered_map<uint64_t, size_t> alive_pos_;
  Changes changes_;                    // AdvanceTo's lists, kept for their capacity
  std::vector<RowRef> starts_, ends_;  // an instant's, for the visitor
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
};

}  // namespace cq
