#include "operators/stream_difference.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/batch_rows.h"
#include "rows/row_tracker.h"

namespace cq {

template <Difference kSide>
StreamDifference<kSide>::StreamDifference(const Schema& input, bool constant, bool negative, ExpirationPolicy policy)
    : schema_(input), equal_(input), constant_(constant),
      instants_(input, negative, policy, false, /*starts_only=*/kIStream),
      out_schema_(std::make_shared<const Schema>(input)) {
  CQ_CHECK(kIStream || !constant_, "DSTREAM has no constant-duration strategy");
}

template <Difference kSide>
const Batch& StreamDifference<kSide>::BatchOf(uint64_t seq) const {
  CQ_CHECK(!retained_.empty() && seq >= retained_.front().seq, "istream lost a retained batch");
  return retained_[seq - retained_.front().seq].batch;
}

template <Difference kSide>
int64_t StreamDifference<kSide>::retained_rows() const {
  if (UsesInstants() || instants_.in_rows()) return instants_.kept_rows();
  int64_t n = -cursor_;
  for (const Retained& r : retained_) n += r.batch.num_rows();
  return std::max<int64_t>(n, 0);
}

template <Difference kSide>
void StreamDifference<kSide>::ExpireConstant(Time t) {
  // Moves the cursor past every row that ended before t, dropping batches it leaves behind, and
  // collects the rows ending exactly at t.
  while (!retained_.empty()) {
    const Batch& b = retained_.front().batch;
    const int64_t n = b.num_rows();
    while (cursor_ < n && b.StartAt(b.Physical(cursor_)) + *duration_ < t) ++cursor_;
    if (cursor_ < n) break;
    retained_.pop_front();
    cursor_ = 0;
  }
  int64_t k = cursor_;
  for (size_t i = 0; i < retained_.size(); ++i, k = 0) {
    const Batch& b = retained_[i].batch;
    const int64_t n = b.num_rows();
    for (; k < n; ++k) {
      const int64_t p = b.Physical(k);
      if (b.StartAt(p) + *duration_ != t) return;
      ending_now_.push_back({retained_[i].seq, static_cast<uint32_t>(p)});
    }
  }
}

template <Difference kSide>
void StreamDifference<kSide>::BeginInstant(Time t) {
  ending_now_.clear();
  current_ = t;
  ExpireConstant(t);
  consumed_.assign(ending_now_.size(), 0);
}

template <Difference kSide>
void StreamDifference<kSide>::AdvanceCursorTicks(int64_t threshold) {
  while (!retained_.empty()) {
    const Batch& b = retained_.front().batch;
    const int64_t* bt = b.sync.tick_data();
    const uint32_t* bs = b.has_selection ? b.sel() : nullptr;
    const int64_t n = b.num_rows();
    while (cursor_ < n && bt[bs ? bs[cursor_] : cursor_] < threshold) ++cursor_;
    if (cursor_ < n || retained_.size() <= 1) return;
    retained_.pop_front();
    cursor_ = 0;
  }
}

template <Difference kSide>
bool StreamDifference<kSide>::PushDistinctTicks(const Batch& batch, std::vector<uint32_t>& keep, bool& dropped) {
  if (duration_->steps != 0 || batch.sync.has_steps() || current_.step != 0) return false;
  const int64_t n = batch.num_rows();
  const int64_t d = duration_->ticks;
  const int64_t* ticks = batch.sync.tick_data();
  const uint32_t* sel = batch.has_selection ? batch.sel() : nullptr;
  auto S = [&](int64_t k) { return ticks[sel ? sel[k] : k]; };
  // Strictly increasing, and past the current instant (whose bag state the per-row path keeps).
  int64_t lo;
  if (S(0) <= current_.tick || __builtin_sub_overflow(S(0), d, &lo)) return false;
  bool increasing = true;
  if (sel) {
    for (int64_t k = 1; k < n; ++k) increasing &= ticks[sel[k]] > ticks[sel[k - 1]];
  } else {
    for (int64_t k = 1; k < n; ++k) increasing &= ticks[k] > ticks[k - 1];
  }
  if (!increasing) return false;
  for (const Retained& r : retained_)
    if (r.batch.sync.has_steps()) return false;

  // The instant before this batch is over: rows that started before S(0) - d can match nothing.
  ending_now_.clear();
  consumed_.clear();
  const int64_t hi = S(n - 1) - d;
  AdvanceCursorTicks(lo);

  // H: the rows that may end inside this batch, i.e. started in [lo, hi], in start order — older
  // batches from the cursor on, then this batch's own rows.
  h_ticks_.clear();
  h_cols_.clear();
  h_rows_.clear();
  h_seqs_.clear();
  bool h_increasing = true;
  int64_t prev = Time::kMinTick;
  int64_t k0 = cursor_;
  for (size_t i = 0; i < retained_.size(); ++i, k0 = 0) {
    const Batch& b = retained_[i].batch;
    const int64_t* bt = b.sync.tick_data();
    const uint32_t* bs = b.has_selection ? b.sel() : nullptr;
    const int64_t bn = b.num_rows();
    int64_t k = k0;
    for (; k < bn; ++k) {
      const uint32_t q = bs ? bs[k] : static_cast<uint32_t>(k);
      if (bt[q] > hi) break;
      h_increasing &= bt[q] > prev;
      prev = bt[q];
      h_ticks_.push_back(bt[q]);
      h_cols_.push_back(&b.columns);
      h_rows_.push_back(q);
      h_seqs_.push_back(retained_[i].seq);
    }
    if (k < bn) break;
  }
  if (!h_increasing) return false;  // equal starts in the history: the bag path handles groups

  // Pass 1: each row's candidate, the history row that ends exactly at its start. Both sides
  // are strictly increasing, so this is a merge; written without branches on the data, whose
  // pattern (which rows the filter kept) is random.
  const int64_t m = static_cast<int64_t>(h_ticks_.size());
  cand_.resize(n);
  {
    int64_t i = 0, j = 0;
    const int64_t* h = h_ticks_.data();
    int32_t* cand = cand_.data();
    while (i < n && j < m) {
      const int64_t a = S(i) - d, b = h[j];
      // j when a == b, else -1 (all bits set), without a branch.
      cand[i] = static_cast<int32_t>(j) | -static_cast<int32_t>(a != b);
      j += b <= a;
      i += a <= b;
    }
    for (; i < n; ++i) cand[i] = -1;
  }
  // Pass 2: compare values only where a candidate exists; with one start and one end per
  // instant, equal values cancel the start.
  int64_t with_cand = 0;
  ks_.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    ks_[with_cand] = static_cast<int32_t>(k);
    with_cand += cand_[k] >= 0;
  }
  drops_.clear();
  for (int64_t x = 0; x < with_cand; ++x) {
    const int32_t k = ks_[x], c = cand_[k];
    const uint32_t p = sel ? sel[k] : static_cast<uint32_t>(k);
    if (equal_(*h_cols_[c], h_rows_[c], batch.columns, p)) drops_.push_back(k);
  }
  bool last_cancelled = false;
  if (!drops_.empty()) {
    dropped = true;
    last_cancelled = drops_.back() == n - 1;
    keep.reserve(n - drops_.size());
    size_t next = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (next < drops_.size() && drops_[next] == k) {
        ++next;
        continue;
      }
      keep.push_back(sel ? sel[k] : static_cast<uint32_t>(k));
    }
  }
  // Leave the bag state of the last instant for the next batch, which may continue it.
  current_ = {S(n - 1), 0};
  if (cand_[n - 1] >= 0) {
    const int32_t c = cand_[n - 1];
    ending_now_.push_back({h_seqs_[c], h_rows_[c]});
    consumed_.push_back(last_cancelled ? 1 : 0);
  }
  AdvanceCursorTicks(hi);
  return true;
}

