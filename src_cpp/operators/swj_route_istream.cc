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

// The heap's order: the earliest end on top.
constexpr auto kLaterEnd = [](const auto& a, const auto& b) { return b.end < a.end; };

}  // namespace

SwjRouteIStream::SwjRouteIStream(const Schema& input, int64_t slice, int64_t shrink, std::vector<int> compared)
    : input_(std::make_shared<const Schema>(input)),
      schema_(std::make_shared<const Schema>(input.begin(), input.end() - 1)), slice_(slice), shrink_(shrink),
      compared_(std::move(compared)), equal_(Picked(input, compared_)) {
  for (int c : compared_)
    CQ_CHECK(c >= 0 && static_cast<size_t>(c) < schema_->size(), "a compared column is out of the route's columns");
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

// The pairs of R(t⁻) that end at t leave the heap for ending_; those ending before t leave.
void SwjRouteIStream::Begin(Time t) {
  for (const Ending& e : ending_) Release(e.seq);
  ending_.clear();
  instant_ = t;
  while (!open_.empty() && !(t < open_.front().end)) {
    std::pop_heap(open_.begin(), open_.end(), kLaterEnd);
    const Open o = open_.back();
    open_.pop_back();
    if (o.end == t) ending_.push_back({o.seq, o.row, false});
    else Release(o.seq);
  }
}

void SwjRouteIStream::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  CQ_CHECK(!batch.constant_duration && batch.holders.empty(), "a route reads a shared join's results");
  const int64_t* slice = batch.columns[schema_->size()].i64();
  // Kept while it has pairs on the heap; the pairs of one batch may end within it.
  const uint64_t seq = filling_ = first_seq_ + kept_.size();
  kept_.push_back({batch, Compared(batch), 0});
  Buffer sel = Buffer::Allocate(n * 4);
  uint32_t* s = sel.as<uint32_t>();
  int64_t count = 0;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t i = static_cast<uint32_t>(batch.Physical(k));
    if (slice[i] > slice_) continue;
    const Time start = batch.StartAt(i);
    Time end = batch.EndAt(i);
    end.tick -= shrink_;  // t_y + wn becomes t_y + wi (windows are whole ticks)
    if (start != instant_) {
      CQ_CHECK(instant_ < start, "a route's pairs come in the order of their starts");
      Begin(start);
    }
    bool cancelled = false;
    for (Ending& e : ending_) {
      if (e.used) continue;
      if (!equal_(kept(seq).compared, i, kept(e.seq).compared, e.row)) continue;
      e.used = cancelled = true;
      break;
    }
    s[count] = i;
    count += !cancelled;
    // Cancelled or not, the pair is in R until its end (slice ≤ i: it starts before it ends).
    open_.push_back({end, seq, i});
    std::push_heap(open_.begin(), open_.end(), kLaterEnd);
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
  while (!open_.empty() && open_.front().end < progress) {
    std::pop_heap(open_.begin(), open_.end(), kLaterEnd);
    Release(open_.back().seq);
    open_.pop_back();
  }
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
  w.U64(open_.size());
  for (const Open& o : open_) {
    w.I64(o.end.tick);
    w.I64(o.end.step);
    w.U64(o.seq);
    w.U32(o.row);
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
  open_.resize(r.Count(28, "a route's open pairs"));
  for (Open& o : open_) {
    o.end.tick = r.I64();
    o.end.step = r.I64();
    o.seq = r.U64();
    o.row = r.U32();
    CQ_SNAPSHOT_CHECK(in_range(o.seq, o.row), "a route's open pair refers to no kept row");
    ++kept(o.seq).live;
  }
  ending_.resize(r.Count(13, "a route's ending pairs"));
  for (Ending& e : ending_) {
    e.seq = r.U64();
    e.row = r.U32();
    e.used = r.Bool();
    CQ_SNAPSHOT_CHECK(in_range(e.seq, e.row), "a route's ending pair refers to no kept row");
    ++kept(e.seq).live;
  }
  for (const Kept& k : kept_) CQ_SNAPSHOT_CHECK(k.live > 0, "a route keeps a batch no pair is in");
  std::make_heap(open_.begin(), open_.end(), kLaterEnd);
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
               std::vector<int> compared;
               for (const json::Value& c : s.params["compare"].array())
                 compared.push_back(static_cast<int>(c.integer()));
               return std::make_unique<SwjRouteIStream>(*in[0].schema, slice, shrink, std::move(compared));
             });
}

}  // namespace cq
