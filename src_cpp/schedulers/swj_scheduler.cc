#include "schedulers/swj_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/errors.h"

namespace cq::swj {

namespace {

[[noreturn]] void Bad(const std::string& what) { throw CqError(ErrorKind::kInput, what); }

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string Number(double v) {
  std::string s = std::to_string(v);
  // to_string writes six decimals: trim the zeros that add nothing.
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  return s;
}

template <typename E, size_t N>
E ParseName(std::string_view option, std::string_view name, const E (&values)[N], const char* (*show)(E)) {
  std::string accepted;
  for (E v : values) {
    if (name == show(v)) return v;
    accepted += (accepted.empty() ? "" : ", ") + Quoted(show(v));
  }
  Bad("Engine option " + std::string(option) + " must be one of " + accepted + "; found " + Quoted(name));
}

}  // namespace

const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kMqt: return "mqt";
    case Policy::kFifo: return "fifo";
    case Policy::kMandF: return "mandf";
    case Policy::kAdMandF: return "admandf";
  }
  return "?";
}
const char* LoadName(Load l) { return l == Load::kArrived ? "arrived" : "oldest"; }
const char* ClockName(Clock c) { return c == Clock::kWork ? "work" : "wall"; }
const char* MethodName(Method m) { return m == Method::kMqt ? "MQT" : "FIFO"; }

Policy ParsePolicy(std::string_view name) {
  static constexpr Policy kAll[] = {Policy::kMqt, Policy::kFifo, Policy::kMandF, Policy::kAdMandF};
  return ParseName("swj_scheduler", name, kAll, PolicyName);
}
Load ParseLoad(std::string_view name) {
  static constexpr Load kAll[] = {Load::kArrived, Load::kOldest};
  return ParseName("swj_load", name, kAll, LoadName);
}
Clock ParseClock(std::string_view name) {
  static constexpr Clock kAll[] = {Clock::kWork, Clock::kWall};
  return ParseName("swj_clock", name, kAll, ClockName);
}
void CheckBuffer(int64_t tuples) {
  if (tuples < 1) Bad("Engine option swj_buffer must be at least 1 (tuples per side); found " + std::to_string(tuples));
}
void CheckPeriod(double period) {
  if (!(period > 0) || !std::isfinite(period))
    Bad("Engine option swj_period_ms must be a finite number above 0; found " + Number(period));
}
void CheckBeta0(double beta0) {
  if (!(beta0 >= 0 && beta0 <= 1)) Bad("Engine option swj_beta0 must be in [0, 1]; found " + Number(beta0));
}

// ---- the MQT matrix ------------------------------------------------------------------------

MqtMatrix::MqtMatrix(std::vector<int64_t> windows) : windows_(std::move(windows)) {
  if (windows_.empty()) Bad("a shared window join needs at least one query; found none");
  for (size_t i = 0; i < windows_.size(); ++i) {
    if (windows_[i] < 1)
      Bad("a shared window join's windows must be at least 1 tick; query " + std::to_string(i + 1) + " has " +
          std::to_string(windows_[i]));
    if (i > 0 && windows_[i] < windows_[i - 1])
      Bad("a shared window join's windows must be in non-decreasing order; query " + std::to_string(i + 1) + " has " +
          std::to_string(windows_[i]) + " after " + std::to_string(windows_[i - 1]));
  }
  const int n = this->n();
  next_.assign(n, n);
  rate_.assign(n, 0);
  for (int j = 0; j < n; ++j) {
    int best = j + 1;
    for (int k = j + 2; k <= n; ++k)
      if (!Less(j, k, j, best)) best = k;  // ties: the larger k
    while (best < n && windows_[best] == windows_[best - 1]) ++best;
    next_[j] = best;
    rate_[j] = R(j, best);
  }
  weights_.assign(n, 0);
  for (int j = 0; j < n; j = next_[j]) {
    segments_.push_back({j, next_[j]});
    for (int q = j + 1; q <= next_[j]; ++q) weights_[q - 1] = rate_[j];
  }
  prefix_.assign(n + 1, 0);
  for (int q = 1; q <= n; ++q) prefix_[q] = prefix_[q - 1] + weights_[q - 1];
}

static int64_t W(const std::vector<int64_t>& w, int j) { return j == 0 ? 0 : w[j - 1]; }

double MqtMatrix::R(int j, int k) const {
  CQ_CHECK(0 <= j && j < k && k <= n(), "MQT matrix index out of range");
  const int64_t d = W(windows_, k) - W(windows_, j);
  return d == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(k - j) / static_cast<double>(d);
}

