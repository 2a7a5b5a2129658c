#pragma once
// RSTREAM(R) (SEMANTICS.md §4.3): at every tick t (step 0) emits every tuple of R(t) with timestamp
// t — up to the engine's progress P (the furthest tick any input reached,
// OperatorContext::furthest), and beyond P only while R(t) holds a value whose multiplicity drops
// below its multiplicity at t at some later instant (read as a relation: a tuple that ends where an
// equal one starts is no drop). A firing point of the DTS executor (paper 000 §3.2): it produces
// output at ticks where its input is silent.
//
// A tick is emitted once it is complete (its input's progress is past it) and decided: at or below
// P, or, at close(), with R's every later change known. A complete tick beyond P (its input runs
// ahead of every engine input through a delay) waits for P to pass it or for close(), and the
// operator's output progress waits with it (OutputProgress). Inside a loop (the row form) a tick
// beyond P after close() is emitted at its instant when a drop is known by then, and otherwise once
// one becomes known (or at the end of the close).
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"
#include "rows/instants.h"

namespace cq {

class RStream final : public Operator {
 public:
  // `furthest`: the engine's progress P (null: no input is ahead of this one).
  // `at_changes`: after close() also emit R at each instant it changes beyond P (a diff commit's).
  RStream(const Schema& input, bool negative = false, ExpirationPolicy policy = ExpirationPolicy::kLazy,
          const int64_t* furthest = nullptr, bool at_changes = false);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  Time OutputProgress(Time progress) const override;
  bool looks_ahead_at_close() const override { return true; }
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "RStream (every tick)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  // R(t) at every tick of [from, to), `rows` being R.
  void EmitTicks(int64_t from, int64_t to, const std::vector<InstantTracker::RowRef>& rows, Emitter& out);
  // close(): every tick from next_tick_ on, with every later change of R known.
  void Finish(Emitter& out);

  // One state for both forms (rows/ROWS.md): R's changes to come and R itself, and where the ticks
  // are.
  std::shared_ptr<const Schema> schema_;
  Instants instants_;
  int64_t next_tick_ = Time::kMinTick;  // the first tick not decided yet (kMinTick: none seen)
  bool held_ = false;                   // next_tick_ is complete but beyond P: the output waits for it
  bool closing_ = false;                // (row form) close() has begun: its last instants run one by one
  bool negative_;
  bool at_changes_;
  const int64_t* furthest_;
};

}  // namespace cq
