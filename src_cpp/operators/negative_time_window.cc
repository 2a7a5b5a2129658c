#include "operators/negative_time_window.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/batch_rows.h"
#include "rows/row_operator.h"

namespace cq {

NegativeTimeWindow::NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input)
    : store_(RowLayout(input)), name_(std::move(kind)), kind_(name_ == "now"         ? Kind::kNow
                                                              : name_ == "range"     ? Kind::kRange
                                                              : name_ == "unbounded" ? Kind::kUnbounded
                                                                                     : Kind::kSlide),
      range_(range), slide_(slide), schema_(std::make_shared<const Schema>(input)) {}

NegativeTimeWindow::~NegativeTimeWindow() = default;

void NegativeTimeWindow::Lifetime(Time t, Time* start, Time* end) const {
  switch (kind_) {
    case Kind::kNow:
      *start = t;
      *end = {t.tick, t.step + 1};
      return;
    case Kind::kRange:
      *start = t;
      *end = {(t + Duration::Ticks(range_)).tick, t.step};
      return;
    case Kind::kSlide:
      *start = CeilToBoundary(t, slide_);
      *end = CeilToBoundary(t + Duration::Ticks(range_), slide_);
      return;
    case Kind::kUnbounded: break;
  }
  *start = t;
  *end = Time::Infinity();
}

void NegativeTimeWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  if (kind_ == Kind::kUnbounded) {
    // Nothing ever ends: the tuples themselves are the positives, in order, no copy.
    b.kind = BatchKind::kLifetime;
    b.constant_duration = Duration::Infinite();
    out.Emit(std::move(b));
    return;
  }
  if (RowsHold()) TakeFromRows();
  const Time last = b.sync.At(n - 1);
  TimeColumn start = b.sync, end;
  end.ticks = Buffer::Allocate(n * 8);
  int64_t* et = end.ticks.as<int64_t>();
  const int64_t* t = b.sync.tick_data();
  if (kind_ == Kind::kNow) {
    std::copy(t, t + n, et);
    end.steps = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) end.steps.as<int64_t>()[i] = b.sync.At(i).step + 1;
  } else if (kind_ == Kind::kRange) {
    for (int64_t i = 0; i < n; ++i) et[i] = (b.sync.At(i) + Duration::Ticks(range_)).tick;
    end.steps = b.sync.steps;
  } else {  // slide: both ends on boundaries, at step 0, as SlideWindow has them
    start.ticks = Buffer::Allocate(n * 8);
    start.steps = {};
    int64_t* st = start.ticks.as<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const Time at = b.sync.At(i);
      st[i] = CeilToBoundary(at, slide_).tick;
      et[i] = CeilToBoundary(at + Duration::Ticks(range_), slide_).tick;
    }
  }
  b.sync = start;
  b.other = end;
  b.kind = BatchKind::kLifetime;
  b.constant_duration.reset();
  kept_.push_back(std::move(b));
  EmitThrough(last, out);
}

void NegativeTimeWindow::AdvanceTo(Time progress, Emitter& out) {
  if (RowsHold()) TakeFromRows();
  EmitThrough(progress, out);
}

Time NegativeTimeWindow::next_firing(int64_t) const {
  if (!RowsHold()) return BatchesNextFiring();
  Time t = Time::Infinity();
  if (pos_ < RowsEnd()) t = At(pos_).start;
  if (neg_ < RowsEnd()) t = std::min(t, At(neg_).end);
  return t;
}

