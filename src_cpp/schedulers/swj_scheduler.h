#pragma once
// Schedulers of a shared window join under overload (paper 004, after Hammad et al., VLDB 2003):
// which (tuple, queries) job a shared join with bounded buffers runs next, and, once per period,
// whether the adaptive schedulers switch between MQT and FIFO. Pure policy: the operator keeps the
// tuples, their rows and its counters; the scheduler keeps, per buffered tuple, only what a policy
// looks at (side, arrival time, highest query done) and its own adaptive state.
//
// Queries are numbered 1..n by window, w1 ≤ … ≤ wn; "level j" of a tuple is the highest query
// whose job has run or been given up (0: none). A job (tuple, j, k) extends the tuple from query
// j to query k: it covers queries j+1..k by scanning the slices (w_j, w_k].
//
// How an operator drives it (the README beside this file says it with an example):
//   SwjScheduler s(windows, {policy, load, beta0});
//   id = s.Arrive(side, t)         each arriving tuple, in the order the operator takes them in
//   s.Evict(id)                    a tuple leaving its buffer (returns its level: queries above it
//                                  are dropped, the operator counts them)
//   job = s.Next()                 the next job, or nullopt when every buffered tuple is complete
//   s.Done(id, k)                  the job ran: the tuple is at level k
//   s.Done(id, k, false)           queries up to k were given up (a partner left): level k, and
//                                  their weight stays unprocessed in the period's load S
//   rec = s.EndPeriod(now)         at each period's end: the period's trace record; the method of
//                                  the adaptive schedulers for the next period is rec.method
//   s.Write(w) / s.Read(r)         snapshot and restore of all the above (restore, then write:
//                                  the same bytes)
//
// The MQT matrix: R[j][k] = (k − j) / (w_k − w_j) for 0 ≤ j < k ≤ n with w_0 = 0, the queries
// served per unit of window scanned when a tuple at level j is extended to k. From level j the
// next segment ends at the k of the largest R[j][k] (ties: the largest such k, so that queries
// whose windows cost nothing more ride along), extended over windows equal to w_k. The segments
// are the chain of those from level 0; along it R strictly falls (R[0][m] is the mediant of
// R[0][k] and R[k][m]), so MQT serves every tuple's first segment before any second one when the
// backlog allows. A query's weight is R of its segment; Σw is their sum, the weight of a tuple.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/serializer.h"

namespace cq::swj {

enum class Policy : uint8_t { kMqt, kFifo, kMandF, kAdMandF };
enum class Load : uint8_t { kArrived, kOldest };  // whose unprocessed queries make up S
enum class Clock : uint8_t { kWork, kWall };      // the operator's; validated here with the rest
enum class Method : uint8_t { kMqt, kFifo };
enum class Side : uint8_t { kLeft, kRight };

// The names the Python face accepts, for errors and for parsing (lower case, as in Engine(...)).
const char* PolicyName(Policy p);
const char* LoadName(Load l);
const char* ClockName(Clock c);
const char* MethodName(Method m);
// Parsing and range checks of Engine(swj_...) options: CqError(kInput) naming the option, what it
// takes and what was found.
Policy ParsePolicy(std::string_view name);
Load ParseLoad(std::string_view name);
Clock ParseClock(std::string_view name);
void CheckBuffer(int64_t tuples);  // ≥ 1
void CheckPeriod(double period);   // > 0 (and finite)
void CheckBeta0(double beta0);     // in [0, 1]

class MqtMatrix {
 public:
  // Windows in ticks, each ≥ 1, in non-decreasing order (CqError(kInput) otherwise).
  explicit MqtMatrix(std::vector<int64_t> windows);

