#pragma once
// Delay-based Time-Splitting (paper 000 §3.2), run as a hybrid (SEMANTICS.md §5, the paper's §6
// future work).
//
// Operators run in an order where producers come before consumers, with every loop cut at a
// delay: a delay's output lies in the future, so the instant ends there (Fig. 6 cuts nested loops
// recursively; cutting every delay's outgoing edges inside a strongly connected part does the same
// in one pass, since every cycle holds a delay).
//
// Outside strongly connected parts an operator consumes whole multi-timestamp batches, handed on
// depth-first as they are produced, and progress runs through the operators in order. A strongly
// connected part (a loop, with its nested loops) is a *region* run instant by instant: rows and
// ends entering it from outside wait in entry queues; the next instant t is the minimum of the
// queues' heads and the firing times of the region's operators (held rows, expirations, RSTREAM
// ticks) and of the rows the delays hold; the rows at t are released and every operator of the
// region is advanced past t, in order; what the delays emit waits for t + δ, a later instant, in
// the delay's queue (the region's own entry, as it were). When nothing is due before the
// region's inputs' progress, the region jumps there at once. With hybrid = false the whole graph
// below the sources is one region, which is the executor of the paper — but for the operators
// that look ahead at close (RSTREAM, Operator::looks_ahead_at_close), which run as the hybrid
// runs them, between regions.
//
// A region's operators run in row form (rows/ROWS.md): an instant carries a row or two, which
// they exchange one at a time, as the paper's tuple-at-a-time engine did, instead of as batches.
// Rows entering the region leave their entry queues one at a time; rows leaving it for operators
// outside are gathered into one batch per producer, handed on when the region stops.
//
// A loop that does not settle is stopped (LoopBounds): ε steps in a tick are counted as the
// instants come; the rows its delays take (what goes round) into Region::taken as they come,
// checked after every instant; and, at every new tick, the ticks and rows past its inputs'
// progress.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "executors/executor.h"
#include "lifetime/expiration_set.h"
#include "lifetime/ordered_runs.h"
#include "rows/batch_rows.h"
#include "rows/row_operator.h"

namespace cq {

// The bounds past which a loop is a runaway (RunawayLoopError, naming the loop).
struct LoopBounds {
  // ε steps a loop may take inside one tick.
  int64_t steps = 1000000;
  // Ticks at which a loop may produce rows past its inputs' progress (after close(), or an
  // advance far ahead of the last input): counted per tick the loop is busy, not per tick of
  // time, so that a countdown with a delay of <1 SECOND> uses one per step in any time unit.
  int64_t ticks = 1000000;
  // Rows a loop's delays may take in one tick, and past its inputs' progress in all (rows that
  // multiply as they go round).
  int64_t rows = 10000000;
};

class DtsExecutor final : public Executor {
 public:
  // `hybrid`: split time per instant only inside loops.
  explicit DtsExecutor(bool hybrid = true, LoopBounds bounds = {}) : hybrid_(hybrid), bounds_(bounds) {}

  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) override;
  void Remove(const std::vector<int>& ids) override;
  void Push(int source, const Batch& batch) override;
  void AdvanceTo(const std::map<int, Time>& source_progress) override;
  void Replay(int producer, int consumer, const Batch& batch) override;

  Operator* op(int id) const override;
  const std::vector<int>& order() const override { return order_; }
  const std::vector<int>& inputs(int id) const override { return nodes_.at(id).inputs; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r, const std::map<int, Time>& source_progress) override;
  void SnapshotOperator(int id, SnapshotWriter& w) const override;
  void RestoreOperator(int id, SnapshotReader& r) override;
  std::string form(int id) const override;

 private:
  struct Node;
  // A delay's output for the operators of its region, waiting for its instant (paper 000 §3.2: a
  // delay's output lies in the future, so the instant ends there). The region releases it when it
  // runs that instant, before its entries, so no operator of a loop is handed a row of a later
  // instant and keeps it itself. The rows come in time order (a delay's input is at the instant
  // being run, and its shift is constant); one that does not goes to its place.
  // It takes the rows as one more consumer of the delay, so that emitting costs nothing more.
  class DelayedRows final : public RowOperator {
   public:
    explicit DelayedRows(const Schema& schema)
        : schema_(std::make_shared<const Schema>(schema)), store_(RowLayout(schema)) {}
    void Push(int, const Row& row, RowEmitter&) override;
    Time head() const { return HasFrom(items_, head_) ? items_[head_].sync : Time::Infinity(); }
    // Rows it takes are counted into *c too (the loop bounds), or nowhere with null.
    void count_into(uint64_t* c) { count_ = c ? c : &uncounted_; }
    // f(row) for the rows below `next`, in time order; a row added meanwhile (a loop without
    // state between the delay and itself) waits for its own instant.
    template <typename F>
    void Release(Time next, F&& f);
    // f(row) for every row held now, whatever its time (rows added meanwhile stay).
    template <typename F>
    void Drain(F&& f);
    void Snapshot(SnapshotWriter& w) const override;
    void Restore(SnapshotReader& r) override;

