#include "operators/delay.h"

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

DelayOperator::DelayOperator(Duration d, const Schema& input, const Time* least)
    : delay_(d), schema_(std::make_shared<const Schema>(input)), least_(least),
      gathering_(schema_, BatchKind::kStream, std::nullopt) {
  CQ_CHECK(!d.infinite && !d.IsZero(), "a delay moves time forward by a finite amount");
}

void DelayOperator::Keep(Batch batch) {
  Prune();
  const int64_t n = batch.num_rows();
  if (n > 0 && !(batch.StartAt(batch.Physical(n - 1)) < *least_)) kept_.push_back(std::move(batch));
}

void DelayOperator::Keep(const Row& row) {
  if (!keeps() || row.sync < *least_) return;
  gathering_.Append(row);
  if (gathering_.size() >= 1024) {
    Gather();
    Prune();
  }
}

void DelayOperator::Gather() const {
  if (!gathering_.empty()) kept_.push_back(gathering_.Finish());
}

void DelayOperator::Prune() {
  // (Rows come in time order: a batch is let go of once its last row is below the progress.)
  while (least_ && !kept_.empty()) {
    const Batch& b = kept_.front();
    if (!(b.StartAt(b.Physical(b.num_rows() - 1)) < *least_)) break;
    kept_.pop_front();
  }
}

std::vector<Batch> DelayOperator::Backlog(Time p) {
  Gather();
  Prune();
  std::vector<Batch> out;
  for (const Batch& b : kept_) {
    const Batch c = b.Compact();
    int64_t from = 0;
    while (from < c.length && c.sync.At(from) < p) ++from;
    if (from < c.length) out.push_back(c.Slice(from, c.length - from));
  }
  return out;
}

void DelayOperator::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  TimeColumn t;
  if (delay_.ticks == 0) {
    // <Now> (ε steps only, the delay of every loop): the ticks stay, only the steps move.
    t.ticks = b.sync.ticks;
    t.steps = Buffer::Allocate(n * 8);
    const int64_t* ticks = b.sync.tick_data();
    for (int64_t i = 0; i < n; ++i)
      t.steps.as<int64_t>()[i] = ticks[i] == Time::kInfTick ? 0 : b.sync.At(i).step + delay_.steps;
    b.sync = t;
    out.Emit(std::move(b));
    return;  // (a <Now> delay keeps nothing)
  }
  t.ticks = Buffer::Allocate(n * 8);
  const bool steps = b.sync.has_steps() || delay_.steps != 0;
  if (steps) t.steps = Buffer::Allocate(n * 8);
  for (int64_t i = 0; i < n; ++i) {
    const Time shifted = b.sync.At(i) + delay_;
    t.ticks.as<int64_t>()[i] = shifted.tick;
    if (steps) t.steps.as<int64_t>()[i] = shifted.step;
  }
  b.sync = t;
  if (keeps()) Keep(b);
  out.Emit(std::move(b));
}

namespace {
// (It keeps its rows in the batch form, which outlives it, when that keeps rows at all.)
class DelayRows final : public RowOperator {
 public:
  DelayRows(Duration d, DelayOperator* keeper) : d_(d), keeper_(keeper) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    Row r = in;
    r.sync = in.sync + d_;
    if (keeper_) keeper_->Keep(r);
    out.Emit(r);
  }
  bool stateful() const override { return false; }

 private:
  Duration d_;
  DelayOperator* keeper_;
};
}  // namespace

std::unique_ptr<RowOperator> DelayOperator::ToRows() {
  return std::make_unique<DelayRows>(delay_, keeps() ? this : nullptr);
}

// The rows kept for queries registered later.
void DelayOperator::Snapshot(SnapshotWriter& w) const {
  Gather();
  w.U64(kept_.size());
  for (const Batch& b : kept_) w.WriteBatch(b);
}

void DelayOperator::Restore(SnapshotReader& r) {
  kept_.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    Batch b = r.ReadBatch(schema_.get());
    CQ_SNAPSHOT_CHECK(b.kind == BatchKind::kStream && b.num_rows() > 0, "a delay keeps rows that are not a stream's");
    kept_.push_back(std::move(b));
  }
}

void RegisterDelay(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "delay", .description = "a delay (<Now>, <d>)", .firing = D::Firing::kDelayedOutput},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a delay applies to a stream");
               return std::make_unique<DelayOperator>(DurationFromJson(s.params["duration"]), *in[0].schema, ctx.least);
             });
}

}  // namespace cq