  int n() const { return static_cast<int>(windows_.size()); }
  const std::vector<int64_t>& windows() const { return windows_; }
  // R[j][k] (0 ≤ j < k ≤ n); infinity when w_j = w_k.
  double R(int j, int k) const;
  // Where the segment after level j ends, and its R (j < n).
  int Next(int j) const { return next_[j]; }
  double Rate(int j) const { return rate_[j]; }
  // The segments from level 0, as (j, k]: queries j+1..k.
  const std::vector<std::pair<int, int>>& segments() const { return segments_; }
  // As §6.2 writes execution orders: "1,2,3-10".
  std::string SegmentsText() const;
  // Query q's weight (1 ≤ q ≤ n), the weight of queries 1..k, Σw.
  double Weight(int q) const { return weights_[q - 1]; }
  double WeightUpTo(int k) const { return prefix_[k]; }
  double SumWeights() const { return prefix_.back(); }
  // R[j][k] < R[a][b], exactly (on the integers).
  bool Less(int j, int k, int a, int b) const;

 private:
  std::vector<int64_t> windows_;
  std::vector<int> next_;
  std::vector<double> rate_;
  std::vector<std::pair<int, int>> segments_;
  std::vector<double> weights_;
  std::vector<double> prefix_;  // prefix_[k] = Σ weights of queries 1..k
};

struct Options {
  Policy policy = Policy::kMqt;
  Load load = Load::kArrived;
  double beta0 = 0.05;
};

struct Job {
  uint64_t tuple;  // the id Arrive returned
  int from;        // the tuple's level: queries up to it are done
  int to;          // the job covers queries from+1..to
  bool operator==(const Job&) const = default;
};

// One period's record (the trace's periods table). NaN where the policy has no such figure: α and
// β for MQT and FIFO; β_next, rate_next for MandF.
struct PeriodRecord {
  double time = 0;
  int64_t rate = 0;  // tuples arrived in the period (both sides)
  double load = 0;   // S
  double alpha = 0;
  double beta = 0;  // β in force when the method was decided
  double beta_now = 0;
  double beta_next = 0;
  double rate_next = 0;
  bool high = false;             // rate_next ≥ (rate_MQT + rate_FIFO) / 2
  Method method = Method::kMqt;  // the method for the next period
  uint8_t case_no = 0;           // adMandF's case of §5.3 (1–8), 0 when none applies
  bool open = false;             // a combination §5.3 leaves open (β_update = β_now)
  bool operator==(const PeriodRecord&) const;
};

// The adaptive state of MandF and adMandF, and its step: Decide is the whole of a period's
// decision given S and the rate, so that tests reach each case directly.
//
// Readings of §5.3 where it is terse (the README beside this file argues them):
// - β_prev and rate_prev are the last period's *measured* β_now and rate ("the previous β", as
//   "the previous rate"), so β_next extrapolates the load's trend. Were β_prev the β in force,
//   β_next − β_now = β_now − β would be above 0 exactly when S > α (FIFO decided) and below it
//   when S < α (MQT), and cases 3 and 5 could never happen; read so, each case's reason holds
//   (3 raises β to ease MQT, 5 lowers it to ease FIFO). β_prev starts at β0; rate_prev,
//   rate_MQT and rate_FIFO at the first rate.
// - The quadrant's method is the one decided this period with the β in force (the method in use
//   when β_update is set); case 4 then switches it to MQT, which S ≥ α with β = 0 never would.
// - β_now ≠ 0 with β_next = β_now, or with a trend the figure does not pair with that quadrant
//   (FIFO: high and falling, low and rising; MQT: high and falling, low and rising): β_now, open.
// - rate_MQT (rate_FIFO) is the rate of the period that switched to MQT (FIFO); `high` compares
//   with them after this period's switch. rate_next is not clamped (only its comparison counts).
// - A period without arrivals changes nothing: no decision, no trend, the record says so.
struct AdaptiveState {
  Method method = Method::kMqt;
  double beta = 0.05;       // β in force: α = Σw · β · rate
  double beta_prev = 0.05;  // the last period's β_now (β0 before the first)
  double rate_prev = 0;     // the last period's rate (with arrivals)
  double rate_mqt = 0;      // the rate when the method last switched to MQT
  double rate_fifo = 0;     // … to FIFO
  bool seen_rate = false;   // rate_prev, rate_mqt, rate_fifo start at the first rate
};
// The divisor of §5.3's trend estimates ("the interval at which the rate is measured", 0.5 s in
// §6): a constant of the estimate, kept in time-scaled runs.
inline constexpr double kTrendDivisor = 0.5;
PeriodRecord Decide(Policy policy, AdaptiveState& state, double time, int64_t rate, double load, double sum_w);
// S ≥ α, and β_next against β_now, up to rounding: S and α add the same weights in other orders
// (with β = 1 and every arrived query unprocessed they are equal but for their last bits), so a
// relative 1e-12 keeps such ties from being decided by rounding.
inline constexpr double kRounding = 1e-12;
inline bool LoadReaches(double load, double alpha) { return load >= alpha - kRounding * alpha; }

class SwjScheduler {
 public:
  SwjScheduler(std::vector<int64_t> windows, Options options);

