// ISTREAM fused with a route of a shared window join (operators/swj_route_istream.h).
#include "operators/swj_route_istream.h"

#include <algorithm>

#include "base/errors.h"
#include "operators/registry.h"

namespace cq {

namespace {

Schema Picked(const Schema& s, const std::vector<int>& cols) {
  Schema out;
  for (int c : cols) out.push_back(s[c]);
  return out;
}

}  // namespace

SwjRouteIStream::SwjRouteIStream(const Schema& input, int64_t slice, int64_t shrink, int64_t window,
                                 std::vector<int> compared)
    : input_(std::make_shared<const Schema>(input)),
      schema_(std::make_shared<const Schema>(input.begin(), input.end() - 1)), slice_(slice), shrink_(shrink),
      window_(window), compared_(std::move(compared)), equal_(Picked(input, compared_)) {
  for (int c : compared_)
    CQ_CHECK(c >= 0 && static_cast<size_t>(c) < schema_->size(), "a compared column is out of the route's columns");
  for (size_t k = 0; k < compared_.size() && probe_col_ < 0; ++k)
    if (input[compared_[k]].type == TypeId::kInt64) probe_col_ = static_cast<int>(k);
  CQ_CHECK(window_ >= 1, "a route's window is a tick or more");
  // Buckets of 2^shift ticks, enough of them that the ends to come, in (t, t + w], fall in
  // distinct buckets: a tick each up to windows of 2^16 ticks.
  while ((window_ >> shift_) >= (int64_t{1} << 16)) ++shift_;
  size_t n = 1;
  while (static_cast<int64_t>(n) < (window_ >> shift_) + 2) n *= 2;
  ring_.resize(n);
  mask_ = n - 1;
}

Columns SwjRouteIStream::Compared(const Batch& b) const {
  Columns out;
  for (int c : compared_) out.push_back(b.columns[c]);
  return out;
}

void SwjRouteIStream::Release(uint64_t seq) {
  --kept(seq).live;
  while (!kept_.empty() && kept_.front().live == 0 && first_seq_ != filling_) {
    kept_.pop_front();
    ++first_seq_;
  }
}

// Buckets of the ring before `bucket` hold ends before it only: their pairs leave.
void SwjRouteIStream::Sweep(int64_t bucket) {
  if (drained_ == kNoBucket || drained_ >= bucket) return;
  const int64_t from = std::max(drained_, bucket - static_cast<int64_t>(ring_.size()));
  for (int64_t k = from; k < bucket; ++k) {
    std::vector<Open>& v = ring_[static_cast<uint64_t>(k) & mask_];
    for (const Open& o : v) Release(o.seq);
    v.clear();
  }
  drained_ = bucket;
}

// The pairs of R(t⁻) that end at t leave the ring for ending_; those ending before t leave.
void SwjRouteIStream::Begin(Time t) {
  for (const Ending& e : ending_) Release(e.seq);
  ending_.clear();
  instant_ = t;
  const int64_t b = t.tick >> shift_;
  Sweep(b);
  drained_ = b;
  std::vector<Open>& v = ring_[static_cast<uint64_t>(b) & mask_];
  size_t keep = 0;
  for (const Open& o : v) {
    if (t < o.end) v[keep++] = o;
    else if (o.end == t) ending_.push_back({o.seq, o.row, false, 0});
    else Release(o.seq);
  }
  v.resize(keep);
  Probe();
}

uint64_t SwjRouteIStream::ProbeOf(const Kept& k, int64_t row) const {
  const Column& c = k.compared[probe_col_];
  return c.IsValid(row) ? static_cast<uint64_t>(c.i64()[row]) : 0x9E3779B97F4A7C15ULL;  // (NULL: any mark)
}

// True when an unused pair ending now equals the start, which it then cancels. With an integer
// among the compared columns, only the ending pairs of its value are compared (a few where many
// pairs end at once: 10 matches a probe made ~200 comparisons an instant a query).
bool SwjRouteIStream::Cancels(const Kept& k, int64_t row) {
  auto first = ending_.begin(), last = ending_.end();
  if (probe_col_ >= 0) {
    const uint64_t p = ProbeOf(k, row);
    first = std::lower_bound(first, last, p, [](const Ending& e, uint64_t v) { return e.probe < v; });
    last = std::upper_bound(first, last, p, [](uint64_t v, const Ending& e) { return v < e.probe; });
  }
  for (auto e = first; e != last; ++e) {
    if (e->used || !equal_(k.compared, row, kept(e->seq).compared, e->row)) continue;
    e->used = true;
    return true;
  }
  return false;
}

void SwjRouteIStream::Probe() {
  if (probe_col_ < 0 || ending_.empty()) return;
  for (Ending& e : ending_) e.probe = ProbeOf(kept(e.seq), e.row);
  std::stable_sort(ending_.begin(), ending_.end(), [](const Ending& a, const Ending& b) { return a.probe < b.probe; });
}

void SwjRouteIStream::Insert(const Open& o) { ring_[static_cast<uint64_t>(o.end.tick >> shift_) & mask_].push_back(o); }

void SwjRouteIStream::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  CQ_CHECK(!batch.constant_duration && batch.holders.empty(), "a route reads a shared join's results");
  const int64_t* slice = batch.columns[schema_->size()].i64();
  // Most of a narrow query's batches hold none of its slices (at 0.1 match a probe, a pair or
  // none a batch): nothing is kept or allocated for them.
  int64_t first = 0;
  while (first < n && slice[batch.Physical(first)] > slice_) ++first;
  if (first == n) return;
  // Kept while it has pairs in the ring; the pairs of one batch may end within it.
  const uint64_t seq = filling_ = first_seq_ + kept_.size();
  kept_.push_back({batch, Compared(batch), 0});
  Buffer sel = Buffer::Allocate(n * 4);
  uint32_t* s = sel.as<uint32_t>();
  int64_t count = 0;
  for (int64_t k = first; k < n; ++k) {
    const uint32_t i = static_cast<uint32_t>(batch.Physical(k));
    if (slice[i] > slice_) continue;
    const Time start = batch.StartAt(i);
    Time end = batch.EndAt(i);
    end.tick -= shrink_;  // t_y + wn becomes t_y + wi (windows are whole ticks)
    if (start != instant_) {
      CQ_CHECK(instant_ < start, "a route's pairs come in the order of their starts");
      Begin(start);
    }
    const bool cancelled = !ending_.empty() && Cancels(kept(seq), i);
    s[count] = i;
    count += !cancelled;
    // Cancelled or not, the pair is in R until its end (slice ≤ i: it starts before it ends).
    CQ_CHECK(end.tick - start.tick <= window_, "a route's pair lasts longer than its window");
    Insert({end, seq, i});
    ++kept(seq).live;
  }
  filling_ = kNone;
  if (kept_.back().live == 0) kept_.pop_back();
  while (!kept_.empty() && kept_.front().live == 0) {
    kept_.pop_front();
    ++first_seq_;
  }
  if (count == 0) return;
  Batch b;
  b.kind = BatchKind::kStream;
  b.schema = schema_;
  b.columns = batch.columns;
  b.columns.pop_back();
  b.length = batch.length;
  b.sync = batch.sync;
  if (count < batch.length || batch.has_selection) {
    b.has_selection = true;
    b.selection = sel;
    b.selection_count = count;
  }
  out.Emit(std::move(b));
}

