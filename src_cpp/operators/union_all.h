#pragma once
// UNION ALL: the bag union of its inputs (SPEC §4). Over relations every tuple keeps its lifetime,
// so batches (and the ends of pending holders) pass straight through, for both lifetime methods.
// Over streams the union must stay in time order for what reads it (a row window counts tuples
// in arrival order), so rows wait until every input's progress has passed them and go out merged.
#include <deque>

#include "operators/operator.h"

namespace cq {

class UnionAll final : public Operator {
 public:
  UnionAll(const Schema& schema, BatchKind kind, int inputs);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override { return "UnionAll"; }

 private:
  Schema schema_;
  BatchKind kind_;
  std::shared_ptr<const Schema> shared_;
  std::vector<std::deque<Batch>> waiting_;  // streams: per input, compact batches in time order
};

}  // namespace cq
