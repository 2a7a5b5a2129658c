#pragma once
// The row form of an operator (rows/ROWS.md): the same contract as Operator (operators/operator.h)
// with a row where it has a batch. The DTS executor runs the members of a loop region in this
// form; an operator without one runs there through a BatchAdapter.
//
//   Push      a row arrived on `port`; rows come in non-decreasing time order per port
//   PushEnd   the end of a row that arrived earlier with a pending holder
//   AdvanceTo no input below `progress` will arrive any more: release what is final
//
// Emission is synchronous: what an operator emits has reached every consumer when Emit returns,
// so a row's values need to live only through the call. As in batch form, the ends an input fixes
// go out before the rows it produces, each holder's end exactly once.
#include "batch/snapshot.h"
#include "rows/row.h"

namespace cq {

class RowEmitter {
 public:
  virtual ~RowEmitter() = default;
  virtual void Emit(const Row& row) = 0;
  virtual void EmitEnd(HolderId id, Time end) = 0;
  // The instant the region is running: every row below it is out, so a row at it may go on as
  // soon as it comes (a union need not hold it). Time::MinusInfinity() between instants.
  Time now() const { return now_ ? *now_ : Time::MinusInfinity(); }
  void set_now(const Time* now) { now_ = now; }
  // An operator that wakes itself (RowOperator::wakes_itself) calls this when what it was given
  // changes its next firing.
  void Wake() {
    if (wake_) *wake_ = true;
  }
  void set_wake(bool* wake) { wake_ = wake; }

 private:
  const Time* now_ = nullptr;
  bool* wake_ = nullptr;
};

class RowOperator {
 public:
  virtual ~RowOperator() = default;
  virtual void Push(int port, const Row& row, RowEmitter& out) = 0;
  virtual void PushEnd(int port, HolderId id, Time end, RowEmitter& out) { out.EmitEnd(id, end); }
  virtual void AdvanceTo(Time progress, RowEmitter& out) {}
  // As Operator::next_firing: the next instant at which it emits by itself.
  virtual Time next_firing(int64_t last_tick) const { return Time::Infinity(); }
  virtual void Closing(int64_t last_tick) {}
  // The region stops running (at the end of every call into the executor): hand over what was
  // gathered for the world outside — a query output's rows become a chunk users can fetch.
  // Called only when gathers() is true.
  virtual void Flush() {}
  virtual bool gathers() const { return false; }
  // False when the operator keeps nothing between calls (AdvanceTo, next_firing and Closing are
  // the defaults): the executor then never calls them, which in a loop saves a call per operator
  // and instant.
  virtual bool stateful() const { return true; }
  // True when AdvanceTo(p), p finite, does nothing unless next_firing() < p: the executor then
  // calls it only for operators that were given something or have something due.
  virtual bool advances_when_due() const { return false; }
  // False when next_firing() is always Time::Infinity() (an operator that acts only when given
  // something, or at close): the executor does not ask.
  virtual bool fires() const { return true; }
  // True (with advances_when_due) when a row or end given to it changes its next firing only
  // where it says so through RowEmitter::Wake: the executor then does not visit it for every row
  // it passes on (a union in a loop passes the running instant's rows straight through).
  virtual bool wakes_itself() const { return false; }

  // Engine snapshots of what the row form keeps (the batch form's state is written beside it).
  virtual void Snapshot(SnapshotWriter& w) const {}
  virtual void Restore(SnapshotReader& r) {}
};

}  // namespace cq