   private:
    struct Item {
      uint32_t slot;
      Time sync;
    };
    // f(the item's row), and its slot let go of (a row's values stay where they are while others
    // are added).
    template <typename F>
    void Hand(Item it, F& f) {
      Row row;
      row.values = store_.Get(it.slot);
      row.sync = it.sync;
      f(row);
      store_.Remove(it.slot);
    }
    std::shared_ptr<const Schema> schema_;
    RowStore store_;
    std::vector<Item> items_;  // waiting from head_ on
    size_t head_ = 0;
    uint64_t uncounted_ = 0;
    uint64_t* count_ = &uncounted_;
  };
  // Loops deliver a row or two per instant, so the routing is resolved once, when the graph is
  // scheduled: the consumer's node, and the entry queue the edge feeds (or -1 when it stays inside
  // a region or outside all).
  struct Consumer {
    int node;
    int port;
    Node* target = nullptr;
    int entry = -1;
    // The target passes its input on unchanged (Operator::passes_through) and the edge feeds no
    // entry queue: deliver to the target's consumers instead. The target still runs in the
    // schedule (its progress is its consumers' input progress); it just never sees a batch.
    bool bypass = false;
  };
  // Where a region member's rows go: its consumers in the region, row by row, and its exit, the
  // batch being gathered for its consumers outside. Resolved when the region is formed, with the
  // bypassed projections on the way expanded: a row costs a call per consumer that does work.
  class NodeRowEmitter final : public RowEmitter {
   public:
    NodeRowEmitter(DtsExecutor* ex, Node* self) : ex_(ex), self_(self) {}
    void Emit(const Row& row) override;
    void EmitEnd(HolderId id, Time end) override;

   private:
    friend class DtsExecutor;
    struct Target {
      Node* node;
      RowOperator* op;
      int port;
      RowEmitter* emitter;
      bool* stale;  // the node's stale flag, or nowhere for a node that wakes itself
    };
    DtsExecutor* ex_;
    Node* self_;
    std::vector<Target> targets_;
    std::vector<Node*> exits_;      // the nodes whose exit the rows reach (this one, bypassed ones)
    const Target* lone_ = nullptr;  // targets_[0] when it is the only place rows go
    // A delay's: the consumers in the region that take its rows at their instant (the rows wait
    // in Node::delayed, one of targets_, meanwhile). Query outputs are not among them: they take
    // a future row as it is.
    std::vector<Target> held_targets_;
    [[gnu::noinline]] void EmitAll(const Row& row);  // (out of line: Emit keeps no frame)
    // A delay's row that waited, to its held targets.
    void EmitHeld(const Row& row);
  };
  class NodeEmitter final : public Emitter {
   public:
    NodeEmitter(DtsExecutor* ex, int node) : ex_(ex), node_(node) {}
    void Emit(Batch batch) override { Forward(batch); }
    void Forward(const Batch& batch) override;
    void EmitEnds(EndBatch ends) override;

