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
  while (!retained_.empty() && retained_.front().live == 0) retained_.pop_front();
}

int64_t InstantTracker::retained_rows() const {
  int64_t n = 0;
  for (const Retained& r : retained_) n += r.live;
  return n;
}

void InstantTracker::Collect(Time progress, Changes& out) {
  out.clear();
  AdvanceTo(progress, [&](Time t, const std::vector<RowRef>& s, const std::vector<RowRef>& e) {
    out.starts.insert(out.starts.end(), s.begin(), s.end());
    out.start_at.resize(out.starts.size(), t);
    out.ends.insert(out.ends.end(), e.begin(), e.end());
    out.end_at.resize(out.ends.size(), t);
  });
}

void InstantTracker::AppendBagDifferences(const Changes& c, bool starts_minus_ends, std::vector<RowRef>& out,
                                          std::vector<Time>& ts) const {
  const std::vector<RowRef>& a = starts_minus_ends ? c.starts : c.ends;
  const std::vector<RowRef>& b = starts_minus_ends ? c.ends : c.starts;
  const Time* at = (starts_minus_ends ? c.start_at : c.end_at).data();
  const Time* bt = (starts_minus_ends ? c.end_at : c.start_at).data();
  const size_t na = a.size(), nb = b.size();
  out.reserve(out.size() + na);
  ts.reserve(ts.size() + na);
  size_t j = 0;
  for (size_t i = 0; i < na;) {
    const Time t = at[i];
    size_t i2 = i + 1;
    while (i2 < na && at[i2] == t) ++i2;
    while (j < nb && bt[j] < t) ++j;
    size_t j2 = j;
    while (j2 < nb && bt[j2] == t) ++j2;
    if (j == j2) {
      // Nothing taken away at t: the instant's rows go out as they are.
      out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.begin() + static_cast<std::ptrdiff_t>(i2));
      ts.resize(out.size(), t);
    } else {
      FewOnStack<uint8_t, 64> used(j2 - j, 0);
      for (size_t x = i; x < i2; ++x) {
        bool cancelled = false;
        for (size_t k = j; k < j2 && !cancelled; ++k)
          if (!used[k - j] && RowsEqual(b[k], a[x])) used[k - j] = cancelled = true;
        if (!cancelled) {
          out.push_back(a[x]);
          ts.push_back(t);
        }
      }
    }
    i = i2;
    j = j2;
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
}

void InstantTracker::RestoreRetained(SnapshotReader& r, const Schema& expect) {
  next_seq_ = r.U32();
  ReadNumberedBatches(r, expect, next_seq_, true, retained_, "a tracker's retained batches");
  // Numbers go to retained batches only, in order: the last retained has the last number.
  bool ok = retained_.empty() || retained_.back().seq + 1 == next_seq_;
  CQ_SNAPSHOT_CHECK(ok, "a tracker's batch numbers are out of sequence");
  equal_ = retained_.empty() ? nullptr : std::make_unique<RowEqual>(*retained_.front().batch.schema);
}
}  // namespace cq