template <Difference kSide>
void StreamDifference<kSide>::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  CQ_CHECK(batch.kind == BatchKind::kLifetime, "ISTREAM and DSTREAM expect a relation");
  EnterBatch();
  if (UsesInstants()) {
    instants_.batch().Push(batch);
    return;  // instants are decided when they are complete (AdvanceTo)
  }
  CQ_CHECK(batch.constant_duration && batch.holders.empty() && (!duration_ || *batch.constant_duration == *duration_),
           "ISTREAM was planned for lifetimes of one constant duration");
  if (!duration_) duration_ = batch.constant_duration;
  std::vector<uint32_t> keep;
  bool dropped = false;
  if (duration_->IsZero()) return;  // ghosts ⟨v, t, t⟩ are in I(t) and D(t): no output
  if (duration_->infinite) {
    // Nothing ever ends, so nothing can cancel a start: the relation's rows are the stream.
    EmitStream(batch, keep, dropped, out);
    return;
  }
  const uint64_t seq = next_seq_++;
  // Rows of this batch may end inside it ([Range 1] over consecutive ticks), so the batch is
  // retained before its rows are looked at.
  retained_.push_back({seq, batch});

  const bool fast = PushDistinctTicks(batch, keep, dropped);
  for (int64_t k = fast ? n : 0; k < n; ++k) {
    const uint32_t p = static_cast<uint32_t>(batch.Physical(k));
    const Time t = batch.StartAt(p);
    if (t != current_) BeginInstant(t);
    bool emit = true;
    for (size_t x = 0; x < ending_now_.size(); ++x) {
      if (consumed_[x]) continue;
      const RowRef& r = ending_now_[x];
      if (equal_(BatchOf(r.seq).columns, r.row, batch.columns, p)) {
        consumed_[x] = 1;
        emit = false;
        break;
      }
    }
    if (!emit && !dropped) {
      dropped = true;
      keep.reserve(n);
      for (int64_t j = 0; j < k; ++j) keep.push_back(static_cast<uint32_t>(batch.Physical(j)));
    } else if (emit && dropped) {
      keep.push_back(p);
    }
  }
  EmitStream(batch, keep, dropped, out);
}

