#pragma once
// The scheduled executor (paper 002 §5, SEMANTICS.md §5 executor="scheduled"): the queues, waves
// and end fixes of the heartbeat method (executors/queued/) with each data item one row, and who
// runs next decided by a policy of schedulers/ (round robin). One evaluation takes one row from an
// input queue (§5.1); an input's progress is its queue's head (the stall of §2.3 and the waves),
// so an operator's result is final without its taking a later row. A turn gives the operator up to
// `batch` evaluations; the end fixes and heartbeats it takes on the way are not evaluations (they
// carry no row) and are taken whenever due.
//
// Redo areas (paper 002 §3.4) come with the plan: an operator spec's "redo_area" (an integer
// naming its area) and "gatekeeper" (true: rows enter the area through it) keys; the policy keeps
// §6's constraint on them (schedulers/scheduler.h Gate).
//
// Transactions (paper 002 §3.5), under a strategy other than txn="none": the spec marked "commit"
// is its area's commit operator. In an area every operator's progress is its input queues' heads
// (an empty queue: what its producer in the area has promised), moved on after every evaluation
// (Settle), so an instant is final at the commit operator without a later row being taken. What
// the commit operator emits for instant tau is held until tau is final there, then the area's
// transaction manager commits: the held rows go downstream and a CommitRecord is logged. A
// transaction ends only at an instant where the area's top window (spec key "top_window": a
// window with none above it in the area) emitted: Def. 3.2's commit at the window's slides. So
// the reads of the rows a window keeps until its next slide stay in one transaction, and output
// at other instants (RSTREAM repeating R(t) between slides) goes out without ending it. An
// optimistic transaction that fails its validation is aborted: its held rows are discarded and
// the area redone from the instants not committed.
//
// Redo (§3.4, §4.1.3): the rows entering a gatekeeper (or, in an area without gatekeepers, any
// member) from outside the area are kept in its redo queue until no retained state can
// need them: rows older than the replay point, the first source row the window's contents need
// (after its next slide, or its current contents where the commit operator compares or repeats
// them, or a [Rows n] window's: the plan's "replay" key on the commit operator). A reset
// rebuilds the members from their specs, empties their inner queues (releasing the holder ids their
// end fixes pinned) and feeds each gatekeeper its redo queue again from the replay point; the
// commit operator then emits no instant it already committed, and the members' outputs to
// operators outside the area are not sent twice. redo="always" resets at every commit of an area
// holding an overlapping window; "on_change" only when a resource read for retained rows has
// changed since: checked after each commit, and again at the next commit, which fails (is
// redone) when its transaction saw another version of a resource the kept rows read (a write
// between the two). An overlapping area without a "replay" key (another shape) is refused under a
// strategy (kSemantic naming it).
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "batch/row_equal.h"
#include "executors/queued/queued_executor.h"
#include "schedulers/scheduler.h"
#include "txn/transaction_manager.h"

namespace cq {

class ScheduledExecutor final : public QueuedExecutor, private sched::Queues {
 public:
  // `txn`: the engine's bindings, whose transaction managers the commit operators commit through
  // (null, or their strategy none: no transactions).
  // `base`: the context its operators were built with, to rebuild an area's members at a reset.
  ScheduledExecutor(const sched::Options& options, HolderTable* holders, txn::Bindings* txn = nullptr,
                    const OperatorContext& base = {}, bool redo_always = false);
  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) override;
  void Remove(const std::vector<int>& ids) override;
  const sched::Scheduler& scheduler() const { return *scheduler_; }
  // Turns given so far (a turn: one operator's run of up to `batch` evaluations).
  int64_t turns() const { return turns_; }

 private:
  void Drain() override;
  void Wake(int) override {}  // every turn asks the operators in the policy's order
  bool Ready(int id) override;
  std::pair<int64_t, int64_t> NextRow(int id) override;
  std::pair<int64_t, int64_t> NextRowBound(int id) override;
  // The areas from area_of_, to the policy.
  void SetAreas();
  bool Hold(int node, const Item& item) override;
  // In a redo area a member's progress is its queue heads (Advance), which no heartbeat carries
  // yet: an input from a member has delivered what that member's progress promises. Else a
  // consumer waiting for the heartbeat looks unable to evaluate, and §6's constraint lets a
  // gatekeeper take a row past the instant about to commit (a reset then replays it).
  Time Delivered(const Node& n, size_t port) const override;
  void Entered(int node, int port, size_t first) override;
  int64_t Duplicates(int node, int consumer, const Batch& batch) override;
  txn::TransactionManagers* managers() const;

