#include "operators/rstream.h"

#include <algorithm>

#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/row_tracker.h"

namespace cq {

RStream::RStream(const Schema& input, std::unique_ptr<InstantTracker> tracker, bool negative, ExpirationPolicy policy)
    : schema_(std::make_shared<const Schema>(input)), tracker_(std::move(tracker)), negative_(negative), policy_(policy) {}

void RStream::Push(int, const Batch& batch, Emitter&) { tracker_->Push(batch); }

void RStream::PushEnds(int, const EndBatch& ends, Emitter&) { tracker_->PushEnds(ends); }

void RStream::EmitTicks(int64_t from, int64_t to, Emitter& out) {
  const auto alive = tracker_->alive();
  if (alive.empty() || from >= to) return;
  InstantTracker::List<InstantTracker::RowRef> rows;
  InstantTracker::List<Time> ts;
  for (int64_t tick = from; tick < to; ++tick) {
    for (const auto& r : alive) {
      rows.push_back(r);
      ts.push_back({tick, 0});
    }
    if (rows.size() >= 65536) {  // bound the batch, not the number of ticks
      out.Emit(tracker_->Gather(rows, ts, schema_));
      rows.clear();
      ts.clear();
    }
  }
  if (!rows.empty()) out.Emit(tracker_->Gather(rows, ts, schema_));
}

Time RStream::next_firing(int64_t last_tick) const {
  // Every tick while R is non-empty: up to the furthest tick the input reached, and on to R's
  // next change when there is one (what close() emits outside loops).
  const Time change = tracker_->next_instant();
  if (next_tick_ == Time::kMinTick || !tracker_->any_alive()) return change;
  if (next_tick_ > (closing_ ? last_finite_ : last_tick) && change.IsInfinite()) return change;
  return std::min(change, Time{next_tick_, 0});
}

void RStream::Closing(int64_t last_tick) {
  closing_ = true;
  last_finite_ = std::max(last_finite_, last_tick);
}

void RStream::AdvanceTo(Time progress, Emitter& out) {
  // Ticks T with (T, 0) < progress are complete. At close, time goes to infinity: R is emitted at
  // every tick while it is non-empty — up to its last change; if it then stays non-empty for ever
  // (tuples that never end), up to the furthest tick the input reached.
  // Inside a loop, close() comes as Closing() and then instants one by one: the same rule, with
  // ticks emitted only as far as `progress` has gone.
  const bool closing = progress.IsInfinite() || closing_;
  int64_t limit = Time::kInfTick;
  if (!progress.IsInfinite()) {
    limit = progress.step == 0 ? progress.tick : progress.tick + 1;
    if (!closing_) last_finite_ = std::max(last_finite_, progress.tick);
  }
  for (;;) {
    if (next_tick_ == Time::kMinTick) {
      // Start at the first change, once it is complete (an earlier start may still arrive before).
      const Time first = tracker_->next_instant();
      if (first.IsInfinite() || first.tick >= limit) return;
      next_tick_ = first.tick;
    }
    if (next_tick_ >= limit) {
      // No tick to emit yet, but the instants before `progress` are complete: R follows them, so
      // that a loop through this RSTREAM sees its next firing time move on.
      tracker_->AdvanceTo(std::min(progress, Time{next_tick_, 1}), [](Time, const auto&, const auto&) {});
      return;
    }
    // R(T, 0): every instant up to (T, 0) processed.
    tracker_->AdvanceTo(std::min(progress, Time{next_tick_, 1}), [](Time, const auto&, const auto&) {});
    // Until the next change, every tick sees the same R: emit the run at once.
    const Time change = tracker_->next_instant();
    if (change.IsInfinite()) {
      if (closing) {
        const int64_t end = std::min(limit, last_finite_ + 1);
        if (next_tick_ < end) EmitTicks(next_tick_, end, out);
        next_tick_ = std::max(next_tick_, end);
        return;
      }
      EmitTicks(next_tick_, limit, out);
      next_tick_ = limit;
      return;
    }
    const int64_t run_end = std::max(next_tick_ + 1, std::min(limit, change.step > 0 ? change.tick + 1 : change.tick));
    EmitTicks(next_tick_, run_end, out);
    next_tick_ = run_end;
  }
}

namespace {
// A restored place in the ticks, checked against the operator's progress: AdvanceTo emits R at
// every complete tick while it is non-empty, and R's changes as they complete, so between calls
// neither a change still to come nor, while R is non-empty, the next tick is behind progress. A
// counter or change restored far behind would emit every tick in between at once.
void CheckTicks(const SnapshotReader& r, int64_t next_tick, Time next_change, bool alive, bool closing) {
  const Time p = r.progress();
  if (closing || p.IsInfinite() || p == Time::MinusInfinity()) return;  // (after close() nothing runs)
  const int64_t limit = p.step == 0 ? p.tick : p.tick + 1;
  if (!next_change.IsInfinite() && next_change.tick < limit - 1)
    SnapshotReader::Corrupt("RSTREAM's next change " + SnapshotReader::Show(next_change) + " is behind its progress " +
                            SnapshotReader::Show(p));
  if (alive && (next_tick == Time::kMinTick || next_tick < limit - 1))
    SnapshotReader::Corrupt("RSTREAM's next tick " + std::to_string(next_tick) + " is behind its progress " +
                            SnapshotReader::Show(p));
}

// The row form: the same rule over a RowTracker that keeps R(t) (RStream::AdvanceTo says why).
class RStreamRows final : public RowOperator {
 public:
  explicit RStreamRows(std::unique_ptr<RowTracker> tracker) : tracker_(std::move(tracker)) {}
  void Push(int, const Row& row, RowEmitter&) override {
    tracker_->Push(row);
  }
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override { tracker_->PushEnd(id, end); }
  Time next_firing(int64_t last_tick) const override {
    const Time change = tracker_->next_instant();
    if (next_tick_ == Time::kMinTick || !tracker_->any_alive()) return change;
    if (next_tick_ > (closing_ ? last_finite_ : last_tick) && change.IsInfinite()) return change;
    return std::min(change, Time{next_tick_, 0});
  }
  void Closing(int64_t last_tick) override {
    closing_ = true;
    last_finite_ = std::max(last_finite_, last_tick);
  }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (depth_ == 0) tracker_->Collect();
    const bool closing = progress.IsInfinite() || closing_;
    int64_t limit = Time::kInfTick;
    if (!progress.IsInfinite()) {
      limit = progress.step == 0 ? progress.tick : progress.tick + 1;
      if (!closing_) last_finite_ = std::max(last_finite_, progress.tick);
    }
    auto nothing = [](Time, const std::vector<uint32_t>&, const std::vector<uint32_t>&) {};
    for (;;) {
      if (next_tick_ == Time::kMinTick) {
        const Time first = tracker_->next_instant();
        if (first.IsInfinite() || first.tick >= limit) return;
        next_tick_ = first.tick;
      }
      if (next_tick_ >= limit) {
        tracker_->AdvanceTo(std::min(progress, Time{next_tick_, 1}), nothing);
        return;
      }
      tracker_->AdvanceTo(std::min(progress, Time{next_tick_, 1}), nothing);
      const Time change = tracker_->next_instant();
      if (change.IsInfinite()) {
        if (closing) {
          const int64_t end = std::min(limit, last_finite_ + 1);
          if (next_tick_ < end) EmitTicks(next_tick_, end, out);
          next_tick_ = std::max(next_tick_, end);
          return;
        }
        EmitTicks(next_tick_, limit, out);
        next_tick_ = limit;
        return;
      }
      const int64_t run_end = std::max(next_tick_ + 1, std::min(limit, change.step > 0 ? change.tick + 1 : change.tick));
      EmitTicks(next_tick_, run_end, out);
      next_tick_ = run_end;
    }
  }
  void Snapshot(SnapshotWriter& w) const override {
    tracker_->Snapshot(w);
    w.I64(next_tick_);
    w.I64(last_finite_);
    w.Bool(closing_);
  }
  void Restore(SnapshotReader& r) override {
    tracker_->Restore(r);
    next_tick_ = r.I64();
    last_finite_ = r.I64();
    closing_ = r.Bool();
    CheckTicks(r, next_tick_, tracker_->next_instant(), tracker_->any_alive(), closing_);
  }

