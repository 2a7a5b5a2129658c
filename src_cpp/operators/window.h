#pragma once
// Stream-to-relation windows whose lifetimes have a duration known at plan time: [Now] (ε),
// [Range T] (T ticks) and [Range Unbounded] (never ends). Each tuple ⟨v, t⟩ becomes ⟨v, t, t + d⟩
// (SEMANTICS.md §4). Nothing is stored per row: the batch is passed on with `constant_duration =
// d`, so the window costs nothing and downstream operators may use FIFO expiration (ARCHITECTURE.md
// §3.4).
#include "operators/operator.h"

namespace cq {

class ConstantDurationWindow final : public Operator {
 public:
  ConstantDurationWindow(std::string kind, Duration d, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}
  Duration duration() const { return duration_; }

 private:
  std::string kind_;
  Duration duration_;
  Schema schema_;
};

}  // namespace cq
