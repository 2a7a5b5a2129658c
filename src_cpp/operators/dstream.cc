#include "operators/dstream.h"

#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

DStream::DStream(const Schema& input, std::unique_ptr<InstantTracker> tracker)
    : schema_(std::make_shared<const Schema>(input)), tracker_(std::move(tracker)) {}

void DStream::Push(int, const Batch& batch, Emitter&) { tracker_->Push(batch); }

void DStream::PushEnds(int, const EndBatch& ends, Emitter&) { tracker_->PushEnds(ends); }

Time DStream::next_firing(int64_t) const { return tracker_->next_instant(); }

void DStream::AdvanceTo(Time progress, Emitter& out) {
  std::vector<InstantTracker::RowRef> rows;
  std::vector<Time> ts;
  tracker_->AdvanceTo(progress, [&](Time t, const std::vector<InstantTracker::RowRef>& starts,
                                   const std::vector<InstantTracker::RowRef>& ends) {
    tracker_->AppendBagDifference(t, ends, starts, rows, ts);  // D(t) − I(t)
  });
  if (!rows.empty()) out.Emit(tracker_->Gather(rows, ts, schema_));
}

void RegisterDStream(OperatorRegistry& r) {
  r.Register("dstream", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                           const OperatorContext& ctx) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "DSTREAM reads one relation");
    return std::make_unique<DStream>(
        *in[0].schema, MakeInstantTracker(ctx.negative, static_cast<int>(PlannedPolicy(s.params)), false));
  });
}


void DStream::Snapshot(SnapshotWriter& w) const { tracker_->Snapshot(w); }
void DStream::Restore(SnapshotReader& r) { tracker_->Restore(r, *schema_); }
}  // namespace cq
