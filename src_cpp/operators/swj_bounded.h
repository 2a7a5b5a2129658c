#pragma once
// The shared window join in bounded mode (paper 004 §4; Engine(swj_buffer=B, ...)): the same
// n queries as operators/shared_window_join.h, but each side keeps at most B tuples and the work
// is done as jobs that a scheduler (schedulers/swj_scheduler.h) chooses, on a clock of its own.
// Lossy on purpose: a (tuple, query) pair whose tuple, or a partner inside that query's window,
// left its buffer before the pair's job ran is dropped and counted, never computed.
//
// The model (the README beside schedulers/ says why each reading was chosen):
//  - Arrivals are the inputs' tuples in time order, the left input first at equal times (the
//    hash join's order); they are taken in when the inputs' progress has passed them, so that
//    both sides are merged the same way whatever the push chunking.
//  - One server works on the clock c. Before taking in a tuple at t it runs jobs while c < t
//    (then c = max(c, t)); at progress p it runs jobs while c < p; close() (p = ∞) runs all.
//    A job (x, j, k) scans the tuples y of the other side that arrived before x with
//    t_x − t_y in [w_j, w_k), the slices j+1..k, as the paper's server does (whatever their key:
//    the MQT matrix prices a job by its window span); those with x's key are its partners.
//    Its cost advances c: kSwjJobNs + kSwjScanNs per scanned tuple + kSwjPairNs per emitted
//    pair (clock "work"), or the measured time (clock "wall"). Results depend on the arrival sequence alone under the
//    work clock.
//  - The rows of queries j+1..k for x leave when the job ran: those found now and those of
//    slices ≤ j found by x's earlier jobs (kept with x). Each row carries two tags, lo and hi:
//    query i takes it iff lo ≤ i ≤ hi (the route with "upto", operators/swj_route.h). So a
//    query gets x's rows exactly when its pair (x, i) was processed, all at once.
//  - A query's pair (x, i) is dropped when x leaves its buffer first, or when a tuple of the
//    other side that arrived before x with t_x − t_y < w_i left first (keys are not looked at:
//    what the paper's buffer lost is lost to every key). The latest such tuple is found in O(1)
//    from the side's eviction count (buffers evict oldest first).
//  - Periods of swj_period ticks on the clock c, from the period of the first arrival: at each
//    period's end the scheduler's EndPeriod (MandF, adMandF decide there).
//  - Its output progress is held at its oldest tuple with pending work, or queued arrival.
//
// Spec: the shared join's, plus "bounded": {"buffer", "scheduler", "period" (ticks, a number),
// "beta0", "clock", "load", "trace", "tick_ns"}.
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "operators/hash_join.h"
#include "schedulers/swj_scheduler.h"

namespace cq {

// The work clock's constants, in nanoseconds (a job's set-up with its tuple's intake, one partner
// looked at, one pair emitted and routed to the queries); Engine(time_unit) gives the ticks they
// are worth. Fitted to this engine's CPU time by benchmarks/papers/004/constants.py.
inline constexpr double kSwjJobNs = 352;
inline constexpr double kSwjScanNs = 3.9;
inline constexpr double kSwjPairNs = 178;

struct SwjBoundedOptions {
  int64_t buffer = 1;
  swj::Options scheduler;
  double period = 500;  // ticks
  swj::Clock clock = swj::Clock::kWork;
  bool trace = false;
  double tick_ns = 1e6;
};

// What became of a job or a tuple (the trace's jobs table).
enum class SwjOutcome : uint8_t {
  kProcessed,  // queries from+1..to ran
  kPartly,     // queries from+1..to ran, to+1..n dropped (a partner in their windows had left)
  kGivenUp,    // queries from+1..n dropped (a partner in their windows had left)
  kEvicted,    // the tuple left its buffer: queries from+1..n dropped
};
const char* SwjOutcomeName(SwjOutcome o);

class SwjBounded final : public Operator {
 public:
  SwjBounded(const Schema& left, const Schema& right, JoinExpressions expressions, std::vector<int64_t> windows,
             SwjBoundedOptions options);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time OutputProgress(Time progress) const override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  // Members' windows, segments, per-query processed / dropped / pending, the clock, the trace:
  // one JSON object (Engine::SharedJoinReport).
  std::string Report() const;

 private:
  struct Arrival {
    uint32_t batch;
    uint32_t row;
    Time t;
    bool has_key;
    std::string key;
  };
  struct Tuple {
    uint64_t id;  // the scheduler's
    uint64_t seq;
    Time t;
    uint32_t batch;
    uint32_t row;
    bool has_key;
    std::string key;
    uint64_t pred;                                    // arrivals of the other side before this one
    Time t_pred;                                      // the latest of them
    std::vector<std::pair<uint64_t, int32_t>> found;  // partners (seq) and slices of jobs run
  };
  struct Kept {
    Batch batch;
    int64_t refs = 0;  // queued and buffered tuples of it
  };
  struct SideState {
    std::deque<Arrival> queue;  // pushed, not taken in yet
    std::deque<Tuple> buffer;   // by seq; buffer[0] has seq first_seq (= tuples evicted)
    uint64_t first_seq = 0;
    uint64_t arrivals = 0;
    Time last_arrival;
    Time last_evicted;
    std::unordered_map<uint32_t, Kept> batches;
    uint32_t next_batch = 0;
  };
  struct Out {
    uint32_t batch[2];
    uint32_t row[2];
    Time start;
    Time end;
    int64_t lo;
    int64_t hi;
  };
  struct JobRecord {
    uint64_t tuple;
    uint8_t side;
    int64_t ts;
    int32_t from;
    int32_t to;
    SwjOutcome outcome;
    double clock;
  };

  int n() const { return static_cast<int>(windows_.size()); }
  int64_t W(int j) const { return j == 0 ? 0 : windows_[j - 1]; }
  const Arrival* NextArrival(Time progress, int* side) const;
  void TakeIn(int side);
  void Evict(int side);
  int Cap(int side, const Tuple& x) const;
  void RunJob(const swj::Job& job);
  void ClosePeriods(double upto);
  void Count(std::vector<int64_t>& counter, int from, int to) const;
  void Flush(Emitter& out);
  void Release(int side, uint32_t batch);
  void WriteSide(SnapshotWriter& w, const SideState& s) const;
  void ReadSide(SnapshotReader& r, int side, SideState& s) const;

  std::shared_ptr<const Schema> schema_;
  Schema input_[2];
  size_t width_[2];
  JoinExpressions expr_;
  std::vector<int64_t> windows_;
  SwjBoundedOptions options_;
  swj::SwjScheduler scheduler_;

  SideState sides_[2];
  std::unordered_map<uint64_t, std::pair<int, uint64_t>> where_;  // scheduler id -> side, seq
  double clock_ = 0;
  bool started_ = false;                      // the first arrival fixed the periods' grid
  double next_end_ = 0;                       // the current period's end
  std::vector<int64_t> processed_, dropped_;  // by query (index 0: query 1)
  int64_t taken_ = 0;                         // tuples taken in, both sides
  int64_t evicted_ = 0;
  // The work done, counted whatever the clock (the benchmark fits the work clock's constants to
  // the wall clock with them).
  int64_t jobs_run_ = 0, scanned_ = 0, emitted_ = 0;
  double busy_ = 0;  // ticks of the clock spent in jobs
  std::vector<swj::PeriodRecord> periods_;
  std::vector<JobRecord> jobs_;
  std::vector<Out> out_;
  std::vector<std::pair<int, uint32_t>> retired_;  // batches no tuple refers to, kept until Flush
};

}  // namespace cq
