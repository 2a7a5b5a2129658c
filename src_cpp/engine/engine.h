#pragma once
// The one facade the binding sees (ARCHITECTURE.md §3.7): plans in as JSON, Arrow batches in and
// out, errors as CqError. Every call either completes or leaves the engine as it was.
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arrow/bridge.h"
#include "base/errors.h"
#include "base/json.h"
#include "batch/snapshot.h"
#include "executors/executor.h"
#include "operators/query_sink.h"
#include "operators/relation_scan.h"
#include "txn/resource.h"
#include "txn/transaction_manager.h"

namespace cq {

struct EngineOptions {
  std::string lifetime = "direct";
  std::string executor = "dts";
  bool expose_steps = false;
  // DTS: time-split only inside loops (false: every operator instant by instant, as in paper 000).
  bool hybrid = true;
  // DTS: ε steps one loop may take inside one tick before it is reported as a runaway.
  int64_t max_loop_steps = 1000000;
  // Heartbeat: consecutive executions of one operator before the scheduler moves on.
  int64_t max_run = 20;
  // DTS: ticks at which a loop may produce rows past its inputs' progress, and rows that may go
  // round a loop in one tick or past its inputs' progress (executors/dts/dts_executor.h, LoopBounds).
  int64_t max_loop_ticks = 1000000;
  int64_t max_loop_rows = 10000000;
  // Rows handed to the operators at a time: a push holding more runs as slices of this many (after
  // the whole push is validated, so it still changes all or nothing). Every operator's output for
  // a slice is the size of the slice, not of the push: memory stays bounded by the state of the
  // queries, whatever the size of a push, and the columns a slice makes (512 KiB at 65,536 int64s)
  // stay below the allocator's mapping threshold (batch/buffer.h, KeepWorkingMemory), so each slice
  // reuses the memory the one before freed instead of mapping, faulting in and zeroing fresh pages.
  int64_t batch_size = 65536;
  // Scheduled (paper 002 §5): the policy choosing whose turn it is, the evaluations (rows taken)
  // an operator gets per turn, and §6's gatekeeper constraint (schedulers/scheduler.h).
  std::string scheduler = "round_robin";
  int64_t batch = 1;
  bool gatekeeper = true;
  // Paper 002's concurrency control of the redo areas' reads (txn/transaction_manager.h): "none",
  // "2pl", "snapshot" or "optimistic", and how long a read waits for a resource's lock.
  std::string txn = "none";
  double lock_timeout = 10.0;  // seconds
  // When a redo area holding an overlapping window is reset and replayed at a commit (§4.1.3):
  // "always", or "on_change" (a resource read for retained rows changed since).
  std::string redo = "on_change";
};

class Engine {
 public:
  explicit Engine(EngineOptions options);

  // Adds the operators of a plan fragment: {"operators": [{"id", "op", "inputs", ...}, ...]}.
  // Atomic: on error nothing of the fragment is added. A fragment {"drop": {"query": q,
  // "operators": [ids]}} instead unregisters query q and removes those operators (its output and
  // what no other query reads, as cq_py computes them); kept in order with the others, so that a
  // snapshot's fragments rebuild the same graph.
  void AddPlan(const std::string& plan_json);

  // Validates every batch (columns, types, timestamps: non-null, non-decreasing, not below the
  // input's progress), then runs them. The last column of each batch is the timestamp in ticks.
  // `stream` names a stream or a relation; a relation's batches may hold, before the timestamp,
  // an op column (utf8 "+" insert, "-" delete; without it every row is an insert), and each delete
  // must find an alive copy of its values. On a validation error nothing runs and nothing changes.
  // The rows run options.batch_size at a time (see EngineOptions::batch_size).
  void Push(const std::string& stream, std::vector<ImportedBatch> batches);
  // Push's checks alone, without running: throws what Push would throw for `batches` and changes
  // nothing. A relation's deletes are checked against its alive rows only when `deletes` (an engine
  // that holds one part of a relation checks its part's deletes, not the whole push's). `rows`,
  // when not empty, holds the row number each row of `batches` reports in messages: a part of a
  // larger push names rows of the whole push. (cq_py's Engine(threads=N) checks a push whole
  // before its parts go to the engines that each run a part of the input.)
  void Check(const std::string& stream, std::vector<ImportedBatch> batches, bool deletes = true,
             std::span<const int64_t> rows = {}) const;
  // Moves input `stream`'s progress to `t` (when that is further), as a push of rows up to `t`
  // would, without rows: an engine that runs one part of the input learns how far the whole input
  // has come, so it completes the same instants as the engine holding the rows (cq_py's
  // Engine(threads=N)). Unlike Advance, the other inputs stay where they are.
  void AdvanceInput(const std::string& stream, Time t);
  // AdvanceInput of each of `streams` (checked all first: nothing moves if one is unknown), the
  // operators run once for all of them (an engine's clocks follow its streams this way).
  void AdvanceInputs(const std::vector<std::string>& streams, Time t);
  // Promise: no input below `t` on any stream.
  void Advance(Time t);
  // End of input: time advances to infinity, everything becomes final.
  void Close();
  bool closed() const { return closed_; }

