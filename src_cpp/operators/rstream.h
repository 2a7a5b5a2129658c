#pragma once
// RSTREAM(R): at every tick t (step 0) while R is non-empty, emits every tuple of R(t) with
// timestamp t (SPEC §4). A firing point of the DTS executor (paper 000 §3.2): it produces output at
// ticks where its input is silent. Ticks are emitted once complete; at close() R keeps being
// emitted until it is empty, or, when it holds tuples that never end, up to the last tick the
// input reached (not to infinity).
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"

namespace cq {

class RStream final : public Operator {
 public:
  RStream(const Schema& input, std::unique_ptr<InstantTracker> tracker, bool negative = false,
          ExpirationPolicy policy = ExpirationPolicy::kLazy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  void Closing(int64_t last_tick) override;
  bool looks_ahead_at_close() const override { return true; }
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "RStream (every tick)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  void EmitTicks(int64_t from, int64_t to, Emitter& out);  // ticks [from, to) of the current R

  std::shared_ptr<const Schema> schema_;
  std::unique_ptr<InstantTracker> tracker_;
  int64_t next_tick_ = Time::kMinTick;  // the first tick not emitted yet
  int64_t last_finite_ = Time::kMinTick;  // the furthest finite progress seen
  bool closing_ = false;                   // the inputs have ended (inside a loop)
  bool negative_;
  ExpirationPolicy policy_;
};

}  // namespace cq
