#pragma once
// UNION ALL: the bag union of its inputs (SEMANTICS.md §4.2); every tuple keeps its lifetime. What
// reads a union must see it in time order (a join merges its inputs by time, a row window counts
// tuples in arrival order), so rows wait until every input's progress has passed them and go out
// merged; ends fixed for rows still waiting are written into them, the others pass straight on.
#include "lifetime/ordered_runs.h"
#include "operators/operator.h"

namespace cq {

class UnionAll final : public Operator {
 public:
  UnionAll(const Schema& schema, BatchKind kind, int inputs);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t) const override { return waiting_.head(); }
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override { return "UnionAll"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  Schema schema_;
  BatchKind kind_;
  int inputs_;
  std::shared_ptr<const Schema> shared_;
  OrderedRuns waiting_;
};

}  // namespace cq