template <Difference kSide>
void StreamDifference<kSide>::PushEnds(int, const EndBatch& ends, Emitter&) {
  EnterBatch();
  if (UsesInstants()) instants_.batch().PushEnds(ends);
}

template <Difference kSide>
void StreamDifference<kSide>::EnterBatch() {
  if (!instants_.in_rows() && !general_) return;  // (the common case: one test)
  InstantTracker& t = instants_.batch();          // (rows the row form kept move into batches)
  general_ = constant_ && t.retained_rows() > 0;
}

template <Difference kSide>
void StreamDifference<kSide>::MoveRetainedToRows() {
  // Every retained row has started, and its instant is decided: it goes over as a started tuple with
  // its end, but for those that ended before the instant in progress, and those whose end at it
  // cancelled a start already.
  RowTracker& t = instants_.rows();
  std::vector<std::pair<uint64_t, uint32_t>> consumed;
  for (size_t x = 0; x < ending_now_.size(); ++x)
    if (consumed_[x]) consumed.emplace_back(ending_now_[x].seq, ending_now_[x].row);
  std::sort(consumed.begin(), consumed.end());
  int64_t k = cursor_;
  for (size_t i = 0; i < retained_.size(); ++i, k = 0) {
    const Batch& b = retained_[i].batch;
    for (const int64_t n = b.num_rows(); k < n; ++k) {
      const int64_t p = b.Physical(k);
      const Time end = b.StartAt(p) + *duration_;
      if (end < current_) continue;
      if (end == current_ &&
          std::binary_search(consumed.begin(), consumed.end(), std::pair{retained_[i].seq, static_cast<uint32_t>(p)}))
        continue;
      WithRow(b, p, [&](const Row& row) {
        Row x = row;
        x.other = end;
        x.holder = kNoHolder;
        t.Adopt(x);
      });
    }
  }
  retained_.clear();
  cursor_ = 0;
  current_ = Time::MinusInfinity();
  ending_now_.clear();
  consumed_.clear();
  general_ = false;
}

