#include "operators/dstream.h"

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/row_tracker.h"

namespace cq {

DStream::DStream(const Schema& input, std::unique_ptr<InstantTracker> tracker, bool negative, ExpirationPolicy policy)
    : schema_(std::make_shared<const Schema>(input)), tracker_(std::move(tracker)), negative_(negative), policy_(policy) {}

void DStream::Push(int, const Batch& batch, Emitter&) { tracker_->Push(batch); }

void DStream::PushEnds(int, const EndBatch& ends, Emitter&) { tracker_->PushEnds(ends); }

Time DStream::next_firing(int64_t) const { return tracker_->next_instant(); }

void DStream::AdvanceTo(Time progress, Emitter& out) {
  InstantTracker::Changes changes;
  tracker_->Collect(progress, changes);
  InstantTracker::List<InstantTracker::RowRef> rows;
  InstantTracker::List<Time> ts;
  tracker_->AppendBagDifferences(changes, /*starts_minus_ends=*/false, rows, ts);  // D(t) − I(t)
  if (!rows.empty()) out.Emit(tracker_->Gather(rows, ts, schema_));
}

namespace {
// The row form: each complete instant emits D(t) − I(t).
class DStreamRows final : public RowOperator {
 public:
  explicit DStreamRows(std::unique_ptr<RowTracker> tracker) : tracker_(std::move(tracker)) {}
  void Push(int, const Row& row, RowEmitter&) override {
    tracker_->Push(row);
  }
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override { tracker_->PushEnd(id, end); }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (depth_ == 0) tracker_->Collect();
    rows_.clear();
    times_.clear();
    tracker_->AdvanceTo(progress, [&](Time t, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
      tracker_->AppendBagDifference(ends, starts, rows_);
      times_.resize(rows_.size(), t);
    });
    ++depth_;  // the ended rows stay readable until the next Collect, which waits for this
    for (size_t k = 0; k < rows_.size(); ++k) {
      Row r;
      r.values = tracker_->values(rows_[k]);
      r.sync = times_[k];
      out.Emit(r);
    }
    --depth_;
  }
  bool advances_when_due() const override { return true; }
  Time next_firing(int64_t) const override { return tracker_->next_instant(); }
  void Snapshot(SnapshotWriter& w) const override { tracker_->Snapshot(w); }
  void Restore(SnapshotReader& r) override {
    tracker_->Restore(r);
    r.CheckToCome(tracker_->next_instant(), "DSTREAM's next instant");
  }

 private:
  std::unique_ptr<RowTracker> tracker_;
  std::vector<uint32_t> rows_;
  std::vector<Time> times_;
  int depth_ = 0;
};
}  // namespace

std::unique_ptr<RowOperator> DStream::ToRows() {
  return std::make_unique<DStreamRows>(MakeRowTracker(negative_, policy_, false, *schema_));
}

void RegisterDStream(OperatorRegistry& r) {
  r.Register("dstream", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                           const OperatorContext& ctx) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "DSTREAM reads one relation");
    return std::make_unique<DStream>(
        *in[0].schema, MakeInstantTracker(ctx.negative, static_cast<int>(PlannedPolicy(s.params)), false),
        ctx.negative, PlannedPolicy(s.params));
  });
}


void DStream::Snapshot(SnapshotWriter& w) const { tracker_->Snapshot(w); }
void DStream::Restore(SnapshotReader& r) {
  tracker_->Restore(r, *schema_);
  r.CheckToCome(tracker_->next_instant(), "DSTREAM's next instant");
}
}  // namespace cq
