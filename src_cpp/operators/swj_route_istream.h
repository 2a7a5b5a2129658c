#pragma once
// ISTREAM of a query's share of a shared window join (operators/shared_window_join.h), planned as
// one operator in place of its route (operators/swj_route.h) and the ISTREAM above it
// (cq_py/planner/fusion.py). The route's relation holds each pair of slice ≤ i over
// [t_x, t_y + wi), so ISTREAM's R(t) − R(t⁻) (SEMANTICS.md §4.3) is the pairs starting at t less,
// as a bag of the compared columns, the pairs of the query ending at t — as for a join fused with
// its ISTREAM (operators/istream_join.h), which finds those in its index. A route has no index
// (the shared join keeps the rows, for the widest window), so it keeps, for each pair it passed
// and until its end, the batch it came in and its row, in a ring of buckets by end (a pair's end
// is at most wi after the instant reached): no hash, no copy, no sort of the pairs. At each instant
// the pairs that end there leave their bucket, and a start equal to one of them (each cancels one
// start) is left out.
//
// Planned apart, the ISTREAM tracks the route's relation in full (an instant's rows collected, bag
// differences of each start and each end); here a pair costs an entry in a bucket, and an instant
// where nothing of the query ends costs nothing more than the route. (A binary heap of ends cost
// 18 % of a 10-query run at 1 match per probe and 39 % at 10: perf, RelWithDebInfo.)
//
// Exact mode only (the bounded route's two tags have their own rule). Results go out as a stream
// at each pair's start, in the order the shared join emits them (by start).
//
// Spec: the route's "slice" and "shrink", and "compare": the route's output columns (the joined
// row, the slice column excluded) that the ISTREAM compares, "window": wi in ticks.
#include <deque>
#include <memory>
#include <vector>

#include "batch/row_equal.h"
#include "operators/operator.h"

namespace cq {

class SwjRouteIStream final : public Operator {
 public:
  SwjRouteIStream(const Schema& input, int64_t slice, int64_t shrink, int64_t window, std::vector<int> compared);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  // The pairs of the query not yet ended (their batches, rows and ends), and the instant reached
  // with the ending pairs it has cancelled.
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  // An input batch some kept pair is in.
  struct Kept {
    Batch batch;
    Columns compared;  // its compared columns
    int64_t live = 0;  // pairs of it in the ring or ending now
  };
  // A pair of R(t) for the current t: where it is, and its end.
  struct Open {
    Time end;
    uint64_t seq;
    uint32_t row;
  };
  struct Ending {
    uint64_t seq;
    uint32_t row;
    bool used;       // cancelled a start already (one each: a bag difference)
    uint64_t probe;  // its value of the probe column (ending_ is sorted by it)
  };
  void Begin(Time t);
  void Sweep(int64_t bucket);
  void Insert(const Open& o);
  void Probe();
  uint64_t ProbeOf(const Kept& k, int64_t row) const;
  bool Cancels(const Kept& k, int64_t row);
  void Release(uint64_t seq);
  Kept& kept(uint64_t seq) { return kept_[seq - first_seq_]; }
  Columns Compared(const Batch& b) const;

  std::shared_ptr<const Schema> input_;
  std::shared_ptr<const Schema> schema_;  // the input's, less the slice column
  int64_t slice_;
  int64_t shrink_;
  int64_t window_;  // wi, ticks
  std::vector<int> compared_;
  int probe_col_ = -1;  // a BIGINT among compared_ (its position there), or none
  RowEqual equal_;
  std::deque<Kept> kept_;  // by seq, from first_seq_
  uint64_t first_seq_ = 0;
  static constexpr uint64_t kNone = ~uint64_t{0};
  uint64_t filling_ = kNone;  // the batch Push is reading (kept even while none of it is live)
  // The open pairs by end: a ring of buckets of 2^shift_ ticks spanning more than the window.
  std::vector<std::vector<Open>> ring_;
  uint64_t mask_ = 0;
  int shift_ = 0;
  static constexpr int64_t kNoBucket = INT64_MIN;
  int64_t drained_ = kNoBucket;  // buckets before it are empty
  Time instant_ = Time::MinusInfinity();
  std::vector<Ending> ending_;  // R(instant_⁻)'s pairs ending at instant_
};

}  // namespace cq