  std::vector<OutputChunk> Drain(const std::string& query);
  // Drain of each query last given to Watch (checked then), only those with rows returned (index
  // into the list, chunks): the subscribed queries, drained after every call without naming them.
  void Watch(const std::vector<std::string>& queries);
  std::vector<std::pair<size_t, std::vector<OutputChunk>>> DrainWatched();
  const std::vector<std::string>& watched() const { return watched_; }
  // The declared columns of input `stream` (a stream or a relation), without the timestamp;
  // throws CqError(kInput) for a name that is not registered.
  const Schema& InputSchema(const std::string& stream) const;
  const Schema& OutputSchema(const std::string& query) const;
  std::vector<std::string> Queries() const;
  // One line per operator, in execution order: "<id> <- <inputs>: <operator>", then the form it
  // runs in when not its batch form ("[rows]", "[adapted]").
  std::string Explain() const;
  // Evaluations per operator id, in execution order (paper 002 §5.1: rows taken from its input
  // queues; under the heartbeat executor, one-timestamp items). CqError(kInput) under the DTS
  // executor, which does not count them.
  std::vector<std::pair<int, int64_t>> Evaluations() const;
  // A bounded shared window join's counters, clock and trace (operators/swj_bounded.h's Report):
  // one JSON object; CqError(kInput) when operator `id` is not one.
  std::string SharedJoinReport(int id) const;

  // A snapshot of the whole engine between calls (a checkpoint): every operator's state, the
  // expiration holder table, the executor's queues and place in time, each input's progress,
  // and the queries' output not drained yet. `annex` is stored with it unread (the Python layer
  // keeps its options and CQL there). Only under executor='dts'; throws CqError(kSnapshot) for
  // the heartbeat executor. Cost: linear in the state (columns are copied as raw buffers; a
  // buffer shared by several operators is written once).
  std::string Snapshot(std::string_view annex = {}) const;
  // Replaces the engine's state by a snapshot's. The snapshot must have been taken of an engine
  // with the same options and the same AddPlan calls, in order; otherwise, or when the bytes are
  // damaged or truncated, it throws CqError(kSnapshot) naming what differs, and the engine is
  // left as it was (the state is restored into a rebuilt engine, which then replaces this one).
  void Restore(std::string_view snapshot);
  // The annex of a snapshot, after checking its header and checksum (CqError(kSnapshot)).
  static std::string SnapshotAnnex(std::string_view snapshot);

  // Paper 002: resource `name` (and model `name`), read by the reference operators of plans
  // added after this call. Binding a name again replaces it for later plans only.
  void BindResource(const std::string& name, std::shared_ptr<txn::Resource> resource);
  void BindModel(const std::string& name, std::shared_ptr<txn::Model> model);
  // The reads the reference operators made, in the order made (the latest ReadLog::kLogLimit).
  std::vector<txn::ReadRecord> ReadLog() const { return txn_->log.records(); }
  const txn::ReadLog& reads() const { return txn_->log; }
  // Holder ids in use and the table's size (one past the largest id handed out): what resets of
  // redo areas must not make grow.
  std::pair<int64_t, int64_t> HolderTableSize() const { return {holders_->live(), holders_->capacity()}; }
  // The transaction managers (their lock waits; txn="none" has none).
  const txn::TransactionManagers& managers() const { return *txn_->managers; }