void SwjRouteIStream::AdvanceTo(Time progress, Emitter&) {
  // No pair to come starts before progress (the shared join has joined every row before it): what
  // ends before it can cancel nothing more.
  if (instant_ < progress) {
    for (const Ending& e : ending_) Release(e.seq);
    ending_.clear();
  }
  Sweep(progress.tick >> shift_);
}

std::string SwjRouteIStream::Explain() const {
  return "Route slices 1.." + std::to_string(slice_) + ", ends " + std::to_string(shrink_) +
         " earlier, fused with ISTREAM (pairs emitted at their start, checked only against the query's pairs ending "
         "there)";
}

void SwjRouteIStream::Snapshot(SnapshotWriter& w) const {
  w.Pod(instant_.tick);
  w.Pod(instant_.step);
  w.U64(first_seq_);
  w.U64(kept_.size());
  for (const Kept& k : kept_) w.WriteBatch(k.batch);
  std::vector<const Open*> open;
  if (drained_ != kNoBucket)
    for (size_t k = 0; k < ring_.size(); ++k)
      for (const Open& o : ring_[(static_cast<uint64_t>(drained_) + k) & mask_]) open.push_back(&o);
  w.U64(open.size());
  for (const Open* o : open) {
    w.I64(o->end.tick);
    w.I64(o->end.step);
    w.U64(o->seq);
    w.U32(o->row);
  }
  w.U64(ending_.size());
  for (const Ending& e : ending_) {
    w.U64(e.seq);
    w.U32(e.row);
    w.Bool(e.used);
  }
}