  // A row a redo queue keeps: its number on its port (Port::taken counts it) and the item.
  struct RedoRow {
    uint64_t seq;
    Item item;
  };
  // Reads of committed transactions whose rows a window retains, one per row read. A commit asks
  // only which versions they saw (its kept reads; on_change's check), so they are counted per
  // (resource, version) and dropped by instant: a commit costs its new reads, not the window's.
  class RetainedReads {
   public:
    using Version = std::pair<std::string, uint64_t>;
    void Add(Time instant, const std::string& resource, uint64_t version);
    void DropBefore(Time t);  // the reads of rows older than the replay point
    void Clear();
    const std::map<Version, int64_t>& versions() const { return count_; }

   private:
    std::map<Version, int64_t> count_;
    std::multimap<Time, std::map<Version, int64_t>::iterator> by_instant_;
  };
  struct Area {
    int commit = -1;     // the commit operator's id
    bool gated = false;  // it has gatekeepers (SetAreas; asked for every row entering a member)
    bool overlapping = false;
    // The replay (the plan's "replay" key): the top window's range and slide in ticks, or its
    // rows; whether its current contents are rebuilt or those after its next slide; how far back
    // its input rows reach through the windows below it.
    int64_t range = 0, slide = 0, rows = 0, lookback = 0;
    bool current = false;
    std::deque<int64_t> ticks;  // a [Rows n] top window's rows' ticks, oldest first
    // ISTREAM (kIStream) or DSTREAM (kDStream) computed at the commit from whole results (the
    // plan's "diff" on the RSTREAM that commits): each commit emits the bag difference of R(t)
    // and `last`, the R committed before, which a reset does not touch (its replay makes R(t)
    // again, not what the earlier commits saw).
    enum class Diff : uint8_t { kNone, kIStream, kDStream } diff = Diff::kNone;
    std::vector<Batch> last;  // the last committed R, compact
    std::shared_ptr<const RowEqual> equal;
    std::vector<Item> held;                    // the commit operator's output, waiting for the commit
    Time committed = Time::MinusInfinity();    // the latest instant committed
    std::set<int64_t> changed;                 // ticks after `committed` at which a top window's output changed
    Time replay_from = Time::MinusInfinity();  // the oldest row the next commit can need
    std::map<std::pair<int, int>, std::deque<RedoRow>> redo;  // (node index... by id, port) -> rows
    RetainedReads retained;
    // What a member sent a consumer outside the area, (member id, consumer id) -> the latest tick
    // and the rows at it; at a reset it becomes what the replay skips (rows below that tick, and
    // that many at it, in the order they come again).
    struct Sent {
      int64_t tick = INT64_MIN;
      int64_t rows = 0;
    };
    std::map<std::pair<int, int>, Sent> sent;
    std::map<std::pair<int, int>, Sent> resent;
    // A member's output to a consumer outside the area that leaves at the area's commits (the
    // plan's "held_exit": a query inside this area with no commit of its own), (node index,
    // consumer index) -> its rows not yet committed, in time order.
    std::map<std::pair<int, int>, std::deque<Batch>> exits;
  };
  // Queues for their consumers the held exits' rows of instants `a` committed (all: at the end).
  void ReleaseExits(Area& a, bool all);
  // The producer of input `port` of `n` when both are members of one redo area, else null.
  const Node* AreaProducer(const Node& n, size_t port) const;
  // The area operator `id` is a member of, or null.
  Area* AreaOf(int id);
  // Whether (node id, port) is a redo queue's port: a gatekeeper's (or, without gatekeepers, any
  // member's) input from outside its area.
  bool Redone(const Area& a, int64_t area, int id, int port) const;
  // Every area: progress moved on to its queue heads, then commits (and resets) that are due.
  void Settle();
  void Advance(int64_t area);
  // Commits area `area`'s final instant if one is; true when it did (or aborted).
  bool Commit(int64_t area, Area& a);
  // What a diff area's commit at `t` emits: R(t) (the `ready` first held items) less the last
  // committed R for ISTREAM, the last committed R less R(t) for DSTREAM, stamped t; and R(t)
  // becomes the last committed R (`next`, to keep if the commit succeeds).
  std::vector<Item> Differ(Area& a, size_t ready, Time t, std::vector<Batch>* next) const;
  // Resets area `area` and refeeds its redo queues from a.replay_from.
  void Reset(int64_t area, Area& a);
  // The replay point after instant `tau` committed.
  Time ReplayPoint(Area& a, Time tau) const;
  std::vector<int> Members(int64_t area) const;

  txn::Bindings* txn_;
  OperatorContext base_;
  bool redo_always_;
  std::map<int64_t, Area> txn_areas_;
  std::map<int, int64_t> top_windows_;  // a top window's id -> its area
  std::set<int> held_exits_;            // ids of members whose output outside leaves at commits
  std::map<int, OperatorSpec> specs_;   // members' specs, to rebuild them
  std::map<int, Time> registered_;      // members' registration times
  std::map<int, int64_t> counted_;      // operator id -> its evaluations at the last commit
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::map<int, std::pair<int64_t, bool>> area_of_;  // operator id -> (redo area, gatekeeper)
  int64_t turns_ = 0;
};

}  // namespace cq
