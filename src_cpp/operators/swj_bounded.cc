#include "operators/swj_bounded.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"

namespace cq {

const char* SwjOutcomeName(SwjOutcome o) {
  switch (o) {
    case SwjOutcome::kProcessed: return "processed";
    case SwjOutcome::kPartly: return "partly";
    case SwjOutcome::kGivenUp: return "given up";
    case SwjOutcome::kEvicted: return "evicted";
  }
  return "?";
}

SwjBounded::SwjBounded(const Schema& left, const Schema& right, JoinExpressions expressions,
                       std::vector<int64_t> windows, SwjBoundedOptions options)
    : expr_(std::move(expressions)), windows_(std::move(windows)), options_(options),
      scheduler_(windows_, options.scheduler) {
  swj::CheckBuffer(options_.buffer);
  CQ_CHECK(options_.period > 0 && std::isfinite(options_.period) && options_.tick_ns > 0,
           "a bounded shared join's period and tick are above 0");
  Schema s = left;
  s.insert(s.end(), right.begin(), right.end());
  s.push_back({"slice", TypeId::kInt64});
  s.push_back({"upto", TypeId::kInt64});
  schema_ = std::make_shared<const Schema>(std::move(s));
  input_[0] = left;
  input_[1] = right;
  width_[0] = left.size();
  width_[1] = right.size();
  CQ_CHECK(expr_.keys[0].size() == expr_.keys[1].size(), "join keys differ in number");
  processed_.assign(n(), 0);
  dropped_.assign(n(), 0);
}

void SwjBounded::Push(int port, const Batch& in, Emitter&) {
  const int64_t rows = in.num_rows();
  if (rows == 0) return;
  const Duration wn = Duration::Ticks(windows_.back());
  Batch b = in.Compact();
  // A planner bug otherwise: the slices assume every input tuple lives exactly wn. Checked before
  // anything is kept.
  bool ok = b.holders.empty();
  for (int64_t i = 0; i < rows && ok; ++i) ok = b.EndAt(i) == b.StartAt(i) + wn;
  CQ_CHECK(ok, "a shared window join's input " + std::to_string(port) + " is not a [Range " +
                   std::to_string(windows_.back()) + "] window");
  std::vector<Column> keys;
  for (const auto& k : expr_.keys[port]) keys.push_back(k->Evaluate(b));
  SideState& s = sides_[port];
  const uint32_t number = s.next_batch++;
  for (int64_t i = 0; i < rows; ++i) {
    Arrival a{number, static_cast<uint32_t>(i), b.StartAt(i), true, {}};
    for (const Column& c : keys) {
      // NULL joins nothing, as in the hash join.
      if (!c.IsValid(i)) a.has_key = false;
      if (a.has_key) AppendKey(c, i, &a.key);
    }
    if (!a.has_key) a.key.clear();
    s.queue.push_back(std::move(a));
  }
  s.batches[number] = {std::move(b), rows};
}

const SwjBounded::Arrival* SwjBounded::NextArrival(Time progress, int* side) const {
  const Arrival* best = nullptr;
  for (int p = 0; p < 2; ++p) {
    const SideState& s = sides_[p];
    if (s.queue.empty()) continue;
    const Arrival& a = s.queue.front();
    // Below progress only (nothing earlier can come any more); the left first at equal times.
    if (!(a.t < progress)) continue;
    if (!best || a.t < best->t) {
      best = &a;
      *side = p;
    }
  }
  return best;
}

void SwjBounded::Release(int side, uint32_t batch) {
  Kept& k = sides_[side].batches.at(batch);
  if (--k.refs == 0) retired_.push_back({side, batch});
}

void SwjBounded::TakeIn(int side) {
  SideState& s = sides_[side];
  SideState& o = sides_[1 - side];
  Arrival a = std::move(s.queue.front());
  s.queue.pop_front();
  if (static_cast<int64_t>(s.buffer.size()) >= options_.buffer) Evict(side);
  Tuple x;
  x.id = scheduler_.Arrive(side == 0 ? swj::Side::kLeft : swj::Side::kRight, a.t.tick);
  x.seq = s.first_seq + s.buffer.size();
  x.t = a.t;
  x.batch = a.batch;
  x.row = a.row;
  x.has_key = a.has_key;
  x.key = std::move(a.key);
  x.pred = o.arrivals;
  x.t_pred = o.last_arrival;
  where_.emplace(x.id, std::make_pair(side, x.seq));
  s.buffer.push_back(std::move(x));
  ++s.arrivals;
  s.last_arrival = a.t;
  ++taken_;
}

void SwjBounded::Count(std::vector<int64_t>& counter, int from, int to) const {
  for (int q = from + 1; q <= to; ++q) ++counter[q - 1];
}

void SwjBounded::Evict(int side) {
  SideState& s = sides_[side];
  Tuple& v = s.buffer.front();
  const int level = scheduler_.Evict(v.id);
  if (level < n()) {
    Count(dropped_, level, n());
    if (options_.trace)
      jobs_.push_back({v.id, static_cast<uint8_t>(side), v.t.tick, level, n(), SwjOutcome::kEvicted, clock_});
  }
  Release(side, v.batch);
  s.last_evicted = v.t;
  where_.erase(v.id);
  s.buffer.pop_front();
  ++s.first_seq;
  ++evicted_;
}

int SwjBounded::Cap(int side, const Tuple& x) const {
  const SideState& o = sides_[1 - side];
  if (x.pred == 0 || o.first_seq == 0) return n();
  // The latest tuple of the other side that came before x and has left: x's last predecessor if
  // that one has left, else the last tuple evicted (evictions go oldest first).
  const Time gone = o.first_seq >= x.pred ? x.t_pred : o.last_evicted;
  const int64_t d = x.t.tick - gone.tick;
  // Queries whose window reaches back to it (w_i > d) lost a partner.
  return static_cast<int>(std::upper_bound(windows_.begin(), windows_.end(), d) - windows_.begin());
}

void SwjBounded::RunJob(const swj::Job& job) {
  // Only the wall clock reads the time (a call per job otherwise wasted).
  const bool wall = options_.clock == swj::Clock::kWall;
  const auto started = wall ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const auto [side, seq] = where_.at(job.tuple);
  SideState& s = sides_[side];
  SideState& o = sides_[1 - side];
  Tuple& x = s.buffer[seq - s.first_seq];
  const int cap = Cap(side, x);
  int64_t scanned = 0, emitted = 0;
  SwjOutcome outcome;
  int hi = std::min(job.to, cap);
  if (cap <= job.from) {
    scheduler_.Done(job.tuple, n(), false);
    Count(dropped_, job.from, n());
    x.found.clear();
    outcome = SwjOutcome::kGivenUp;
    hi = job.from;
  } else {
    // Partners that arrived before x, with t_x − t_y in [w_from, w_hi): the slices from+1..hi.
    // The paper's server scans those slices tuple by tuple (the MQT matrix prices a job by the
    // window span it covers), so this one does too: every buffered tuple of the slices is looked
    // at and counted, whatever its key.
    std::vector<std::pair<uint64_t, int32_t>> fresh;
    // Buffered tuples of the other side that came before x: seqs [first_seq, x.pred), times rising.
    const uint64_t before = std::max(o.first_seq, std::min<uint64_t>(x.pred, o.first_seq + o.buffer.size()));
    const auto begin = o.buffer.begin();
    const auto end = begin + static_cast<std::ptrdiff_t>(before - o.first_seq);
    const auto first = std::partition_point(begin, end, [&](const Tuple& y) { return x.t.tick - y.t.tick >= W(hi); });
    const auto last = job.from == 0 ? end : std::partition_point(first, end, [&](const Tuple& y) {
      return x.t.tick - y.t.tick >= W(job.from);
    });
    scanned = last - first;
    if (x.has_key) {
      for (auto y = first; y != last; ++y) {
        if (!y->has_key || y->key != x.key) continue;
        const int64_t d = x.t.tick - y->t.tick;
        const int32_t slice =
            static_cast<int32_t>(std::upper_bound(windows_.begin(), windows_.end(), d) - windows_.begin()) + 1;
        fresh.push_back({y->seq, slice});
      }
    }
    auto emit = [&](uint64_t partner, int64_t lo) {
      const Tuple& y = o.buffer[partner - o.first_seq];
      Out r;
      r.batch[side] = x.batch;
      r.row[side] = x.row;
      r.batch[1 - side] = y.batch;
      r.row[1 - side] = y.row;
      r.start = x.t;
      r.end = y.t + Duration::Ticks(windows_.back());
      r.lo = lo;
      r.hi = hi;
      out_.push_back(r);
      ++emitted;
    };
    for (const auto& [partner, slice] : x.found) emit(partner, job.from + 1);
    for (const auto& [partner, slice] : fresh) emit(partner, slice);
    scheduler_.Done(job.tuple, hi);
    Count(processed_, job.from, hi);
    if (hi < n()) x.found.insert(x.found.end(), fresh.begin(), fresh.end());
    outcome = SwjOutcome::kProcessed;
    if (hi < job.to) {
      scheduler_.Done(job.tuple, n(), false);
      Count(dropped_, hi, n());
      outcome = SwjOutcome::kPartly;
    }
    if (scheduler_.View(job.tuple).level == n()) x.found.clear();
  }
  ++jobs_run_;
  scanned_ += scanned;
  emitted_ += emitted;
  const double ns =
      wall ? std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count()
           : kSwjJobNs + kSwjScanNs * static_cast<double>(scanned) + kSwjPairNs * static_cast<double>(emitted);
  clock_ += ns / options_.tick_ns;
  busy_ += ns / options_.tick_ns;
  if (options_.trace)
    jobs_.push_back({job.tuple, static_cast<uint8_t>(side), x.t.tick, job.from,
                     outcome == SwjOutcome::kGivenUp ? n() : hi, outcome, clock_});
}

void SwjBounded::ClosePeriods(double upto) {
  while (started_ && next_end_ <= upto) {
    periods_.push_back(scheduler_.EndPeriod(next_end_));
    next_end_ += options_.period;
    // A long quiet spell: one record says nothing arrived; the next period is the one holding
    // `upto` (a period without arrivals changes nothing, so the skipped ones would add nothing).
    if (next_end_ <= upto && scheduler_.arrivals_this_period() == 0)
      next_end_ += std::floor((upto - next_end_) / options_.period) * options_.period;
  }
}

void SwjBounded::AdvanceTo(Time progress, Emitter& out) {
  const double far =
      progress.IsInfinite() ? std::numeric_limits<double>::infinity() : static_cast<double>(progress.tick);
  for (;;) {
    int side = 0;
    const Arrival* a = NextArrival(progress, &side);
    const double horizon = a ? static_cast<double>(a->t.tick) : far;
    while (clock_ < horizon) {
      ClosePeriods(clock_);
      const std::optional<swj::Job> job = scheduler_.Next();
      if (!job) break;
      RunJob(*job);
    }
    if (!a) break;
    const double t = static_cast<double>(a->t.tick);
    if (!started_) {
      started_ = true;
      next_end_ = (std::floor(t / options_.period) + 1) * options_.period;
    }
    clock_ = std::max(clock_, t);
    ClosePeriods(clock_);
    TakeIn(side);
  }
  Flush(out);
}

void SwjBounded::Flush(Emitter& out) {
  if (!out_.empty()) {
    const int64_t n = static_cast<int64_t>(out_.size());
    Batch o;
    o.kind = BatchKind::kLifetime;
    o.schema = schema_;
    o.length = n;
    for (int side = 0; side < 2; ++side) {
      std::vector<BatchRow> rows(out_.size());
      for (size_t i = 0; i < out_.size(); ++i) rows[i] = {out_[i].batch[side], out_[i].row[side]};
      const SideState& s = sides_[side];
      auto cols = GatherRows([&](uint32_t b) -> const Batch& { return s.batches.at(b).batch; }, rows, width_[side]);
      for (Column& c : cols) o.columns.push_back(std::move(c));
    }
    for (int tag = 0; tag < 2; ++tag) {
      Column c;
      c.type = TypeId::kInt64;
      c.length = n;
      c.values = Buffer::Allocate(n * 8);
      for (int64_t i = 0; i < n; ++i) c.values.as<int64_t>()[i] = tag == 0 ? out_[i].lo : out_[i].hi;
      o.columns.push_back(std::move(c));
    }
    std::vector<Time> starts(out_.size()), ends(out_.size());
    for (size_t i = 0; i < out_.size(); ++i) {
      starts[i] = out_[i].start;
      ends[i] = out_[i].end;
    }
    o.sync = MakeTimeColumn(starts);
    o.other = MakeTimeColumn(ends);
    out_.clear();
    std::vector<uint32_t> keep;
    if (expr_.residual) {
      Column pred = expr_.residual->Evaluate(o);
      for (int64_t i = 0; i < n; ++i)
        if (pred.IsValid(i) && pred.BoolAt(i)) keep.push_back(static_cast<uint32_t>(i));
      if (static_cast<int64_t>(keep.size()) != n) {
        o.has_selection = true;
        o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
        std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
        o.selection_count = static_cast<int64_t>(keep.size());
      }
    }
    if (o.num_rows() > 0) out.Emit(o.Compact());
  }
  for (auto [side, b] : retired_) {
    auto it = sides_[side].batches.find(b);
    if (it != sides_[side].batches.end() && it->second.refs == 0) sides_[side].batches.erase(it);
  }
  retired_.clear();
}

Time SwjBounded::OutputProgress(Time progress) const {
  if (progress == Time::MinusInfinity()) return progress;
  Time hold = progress;
  // Rows of a tuple start at its time: those with work left (or not taken in yet) may still come.
  if (auto t = scheduler_.OldestPending()) hold = std::min(hold, Time{*t, 0});
  for (const SideState& s : sides_)
    if (!s.queue.empty()) hold = std::min(hold, s.queue.front().t);
  return hold;
}

std::string SwjBounded::Explain() const {
  std::string w;
  for (int64_t x : windows_) w += (w.empty() ? "" : ", ") + std::to_string(x);
  return "SharedWindowJoin windows [" + w + "] bounded " + std::to_string(options_.buffer) + " per side, " +
         swj::PolicyName(options_.scheduler.policy) + ", clock " + swj::ClockName(options_.clock);
}

// ---- snapshots -----------------------------------------------------------------------------
//
// The scheduler's section, the clock, the counters, the trace, then per side its kept batches
// (by number), the arrivals not taken in, and the buffer (by seq). The key index and the id map
// are rebuilt from the buffer. Taken between calls, when no output is waiting (Flush ran).

void SwjBounded::WriteSide(SnapshotWriter& w, const SideState& s) const {
  w.U32(s.next_batch);
  std::vector<uint32_t> numbers;
  for (const auto& [number, kept] : s.batches) numbers.push_back(number);
  std::sort(numbers.begin(), numbers.end());
  w.U64(numbers.size());
  for (uint32_t number : numbers) {
    const Kept& k = s.batches.at(number);
    w.U32(number);
    w.I64(k.refs);
    w.WriteBatch(k.batch);
  }
  w.U64(s.queue.size());
  for (const Arrival& a : s.queue) {
    w.U32(a.batch);
    w.U32(a.row);
    w.Pod(a.t);
    w.Bool(a.has_key);
    w.Str(a.key);
  }
  w.U64(s.first_seq);
  w.U64(s.arrivals);
  w.Pod(s.last_arrival);
  w.Pod(s.last_evicted);
  w.U64(s.buffer.size());
  for (const Tuple& x : s.buffer) {
    w.U64(x.id);
    w.Pod(x.t);
    w.U32(x.batch);
    w.U32(x.row);
    w.Bool(x.has_key);
    w.Str(x.key);
    w.U64(x.pred);
    w.Pod(x.t_pred);
    w.U64(x.found.size());
    for (const auto& [partner, slice] : x.found) {
      w.U64(partner);
      w.I64(slice);
    }
  }
}

void SwjBounded::Snapshot(SnapshotWriter& w) const {
  CQ_CHECK(out_.empty() && retired_.empty(), "a bounded shared join snapshotted inside a call");
  scheduler_.Write(w);
  w.Pod(clock_);
  w.Bool(started_);
  w.Pod(next_end_);
  w.I64(taken_);
  w.I64(evicted_);
  w.PodVec(processed_);
  w.PodVec(dropped_);
  w.I64(jobs_run_);
  w.I64(scanned_);
  w.I64(emitted_);
  w.Pod(busy_);
  w.U64(periods_.size());
  for (const swj::PeriodRecord& p : periods_) {
    for (double v : {p.time, p.load, p.alpha, p.beta, p.beta_now, p.beta_next, p.rate_next}) w.Pod(v);
    w.I64(p.rate);
    w.Bool(p.high);
    w.U8(static_cast<uint8_t>(p.method));
    w.U8(p.case_no);
    w.Bool(p.open);
  }
  w.U64(jobs_.size());
  for (const JobRecord& j : jobs_) {
    w.U64(j.tuple);
    w.U8(j.side);
    w.I64(j.ts);
    w.I64(j.from);
    w.I64(j.to);
    w.U8(static_cast<uint8_t>(j.outcome));
    w.Pod(j.clock);
  }
  for (const SideState& s : sides_) WriteSide(w, s);
}

void SwjBounded::ReadSide(SnapshotReader& r, int side, SideState& s) const {
  s.next_batch = r.U32();
  const size_t batches = r.Count(4 + 8, "a bounded shared join's kept batches");
  for (size_t i = 0; i < batches; ++i) {
    const uint32_t number = r.Below<uint32_t>(s.next_batch, "a kept batch's number");
    Kept k;
    k.refs = r.I64In(1, INT64_MAX, "a kept batch's tuples");
    k.batch = r.ReadBatch(&input_[side]);
    CQ_SNAPSHOT_CHECK(!k.batch.has_selection && k.batch.holders.empty(), "a kept batch: expected compact rows");
    CQ_SNAPSHOT_CHECK(s.batches.emplace(number, std::move(k)).second, "a kept batch twice");
  }
  std::unordered_map<uint32_t, int64_t> refs;
  const auto row_of = [&](uint32_t batch, uint32_t row) {
    auto it = s.batches.find(batch);
    CQ_SNAPSHOT_CHECK(it != s.batches.end() && row < it->second.batch.length,
                      "a bounded shared join's tuple: expected a row of a kept batch");
    ++refs[batch];
  };
  const size_t queued = r.Count(4 + 4 + 16 + 1 + 8, "a bounded shared join's arrivals");
  Time last = Time::MinusInfinity();
  for (size_t i = 0; i < queued; ++i) {
    Arrival a;
    a.batch = r.U32();
    a.row = r.U32();
    row_of(a.batch, a.row);
    a.t = r.TimeValue("an arrival's time");
    CQ_SNAPSHOT_CHECK(last <= a.t, "a bounded shared join's arrivals: expected in time order");
    last = a.t;
    a.has_key = r.Bool();
    a.key = r.Str();
    s.queue.push_back(std::move(a));
  }
  s.first_seq = r.U64();
  s.arrivals = r.U64();
  s.last_arrival = r.TimeValue("the last arrival's time");
  s.last_evicted = r.TimeValue("the last eviction's time");
  const size_t buffered = r.Count(8 + 16 + 4 + 4 + 1 + 8 + 8 + 16 + 8, "a bounded shared join's buffer");
  CQ_SNAPSHOT_CHECK(static_cast<int64_t>(buffered) <= options_.buffer && s.first_seq + buffered == s.arrivals,
                    "a bounded shared join's buffer: expected at most B tuples, the side's latest arrivals");
  for (size_t i = 0; i < buffered; ++i) {
    Tuple x;
    x.id = r.U64();
    x.seq = s.first_seq + i;
    x.t = r.TimeValue("a buffered tuple's time");
    x.batch = r.U32();
    x.row = r.U32();
    row_of(x.batch, x.row);
    x.has_key = r.Bool();
    x.key = r.Str();
    x.pred = r.U64();
    x.t_pred = r.TimeValue("a buffered tuple's predecessor's time");
    const size_t found = r.Count(16, "a buffered tuple's partners");
    for (size_t f = 0; f < found; ++f) {
      const uint64_t partner = r.U64();
      const int64_t slice = r.I64In(1, n(), "a partner's slice");
      CQ_SNAPSHOT_CHECK(partner < x.pred, "a partner: expected one that arrived before its tuple");
      x.found.push_back({partner, static_cast<int32_t>(slice)});
    }
    CQ_SNAPSHOT_CHECK(s.buffer.empty() || s.buffer.back().t <= x.t,
                      "a bounded shared join's buffer: expected in time order");
    s.buffer.push_back(std::move(x));
  }
  for (const auto& [number, k] : s.batches)
    CQ_SNAPSHOT_CHECK(refs[number] == k.refs, "a kept batch's tuples: expected the count of those that refer to it");
}

void SwjBounded::Restore(SnapshotReader& r) {
  swj::SwjScheduler scheduler(windows_, options_.scheduler);
  scheduler.Read(r);
  const double clock = r.Pod<double>();
  const bool started = r.Bool();
  const double next_end = r.Pod<double>();
  CQ_SNAPSHOT_CHECK(std::isfinite(clock) && std::isfinite(next_end), "a bounded shared join's clock");
  const int64_t taken = r.I64In(0, INT64_MAX, "a bounded shared join's arrivals");
  const int64_t evicted = r.I64In(0, taken, "a bounded shared join's evictions");
  std::vector<int64_t> processed, dropped;
  r.PodVec(processed, "the processed counters");
  r.PodVec(dropped, "the dropped counters");
  CQ_SNAPSHOT_CHECK(processed.size() == windows_.size() && dropped.size() == windows_.size(),
                    "a bounded shared join's counters: expected one per query");
  for (int q = 0; q < n(); ++q)
    CQ_SNAPSHOT_CHECK(processed[q] >= 0 && dropped[q] >= 0 && processed[q] + dropped[q] <= taken,
                      "a bounded shared join's counters: expected at most the arrivals");
  const int64_t jobs_run = r.I64In(0, INT64_MAX, "a bounded shared join's jobs run");
  const int64_t scanned = r.I64In(0, INT64_MAX, "a bounded shared join's scanned tuples");
  const int64_t emitted = r.I64In(0, INT64_MAX, "a bounded shared join's emitted pairs");
  const double busy = r.Pod<double>();
  CQ_SNAPSHOT_CHECK(std::isfinite(busy) && busy >= 0, "a bounded shared join's busy time");
  std::vector<swj::PeriodRecord> periods(r.Count(7 * 8 + 8 + 4, "the periods"));
  for (swj::PeriodRecord& p : periods) {
    for (double* v : {&p.time, &p.load, &p.alpha, &p.beta, &p.beta_now, &p.beta_next, &p.rate_next})
      *v = r.Pod<double>();
    p.rate = r.I64In(0, INT64_MAX, "a period's rate");
    p.high = r.Bool();
    p.method = r.Enum(swj::Method::kFifo, "a period's method");
    p.case_no = static_cast<uint8_t>(r.Below<uint8_t>(9, "a period's case"));
    p.open = r.Bool();
  }
  std::vector<JobRecord> jobs(r.Count(8 + 1 + 8 + 8 + 8 + 1 + 8, "the jobs"));
  for (JobRecord& j : jobs) {
    j.tuple = r.U64();
    j.side = r.Below<uint8_t>(2, "a job's side");
    j.ts = r.I64();
    j.from = static_cast<int32_t>(r.I64In(0, n(), "a job's first query"));
    j.to = static_cast<int32_t>(r.I64In(0, n(), "a job's last query"));
    j.outcome = r.Enum(SwjOutcome::kEvicted, "a job's outcome");
    j.clock = r.Pod<double>();
  }
  SideState sides[2];
  for (int side = 0; side < 2; ++side) ReadSide(r, side, sides[side]);
  // Every buffered tuple is the scheduler's, on its side at its time, and nothing else is.
  std::unordered_map<uint64_t, std::pair<int, uint64_t>> where;
  for (int side = 0; side < 2; ++side) {
    CQ_SNAPSHOT_CHECK(scheduler.buffered(side == 0 ? swj::Side::kLeft : swj::Side::kRight) == sides[side].buffer.size(),
                      "a bounded shared join's buffer: expected the scheduler's tuples");
    for (const Tuple& x : sides[side].buffer) {
      bool ok = false;
      try {
        const auto v = scheduler.View(x.id);
        ok = v.side == (side == 0 ? swj::Side::kLeft : swj::Side::kRight) && v.time == x.t.tick;
      } catch (const CqError&) {
      }
      CQ_SNAPSHOT_CHECK(ok && where.emplace(x.id, std::make_pair(side, x.seq)).second,
                        "a buffered tuple: expected one the scheduler holds, on its side at its time");
    }
  }
  CQ_SNAPSHOT_CHECK(static_cast<int64_t>(sides[0].arrivals + sides[1].arrivals) == taken &&
                        static_cast<int64_t>(sides[0].first_seq + sides[1].first_seq) == evicted,
                    "a bounded shared join's arrivals: expected the sides' counts");
  // All read and checked: take it.
  scheduler_ = std::move(scheduler);
  clock_ = clock;
  started_ = started;
  next_end_ = next_end;
  taken_ = taken;
  evicted_ = evicted;
  processed_ = std::move(processed);
  dropped_ = std::move(dropped);
  jobs_run_ = jobs_run;
  scanned_ = scanned;
  emitted_ = emitted;
  busy_ = busy;
  periods_ = std::move(periods);
  jobs_ = std::move(jobs);
  where_ = std::move(where);
  for (int side = 0; side < 2; ++side) sides_[side] = std::move(sides[side]);
}

namespace {

std::string JsonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <typename T, typename F>
std::string JsonArray(const std::vector<T>& v, F show) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + show(v[i]);
  return s + "]";
}

std::string JsonString(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

std::string SwjBounded::Report() const {
  // Pairs already lost but not yet given up: buffered tuples whose queries above their cap lost
  // a partner (the job would give them up; they are dropped now, by the definition).
  std::vector<int64_t> dropped = dropped_;
  for (int side = 0; side < 2; ++side)
    for (const Tuple& x : sides_[side].buffer) {
      const int level = scheduler_.View(x.id).level;
      if (level < n()) Count(dropped, std::max(level, Cap(side, x)), n());
    }
  std::vector<int64_t> pending(n());
  for (int q = 0; q < n(); ++q) pending[q] = taken_ - processed_[q] - dropped[q];
  const auto i64 = [](int64_t v) { return std::to_string(v); };
  const auto num = [](double v) { return JsonNumber(v); };
  std::string s = "{";
  s += "\"windows\":" + JsonArray(windows_, i64);
  s += ",\"segments\":" + JsonString(scheduler_.matrix().SegmentsText());
  std::vector<double> weights;
  for (int q = 1; q <= n(); ++q) weights.push_back(scheduler_.matrix().Weight(q));
  s += ",\"weights\":" + JsonArray(weights, num);
  s += ",\"buffer\":" + i64(options_.buffer);
  s += ",\"scheduler\":" + JsonString(swj::PolicyName(options_.scheduler.policy));
  s += ",\"load\":" + JsonString(swj::LoadName(options_.scheduler.load));
  s += ",\"clock_kind\":" + JsonString(swj::ClockName(options_.clock));
  s += ",\"clock\":" + JsonNumber(clock_);
  s += ",\"method\":" + JsonString(swj::MethodName(scheduler_.method()));
  s += ",\"beta\":" + JsonNumber(scheduler_.state().beta);
  s += ",\"arrivals\":" + i64(taken_);
  s += ",\"evicted\":" + i64(evicted_);
  s += ",\"work\":{\"jobs\":" + i64(jobs_run_) + ",\"scanned\":" + i64(scanned_) + ",\"emitted\":" + i64(emitted_) +
       ",\"busy\":" + JsonNumber(busy_) + "}";
  s += ",\"buffered\":[" + i64(static_cast<int64_t>(sides_[0].buffer.size())) + "," +
       i64(static_cast<int64_t>(sides_[1].buffer.size())) + "]";
  s += ",\"processed\":" + JsonArray(processed_, i64);
  s += ",\"dropped\":" + JsonArray(dropped, i64);
  s += ",\"pending\":" + JsonArray(pending, i64);
  const auto col = [&](const char* name, auto get) {
    std::string c = std::string(",\"") + name + "\":[";
    for (size_t i = 0; i < periods_.size(); ++i) c += (i ? "," : "") + get(periods_[i]);
    return c + "]";
  };
  using P = swj::PeriodRecord;
  s += ",\"periods\":{\"_\":0";
  s += col("time", [](const P& p) { return JsonNumber(p.time); });
  s += col("rate", [](const P& p) { return std::to_string(p.rate); });
  s += col("S", [](const P& p) { return JsonNumber(p.load); });
  s += col("alpha", [](const P& p) { return JsonNumber(p.alpha); });
  s += col("beta", [](const P& p) { return JsonNumber(p.beta); });
  s += col("beta_now", [](const P& p) { return JsonNumber(p.beta_now); });
  s += col("beta_next", [](const P& p) { return JsonNumber(p.beta_next); });
  s += col("rate_next", [](const P& p) { return JsonNumber(p.rate_next); });
  s += col("high", [](const P& p) { return std::string(p.high ? "true" : "false"); });
  s += col("method", [](const P& p) { return JsonString(swj::MethodName(p.method)); });
  s += col("case", [](const P& p) { return std::to_string(p.case_no); });
  s += col("open", [](const P& p) { return std::string(p.open ? "true" : "false"); });
  s += "}";
  s += ",\"jobs\":{\"_\":0";
  const auto jcol = [&](const char* name, auto get) {
    std::string c = std::string(",\"") + name + "\":[";
    for (size_t i = 0; i < jobs_.size(); ++i) c += (i ? "," : "") + get(jobs_[i]);
    return c + "]";
  };
  s += jcol("tuple", [](const JobRecord& j) { return std::to_string(j.tuple); });
  s += jcol("side", [](const JobRecord& j) { return JsonString(j.side == 0 ? "left" : "right"); });
  s += jcol("ts", [](const JobRecord& j) { return std::to_string(j.ts); });
  s += jcol("from", [](const JobRecord& j) { return std::to_string(j.from); });
  s += jcol("to", [](const JobRecord& j) { return std::to_string(j.to); });
  s += jcol("outcome", [](const JobRecord& j) { return JsonString(SwjOutcomeName(j.outcome)); });
  s += jcol("clock", [](const JobRecord& j) { return JsonNumber(j.clock); });
  s += "}}";
  return s;
}

}  // namespace cq