bool MqtMatrix::Less(int j, int k, int a, int b) const {
  // (k−j)/dk < (b−a)/db with d ≥ 0; a zero width is infinity (equal to another infinity).
  const __int128 dk = W(windows_, k) - W(windows_, j), db = W(windows_, b) - W(windows_, a);
  if (db == 0) return dk != 0;
  if (dk == 0) return false;
  return static_cast<__int128>(k - j) * db < static_cast<__int128>(b - a) * dk;
}

std::string MqtMatrix::SegmentsText() const {
  std::string s;
  for (auto [j, k] : segments_) {
    if (!s.empty()) s += ",";
    s += std::to_string(j + 1);
    if (k > j + 1) s += "-" + std::to_string(k);
  }
  return s;
}

// ---- a period's decision -------------------------------------------------------------------

bool PeriodRecord::operator==(const PeriodRecord& o) const {
  auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  return same(time, o.time) && rate == o.rate && same(load, o.load) && same(alpha, o.alpha) && same(beta, o.beta) &&
         same(beta_now, o.beta_now) && same(beta_next, o.beta_next) && same(rate_next, o.rate_next) && high == o.high &&
         method == o.method && case_no == o.case_no && open == o.open;
}

PeriodRecord Decide(Policy policy, AdaptiveState& st, double time, int64_t rate, double load, double sum_w) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PeriodRecord rec;
  rec.time = time;
  rec.rate = rate;
  rec.load = load;
  rec.alpha = rec.beta = rec.beta_now = rec.beta_next = rec.rate_next = nan;
  rec.method = st.method;
  const bool adaptive = policy == Policy::kMandF || policy == Policy::kAdMandF;
  // A ratio in [0, 1] by construction (each tuple's unprocessed weight is at most Σw); the clamp
  // only takes off rounding.
  if (rate > 0) rec.beta_now = std::clamp(load / (sum_w * static_cast<double>(rate)), 0.0, 1.0);
  if (!adaptive) return rec;
  rec.beta = st.beta;
  if (rate == 0) return rec;  // a period without arrivals changes nothing
  const double r = static_cast<double>(rate);
  rec.alpha = sum_w * st.beta * r;
  // Decide with the β in force.
  const Method decided = LoadReaches(load, rec.alpha) ? Method::kFifo : Method::kMqt;
  if (!st.seen_rate) {
    st.rate_prev = st.rate_mqt = st.rate_fifo = r;
    st.seen_rate = true;
  }
  if (decided != st.method) (decided == Method::kMqt ? st.rate_mqt : st.rate_fifo) = r;
  st.method = decided;
  rec.method = decided;
  if (policy == Policy::kMandF) return rec;

  // adMandF (§5.3): the trends of the load and of the rate, then β_update by the eight cases.
  const double beta_now = rec.beta_now;
  rec.beta_next = std::clamp(st.beta_prev + (beta_now - st.beta_prev) / kTrendDivisor, 0.0, 1.0);
  rec.rate_next = st.rate_prev + (r - st.rate_prev) / kTrendDivisor;
  rec.high = rec.rate_next >= (st.rate_mqt + st.rate_fifo) / 2;
  double update = beta_now;
  if (beta_now == 0) {
    if (decided == Method::kFifo && rec.high) {
      rec.case_no = 2;  // FIFO leaves nothing unprocessed, MQT would not keep up: stay
      update = 0;
    } else if (decided == Method::kFifo) {
      rec.case_no = 4;  // FIFO keeps up and the rate falls: switch to MQT explicitly (β = 0 would stay)
      update = 0.01;
      st.method = rec.method = Method::kMqt;
      st.rate_mqt = r;
    } else if (rec.high) {
      rec.case_no = 6;
      update = 0.02;
    } else {
      rec.case_no = 8;
      update = 0.03;
    }
  } else {
    const bool rising = rec.beta_next > beta_now + kRounding, falling = rec.beta_next < beta_now - kRounding;
    if (decided == Method::kFifo && rec.high && rising) rec.case_no = 1;
    else if (decided == Method::kFifo && !rec.high && falling) rec.case_no = 3;
    else if (decided == Method::kMqt && rec.high && rising) rec.case_no = 5;
    else if (decided == Method::kMqt && !rec.high && falling) rec.case_no = 7;
    else rec.open = true;
  }
  st.beta = update;
  st.beta_prev = beta_now;
  st.rate_prev = r;
  return rec;
}

// ---- the scheduler -------------------------------------------------------------------------

SwjScheduler::SwjScheduler(std::vector<int64_t> windows, Options options)
    : matrix_(std::move(windows)), options_(options) {
  CheckBeta0(options_.beta0);
  state_.beta = state_.beta_prev = options_.beta0;
  state_.method = options_.policy == Policy::kFifo ? Method::kFifo : Method::kMqt;
  levels_.resize(matrix_.n());
  // Levels by falling R, equal R in one group (exact comparison on the integers).
  std::vector<int> order(matrix_.n());
  for (int j = 0; j < matrix_.n(); ++j) order[j] = j;
  auto higher = [&](int a, int b) { return matrix_.Less(b, matrix_.Next(b), a, matrix_.Next(a)); };
  std::stable_sort(order.begin(), order.end(), higher);
  for (int j : order) {
    if (groups_.empty() || higher(groups_.back().front(), j)) groups_.emplace_back();
    groups_.back().push_back(j);
  }
}