void SwjRouteIStream::Restore(SnapshotReader& r) {
  instant_.tick = r.I64();
  instant_.step = r.I64();
  first_seq_ = r.U64();
  const size_t batches = r.Count(8, "a route's kept batches");
  kept_.clear();
  for (size_t k = 0; k < batches; ++k) {
    Batch b = r.ReadBatch(*input_, BatchKind::kLifetime);
    Columns c = Compared(b);
    kept_.push_back({std::move(b), std::move(c), 0});
  }
  const auto in_range = [&](uint64_t seq, uint32_t row) {
    return seq >= first_seq_ && seq - first_seq_ < kept_.size() && row < kept(seq).batch.length;
  };
  for (std::vector<Open>& v : ring_) v.clear();
  drained_ = instant_.tick == Time::MinusInfinity().tick ? kNoBucket : instant_.tick >> shift_;
  const size_t open = r.Count(28, "a route's open pairs");
  for (size_t k = 0; k < open; ++k) {
    Open o;
    o.end.tick = r.I64();
    o.end.step = r.I64();
    o.seq = r.U64();
    o.row = r.U32();
    CQ_SNAPSHOT_CHECK(in_range(o.seq, o.row), "a route's open pair refers to no kept row");
    CQ_SNAPSHOT_CHECK(drained_ != kNoBucket && instant_ < o.end && o.end.tick - instant_.tick <= window_,
                      "a route's open pair ends outside its window");
    ++kept(o.seq).live;
    Insert(o);
  }
  ending_.resize(r.Count(13, "a route's ending pairs"));
  for (Ending& e : ending_) {
    e.seq = r.U64();
    e.row = r.U32();
    e.used = r.Bool();
    CQ_SNAPSHOT_CHECK(in_range(e.seq, e.row), "a route's ending pair refers to no kept row");
    ++kept(e.seq).live;
  }
  Probe();
  for (const Kept& k : kept_) CQ_SNAPSHOT_CHECK(k.live > 0, "a route keeps a batch no pair is in");
}

void RegisterSwjRouteIStream(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "swj_route_istream",
              .description = "ISTREAM of a query's results of a shared window join (fused)",
              .output = D::Output::kStream},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(!ctx.negative, "a shared window join runs under the direct method only");
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime && !in[0].schema->empty() &&
                            in[0].schema->back().type == TypeId::kInt64,
                        "a route reads a shared window join's results");
               const int64_t slice = s.params["slice"].integer(), shrink = s.params["shrink"].integer();
               CQ_CHECK(slice >= 1 && shrink >= 0, "a route's slice is at least 1 and its shrink not negative");
               const int64_t window = s.params["window"].integer();
               CQ_CHECK(window >= 1, "a fused route's window is a tick or more");
               std::vector<int> compared;
               for (const json::Value& c : s.params["compare"].array())
                 compared.push_back(static_cast<int>(c.integer()));
               return std::make_unique<SwjRouteIStream>(*in[0].schema, slice, shrink, window, std::move(compared));
             });
}

}  // namespace cq