 private:
  // A registered input: a stream, or a relation (REGISTER RELATION) fed with changes.
  struct StreamState {
    int source_id;
    std::shared_ptr<const Schema> schema;
    Time progress = Time::MinusInfinity();   // no input below this any more
    const RelationScan* relation = nullptr;  // a relation's source; null for a stream
  };
  // The registered input `stream`, or CqError(kInput) naming the registered ones.
  const StreamState& Input(const std::string& stream) const;
  StreamState& Input(const std::string& stream) { return const_cast<StreamState&>(std::as_const(*this).Input(stream)); }
  // "stream 's'" or "relation 'r'", for messages.
  static std::string Describe(const std::string& name, const StreamState& st);
  // The batches of a push to `name`, checked (columns, types, op values, timestamps from `*last`
  // on, which ends at the push's last timestamp) and ready to run; throws CqError(kInput).
  std::vector<Batch> Validate(const std::string& name, const StreamState& st, std::vector<ImportedBatch> batches,
                              Time* last, std::span<const int64_t> rows) const;
  // Validate, then (when `deletes`) a relation's deletes against its alive rows: Push's step 1.
  std::vector<Batch> Prepare(const std::string& name, const StreamState& st, std::vector<ImportedBatch> batches,
                             Time* last, bool deletes, std::span<const int64_t> rows) const;
  // The input's progress moved on to `t` (when that is further), and on through the operators.
  void MoveProgress(StreamState& st, Time t);
  QuerySink* Sink(const std::string& query) const;
  // AddPlan's drop: query `query` and operators `drop` ({"query", "operators"}) removed.
  void Drop(const json::Value& drop);
  void PropagateProgress();
  // P and the least progress as the inputs' progress gives them.
  void UpdateProgress();
  // Runs `f`, the part of a call that moves data. An error there (a runaway loop) leaves operators
  // half way through an instant, so the engine refuses every later call, saying why — but Drain:
  // what the queries produced before (everything final below the inputs' progress) stays there.
  template <typename F>
  void Run(F&& f);
  CqError Inconsistent(const std::string& what);  // (Run, in a restored engine)
  void CheckUsable() const;

  // The payload of a snapshot once its header and checksum are checked.
  static std::string_view SnapshotPayload(std::string_view snapshot);
  // Everything but the options and plans, read into this engine (freshly built by Restore).
  void RestoreState(SnapshotReader& r);

  EngineOptions options_;
  // Before the executor: operators may release ids as they are destroyed. Behind a pointer so
  // that Restore can swap a rebuilt engine in without moving the table operators point to.
  std::unique_ptr<HolderTable> holders_ = std::make_unique<HolderTable>();
  // The engine's progress P (OperatorContext::furthest): the furthest tick any input reached,
  // frozen by close(). Behind a pointer for the same reason as the holder table.
  std::unique_ptr<int64_t> furthest_ = std::make_unique<int64_t>(Time::kMinTick);
  // The least progress of the inputs (OperatorContext::least), likewise.
  std::unique_ptr<Time> least_ = std::make_unique<Time>(Time::MinusInfinity());
  // What reference operators read (OperatorContext::txn), likewise behind a pointer.
  std::unique_ptr<txn::Bindings> txn_ = std::make_unique<txn::Bindings>();
  std::unique_ptr<Executor> executor_;
  std::map<std::string, StreamState> streams_;  // streams and relations, by name
  std::map<std::string, int> sinks_;
  // The sinks' operators in sinks_' order, resolved again after the graph changed (AddPlan, Drop,
  // Restore): Run marks every query's results at each call, hundreds of them for paper 001.
  const std::vector<QuerySink*>& SinkList();
  std::vector<QuerySink*> sink_list_;
  bool sinks_stale_ = true;
  uint64_t sinks_generation_ = 0;  // counts the changes of the graph's sinks
  std::vector<std::string> watched_;
  std::vector<QuerySink*> watched_sinks_;
  uint64_t watched_generation_ = ~uint64_t{0};
  std::map<int, Time> source_progress_;  // PropagateProgress': each input's progress by its source
  std::vector<std::pair<QuerySink*, QuerySink::Position>> marks_;  // Run's: the queries' results before
  Time advanced_ = Time::MinusInfinity();
  bool closed_ = false;
  std::unique_ptr<CqError> failed_;
  bool restored_ = false;           // state came from Restore (Run: a broken invariant is the snapshot's)
  std::vector<std::string> plans_;  // the AddPlan calls that succeeded, in order (for snapshots)
  // Each operator's place on the longest path from an input to it (back edges of loops aside):
  // a batch is handed down a path call by call, so a path deeper than kMaxPlanDepth is refused
  // at AddPlan rather than overflowing the stack at a push.
  static constexpr int kMaxPlanDepth = 2000;
  std::map<int, int> depth_;
};

}  // namespace cq
