#pragma once
// WHERE: narrows the batch's selection vector to the rows whose predicate is TRUE (not FALSE, not
// NULL). No row is copied (ARCHITECTURE.md §3.3); lifetimes, holders and streams pass through
// unchanged.
#include "kernels/expression.h"
#include "operators/operator.h"

namespace cq {

class Filter final : public Operator {
 public:
  Filter(std::unique_ptr<Expression> predicate, const Schema& input, BatchKind kind);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  std::unique_ptr<Expression> predicate_;
  Schema schema_;
  BatchKind kind_;
};

}  // namespace cq
