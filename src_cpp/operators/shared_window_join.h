#pragma once
// The shared window join (paper 004, after Hammad et al., VLDB 2003): one operator for n queries
//   SELECT * FROM A [Range wi], B [Range wi] WHERE <the same keys and residual>   (i = 1..n)
// that differ only in their windows w1 ≤ … ≤ wn. Its inputs are the [Range wn] windows of A and
// B; a tuple x probes the other side once, and each partner y at d = t_x − t_y < wn is a result
// over [t_x, t_y + wn) — the join of the widest query — tagged with its slice s = min{i : d < wi}
// (equal windows share a slice). Query i's rows are those of slice ≤ i, ending at t_y + wi: a
// route per query (operators/swj_route.h) takes them out. Since [Range wi] ends a pair at
// min(t_x, t_y) + wi, and t_y ≤ t_x for the partner already joined, the route gives each query
// exactly what a join over its own windows gives.
//
// It is the hash join over those windows with a slice column (operators/hash_join.h,
// hash_join_state.h): equal timestamps (the left input first), NULL keys (joining nothing),
// duplicates and ghosts behave as there, and it keeps the join's one state, its row form and its
// snapshot format. Exact mode: every pair is computed, nothing is dropped. Bounded mode (buffers
// of B tuples, work scheduled by schedulers/) is operators/swj_bounded.h, built by the same
// factory when the spec has "bounded".
//
// Spec: the join's ("left_keys", "right_keys", "residual", "expiration") and "windows": [w1, …,
// wn] in ticks, non-decreasing, wn ≥ 1 (the planner's cq_py/planner/shared_joins.py).
#include <vector>

#include "operators/hash_join.h"

namespace cq {

class SharedWindowJoin final : public HashJoin {
 public:
  SharedWindowJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
                   std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual,
                   HolderTable* holders, ExpirationPolicy policy, std::vector<int64_t> windows);
  // Checks that the input is the [Range wn] window the slices are computed for.
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::string Explain() const override;
  const std::vector<int64_t>& windows() const { return windows_; }

 private:
  std::vector<int64_t> windows_;
};

}  // namespace cq
