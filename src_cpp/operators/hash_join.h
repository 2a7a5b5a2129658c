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
//
// Given windows w1 ≤ … ≤ wn over inputs that are [Range wn] windows, it is the shared window join
// (operators/shared_window_join.h): each result also carries its slice, the least i with
// start < end − (wn − wi), i.e. the first query whose window holds the pair (one column more).
#include <algorithm>
#include <memory>

#include "kernels/expression.h"
#include "operators/hash_join_state.h"
#include "operators/operator.h"
#include "operators/registry.h"

namespace cq {

// (Not final: SharedWindowJoin checks its inputs and explains itself; the rest is final.)
class HashJoin : public Operator {
 public:
  // `windows` (ticks, non-decreasing; empty for a plain join): see the top of this file.
  HashJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
           std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual, bool negative,
           HolderTable* holders, ExpirationPolicy policy = ExpirationPolicy::kLazy,
           const std::vector<int64_t>& windows = {});
  ~HashJoin() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) final;
  void AdvanceTo(Time progress, Emitter& out) final;
  // The row form over this state: before any input, or later (the state moves to its store).
  std::unique_ptr<RowOperator> ToRows() final;
  Time next_firing(int64_t last_tick) const final;
  const Schema& output_schema() const final { return schema_; }
  BatchKind output_kind() const final { return BatchKind::kLifetime; }
  std::string Explain() const override;
  // One format, whichever form holds the state; the row form writes nothing of its own.
  void Snapshot(SnapshotWriter& w) const final;
  void Restore(SnapshotReader& r) final;

 protected:
  // The least query whose window holds a result over [start, end) (1-based; a shared join's).
  int64_t SliceOf(Time start, Time end) const {
    // shrink_ falls as i grows: the test start + shrink_[i] < end goes from false to true.
    const auto it =
        std::partition_point(shrink_.begin(), shrink_.end(), [&](const Duration& d) { return !(start + d < end); });
    return static_cast<int64_t>(it - shrink_.begin()) + 1;
  }
  bool shared() const { return !shrink_.empty(); }

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
  std::vector<Duration> shrink_;              // a shared join's wn − wi, by query i
};

// A join's keys and residual compiled over its inputs, from its spec ("left_keys", "right_keys",
// "residual"): the join's factory and the shared join's.
struct JoinExpressions {
  std::vector<std::unique_ptr<Expression>> keys[2];
  std::unique_ptr<Expression> residual;
};
JoinExpressions CompileJoinSpec(const OperatorSpec& s, const std::vector<OperatorInput>& in);

}  // namespace cq
