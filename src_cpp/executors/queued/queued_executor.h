#pragma once
// The queues of the heartbeat method (paper 000 §2.3, SEMANTICS.md §5 executor="heartbeat"), the
// baseline DTS is measured against. Operators are joined by FIFO queues, one per edge (consumer, port), holding
//   * data: the rows of one timestamp (one row if `row_items`: paper 002 §5.1's evaluation takes
//     one row). Input batches and operators' outputs alike are cut per distinct timestamp, so that every item has one
//     time and a binary operator merges its inputs exactly by time, arrival by arrival, as the paper measured it
//     (outputs are mostly one timestamp already, since each execution moves time by one instant, so cutting them costs
//     little);
//   * heartbeats: the producer's progress, moved by its delay (consecutive ones coalesce);
//   * end fixes (EndBatch), beside the data: each is due once the queued rows it may be about
//     (those starting at or before its end) have been taken, so it keeps its order with its rows
//     but is not held up by later rows stalled behind them.
// One execution of an operator takes one item: a due end fix, else for a unary operator its
// queue's head, for an n-ary one the head with the smallest time, but only when every other input
// has a queued item or has already delivered that time. Otherwise the operator stalls (§2.3) until
// data or a heartbeat arrives on the empty input.
//
// Progress moves in waves, one per AdvanceTo: every source queues a heartbeat behind its data, and
// an operator passes the wave on (its own heartbeat, Operator::OutputProgress) once every input
// has sent its heartbeat of the wave and no queued data or end fix lies below the minimum of their
// promises; if that minimum rose, the operator's AdvanceTo runs first. So each operator sees the
// progress DTS gives it, and has everything DTS would have given it below that progress.
//
// This class is those queues, waves and end fixes, shared by two executors that differ in who runs
// next (Drain): the heartbeat executor (executors/heartbeat/, the stack of §4.2) and the scheduled
// executor (executors/scheduled/, paper 002 §5: a policy of schedulers/ picks the operator, which
// then evaluates up to `batch` rows, each data item being one row). Push and AdvanceTo return when
// no operator can execute any more: what is left queued is stalled, above the progress DTS would
// have reached, so every executor gives the same rows, final at the same progress (rows beyond
// the progress that DTS passes through early may wait here until the stall ends).
//
// End fixes wait in queues, but a producer releases a holder id right after emitting its end: the
// ids of queued fixes are pinned in the HolderTable so that none is reused before every consumer
// has taken its end. A cycle cannot run (a binary operator on it would wait for a heartbeat from
// its own output): Add refuses it (kSemantic) and points to executor='dts'.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "executors/executor.h"

namespace cq {

class QueuedExecutor : public Executor {
 public:
  // `name`: the executor's name in errors. `row_items`: data items hold one row each, not one
  // timestamp. `holders`: the engine's table, whose ids stay pinned while their end fixes wait in
  // a queue.
  QueuedExecutor(std::string name, bool row_items, HolderTable* holders);
  void Replay(int producer, int consumer, const Batch& batch) override;
  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) override;
  void Remove(const std::vector<int>& ids) override;
  void Push(int source, const Batch& batch) override;
  void AdvanceTo(const std::map<int, Time>& source_progress) override;

