#pragma once
// The join of two relations (SEMANTICS.md §4.2: at every t, the SQL join of R1(t) and R2(t)): a
// symmetric hash join on the equi-join keys the planner extracted (none: every pair is a candidate, i.e.
// nested loops), with a residual predicate over the joined row. Joins of three or more sources are
// left-deep chains of this operator. Its semantics and its one state: operators/hash_join_state.h.
//
// Two thin drivers over that state (rows/ROWS.md): the batch form here (Push, PushEnds,
// AdvanceTo: rows kept as the batches they came in, results gathered into a batch) and the row form
// (ToRows, hash_join_rows.cc: rows kept one by one, results emitted at once). Either may be asked
// for at any time: the state moves to the store of the form that runs.
#include <memory>

#include "kernels/expression.h"
#include "operators/hash_join_state.h"
#include "operators/operator.h"

namespace cq {

class HashJoin final : public Operator {
 public:
  HashJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
           std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual, bool negative,
           HolderTable* holders, ExpirationPolicy policy = ExpirationPolicy::kLazy);
  ~HashJoin() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  // The row form over this state: before any input, or later (the state moves to its store).
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  // One format, whichever form holds the state; the row form writes nothing of its own.
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  class BatchSink;
  using BatchCore = JoinCore<JoinBatchStore>;
  using RowCore = JoinCore<JoinRowStore>;
  // The state in the store of the form asked for (moved there if the other form holds it).
  BatchCore& batch_core();
  RowCore& row_core();
  void EmitFixed(const std::vector<JoinOpenResults::Fixed>& fixed, Emitter& out);

  Schema schema_;
  std::shared_ptr<const Schema> shared_;
  std::vector<std::unique_ptr<Expression>> keys_[2];
  std::unique_ptr<Expression> residual_;
  JoinSpec spec_;
  // Exactly one holds the state.
  std::unique_ptr<BatchCore> batch_;
  std::unique_ptr<RowCore> rows_;
  std::vector<JoinOpenResults::Link> links_;  // scratch
};

}  // namespace cq
