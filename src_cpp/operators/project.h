#pragma once
// The SELECT list: computes each output expression over the selected rows and emits a compact
// batch (the selection is applied here, once). Lifetimes, holders and timestamps follow their rows.
// Bare column references over an unselected batch are passed through without a copy.
#include "kernels/expression.h"
#include "operators/operator.h"

namespace cq {

class Project final : public Operator {
 public:
  Project(std::vector<std::unique_ptr<Expression>> exprs, Schema output, const Schema& input, BatchKind kind);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override;
  // Every output column is the input column at the same place (SELECT * over one input; a rename).
  bool passes_through() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  std::vector<std::unique_ptr<Expression>> exprs_;
  std::shared_ptr<const Schema> schema_;
  Schema input_;
  BatchKind kind_;
};

}  // namespace cq
