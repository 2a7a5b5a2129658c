#include "operators/negative_time_window.h"

#include <algorithm>

#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {
int64_t CeilTo(int64_t x, int64_t s) {
  int64_t q = x / s;
  if (q * s < x) ++q;
  int64_t r;
  return __builtin_mul_overflow(q, s, &r) ? Time::kInfTick : r;
}
}  // namespace

NegativeTimeWindow::NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input)
    : kind_(std::move(kind)), range_(range), slide_(slide), schema_(input) {}

void NegativeTimeWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  if (kind_ == "unbounded") {
    // Nothing ever ends: the tuples themselves are the positives, in order, no copy.
    b.kind = BatchKind::kLifetime;
    b.constant_duration = Duration::Infinite();
    out.Emit(std::move(b));
    return;
  }
  const Time last = b.sync.At(n - 1);
  TimeColumn start = b.sync, end;
  end.ticks = Buffer::Allocate(n * 8);
  int64_t* et = end.ticks.as<int64_t>();
  const int64_t* t = b.sync.tick_data();
  if (kind_ == "now") {
    std::copy(t, t + n, et);
    end.steps = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) end.steps.as<int64_t>()[i] = b.sync.At(i).step + 1;
  } else if (kind_ == "range") {
    for (int64_t i = 0; i < n; ++i) et[i] = (b.sync.At(i) + Duration::Ticks(range_)).tick;
    end.steps = b.sync.steps;
  } else {  // slide
    start.ticks = Buffer::Allocate(n * 8);
    start.steps = {};
    for (int64_t i = 0; i < n; ++i) {
      start.ticks.as<int64_t>()[i] = CeilTo(t[i], slide_);
      int64_t te;
      et[i] = __builtin_add_overflow(t[i], range_, &te) ? Time::kInfTick : CeilTo(te, slide_);
    }
  }
  b.sync = start;
  b.other = end;
  b.kind = BatchKind::kLifetime;
  b.constant_duration.reset();
  kept_.push_back(std::move(b));
  EmitThrough(last, out);
}

void NegativeTimeWindow::AdvanceTo(Time progress, Emitter& out) { EmitThrough(progress, out); }

Time NegativeTimeWindow::next_firing(int64_t) const {
  auto valid = [&](const BatchRow& r) { return r.batch - front_ < kept_.size(); };
  Time t = Time::Infinity();
  if (valid(next_positive_)) t = kept_[next_positive_.batch - front_].sync.At(next_positive_.row);
  if (valid(next_negative_)) t = std::min(t, kept_[next_negative_.batch - front_].other.At(next_negative_.row));
  return t;
}

void NegativeTimeWindow::EmitThrough(Time through, Emitter& out) {
  auto batch_of = [&](uint32_t k) -> const Batch& { return kept_[k - front_]; };
  auto valid = [&](const BatchRow& r) { return r.batch - front_ < kept_.size(); };
  auto advance = [&](BatchRow& r) {
    if (++r.row >= batch_of(r.batch).length) {
      ++r.batch;
      r.row = 0;
    }
  };
  std::vector<BatchRow> rows;
  std::vector<Time> sync, other;
  for (;;) {
    const bool has_pos = valid(next_positive_) && !(through < batch_of(next_positive_.batch).sync.At(next_positive_.row));
    bool has_neg = valid(next_negative_);
    Time neg_at = Time::Infinity();
    if (has_neg) {
      neg_at = batch_of(next_negative_.batch).other.At(next_negative_.row);
      has_neg = !(through < neg_at) && !neg_at.IsInfinite();
    }
    if (!has_pos && !has_neg) break;
    const Time pos_at = has_pos ? batch_of(next_positive_.batch).sync.At(next_positive_.row) : Time::Infinity();
    if (has_neg && !(pos_at < neg_at)) {  // negatives first within an instant
      // A negative may only follow its own positive: with a zero-length lifetime it waits for it.
      const bool own_positive_out = next_negative_.batch < next_positive_.batch ||
                                    (next_negative_.batch == next_positive_.batch && next_negative_.row < next_positive_.row);
      if (own_positive_out || !has_pos) {
        if (!own_positive_out) break;
        const Batch& kb = batch_of(next_negative_.batch);
        rows.push_back(next_negative_);
        sync.push_back(neg_at);
        other.push_back(kb.sync.At(next_negative_.row));
        advance(next_negative_);
        continue;
      }
    }
    rows.push_back(next_positive_);
    sync.push_back(pos_at);
    other.push_back(Time::Infinity());
    advance(next_positive_);
  }
  if (!rows.empty()) {
    Batch o;
    o.kind = BatchKind::kLifetime;
    o.schema = kept_.front().schema;
    o.length = static_cast<int64_t>(rows.size());
    o.columns = GatherRows(batch_of, rows, schema_.size());
    o.sync = MakeTimeColumn(sync);
    o.other = MakeTimeColumn(other);
    out.Emit(std::move(o));
  }
  // Batches whose every negative is out are done.
  while (!kept_.empty() && next_negative_.batch > front_ && next_positive_.batch > front_) {
    kept_.pop_front();
    ++front_;
  }
}

void RegisterNegativeTimeWindow(OperatorRegistry& r) {
  r.Register("negative:window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                   const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    const std::string& kind = s.params["kind"].str();
    const int64_t range = kind == "range" ? DurationFromJson(s.params["range"]).ticks : 0;
    return std::make_unique<NegativeTimeWindow>(kind, range, 1, *in[0].schema);
  });
  r.Register("negative:slide_window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                         const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    return std::make_unique<NegativeTimeWindow>("slide", DurationFromJson(s.params["range"]).ticks,
                                                DurationFromJson(s.params["slide"]).ticks, *in[0].schema);
  });
}


// The kept batches and the two cursors: the next positive and the next negative to send. The
// first batch (a whole input batch, kept until both cursors leave it) is written from the earlier
// cursor on.
void NegativeTimeWindow::Snapshot(SnapshotWriter& w) const {
  auto before = [](const BatchRow& a, const BatchRow& b) { return a.batch != b.batch ? a.batch < b.batch : a.row < b.row; };
  const BatchRow first = before(next_negative_, next_positive_) ? next_negative_ : next_positive_;
  const uint32_t skip = !kept_.empty() && first.batch == front_ ? first.row : 0;
  w.U32(front_);
  w.U64(kept_.size());
  for (size_t k = 0; k < kept_.size(); ++k)
    w.WriteBatch(k == 0 && skip ? kept_[0].Slice(skip, kept_[0].length - skip) : kept_[k]);
  for (BatchRow c : {next_positive_, next_negative_}) {
    if (c.batch == front_) c.row -= skip;
    w.Pod(c);
  }
}

void NegativeTimeWindow::Restore(SnapshotReader& r) {
  front_ = r.U32();
  kept_.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    kept_.push_back(r.ReadBatch(&schema_));
    CQ_SNAPSHOT_CHECK(!kept_.back().has_selection, "a time window keeps a batch with a selection");
  }
  next_positive_ = r.Pod<BatchRow>();
  next_negative_ = r.Pod<BatchRow>();
  auto in_range = [&](const BatchRow& c) {
    // A cursor names a kept batch and a row in it, or sits just past the last kept batch.
    const uint64_t k = static_cast<uint64_t>(c.batch) - front_;
    return c.batch >= front_ && (k == kept_.size() ? c.row == 0 : k < kept_.size() && c.row < kept_[k].length);
  };
  CQ_SNAPSHOT_CHECK(in_range(next_positive_) && in_range(next_negative_), "a time window's cursors are out of range");
}
}  // namespace cq