Time NegativeTimeWindow::BatchesNextFiring() const {
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
    const bool has_pos =
        valid(next_positive_) && !(through < batch_of(next_positive_.batch).sync.At(next_positive_.row));
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
      const bool own_positive_out =
          next_negative_.batch < next_positive_.batch ||
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
    o.schema = schema_;
    o.length = static_cast<int64_t>(rows.size());
    o.columns = GatherRows(batch_of, rows, schema_->size());
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

// ---- row form ----------------------------------------------------------------------------------

namespace {

// [Range Unbounded]: nothing ever ends, so each tuple goes on at once as a positive (open end);
// nothing is kept.
class UnboundedNegativeRows final : public RowOperator {
 public:
  void Push(int, const Row& in, RowEmitter& out) override {
    Row r = in;
    r.other = Time::Infinity();
    r.holder = kNoHolder;
    out.Emit(r);
  }
  bool stateful() const override { return false; }
};

}  // namespace

// [Now], [Range T], [Range T Slide S]: the batch form's merge of positives and negatives, row by
// row, over the row layout: the negative cursor never passes the positive one.
class NegativeTimeWindow::Rows final : public RowOperator {
 public:
  explicit Rows(NegativeTimeWindow* w) : w_(w) {}

  void Push(int, const Row& in, RowEmitter& out) override {
    NegativeTimeWindow& w = *w_;
    if (w.BatchesHold()) w.TakeFromBatches();
    Kept k;
    w.Lifetime(in.sync, &k.start, &k.end);
    k.slot = w.store_.Add(in.values);
    w.rows_.push_back(k);
    // As the batch form, everything up to the arrival's time goes out — when the region runs that
    // instant. A row that comes later (through a delay, while this window or another operator is
    // emitting) waits for its instant: next_firing names it. One that comes back while this
    // window emits waits for the emission under way, which sends what is due of it.
    if (w.depth_ == 0 && !(out.now() < in.sync)) EmitThrough(in.sync, true, out);
  }

  // Only what is below `progress` (the batch form also sends what is at it): the rest goes out
  // when the region runs its instant, so AdvanceTo does nothing unless next_firing() < progress.
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (w_->BatchesHold()) w_->TakeFromBatches();
    if (w_->depth_ == 0) EmitThrough(progress, progress.IsInfinite(), out);
  }
  bool advances_when_due() const override { return true; }
  Time next_firing(int64_t last_tick) const override { return w_->next_firing(last_tick); }
  // (Snapshot and Restore: nothing of its own. The state is the window's, which writes it.)

 private:
  // Sends, merged as the batch form's EmitThrough does, every positive starting and every
  // negative ending at or before `through` (`inclusive`) or before it. Each row is copied out of
  // the FIFO before it is emitted (a row coming back may grow the FIFO), and slots are freed only
  // once no emission of this window is under way.
  void EmitThrough(Time through, bool inclusive, RowEmitter& out) {
    NegativeTimeWindow& w = *w_;
    auto due = [&](Time t) { return inclusive ? !(through < t) : t < through; };
    ++w.depth_;
    for (;;) {
      const bool has_pos = w.pos_ < w.RowsEnd() && due(w.At(w.pos_).start);
      bool has_neg = w.neg_ < w.RowsEnd();
      Time neg_at = Time::Infinity();
      if (has_neg) {
        neg_at = w.At(w.neg_).end;
        has_neg = due(neg_at) && !neg_at.IsInfinite();
      }
      if (!has_pos && !has_neg) break;
      const Time pos_at = has_pos ? w.At(w.pos_).start : Time::Infinity();
      Row r;
      if (has_neg && !(pos_at < neg_at)) {  // negatives first within an instant
        // A negative only follows its own positive: with a zero-length lifetime it waits for it.
        const bool own_positive_out = w.neg_ < w.pos_;
        if (own_positive_out || !has_pos) {
          if (!own_positive_out) break;
          const Kept k = w.At(w.neg_++);
          r.values = w.store_.Get(k.slot);
          r.sync = neg_at;
          r.other = k.start;
          out.Emit(r);
          continue;
        }
      }
      const Kept k = w.At(w.pos_++);
      r.values = w.store_.Get(k.slot);
      r.sync = pos_at;
      r.other = Time::Infinity();
      out.Emit(r);
    }
    if (--w.depth_ == 0) Collect();
  }

  // Frees the tuples whose negative is out.
  void Collect() {
    NegativeTimeWindow& w = *w_;
    for (; w.freed_ < w.neg_; ++w.freed_) w.store_.Remove(w.At(w.freed_).slot);
    const size_t done = static_cast<size_t>(w.freed_ - w.base_);
    if (done == w.rows_.size()) {
      w.rows_.clear();
      w.base_ = w.freed_;
    } else if (done >= 1024 && done * 2 >= w.rows_.size()) {
      w.rows_.erase(w.rows_.begin(), w.rows_.begin() + static_cast<std::ptrdiff_t>(done));
      w.base_ = w.freed_;
    }
  }

  NegativeTimeWindow* w_;
};

std::unique_ptr<RowOperator> NegativeTimeWindow::ToRows() {
  if (kind_ == Kind::kUnbounded) return std::make_unique<UnboundedNegativeRows>();
  return std::make_unique<Rows>(this);
}

// ---- taking the tuples over ------------------------------------------------------------------

void NegativeTimeWindow::TakeFromBatches() {
  // From the next negative on (it never passes the next positive), in order, after what the row
  // layout held (nothing: its cursors are at its end).
  auto before = [](const BatchRow& a, const BatchRow& b) {
    return a.batch != b.batch ? a.batch < b.batch : a.row < b.row;
  };
  uint64_t k = RowsEnd(), pos = UINT64_MAX;
  for (BatchRow c = next_negative_; c.batch - front_ < kept_.size(); ++c.batch, c.row = 0) {
    const Batch& b = kept_[c.batch - front_];
    for (; c.row < b.length; ++c.row, ++k) {
      if (pos == UINT64_MAX && !before(c, next_positive_)) pos = k;
      Kept x;
      x.start = b.sync.At(c.row);
      x.end = b.other.At(c.row);
      WithRow(b, c.row, [&](const Row& r) { x.slot = store_.Add(r.values); });
      rows_.push_back(x);
    }
  }
  pos_ = pos == UINT64_MAX ? k : pos;
  front_ += static_cast<uint32_t>(kept_.size());
  kept_.clear();
  next_positive_ = next_negative_ = {front_, 0};
}

