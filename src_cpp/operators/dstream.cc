#include "operators/dstream.h"

#include "engine/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

DStream::DStream(const Schema& input, std::unique_ptr<InstantTracker> tracker)
    : schema_(std::make_shared<const Schema>(input)), tracker_(std::move(tracker)) {}

void DStream::Push(int, const Batch& batch, Emitter&) { tracker_->Push(batch); }

void DStream::PushEnds(int, const EndBatch& ends, Emitter&) { tracker_->PushEnds(ends); }

void DStream::AdvanceTo(Time progress, Emitter& out) {
  std::vector<InstantTracker::RowRef> rows;
  std::vector<Time> ts;
  std::vector<uint8_t> used;
  tracker_->AdvanceTo(progress, [&](Time t, const std::vector<InstantTracker::RowRef>& starts,
                                   const std::vector<InstantTracker::RowRef>& ends) {
    used.assign(starts.size(), 0);
    for (const auto& e : ends) {
      bool cancelled = false;
      for (size_t x = 0; x < starts.size() && !cancelled; ++x)
        if (!used[x] && tracker_->RowsEqual(starts[x], e)) used[x] = cancelled = true;
      if (!cancelled) {
        rows.push_back(e);
        ts.push_back(t);
      }
    }
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

}  // namespace cq