template <Difference kSide>
void StreamDifference<kSide>::EmitStream(const Batch& batch, const std::vector<uint32_t>& keep, bool dropped,
                                         Emitter& out) {
  Batch o = batch;
  o.kind = BatchKind::kStream;
  o.other = {};
  o.constant_duration.reset();
  if (dropped) {
    if (keep.empty()) return;
    o.has_selection = true;
    o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
    std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
    o.selection_count = static_cast<int64_t>(keep.size());
  }
  out.Emit(std::move(o));
}

template <Difference kSide>
Time StreamDifference<kSide>::next_firing(int64_t) const {
  // The constant-duration strategy decides each instant as its rows arrive: the one state is empty
  // while it runs.
  return instants_.next_instant();
}

template <Difference kSide>
void StreamDifference<kSide>::AdvanceTo(Time progress, Emitter& out) {
  EnterBatch();
  if (UsesInstants()) {
    // I(t) − D(t) (D(t) − I(t)) as bags, for every instant completed by `progress`.
    InstantTracker& t = instants_.batch();
    t.Collect(progress, changes_);
    rows_.clear();
    times_.clear();
    t.AppendBagDifferences(changes_, /*starts_minus_ends=*/kIStream, rows_, times_);
    if (!rows_.empty()) out.Emit(t.Gather(rows_, times_, out_schema_));
    return;
  }
  // No start below `progress` can come any more, so rows ending below it can cancel nothing.
  if (current_ < progress && duration_ && !duration_->infinite) {
    ending_now_.clear();
    consumed_.clear();
    ExpireConstant(progress);
    ending_now_.clear();  // rows ending exactly at `progress` stay: a start may still come there
    current_ = Time::MinusInfinity();
  }
}

// The row form: a driver over the one state (constant durations are known ends that come in
// order, a FIFO); each complete instant emits I(t) − D(t) (D(t) − I(t)).
template <Difference kSide>
class StreamDifference<kSide>::Rows final : public RowOperator {
 public:
  explicit Rows(StreamDifference* op) : op_(op) {}
  void Push(int, const Row& row, RowEmitter&) override {
    op_->EnterRows();
    op_->instants_.rows().Push(row);
  }
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override {
    op_->EnterRows();
    op_->instants_.rows().PushEnd(id, end);
  }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    op_->EnterRows();
    RowTracker& t = op_->instants_.rows();
    if (depth_ == 0) t.Collect();
    rows_.clear();
    runs_.clear();
    t.AdvanceTo(progress, [&](Time at, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
      if constexpr (kIStream) t.AppendBagDifference(starts, ends, rows_);
      else t.AppendBagDifference(ends, starts, rows_);
      if (runs_.empty() || runs_.back().end != rows_.size()) runs_.push_back({rows_.size(), at});
    });
    // Emitted once the tracker is done: a loop may bring rows back into it. The rows stay in the
    // store until the next Collect, which waits while any is on its way.
    ++depth_;
    size_t k = 0;
    for (const Run& run : runs_) {
      Row r;
      r.sync = run.t;
      for (; k < run.end; ++k) {
        r.values = t.values(rows_[k]);
        out.Emit(r);
      }
    }
    --depth_;
  }
  bool advances_when_due() const override { return true; }
  Time next_firing(int64_t) const override { return op_->instants_.next_instant(); }
  // (Snapshot and Restore: nothing of its own. The state is the operator's, which writes it.)

 private:
  struct Run {  // rows_[.. end) not in an earlier run are the output at t
    size_t end;
    Time t;
  };
  StreamDifference* op_;
  std::vector<uint32_t> rows_;
  std::vector<Run> runs_;
  int depth_ = 0;
};

