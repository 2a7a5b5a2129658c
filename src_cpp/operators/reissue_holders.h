#pragma once
// A second read of a relation's tuples under expiration holders of their own (paper 003 §4.1).
//
// A holder id is a tuple's identity downstream: select, project and union all pass it on, and
// every stateful consumer keeps one slot per id. So a tuple must reach each operator once. A
// union of two branches over the same relation (`SELECT * FROM v UNION ALL SELECT * FROM v`)
// would bring each pending tuple twice under one id; the planner puts this operator on the second
// branch, which gives every pending tuple a fresh id and forwards each end under it.
//
// State: the ids it gave out and not yet ended, by the id they stand for.
#include <unordered_map>

#include "operators/operator.h"

namespace cq {

class ReissueHolders final : public Operator {
 public:
  ReissueHolders(const Schema& input, BatchKind kind, HolderTable* holders);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override { return "Reissue expiration holders"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  Schema schema_;
  BatchKind kind_;
  HolderTable* holders_;
  std::unordered_map<HolderId, HolderId> issued_;  // upstream id -> the id given out for it
};

}  // namespace cq
