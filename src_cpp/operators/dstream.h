#pragma once
// DSTREAM(R): at every instant t, emits ⟨v, t⟩ for each v in R(t⁻) − R(t) (SEMANTICS.md §4.3) — the
// tuples that end at t, minus (as a bag) those that start at t. An instant is decided once it is
// complete (the input's progress is past it), which is also when a [Range T] expiration at t is
// known to have no matching start; close() completes every instant, so every tuple that ends
// is reported.
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"

namespace cq {

class DStream final : public Operator {
 public:
  DStream(const Schema& input, std::unique_ptr<InstantTracker> tracker, bool negative = false,
          ExpirationPolicy policy = ExpirationPolicy::kLazy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "DStream"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  std::shared_ptr<const Schema> schema_;
  std::unique_ptr<InstantTracker> tracker_;
  bool negative_;
  ExpirationPolicy policy_;
};

}  // namespace cq
