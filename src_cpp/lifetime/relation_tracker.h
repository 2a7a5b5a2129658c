#pragma once
// What a relation-to-stream operator (ISTREAM, DSTREAM, RSTREAM) needs to see of its input: the
// tuples that start and that end at each instant t, instant by instant, once t is complete.
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

#include "batch/batch.h"
#include "batch/row_equal.h"
#include "lifetime/expiration_set.h"

namespace cq {

class RelationTracker {
 public:
  struct RowRef {
    uint32_t seq;
    uint32_t row;
  };
  // `track_alive`: keep the set of tuples alive (RSTREAM needs R(t) itself, not only its changes).
  RelationTracker(ExpirationPolicy policy, bool track_alive);

  void Push(const Batch& batch);
  void PushEnds(const EndBatch& ends);

  // Visits every complete instant t < progress in time order where something starts or ends:
  // visit(t, starts, ends). Ghosts (start = end) appear in neither. The rows visited stay readable
  // (batch(), Gather()) until the next call into the tracker.
  using Visitor = std::function<void(Time, const std::vector<RowRef>&, const std::vector<RowRef>&)>;
  void AdvanceTo(Time progress, const Visitor& visit);
  // The next instant at which something happens (Time::Infinity() when nothing is pending).
  Time next_instant() const;

  const Batch& batch(uint32_t seq) const { return retained_[seq - retained_.front().seq].batch; }
  // The tuples alive now (only with track_alive).
  std::vector<RowRef> alive() const;
  // Rows (by reference) as one compact stream batch, each with its own timestamp.
  Batch Gather(const std::vector<RowRef>& rows, const std::vector<Time>& ts,
               const std::shared_ptr<const Schema>& schema) const;
  bool RowsEqual(RowRef a, RowRef b) const;
  int64_t retained_rows() const;

 private:
  struct Entry {
    Time end;
    RowRef ref;
  };
  struct Retained {
    uint32_t seq;
    Batch batch;
    int64_t live;
  };
  static uint64_t Key(RowRef r) { return (static_cast<uint64_t>(r.seq) << 32) | r.row; }
  void Release(RowRef r) { released_.push_back(r); }
  void FlushReleases();
  void Started(RowRef r, Time start, Time end);  // a start's instant was processed
  void Ended(RowRef r);                           // an end's instant was processed
  void Trim();

  bool track_alive_;
  std::deque<Retained> retained_;
  uint32_t next_seq_ = 0;
  // Starts whose instant is not complete yet, in start order. A pending end fixed while its start
  // is held is written here at once: the holder id may be recycled as soon as its end is out.
  struct Held {
    RowRef ref;
    Time end;  // MinusInfinity(): still pending
  };
  std::deque<Held> held_;
  uint64_t held_base_ = 0;  // absolute position of held_.front()
  std::unordered_map<HolderId, uint64_t> held_pending_;  // holder -> absolute position in held_
  std::vector<RowRef> undetermined_;  // by holder id; row == kNone when empty
  ExpirationSet<Entry> expiring_;
  // track_alive: alive rows, with their position for O(1) removal.
  std::vector<RowRef> alive_;
  std::unordered_map<uint64_t, size_t> alive_pos_;
  std::unique_ptr<RowEqual> equal_;
  std::vector<RowRef> released_;  // let go of at the next call, so callers can still read them
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
};

}  // namespace cq