void SwjScheduler::Index(uint64_t id, const Entry& e) {
  const AgeKey key{e.time, id};
  by_age_.insert(key);
  if (e.level < matrix_.n()) {
    pending_.insert(key);
    levels_[e.level].insert(key);
  }
  ++side_count_[static_cast<int>(e.side)];
}

void SwjScheduler::Unindex(uint64_t id, const Entry& e) {
  const AgeKey key{e.time, id};
  by_age_.erase(key);
  if (e.level < matrix_.n()) {
    pending_.erase(key);
    levels_[e.level].erase(key);
  }
  --side_count_[static_cast<int>(e.side)];
}

const SwjScheduler::Entry& SwjScheduler::Find(uint64_t id) const {
  auto it = tuples_.find(id);
  CQ_CHECK(it != tuples_.end(), "the shared join's scheduler holds no tuple " + std::to_string(id));
  return it->second;
}

uint64_t SwjScheduler::Arrive(Side side, int64_t time) {
  const uint64_t id = next_id_++;
  const Entry e{side, time, 0, 0.0, period_};
  tuples_.emplace(id, e);
  Index(id, e);
  period_ids_.push_back(id);
  return id;
}

int SwjScheduler::Evict(uint64_t id) {
  const Entry e = Find(id);
  Unindex(id, e);
  tuples_.erase(id);
  if (e.period == period_) evicted_load_ += Unprocessed(e);
  return e.level;
}

void SwjScheduler::Done(uint64_t id, int to, bool processed) {
  auto it = tuples_.find(id);
  CQ_CHECK(it != tuples_.end(), "the shared join's scheduler holds no tuple " + std::to_string(id));
  Entry& e = it->second;
  CQ_CHECK(e.level < to && to <= matrix_.n(), "a shared join job must raise a tuple's level");
  Unindex(id, e);
  if (!processed) e.dropped += matrix_.WeightUpTo(to) - matrix_.WeightUpTo(e.level);
  e.level = to;
  Index(id, e);
}

std::optional<Job> SwjScheduler::Next() const {
  if (pending_.empty()) return std::nullopt;
  auto job = [&](const AgeKey& key) {
    const int level = tuples_.at(key.id).level;
    return Job{key.id, level, state_.method == Method::kFifo ? matrix_.n() : matrix_.Next(level)};
  };
  if (state_.method == Method::kFifo) return job(*pending_.begin());
  for (const auto& group : groups_) {
    const AgeKey* oldest = nullptr;
    for (int level : group)
      if (!levels_[level].empty() && (!oldest || *levels_[level].begin() < *oldest)) oldest = &*levels_[level].begin();
    if (oldest) return job(*oldest);
  }
  CQ_CHECK(false, "a pending tuple at no level");
  return std::nullopt;
}

SwjScheduler::TupleView SwjScheduler::View(uint64_t id) const {
  const Entry& e = Find(id);
  return {e.side, e.time, e.level};
}

PeriodRecord SwjScheduler::EndPeriod(double now) {
  const auto rate = static_cast<int64_t>(period_ids_.size());
  double load = 0;
  if (options_.load == Load::kArrived) {
    load = evicted_load_;
    for (uint64_t id : period_ids_) {
      auto it = tuples_.find(id);
      if (it != tuples_.end()) load += Unprocessed(it->second);
    }
  } else {
    int64_t left = rate;
    for (auto it = by_age_.begin(); it != by_age_.end() && left > 0; ++it, --left)
      load += Unprocessed(tuples_.at(it->id));
  }
  PeriodRecord rec = Decide(options_.policy, state_, now, rate, load, matrix_.SumWeights());
  period_ids_.clear();
  evicted_load_ = 0;
  ++period_;
  return rec;
}

// ---- snapshots -----------------------------------------------------------------------------

void SwjScheduler::Write(ByteWriter& w) const {
  const size_t at = w.Begin();
  w.PodVec(matrix_.windows());
  w.U8(static_cast<uint8_t>(options_.policy));
  w.U8(static_cast<uint8_t>(options_.load));
  w.Pod(options_.beta0);
  w.U8(static_cast<uint8_t>(state_.method));
  w.Pod(state_.beta);
  w.Pod(state_.beta_prev);
  w.Pod(state_.rate_prev);
  w.Pod(state_.rate_mqt);
  w.Pod(state_.rate_fifo);
  w.Bool(state_.seen_rate);
  w.U64(next_id_);
  w.U64(period_);
  w.Pod(evicted_load_);
  w.U64(tuples_.size());
  for (const auto& [id, e] : tuples_) {
    w.U64(id);
    w.U8(static_cast<uint8_t>(e.side));
    w.I64(e.time);
    w.I64(e.level);
    w.Pod(e.dropped);
    w.U64(e.period);
  }
  w.PodVec(period_ids_);
  w.End(at);
}