Batch NegativeTimeWindow::BatchOfRows(BatchRow* positive) const {
  RowBatchBuilder b(schema_, BatchKind::kLifetime, std::nullopt);
  for (uint64_t k = neg_; k < RowsEnd(); ++k) {
    Row r;
    r.values = store_.Get(At(k).slot);
    r.sync = At(k).start;
    r.other = At(k).end;
    b.Append(r);
  }
  Batch out = b.Finish();
  // The cursors as the batch form has them: the batch is number front_ (the batch layout is empty).
  const int64_t p = static_cast<int64_t>(pos_ - neg_);
  *positive = p < out.length ? BatchRow{front_, static_cast<uint32_t>(p)} : BatchRow{front_ + 1, 0};
  return out;
}

void NegativeTimeWindow::TakeFromRows() {
  Batch b = BatchOfRows(&next_positive_);
  next_negative_ = {front_, 0};
  kept_.push_back(std::move(b));
  ClearRows();
}

void NegativeTimeWindow::ClearRows() {
  for (uint64_t k = std::max(freed_, base_); k < RowsEnd(); ++k) store_.Remove(At(k).slot);
  rows_.clear();
  base_ = freed_ = pos_ = neg_ = 0;
}

void RegisterNegativeTimeWindow(OperatorRegistry& r) {
  r.RegisterNegative("window",
                     [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                        const OperatorContext&) -> std::unique_ptr<Operator> {
                       CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
                       const std::string& kind = s.params["kind"].str();
                       const int64_t range = kind == "range" ? DurationFromJson(s.params["range"]).ticks : 0;
                       return std::make_unique<NegativeTimeWindow>(kind, range, 1, *in[0].schema);
                     });
  r.RegisterNegative("slide_window",
                     [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                        const OperatorContext&) -> std::unique_ptr<Operator> {
                       CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
                       return std::make_unique<NegativeTimeWindow>("slide", DurationFromJson(s.params["range"]).ticks,
                                                                   DurationFromJson(s.params["slide"]).ticks,
                                                                   *in[0].schema);
                     });
}

// The kept batches and the two cursors: the next positive and the next negative to send. The
// first batch (a whole input batch, kept until both cursors leave it) is written from the earlier
// cursor on. Tuples the row form holds are written as one such batch.
void NegativeTimeWindow::Snapshot(SnapshotWriter& w) const {
  if (!RowsHold()) {
    WriteBatches(w, front_, kept_, next_positive_, next_negative_);
    return;
  }
  Ring<Batch> one;
  BatchRow positive;
  one.push_back(BatchOfRows(&positive));
  WriteBatches(w, front_, one, positive, {front_, 0});
}

void NegativeTimeWindow::WriteBatches(SnapshotWriter& w, uint32_t front, const Ring<Batch>& kept, BatchRow positive,
                                      BatchRow negative) {
  auto before = [](const BatchRow& a, const BatchRow& b) {
    return a.batch != b.batch ? a.batch < b.batch : a.row < b.row;
  };
  const BatchRow first = before(negative, positive) ? negative : positive;
  const uint32_t skip = !kept.empty() && first.batch == front ? first.row : 0;
  w.U32(front);
  w.U64(kept.size());
  for (size_t k = 0; k < kept.size(); ++k)
    w.WriteBatch(k == 0 && skip ? kept[0].Slice(skip, kept[0].length - skip) : kept[k]);
  for (BatchRow c : {positive, negative}) {
    if (c.batch == front) c.row -= skip;
    w.Pod(c);
  }
}

void NegativeTimeWindow::Restore(SnapshotReader& r) {
  ClearRows();
  front_ = r.U32();
  kept_.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    kept_.push_back(r.ReadBatch(*schema_, BatchKind::kLifetime));
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
  // A row's negative follows its positive.
  CQ_SNAPSHOT_CHECK(next_negative_.batch < next_positive_.batch ||
                        (next_negative_.batch == next_positive_.batch && next_negative_.row <= next_positive_.row),
                    "a time window's negative cursor is ahead of its positive one");
  // What is due up to progress has gone out: the next positive starts, the next negative ends, later.
  auto at = [&](const BatchRow& c) -> const Batch* {
    const uint64_t k = static_cast<uint64_t>(c.batch) - front_;
    return k < kept_.size() ? &kept_[k] : nullptr;
  };
  if (const Batch* b = at(next_positive_))
    r.CheckToCome(b->StartAt(next_positive_.row), "a time window's next positive");
  if (const Batch* b = at(next_negative_)) r.CheckToCome(b->EndAt(next_negative_.row), "a time window's next negative");
}
}  // namespace cq
