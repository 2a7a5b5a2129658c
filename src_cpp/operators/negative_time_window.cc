#include "operators/negative_time_window.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/row_operator.h"

namespace cq {

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

// [Now], [Range T], [Range T Slide S]: the batch form's merge of positives and negatives, row by
// row. Each tuple is kept (values in a RowStore, its start and end in a FIFO, both monotone) from
// its arrival until its negative is out; two cursors name the next positive and the next negative
// to send, and the negative cursor never passes the positive one.
class NegativeTimeWindowRows final : public RowOperator {
 public:
  enum class Kind { kNow, kRange, kSlide };
  NegativeTimeWindowRows(Kind kind, int64_t range, int64_t slide, const Schema& schema)
      : kind_(kind), range_(range), slide_(slide), schema_(std::make_shared<const Schema>(schema)),
        store_(RowLayout(schema)) {}

  void Push(int, const Row& in, RowEmitter& out) override {
    Kept k;
    Lifetime(in.sync, &k.start, &k.end);
    k.slot = store_.Add(in.values);
    kept_.push_back(k);
    // As the batch form, everything up to the arrival's time goes out — when the region runs that
    // instant. A row that comes later (through a delay, while this window or another operator is
    // emitting) waits for its instant: next_firing names it. One that comes back while this
    // window emits waits for the emission under way, which sends what is due of it.
    if (depth_ == 0 && !(out.now() < in.sync)) EmitThrough(in.sync, true, out);
  }

  // Only what is below `progress` (the batch form also sends what is at it): the rest goes out
  // when the region runs its instant, so AdvanceTo does nothing unless next_firing() < progress.
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (depth_ == 0) EmitThrough(progress, progress.IsInfinite(), out);
  }
  bool advances_when_due() const override { return true; }
  Time next_firing(int64_t) const override {
    Time t = Time::Infinity();
    if (pos_ < end()) t = At(pos_).start;
    if (neg_ < end()) t = std::min(t, At(neg_).end);
    return t;
  }

  // The store (slots as they are), then the tuples from the next negative on, and the positive
  // cursor's distance from it. Nothing is let go of but not yet freed between calls.
  void Snapshot(SnapshotWriter& w) const override {
    store_.Snapshot(w, schema_);
    w.PodVec(kept_.data() + (neg_ - base_), static_cast<size_t>(end() - neg_));
    w.U64(pos_ - neg_);
  }
  void Restore(SnapshotReader& r) override {
    store_.Restore(r, *schema_);
    r.PodVec(kept_);
    base_ = freed_ = neg_ = 0;
    pos_ = r.U64();
    bool ok = pos_ <= kept_.size() && kept_.size() == store_.size();
    std::vector<uint8_t> seen;
    for (size_t k = 0; k < kept_.size() && ok; ++k) {
      const Kept& x = kept_[k];
      ok &= store_.live(x.slot) && SnapshotReader::ValidTime(x.start) && SnapshotReader::ValidTime(x.end) &&
            !(x.end < x.start);
      if (k > 0) ok &= !(x.start < kept_[k - 1].start) && !(x.end < kept_[k - 1].end);
      if (ok && x.slot >= seen.size()) seen.resize(x.slot + 1, 0);
      ok = ok && !seen[x.slot]++;
    }
    CQ_SNAPSHOT_CHECK(ok, "a time window's kept rows are inconsistent");
  }

 private:
  struct Kept {
    Time start, end;
    uint32_t slot;
    uint32_t unused = 0;  // (no padding: snapshots write these as they are)
  };
  static_assert(sizeof(Kept) == 40);

  // The lifetime the batch form gives a tuple at `t` (NegativeTimeWindow::Push).
  void Lifetime(Time t, Time* start, Time* end) const {
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
    }
  }

  uint64_t end() const { return base_ + kept_.size(); }
  const Kept& At(uint64_t k) const { return kept_[k - base_]; }

  // Sends, merged as the batch form's EmitThrough does, every positive starting and every
  // negative ending at or before `through` (`inclusive`) or before it. Each row is copied out of
  // the FIFO before it is emitted (a row coming back may grow the FIFO), and slots are freed only
  // once no emission of this window is under way.
  void EmitThrough(Time through, bool inclusive, RowEmitter& out) {
    auto due = [&](Time t) { return inclusive ? !(through < t) : t < through; };
    ++depth_;
    for (;;) {
      const bool has_pos = pos_ < end() && due(At(pos_).start);
      bool has_neg = neg_ < end();
      Time neg_at = Time::Infinity();
      if (has_neg) {
        neg_at = At(neg_).end;
        has_neg = due(neg_at) && !neg_at.IsInfinite();
      }
      if (!has_pos && !has_neg) break;
      const Time pos_at = has_pos ? At(pos_).start : Time::Infinity();
      Row r;
      if (has_neg && !(pos_at < neg_at)) {  // negatives first within an instant
        // A negative only follows its own positive: with a zero-length lifetime it waits for it.
        const bool own_positive_out = neg_ < pos_;
        if (own_positive_out || !has_pos) {
          if (!own_positive_out) break;
          const Kept k = At(neg_++);
          r.values = store_.Get(k.slot);
          r.sync = neg_at;
          r.other = k.start;
          out.Emit(r);
          continue;
        }
      }
      const Kept k = At(pos_++);
      r.values = store_.Get(k.slot);
      r.sync = pos_at;
      r.other = Time::Infinity();
      out.Emit(r);
    }
    if (--depth_ == 0) Collect();
  }

  // Frees the tuples whose negative is out.
  void Collect() {
    for (; freed_ < neg_; ++freed_) store_.Remove(At(freed_).slot);
    const size_t done = static_cast<size_t>(freed_ - base_);
    if (done == kept_.size()) {
      kept_.clear();
      base_ = freed_;
    } else if (done >= 1024 && done * 2 >= kept_.size()) {
      kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(done));
      base_ = freed_;
    }
  }

  Kind kind_;
  int64_t range_, slide_;
  std::shared_ptr<const Schema> schema_;
  RowStore store_;
  std::vector<Kept> kept_;  // kept_[0] is the base_-th tuple ever kept
  uint64_t base_ = 0;
  uint64_t freed_ = 0;  // tuples before it are freed (and may be dropped from kept_)
  uint64_t pos_ = 0, neg_ = 0;  // the next positive and the next negative to send
  int depth_ = 0;  // emissions of this window under way
};

}  // namespace

std::unique_ptr<RowOperator> NegativeTimeWindow::ToRows() {
  if (kind_ == "unbounded") return std::make_unique<UnboundedNegativeRows>();
  using K = NegativeTimeWindowRows::Kind;
  const K kind = kind_ == "now" ? K::kNow : kind_ == "range" ? K::kRange : K::kSlide;
  return std::make_unique<NegativeTimeWindowRows>(kind, range_, slide_, schema_);
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
    kept_.push_back(r.ReadBatch(schema_, BatchKind::kLifetime));
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
  if (const Batch* b = at(next_positive_)) r.CheckToCome(b->StartAt(next_positive_.row), "a time window's next positive");
  if (const Batch* b = at(next_negative_)) r.CheckToCome(b->EndAt(next_negative_.row), "a time window's next negative");
}
}  // namespace cq