   private:
    friend class DtsExecutor;
    DtsExecutor* ex_;
    int node_;
    Node* self_ = nullptr;
  };
  struct Node {
    std::unique_ptr<Operator> op;
    std::vector<int> inputs;
    std::vector<Consumer> consumers;
    std::unique_ptr<NodeEmitter> emitter;
    // In a region: the row form it runs in (its own, or a BatchAdapter around it), the consumers
    // in the region, and the exit, for its consumers outside (null when it has none).
    std::unique_ptr<RowOperator> rows;
    bool adapted = false;
    bool when_due = false;      // rows->advances_when_due()
    bool fires = true;          // rows->fires()
    bool wakes_itself = false;  // rows->wakes_itself() (and advances when due)
    // Its next firing time as last asked, stale once it has been given something or advanced.
    Time next = Time::MinusInfinity();
    bool stale = true;
    std::unique_ptr<NodeRowEmitter> row_emitter;
    std::vector<Consumer> inner;
    std::vector<Consumer> outer;
    std::unique_ptr<RowBatchBuilder> exit;
    std::unique_ptr<DelayedRows> delayed;  // a delay in a region with consumers there (kept across schedules)
    // The constant duration the plan gives its output's lifetimes, if any.
    std::optional<Duration> duration;
    Time progress = Time::MinusInfinity();
    int region = -1;       // the region it runs in, or -1
    bool on_loop = false;  // it is on a cycle of the graph
    std::string query;     // the query it belongs to (for errors)
  };
  // What waits on one edge into a region: runs that may interleave (see OrderedRuns), released
  // instant by instant.
  struct Entry {
    int node, port;
    Node* target = nullptr;
    OrderedRuns runs;
  };
  struct Region {
    std::vector<int> nodes;       // in execution order
    std::vector<Node*> members;   // the same nodes
    std::vector<Node*> stateful;  // the members whose row form keeps something between calls
    // Of those, the ones that act by themselves only at close (they never fire, and advance only
    // when due): left out of the instants, told once time reaches infinity.
    std::vector<Node*> closers;
    std::vector<Node*> exits;        // the members with consumers outside
    std::vector<Node*> gathering;    // the members whose row form gathers (RowOperator::gathers)
    std::vector<Node*> delays;       // the members whose rows wait for their instant (Node::delayed)
    std::vector<Node*> loop_delays;  // of those, the ones on a cycle: what goes round is what they take
    std::vector<size_t> entries;     // into entries_
    std::vector<int> producers;      // nodes outside the region that feed it
    Time progress = Time::MinusInfinity();
    Time now = Time::MinusInfinity();    // the instant being run (RowEmitter::now)
    int64_t last_tick = Time::kMinTick;  // the furthest finite tick its inputs reached
    bool closing = false;                // its inputs have ended (told to its operators)
    // The loop bounds' counts (NextTick). Not in snapshots: a restored engine counts afresh.
    // `fed_tick`: its inputs' progress as it knows it — the furthest finite tick they reached
    // before the current call, or of a row that entered it since.
    int64_t fed_tick = Time::kMinTick;
    uint64_t taken = 0;                  // rows its loop delays took (they count into it)
    int64_t tick = Time::kMinTick;       // the tick of the instants being run
    uint64_t tick_taken = 0;             // `taken` when that tick began
    int64_t past_from = Time::kMinTick;  // the fed_tick that the two counts below are past
    int64_t past_ticks = 0;              // ticks past it at which the loop produced rows
    uint64_t past_rows = 0;              // rows its loop delays took at those ticks
  };
  struct Step {  // one element of the schedule: a node outside regions, or a region
    int node = -1;
    int region = -1;
    // The node and its producers, resolved once per Schedule(): an advance visits every operator,
    // and with hundreds of queries looking them up by id was a third of a MASTER arrival's cost.
    Node* target = nullptr;
    std::vector<const Node*> producers;
  };

  void Deliver(const Consumer& c, const Batch& batch);
  void DeliverEnds(const Consumer& c, const EndBatch& ends);
  // The targets and exits a member's rows reach (NodeRowEmitter), through bypassed projections.
  void ResolveRowTargets(Node& n, NodeRowEmitter& e);
  // Row forms for the region members that have none yet: their own, also for operators that
  // already ran outside loops (a BatchAdapter only for an operator that has none).
  void MakeRowForms();
  // Hands each exit's gathered rows to the consumers outside.
  // Its progress as snapshots see it: a loop's member sees its instants before its own progress
  // catches up (AdvanceRegion).
  Time Progress(const Node& n) const;
  void FlushExits(Region& r);
  void FlushAllExits();
  // Orders the graph, cuts loops at delays and forms the regions; throws (changing nothing) on a
  // loop without a delay.
  void Schedule();
  void RunRegion(Region& r);
  // Where giving `n` a row or an end marks it for a visit: its stale flag, or, for a node that
  // wakes itself, a flag no one reads.
  bool* StaleFlag(Node& n) { return n.wakes_itself ? &unread_stale_ : &n.stale; }
  bool unread_stale_ = false;
  // Tells the region's members that time reached `p`; returns their next firing after it.
  Time AdvanceRegion(Region& r, Time p);
  // n's next firing, asked again only when n is stale.
  static Time NextFiring(const Region& r, Node& n) {
    if (n.stale) {
      n.next = n.fires ? n.rows->next_firing(r.last_tick) : Time::Infinity();
      n.stale = false;
    }
    return n.next;
  }
  // Hands the consumer the entry's rows below `next`.
  void Release(Entry& e, Time next);
  // Hands a delay's consumers in its region its rows below `next`.
  [[gnu::noinline]] void ReleaseDelayed(Node& d, Time next);  // (out of line: RunRegion stays small)
  std::string LoopName(const Region& r) const;
  // A region with loops moves on to `tick`: the tick it leaves counts towards the bounds past
  // its inputs' progress if the loop produced rows there (CqError(kRunaway) beyond them).
  void NextTick(Region& r, int64_t tick);
  // The error for a loop past its bounds at `tick` (which bound: the counts say).
  [[noreturn, gnu::cold]] void RunawayLoop(const Region& r, int64_t tick) const;
  Time InputProgress(int producer) const;
  static Time InputProgress(const Node& producer) { return producer.op->OutputProgress(producer.progress); }

  bool hybrid_;
  LoopBounds bounds_;
  std::map<int, Node> nodes_;
  std::vector<int> order_;
  std::vector<Step> schedule_;
  std::vector<Region> regions_;
  std::vector<Entry> entries_;
};

}  // namespace cq