void SwjScheduler::Read(ByteReader& r) {
  r.Section("a shared join's scheduler", [&] {
    std::vector<int64_t> windows;
    r.PodVec(windows, "the scheduler's windows");
    if (windows != matrix_.windows()) ByteReader::Corrupt("the scheduler's windows are not this join's");
    ByteReader::Expect(r.Enum(Policy::kAdMandF, "the scheduler's policy"), options_.policy, "the scheduler's policy");
    ByteReader::Expect(r.Enum(Load::kOldest, "the scheduler's load"), options_.load, "the scheduler's load");
    ByteReader::Expect(r.Pod<double>(), options_.beta0, "the scheduler's β0");
    AdaptiveState st;
    st.method = r.Enum(Method::kFifo, "the scheduler's method");
    st.beta = r.Pod<double>();
    st.beta_prev = r.Pod<double>();
    CQ_SNAPSHOT_CHECK(st.beta >= 0 && st.beta <= 1 && st.beta_prev >= 0 && st.beta_prev <= 1,
                      "the scheduler's β: expected a number in [0, 1]");
    st.rate_prev = r.Pod<double>();
    st.rate_mqt = r.Pod<double>();
    st.rate_fifo = r.Pod<double>();
    for (double v : {st.rate_prev, st.rate_mqt, st.rate_fifo})
      CQ_SNAPSHOT_CHECK(std::isfinite(v) && v >= 0, "the scheduler's rates: expected finite numbers ≥ 0");
    st.seen_rate = r.Bool();
    if (options_.policy == Policy::kMqt || options_.policy == Policy::kFifo)
      ByteReader::Expect(st.method, options_.policy == Policy::kFifo ? Method::kFifo : Method::kMqt,
                         "the method of a fixed scheduler");
    const uint64_t next_id = r.U64();
    const uint64_t period = r.U64();
    const double evicted_load = r.Pod<double>();
    CQ_SNAPSHOT_CHECK(std::isfinite(evicted_load) && evicted_load >= 0, "the scheduler's evicted load");
    const size_t count = r.Count(8 + 1 + 8 + 8 + 8 + 8, "the scheduler's tuples");
    std::map<uint64_t, Entry> tuples;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t id = r.Below(next_id, "a scheduler tuple's id");
      CQ_SNAPSHOT_CHECK(tuples.empty() || tuples.rbegin()->first < id, "the scheduler's tuples: expected ids in order");
      Entry e;
      e.side = r.Enum(Side::kRight, "a scheduler tuple's side");
      e.time = r.I64();
      e.level = static_cast<int32_t>(r.I64In(0, matrix_.n(), "a scheduler tuple's level"));
      e.dropped = r.Pod<double>();
      CQ_SNAPSHOT_CHECK(std::isfinite(e.dropped) && e.dropped >= 0, "a scheduler tuple's dropped weight");
      e.period = r.U64();
      CQ_SNAPSHOT_CHECK(e.period <= period, "a scheduler tuple's period: expected none after the current one");
      tuples.emplace(id, e);
    }
    std::vector<uint64_t> period_ids;
    r.PodVec(period_ids, "the period's arrivals");
    for (size_t i = 0; i < period_ids.size(); ++i) {
      CQ_SNAPSHOT_CHECK(period_ids[i] < next_id && (i == 0 || period_ids[i - 1] < period_ids[i]),
                        "the period's arrivals: expected ids in order");
      auto it = tuples.find(period_ids[i]);
      CQ_SNAPSHOT_CHECK(it == tuples.end() || it->second.period == period,
                        "the period's arrivals: expected tuples of the current period");
    }
    for (const auto& [id, e] : tuples)
      CQ_SNAPSHOT_CHECK(e.period < period || std::binary_search(period_ids.begin(), period_ids.end(), id),
                        "a tuple of the current period missing from its arrivals");
    // All read and checked: take it.
    state_ = st;
    next_id_ = next_id;
    period_ = period;
    evicted_load_ = evicted_load;
    tuples_ = std::move(tuples);
    period_ids_ = std::move(period_ids);
    by_age_.clear();
    pending_.clear();
    for (auto& l : levels_) l.clear();
    side_count_[0] = side_count_[1] = 0;
    for (const auto& [id, e] : tuples_) Index(id, e);
  });
}

}  // namespace cq::swj
