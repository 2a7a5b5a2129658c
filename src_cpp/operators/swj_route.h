#pragma once
// A query's share of a shared window join's output (operators/shared_window_join.h): the results
// of slice ≤ i, ending wn − wi earlier (t_y + wi), without the slice column. What a join over the
// query's own [Range wi] windows gives, row for row. Stateless.
//
// In bounded mode (operators/swj_bounded.h) each row carries two tags, lo and hi, and query i
// takes the rows with lo ≤ i ≤ hi (its rows of a tuple leave when the job covering i ran).
//
// Spec: "slice": i (1-based; with equal windows, any query's index among them), "shrink": wn − wi
// in ticks, "upto": true in bounded mode (two tag columns).
#include "operators/operator.h"

namespace cq {

class SwjRoute final : public Operator {
 public:
  SwjRoute(const Schema& input, int64_t slice, int64_t shrink, bool upto = false);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  std::shared_ptr<const Schema> schema_;  // the input's, less the slice column
  int64_t slice_;
  int64_t shrink_;
  bool upto_;  // bounded mode: tags lo, hi
};

}  // namespace cq
