#pragma once
// MASTER m1, ..., mk SELECT ... (paper 001 §2.1; issue 31's semantics): input 0 is the SELECT's
// relation R, inputs 1..k the masters (streams: their rows' timestamps are the query's instants).
// At each instant τ of the masters it emits, with ts = τ, every tuple c of R(τ) whose start lies in
// (τp, τ], τp the previous instant (−∞ before the first): what arrived since the previous run and
// is still alive. Nothing cancels as in ISTREAM. Arrivals at τ come before the run at τ, so a run
// is decided once the progress is past τ (all of R's changes at τ are in).
//
// One state for both lifetime methods (rows/instants.h, alive tuples tracked): R's tuples whose
// instants have not come, and R(t) itself; the instants of the masters not run yet; the last
// instant run. A run reads R(τ) and keeps the tuples that started after the last run. No row form:
// inside loops it runs through a BatchAdapter.
#include <memory>
#include <string>
#include <vector>
#include "lifetime/expiration_set.h"
#include "operators/operator.h"
#include "rows/instants.h"
namespace cq {
class MasterTrigger final : public Operator {
 public:
  // A base group's shared part (cq_py/planner/master_sharing.py) has one trigger over its relation;
  // each member keeps the emitted tuples whose arrivals lie in its own windows with a filter.
  MasterTrigger(const Schema& input, int masters, bool negative, ExpirationPolicy policy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  // The one state (R's rows), the masters' instants to run, the last instant run.
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  std::shared_ptr<const Schema> schema_;
  int masters_;
  Instants instants_;
  std::vector<Time> runs_;  // the masters' instants not run yet, in order, distinct
  size_t runs_head_ = 0;    // runs_[0, runs_head_) are done (dropped in batches)
  Time last_run_ = Time::MinusInfinity();
};
}  // namespace cq
