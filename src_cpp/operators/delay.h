#pragma once
// The delay operator (paper 000 §3.1): `<Now>` moves each stream tuple one ε-step later, `<d>` d
// ticks later (SPEC §2: ⟨v, t⟩ becomes ⟨v, t + d⟩). Defined on streams only. The executors read
// delay() to cut loops (DTS); its output lies in the future of its input.
#include "operators/operator.h"

namespace cq {

class DelayOperator final : public Operator {
 public:
  DelayOperator(Duration d, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Duration delay() const override { return delay_; }
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "Delay " + delay_.ToString(); }
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  Duration delay_;
  Schema schema_;
};

}  // namespace cq
