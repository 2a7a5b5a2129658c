#pragma once
// [Range T Slide S] (SEMANTICS.md §4.1): ⟨v, t⟩ becomes ⟨v, ⌈t/S⌉·S, ⌈(t+T)/S⌉·S⟩ — the window is
// evaluated at multiples of S, so a tuple appears at the first slide boundary at or after it and
// leaves at the first boundary at or after t + T. The ceiling is taken on (tick, ε-step) time with
// boundaries at step 0 (CeilToBoundary): a tuple at (15, 1ε) is after the boundary 15. Both ends
// are known at once, both at step 0. When T is a multiple of S the end is the start + T (the
// ceiling moves with whole slides), so the output has the constant duration T, like [Range T]'s:
// consumers then take their FIFO paths (LIFETIMES.md) and no end column is written.
#include "operators/operator.h"

namespace cq {

class SlideWindow final : public Operator {
 public:
  SlideWindow(int64_t range, int64_t slide, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  int64_t range_, slide_;
  bool constant_;  // range_ is a positive multiple of slide_
  Schema schema_;
};

}  // namespace cq