  const MqtMatrix& matrix() const { return matrix_; }
  const Options& options() const { return options_; }
  // The method Next uses now (fixed for MQT and FIFO).
  Method method() const { return state_.method; }
  const AdaptiveState& state() const { return state_; }

  uint64_t Arrive(Side side, int64_t time);
  int Evict(uint64_t tuple);
  std::optional<Job> Next() const;
  void Done(uint64_t tuple, int to, bool processed = true);
  PeriodRecord EndPeriod(double now);

  // What the scheduler holds of a tuple (CqError(kInternal) for an id it does not hold).
  struct TupleView {
    Side side;
    int64_t time;
    int level;
  };
  TupleView View(uint64_t tuple) const;
  size_t buffered() const { return tuples_.size(); }
  size_t buffered(Side side) const { return side_count_[static_cast<int>(side)]; }
  int64_t arrivals_this_period() const { return static_cast<int64_t>(period_ids_.size()); }
  // The arrival time of the oldest buffered tuple with queries left (an operator holds its output
  // progress there), or nullopt when every buffered tuple is complete.
  std::optional<int64_t> OldestPending() const {
    if (pending_.empty()) return std::nullopt;
    return pending_.begin()->time;
  }

  void Write(ByteWriter& w) const;
  // Replaces this scheduler's state by the snapshot's; the windows and options must be this
  // scheduler's (CqError(kSnapshot) otherwise, and for anything inconsistent).
  void Read(ByteReader& r);

 private:
  struct Entry {
    Side side;
    int64_t time;
    int32_t level;
    double dropped;   // weight of queries given up (they stay in S)
    uint64_t period;  // the period it arrived in
  };
  struct AgeKey {
    int64_t time;
    uint64_t id;
    auto operator<=>(const AgeKey&) const = default;
  };
  double Unprocessed(const Entry& e) const { return matrix_.SumWeights() - matrix_.WeightUpTo(e.level) + e.dropped; }
  void Index(uint64_t id, const Entry& e);
  void Unindex(uint64_t id, const Entry& e);
  const Entry& Find(uint64_t id) const;

  MqtMatrix matrix_;
  Options options_;
  AdaptiveState state_;
  // MQT's levels by falling R, equal R together (one "level" of the paper's priority).
  std::vector<std::vector<int>> groups_;

  std::map<uint64_t, Entry> tuples_;
  std::set<AgeKey> by_age_;               // every buffered tuple
  std::set<AgeKey> pending_;              // those below level n
  std::vector<std::set<AgeKey>> levels_;  // pending tuples by level
  size_t side_count_[2] = {0, 0};
  uint64_t next_id_ = 0;
  uint64_t period_ = 0;
  std::vector<uint64_t> period_ids_;  // arrived this period (also those evicted since)
  double evicted_load_ = 0;           // unprocessed weight of this period's arrivals evicted
};

}  // namespace cq::swj
