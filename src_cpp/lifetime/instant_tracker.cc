#include "lifetime/instant_tracker.h"

#include "batch/few_on_stack.h"
#include "engine/errors.h"
#include "lifetime/negative_tracker.h"
#include "lifetime/relation_tracker.h"

namespace cq {

uint32_t InstantTracker::Retain(Batch compact, int64_t live) {
  if (!equal_) equal_ = std::make_unique<RowEqual>(*compact.schema);
  const uint32_t seq = next_seq_++;
  retained_.push_back({seq, std::move(compact), live});
  return seq;
}

void InstantTracker::FlushReleases() {
  for (const RowRef& r : released_) --retained_[r.seq - retained_.front().seq].live;
  released_.clear();
  while (!retained_.empty() && retained_.front().live == 0) retained_.pop_front();
}

int64_t InstantTracker::retained_rows() const {
  int64_t n = -static_cast<int64_t>(released_.size());
  for (const Retained& r : retained_) n += r.live;
  return n;
}

void InstantTracker::AppendBagDifference(Time t, const std::vector<RowRef>& a, const std::vector<RowRef>& b,
                                         std::vector<RowRef>& out, std::vector<Time>& ts) const {
  FewOnStack<uint8_t, 64> used(b.size(), 0);  // which rows of b have cancelled one of a
  for (const RowRef& x : a) {
    bool cancelled = false;
    for (size_t k = 0; k < b.size() && !cancelled; ++k)
      if (!used[k] && RowsEqual(b[k], x)) used[k] = cancelled = true;
    if (!cancelled) {
      out.push_back(x);
      ts.push_back(t);
    }
  }
}

Batch InstantTracker::Gather(const std::vector<RowRef>& rows, const std::vector<Time>& ts,
                             const std::shared_ptr<const Schema>& schema) const {
  Batch out;
  out.kind = BatchKind::kStream;
  out.schema = schema;
  const int64_t n = static_cast<int64_t>(rows.size());
  out.length = n;
  CQ_CHECK(n > 0, "gathering no rows");
  out.columns = GatherRows([&](uint32_t seq) -> const Batch& { return batch(seq); }, rows, schema->size());
  out.sync.ticks = Buffer::Allocate(n * 8);
  bool steps = false;
  for (const Time& t : ts) steps |= t.step != 0;
  if (steps) out.sync.steps = Buffer::Allocate(n * 8);
  for (int64_t k = 0; k < n; ++k) {
    out.sync.ticks.as<int64_t>()[k] = ts[k].tick;
    if (steps) out.sync.steps.as<int64_t>()[k] = ts[k].step;
  }
  return out;
}

std::unique_ptr<InstantTracker> MakeInstantTracker(bool negative, int policy, bool track_alive) {
  if (negative) return std::make_unique<NegativeTracker>(track_alive);
  return std::make_unique<RelationTracker>(static_cast<ExpirationPolicy>(policy), track_alive);
}

void InstantTracker::SnapshotRetained(SnapshotWriter& w) const {
  w.U32(next_seq_);
  WriteNumberedBatches(w, retained_);
  w.PodVec(released_);
}

void InstantTracker::RestoreRetained(SnapshotReader& r, const Schema& expect) {
  next_seq_ = r.U32();
  ReadNumberedBatches(r, expect, next_seq_, true, retained_, "a tracker's retained batches");
  r.PodVec(released_);
  // Numbers go to retained batches only, in order: the last retained has the last number.
  bool ok = retained_.empty() || retained_.back().seq + 1 == next_seq_;
  for (const RowRef& x : released_) ok &= Holds(x);
  CQ_SNAPSHOT_CHECK(ok, "a tracker releases rows it does not hold");
  equal_ = retained_.empty() ? nullptr : std::make_unique<RowEqual>(*retained_.front().batch.schema);
}
}  // namespace cq