template <Difference kSide>
std::unique_ptr<RowOperator> StreamDifference<kSide>::ToRows() {
  return std::make_unique<Rows>(this);
}

template <Difference kSide>
std::string StreamDifference<kSide>::Explain() const {
  if (!kIStream) return "DStream";
  return constant_ ? "IStream (constant durations: FIFO cursor)" : "IStream (complete instants, expiration set)";
}

void RegisterIStream(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "istream",
              .description = "ISTREAM",
              .output = D::Output::kStream,
              .partition = D::Partition::kOnWholeRows,
              .tracks_lifetimes = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "istream takes one input");
               CQ_CHECK(in[0].kind == BatchKind::kLifetime, "ISTREAM's input must be a relation");
               const bool constant = PlannedConstant(s.params) && !ctx.negative;
               return std::make_unique<IStream>(*in[0].schema, constant, ctx.negative,
                                                constant ? ExpirationPolicy::kFifo : PlannedPolicy(s.params));
             });
}

void RegisterDStream(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "dstream",
              .description = "DSTREAM",
              .output = D::Output::kStream,
              .partition = D::Partition::kOnWholeRows,
              .tracks_lifetimes = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "DSTREAM reads one relation");
               return std::make_unique<DStream>(*in[0].schema, false, ctx.negative, PlannedPolicy(s.params));
             });
}

// The constant strategy's retained batches, expiry cursor and duration seen; the one state (empty
// while the constant strategy runs, but for rows the row form left); the constant strategy's
// instant in progress and its bag of ending rows (a later push may carry more rows of that instant).
template <Difference kSide>
void StreamDifference<kSide>::Snapshot(SnapshotWriter& w) const {
  w.U64(next_seq_);
  WriteNumberedBatches(w, retained_);
  w.OptDur(duration_);
  w.I64(cursor_);
  instants_.Snapshot(w);
  w.Pod(current_);
  w.PodVec(ending_now_);
  w.PodVec(consumed_);
}

template <Difference kSide>
void StreamDifference<kSide>::Restore(SnapshotReader& r) {
  next_seq_ = r.U64();
  ReadNumberedBatches(r, schema_, BatchKind::kLifetime, next_seq_, false, retained_, "an ISTREAM's retained batches");
  duration_ = r.OptDur();
  cursor_ = r.I64();
  instants_.Restore(r);
  // Rows the one state holds under the constant strategy came from the row form: the general
  // strategy runs until they are gone, as after a switch (EnterBatch).
  general_ = constant_ && instants_.kept_rows() > 0;
  r.CheckToCome(instants_.next_instant(), kIStream ? "ISTREAM's next instant" : "DSTREAM's next instant");
  CQ_SNAPSHOT_CHECK(retained_.empty() || (constant_ && !general_ && instants_.kept_rows() == 0),
                    "an ISTREAM keeps rows in two strategies");
  // (Not bounded by the progress: a sliding window's tuples start at the next slide boundary.)
  current_ = r.TimeValue("an ISTREAM's instant");
  r.PodVec(ending_now_);
  r.PodVec(consumed_, "an ISTREAM's cancelled ends", [](uint8_t c) { return c <= 1; });
  bool ok = (retained_.empty() || retained_.back().seq + 1 == next_seq_) && cursor_ >= 0 &&
            (retained_.empty() ? cursor_ == 0 : cursor_ <= retained_.front().batch.num_rows()) &&
            consumed_.size() == ending_now_.size() && (retained_.empty() || duration_);
  for (const RowRef& x : ending_now_)
    ok &= !retained_.empty() && x.seq >= retained_.front().seq && x.seq - retained_.front().seq < retained_.size() &&
          x.row < static_cast<uint64_t>(retained_[x.seq - retained_.front().seq].batch.length);
  CQ_SNAPSHOT_CHECK(ok, "an ISTREAM's cursor or ending rows are out of range");
}
template class StreamDifference<Difference::kStarts>;
template class StreamDifference<Difference::kEnds>;

}  // namespace cq
