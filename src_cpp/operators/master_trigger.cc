#include "operators/master_trigger.h"
#include <algorithm>
#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

MasterTrigger::MasterTrigger(const Schema& input, int masters, bool negative, ExpirationPolicy policy)
    : schema_(std::make_shared<const Schema>(input)), masters_(masters),
      instants_(input, negative, policy, /*track_alive=*/true, /*starts_only=*/false) {}

void MasterTrigger::Push(int port, const Batch& batch, Emitter&) {
  if (port == 0) return instants_.batch().Push(batch);
  // A master's rows: only their timestamps matter. Masters interleave, so merge into the sorted,
  // distinct list of instants to run (each master's own rows come in time order).
  std::vector<Time> times;
  times.reserve(batch.num_rows());
  for (int64_t k = 0; k < batch.num_rows(); ++k) {
    const Time t = batch.StartAt(batch.Physical(k));
    if (times.empty() || times.back() != t) times.push_back(t);
  }
  const size_t mid = runs_.size();
  runs_.insert(runs_.end(), times.begin(), times.end());
  std::inplace_merge(runs_.begin() + static_cast<std::ptrdiff_t>(runs_head_),
                     runs_.begin() + static_cast<std::ptrdiff_t>(std::max(mid, runs_head_)), runs_.end());
  runs_.erase(std::unique(runs_.begin() + static_cast<std::ptrdiff_t>(runs_head_), runs_.end()), runs_.end());
}

void MasterTrigger::PushEnds(int port, const EndBatch& ends, Emitter&) {
  if (port == 0) instants_.batch().PushEnds(ends);
}

void MasterTrigger::AdvanceTo(Time progress, Emitter& out) {
  InstantTracker& tracker = instants_.batch();
  auto nothing = [](Time, const auto&, const auto&) {};
  InstantTracker::List<InstantTracker::RowRef> rows;
  InstantTracker::List<Time> ts;
  // A run at τ is decided once every change of R at τ is in: the progress is past τ. close()
  // (progress ∞) runs every instant the masters gave.
  while (runs_head_ < runs_.size() && runs_[runs_head_] < progress) {
    const Time tau = runs_[runs_head_++];
    // R(τ): every instant up to τ processed (starts at τ in, ends at τ out).
    tracker.AdvanceTo(Time{tau.tick, tau.step + 1}, nothing);
    rows.clear();
    ts.clear();
    for (const InstantTracker::RowRef& r : tracker.alive()) {
      const Batch& b = tracker.batch(r.seq);
      const Time start = b.sync.At(r.row);
      if (last_run_ < start && start <= tau) {
        rows.push_back(r);
        ts.push_back(tau);
      }
    }
    last_run_ = tau;
    if (!rows.empty()) out.Emit(tracker.Gather(rows, ts, schema_));
  }
  if (runs_head_ > 64 && runs_head_ * 2 > runs_.size()) {
    runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(runs_head_));
    runs_head_ = 0;
  }
  // R's instants before the next run: processed now, so that what ended goes.
  if (!progress.IsInfinite()) {
    const Time upto = runs_head_ < runs_.size() ? std::min(progress, runs_[runs_head_]) : progress;
    tracker.AdvanceTo(upto, nothing);
  }
}

Time MasterTrigger::next_firing(int64_t) const {
  return runs_head_ < runs_.size() ? runs_[runs_head_] : Time::Infinity();
}

std::string MasterTrigger::Explain() const {
  return "MasterTrigger(" + std::to_string(masters_) + " master" + (masters_ == 1 ? "" : "s") + ")";
}

void MasterTrigger::Snapshot(SnapshotWriter& w) const {
  instants_.Snapshot(w);
  w.Times(std::vector<Time>(runs_.begin() + static_cast<std::ptrdiff_t>(runs_head_), runs_.end()));
  w.Pod(last_run_);
}

void MasterTrigger::Restore(SnapshotReader& r) {
  instants_.Restore(r);
  r.Times(runs_, /*ordered=*/true, "the master trigger's instants to run");
  runs_head_ = 0;
  last_run_ = r.TimeValue("the master trigger's last run");
  if (!runs_.empty() && !(last_run_ < runs_.front()))
    SnapshotReader::Corrupt("the master trigger's next run " + SnapshotReader::Show(runs_.front()) +
                            " is not after its last run " + SnapshotReader::Show(last_run_));
}

void RegisterMasterTrigger(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "master_trigger",
              .description = "MASTER",
              .output = D::Output::kStream,
              .partition = D::Partition::kNever,
              .tracks_lifetimes = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() >= 2 && in[0].kind == BatchKind::kLifetime,
                        "MASTER reads one relation and at least one master");
               for (size_t k = 1; k < in.size(); ++k)
                 CQ_CHECK(in[k].kind == BatchKind::kStream, "a MASTER's masters are streams");
               return std::make_unique<MasterTrigger>(*in[0].schema, static_cast<int>(in.size() - 1), ctx.negative,
                                                      PlannedPolicy(s.params));
             });
}

}  // namespace cq
