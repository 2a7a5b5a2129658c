#pragma once
// ISTREAM of the equi-join of two windows of constant duration ([Range T], [Now], [Range
// Unbounded]), planned as one operator reading the two streams (cq_py/planner/fusion.py). A pair
// of rows ⟨u, s1, s1 + d1⟩, ⟨w, s2, s2 + d2⟩ lives on [max(s1, s2), min(s1 + d1, s2 + d2)), so
// it starts when its later row is joined: ISTREAM's R(t) − R(t⁻) (SEMANTICS.md §4.3) is the pairs
// joined at t, less (as a bag of the compared columns) the pairs that end at t. Only a pair of a
// row ending at t ends at t; the join's index still holds those rows when the first row of t is
// joined (JoinCore::EndingPairs), so their pairs are found there — no pair is kept anywhere, no
// tracker waits for its end, and an instant where no pair ends emits its starts as they are.
//
// Planned apart, the join emits each pair with its lifetime, and the ISTREAM keeps it until its
// end to take the difference (a tracker, a hash and a sort of the ends per pair). DuckDB's and
// Flink's planners fuse operators in the same way where one's output shape lets the next be
// skipped (FUSED in fusion.py).
//
// The windows' rows have known ends, so the state is the join's batch form under the direct
// method (operators/hash_join_state.h), whichever lifetime method the engine runs: nothing of the
// windows is left to carry negative tuples or holders. Rows are joined once progress reaches
// them, as the join does; results go out as a stream at each pair's start.
#include <memory>

#include "kernels/expression.h"
#include "operators/hash_join_state.h"
#include "operators/operator.h"

namespace cq {

class IStreamJoin final : public Operator {
 public:
  // `durations`: each window's; `compared`: the joined row's columns the ISTREAM compares (the
  // columns its input projection picks), the left input's first.
  IStreamJoin(const Schema& left, const Schema& right, Duration left_duration, Duration right_duration,
              std::vector<std::unique_ptr<Expression>> left_keys, std::vector<std::unique_ptr<Expression>> right_keys,
              const std::vector<int>& compared, ExpirationPolicy policy);
  ~IStreamJoin() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t) const override { return core_->NextRow(); }
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  // The join's state in its one format (JoinCore::Write); nothing else outlives a call.
  void Snapshot(SnapshotWriter& w) const override { core_->Write(w); }
  void Restore(SnapshotReader& r) override;

 private:
  class Sink;
  using Core = JoinCore<JoinBatchStore>;

  Schema schema_;
  std::shared_ptr<const Schema> shared_;
  Duration duration_[2];
  std::vector<std::unique_ptr<Expression>> keys_[2];
  JoinSpec spec_;
  RowEqual equal_[2];  // over each side's compared columns
  std::unique_ptr<Core> core_;
};

}  // namespace cq