 private:
  void EmitTicks(int64_t from, int64_t to, RowEmitter& out) {
    std::vector<uint32_t> alive;
    tracker_->Alive(alive);
    if (alive.empty() || from >= to) return;
    ++depth_;
    for (int64_t tick = from; tick < to; ++tick) {
      for (uint32_t s : alive) {
        Row r;
        r.values = tracker_->values(s);
        r.sync = {tick, 0};
        out.Emit(r);
      }
    }
    --depth_;
  }
  std::unique_ptr<RowTracker> tracker_;
  int64_t next_tick_ = Time::kMinTick;
  int64_t last_finite_ = Time::kMinTick;
  bool closing_ = false;
  int depth_ = 0;
};
}  // namespace

std::unique_ptr<RowOperator> RStream::ToRows() {
  return std::make_unique<RStreamRows>(MakeRowTracker(negative_, policy_, true, *schema_));
}

void RegisterRStream(OperatorRegistry& r) {
  r.Register("rstream", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                           const OperatorContext& ctx) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "RSTREAM reads one relation");
    return std::make_unique<RStream>(
        *in[0].schema, MakeInstantTracker(ctx.negative, static_cast<int>(PlannedPolicy(s.params)), true),
        ctx.negative, PlannedPolicy(s.params));
  });
}


// The tracker (the relation alive now) and where the ticks emitted so far stop.
void RStream::Snapshot(SnapshotWriter& w) const {
  tracker_->Snapshot(w);
  w.I64(next_tick_);
  w.I64(last_finite_);
  w.Bool(closing_);
}

void RStream::Restore(SnapshotReader& r) {
  tracker_->Restore(r, *schema_);
  next_tick_ = r.I64();
  last_finite_ = r.I64();
  closing_ = r.Bool();
  CheckTicks(r, next_tick_, tracker_->next_instant(), tracker_->any_alive(), closing_);
}
}  // namespace cq