  Operator* op(int id) const override;
  const std::vector<int>& order() const override { return order_; }
  const std::vector<int>& inputs(int id) const override { return nodes_.at(index_.at(id)).inputs; }
  // Everything that waits between the operators: each queue's items (data and heartbeats), its end
  // fixes and place in the waves, each operator's progress. The holder table (saved by the engine)
  // keeps the pins of the queued end fixes; Restore checks the two agree. The scheduled executor
  // refuses (its policy's place in the round is not saved; scripts with resources refuse anyway).
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const std::map<int, Time>& source_progress) override;

  // What the scheduler did, for tests and benchmarks.
  struct Stats {
    int64_t executions = 0;  // items taken by an operator (data, end fixes, heartbeats)
    int64_t stalls = 0;      // visits of an operator whose smallest head had to wait
    int64_t switches = 0;    // times control moved to another operator
  };
  const Stats& stats() const { return stats_; }
  // Items waiting in the queues of operator `id` (all ports).
  int64_t queued(int id) const;
  // Data items operator `id` has taken (rows, with `row_items`): its evaluations (paper 002 §5.1).
  bool counts_evaluations() const override { return true; }
  int64_t evaluations(int id) const override { return nodes_.at(index_.at(id)).evaluations; }

 protected:
  struct Item {
    enum class Kind : uint8_t { kData, kEnds, kHeartbeat };
    Kind kind;
    Time time;      // data: the rows' time; heartbeat: the promise; end fix: its smallest end
    Batch batch;    // kData
    EndBatch ends;  // kEnds
  };
  // A FIFO over a vector: once warm it allocates nothing per item (std::deque would allocate a
  // block for each item this large).
  class Fifo {
   public:
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    Item& front() { return items_[head_]; }
    const Item& front() const { return items_[head_]; }
    Item& back() { return items_.back(); }
    std::vector<Item>::const_iterator begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
    std::vector<Item>::const_iterator end() const { return items_.end(); }
    void push_back(Item item) { items_.push_back(std::move(item)); }
    Item pop_front();
    // Replaces the content (a reset area's queues).
    void assign(std::vector<Item> items) {
      items_ = std::move(items);
      head_ = 0;
    }

   private:
    std::vector<Item> items_;
    size_t head_ = 0;
  };
  struct Port {
    // Data and heartbeats, in time order, merged with the other inputs by time.
    Fifo queue;
    uint64_t taken = 0;  // items taken from `queue` so far (numbers them)
    // Sliding minimum of the queued data times, (item number, time): what must reach the
    // operator before its progress passes it.
    std::deque<std::pair<uint64_t, Time>> floor;
    // End fixes, by the number of `queue` items that must be taken before each: those holding a
    // row the fix may be about (a row starts at or before its end). They need no merging by
    // time: one is taken as soon as the data before it is.
    std::multimap<uint64_t, Item> ends;
    std::multiset<Time> ends_floor;         // the smallest end of each
    Time seen = Time::MinusInfinity();      // latest time taken from `queue` (data or heartbeat)
    Time promised = Time::MinusInfinity();  // latest heartbeat queued: the producer's promise
    uint64_t wave = 0;                      // the AdvanceTo call `promised` is from

    void QueueData(Item item);
    Item TakeData();
    // Whether the operator's progress may move to `t`: nothing queued must reach it first.
    bool Clear(Time t) const;
  };
  // What an operator takes next: the head of a port's queue or an end fix that is due.
  struct Pick {
    int port = -1;
    bool ends = false;
  };
  struct Consumer {
    int node;  // index into nodes_
    int port;
  };
  class NodeEmitter final : public Emitter {
   public:
    NodeEmitter(QueuedExecutor* ex, int node) : ex_(ex), node_(node) {}
    void Emit(Batch batch) override { ex_->EnqueueData(node_, batch); }
    void EmitEnds(EndBatch ends) override { ex_->EnqueueEnds(node_, ends); }
    void set_node(int node) { node_ = node; }  // (Remove renumbers the nodes)

   private:
    QueuedExecutor* ex_;
    int node_;
  };
  struct Node {
    int id;
    std::unique_ptr<Operator> op;
    std::vector<int> inputs;  // operator ids, as the plan gives them
    std::vector<Consumer> consumers;
    std::vector<Port> ports;  // a source has one, fed by Push and AdvanceTo
    std::unique_ptr<NodeEmitter> emitter;
    Time progress = Time::MinusInfinity();
    uint64_t wave = 0;      // the last wave passed on to the consumers
    uint64_t fed_mark = 0;  // == turn_ when it was fed during the current turn
    int64_t evaluations = 0;
  };

  // Cuts `batch` into runs of one timestamp and appends them to `port`.
  void Append(Port& port, const Batch& batch);
  void EnqueueData(int node, const Batch& batch);
  void EnqueueEnds(int node, const EndBatch& ends);
  void QueueEnds(int node, const EndBatch& ends);  // (EnqueueEnds without Hold)
  // A heartbeat of the current wave: `p`'s producer will send nothing below `t` any more.
  void Promise(Port& p, Time t);
  void EnqueueHeartbeat(int node, Time t);
  void Fed(int consumer);
  // What the operator may take now; port -1: nothing queued, or stalled (§2.3).
  Pick Consumable(const Node& n, bool* stalled) const;
  // Returns whether it took a data item (an evaluation).
  bool Execute(int node, Pick pick);
  // Once every input has its heartbeat of the current wave and nothing queued lies below the new
  // progress: runs the operator's AdvanceTo if its progress rose and sends the wave on.
  void Refresh(int node);
  // Runs operators until none can execute: the schedule, the executors' own part.
  virtual void Drain() = 0;
  // Operator `node` was given something to do by Push, AdvanceTo or Replay.
  virtual void Wake(int node) = 0;
  // Remove moved the nodes: old index i is now moved[i] (-1: removed).
  virtual void Renumbered(const std::vector<int>& moved) {}
  // Whether node `node`'s output item is held back instead of queued for its consumers (paper
  // 002: a commit operator's output waits for its transaction's commit); default: never.
  virtual bool Hold(int node, const Item& item) { return false; }
  // Items from `first` on were just queued on `port` of node `node` (paper 002: a gatekeeper's
  // redo queue keeps them).
  virtual void Entered(int node, int port, size_t first) {}
  // How many leading rows of `batch`, emitted by node `node`, consumer `consumer` has had
  // already (paper 002: a replayed area emits again what it emitted before its reset).
  virtual int64_t Duplicates(int node, int consumer, const Batch& batch) { return 0; }
  // Queues a held item for the node's consumers, as its emitter would have.
  void Release(int node, Item item);
  // The time up to which input `port` of `n` has delivered what it will (an empty queue's
  // stall of §2.3): its latest time taken; an executor that knows a producer's progress sooner
  // than its heartbeats carry it says so.
  virtual Time Delivered(const Node& n, size_t port) const { return n.ports[port].seen; }

  // kSnapshot unless this executor takes snapshots.
  void CheckSnapshots() const;

  std::string name_;
  bool row_items_;
  bool snapshots_ = false;  // set by the executors that take snapshots
  HolderTable* holders_;
  std::vector<Node> nodes_;
  std::map<int, int> index_;  // operator id -> index into nodes_
  std::vector<int> order_;    // operator ids, topological
  std::vector<int> fed_;      // consumers fed during the current turn, in feeding order
  uint64_t turn_ = 1;
  uint64_t wave_ = 0;  // AdvanceTo calls so far
  Stats stats_;
  bool holds_ = false;  // Hold, Entered and Duplicates are asked (a derived executor sets it)
};

}  // namespace cq
