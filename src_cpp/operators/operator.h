#pragma once
// The one small contract every operator implements (ARCHITECTURE.md §3.1–3.2). An operator owns its
// state and nothing else: the executors decide when it runs (DTS or heartbeat) and route what it
// emits. Specs (the plan) are immutable JSON; an operator is built from its spec by the factory it
// registers under its name (operators/registry.h). ADDING_AN_OPERATOR.md is the checklist.
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "batch/batch.h"
#include "lifetime/expiration_holder.h"
#include "rows/row_operator.h"
#include "time/time.h"

namespace cq {

class SnapshotWriter;  // batch/snapshot.h
class SnapshotReader;
namespace txn {
struct Bindings;  // txn/resource.h
}

// Where an operator's output goes. The executor gives each operator its own emitter.
class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual void Emit(Batch batch) = 0;
  // A batch the operator received, handed on as it is (a filter that every row passed). An
  // executor that delivers at once (DTS) passes the caller's batch on by reference: in a loop,
  // where a batch holds a row or two, the copy costs as much as the filtering.
  virtual void Forward(const Batch& batch) { Emit(batch); }
  // End times fixed for tuples that went out with a pending holder (paper 003 §4.1). A producer
  // emits the ends a batch of input fixes before the rows that batch produces, and emits each
  // holder's end exactly once; after that the id may be recycled.
  virtual void EmitEnds(EndBatch ends) = 0;
};

// Engine-owned resources an operator may use.
struct OperatorContext {
  HolderTable* holders = nullptr;
  bool negative = false;  // lifetime="negative": the Negative Tuple method (SEMANTICS.md §5)
  // The engine's progress P (SEMANTICS.md §4.3): the furthest tick any input of the engine has
  // reached — its latest timestamp or advance, over all streams and relations — as it stood before
  // close(), which leaves it as it was. Null outside an engine (unit tests): no input is known to
  // be ahead.
  const int64_t* furthest = nullptr;
  // The engine's least progress (the minimum of its inputs' progress: results below it are final,
  // and a query registered now sees the engine at it), kept up to date by the engine; null
  // outside an engine.
  const Time* least = nullptr;
  // Its value when the operator is added.
  Time registered_at = Time::MinusInfinity();
  // The resources and models the engine's reference operators read, and its read log (paper
  // 002); null outside an engine.
  txn::Bindings* txn = nullptr;
};

class Operator {
 public:
  virtual ~Operator() = default;

  // Rows arrived on input `port`, in non-decreasing time order per port.
  virtual void Push(int port, const Batch& batch, Emitter& out) = 0;
  // The ends of tuples that arrived earlier on `port` with a pending holder. Operators that pass
  // each tuple's lifetime on unchanged (select, project, union all) pass the ends on: the holder
  // id is the tuple's identity downstream. Stateful operators look the ids up in their
  // undetermined set and ignore the others (the tuple never reached them).
  virtual void PushEnds(int port, const EndBatch& ends, Emitter& out) { out.EmitEnds(ends); }
  // No input below `progress` will arrive on any port any more. Operators that hold results back
  // until they are final (expirations, pending ends) release them here. Time::Infinity() is close().
  virtual void AdvanceTo(Time progress, Emitter& out) {}

  // The next instant at which the operator emits by itself once progress passes it — held rows,
  // expirations, pending ends it will fix, RSTREAM's ticks: its next firing time (paper 000 §3.2)
  // — or Time::Infinity() when everything it holds waits on more input. The DTS executor asks
  // only inside loops, where the next instant to run is the minimum of these. `last_tick` is the
  // furthest tick the loop's inputs have reached.
  virtual Time next_firing(int64_t last_tick) const { return Time::Infinity(); }

  // The inputs have ended (close()): nothing more will come than what is in already.
  // Outside loops AdvanceTo(Time::Infinity()) says it; inside a loop the last instants still run
  // one by one after it, so the DTS executor says it first (RSTREAM then knows that the engine's
  // progress P, OperatorContext::furthest, is final).
  virtual void Closing(int64_t last_tick) {}

  // How far the operator's output is complete once its inputs' progress is `progress`: nothing it
  // emits later lies below this. The executors hand it on as its consumers' input progress. Its
  // input progress moved forward by its delay, for all but RSTREAM, which holds back the ticks it
  // cannot decide yet (those beyond the engine's progress P, SEMANTICS.md §4.3) until P passes them
  // or close() comes.
  virtual Time OutputProgress(Time progress) const {
    return progress == Time::MinusInfinity() ? progress : progress + delay();
  }

  // How far the operator moves time forward: zero for all but delays (paper 000 §3.1), which the
  // executors use to cut loops.
  virtual Duration delay() const { return {}; }
  // True when the operator hands on every batch and every end batch as it received them (same
  // columns and types, same rows, same lifetimes): a projection that renames nothing or only
  // renames. The DTS executor then gives its input to its consumers directly — in a loop, where
  // batches hold a row or two, building the copy cost as much as the work of a whole operator.
  virtual bool passes_through() const { return false; }
  // True when what the operator emits after close() at an instant depends on how its input goes
  // on after that instant: RSTREAM emits R(t) beyond the engine's progress only while a value of
  // R(t) later drops, and its input may fix that drop later (the end of a DISTINCT's or an
  // aggregate's tuple, when the window under it expires). Run instant by instant together with its producers, it
  // would learn it too late for its consumers; so the DTS executor with hybrid = false runs such
  // an operator, when it is on no loop, on whole batches between the regions of its producers
  // and of its consumers, as the hybrid does, and a loop holding one in a region of its own.
  virtual bool looks_ahead_at_close() const { return false; }
  // True for a query's output, which emits nothing. The DTS executor runs an output fed by a loop
  // inside the loop's region, in row form: its rows then need no batch to get there.
  virtual bool is_output() const { return false; }
  // The operator's row form (rows/ROWS.md), which the DTS executor runs inside loop regions, where
  // an instant carries a row or two; null when it has none (it then runs there through a
  // BatchAdapter). Asked once, at any time: the operator may have run in batch form before, and
  // both forms drive its one state (rows/ROWS.md). The row form may refer to
  // this operator, which outlives it.
  virtual std::unique_ptr<RowOperator> ToRows() { return nullptr; }
  // What an operator added now, while the engine runs at progress `p`, must still be handed from
  // this one, its input (SEMANTICS.md §4, a query registered at p): the tuples of a relation alive
  // at p, a delayed stream's rows from p on that went out before. Empty for most.
  virtual std::vector<Batch> Backlog(Time p) { return {}; }
  virtual const Schema& output_schema() const = 0;
  virtual BatchKind output_kind() const = 0;
  // One line for explain(): the operator and its parameters.
  virtual std::string Explain() const = 0;

  // Engine snapshots (checkpoints; batch/snapshot.h): everything the operator holds that later
  // calls depend on — kept rows, cursors, pending holder ids, its place in time — but not what
  // its spec gives (the plan is rebuilt before a restore). Restore reads it back into an operator
  // freshly built from the same spec, and throws CqError(kSnapshot) on bytes that do not fit.
  // Snapshots are taken between calls, never inside an instant. Pure virtual on purpose: a
  // stateless operator says so by writing nothing.
  virtual void Snapshot(SnapshotWriter& w) const = 0;
  virtual void Restore(SnapshotReader& r) = 0;
};

struct OperatorSpec {
  int id = -1;
  std::string op;
  std::vector<int> inputs;
  json::Value params;  // the whole spec object; each factory reads its own keys
};

}  // namespace cq
