// The shared window join in bounded mode (operators/swj_bounded.h, paper 004 §4) under every
// scheduler, on an overload: no side ever holds more than B tuples; processed + dropped + pending
// = arrivals for every query; rows, counters and the trace do not depend on how the input is
// pushed (one batch per port, or a row at a time with progress after each); a snapshot restored
// and taken again gives the same bytes, and both go on alike; with a buffer far above need every
// query's rows are those of the exact shared join.
#include "operators/swj_bounded.h"
#include "base/json.h"
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;
using harness::Recorder;

const Schema kSide = {{"k", TypeId::kInt64}, {"v", TypeId::kInt64}};
const std::vector<int64_t> kWindows = {40, 160, 600, 2400};  // ticks of 1 ns: a job is 200 ticks and up

OperatorCase Case(const std::string& scheduler, int64_t buffer) {
  const std::string key = R"({"kind": "column", "index": 0, "type": "int64"})";
  OperatorCase c;
  c.name = "bounded shared join, " + scheduler;
  c.spec = R"({"op": "shared_window_join", "left_keys": [)" + key + R"(], "right_keys": [)" + key +
           R"(], "residual": null, "expiration": "lazy", "windows": [40, 160, 600, 2400], "bounded": {"buffer": )" +
           std::to_string(buffer) + R"(, "scheduler": ")" + scheduler +
           R"(", "period": 300.0, "beta0": 0.3, "clock": "work", "load": "arrived", "trace": true, "tick_ns": 1.0}})";
  c.inputs = {{kSide, BatchKind::kLifetime}, {kSide, BatchKind::kLifetime}};
  return c;
}

// Rows [from, to) of a side: key i·7 mod 5, value i, at i·gap (+ gap/2 on the right).
Batch Rows(int port, int64_t from, int64_t to, int64_t gap) {
  std::vector<std::optional<int64_t>> k, v;
  std::vector<Time> t;
  for (int64_t i = from; i < to; ++i) {
    k.push_back(i * 7 % 5);
    v.push_back(i);
    t.push_back({i * gap + (port == 1 ? gap / 2 : 0), 0});
  }
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(kSide);
  b.length = to - from;
  b.columns.push_back(I64(k));
  b.columns.push_back(I64(v));
  b.sync = MakeTimeColumn(t);
  b.constant_duration = Duration::Ticks(kWindows.back());
  return b;
}

const SwjBounded& Bounded(const std::unique_ptr<Operator>& op) { return dynamic_cast<const SwjBounded&>(*op); }

// The report's counters add up and its buffers are within B.
void ExpectConsistent(const SwjBounded& op, int64_t buffer) {
  const json::Value r = json::Parse(op.Report());
  for (const json::Value& side : r["buffered"].array()) CQ_EXPECT(side.integer() <= buffer);
  const int64_t arrivals = r["arrivals"].integer();
  for (size_t q = 0; q < kWindows.size(); ++q)
    CQ_EXPECT_EQ(
        r["processed"].array()[q].integer() + r["dropped"].array()[q].integer() + r["pending"].array()[q].integer(),
        arrivals);
}

constexpr int64_t kRows = 200, kGap = 40, kBuffer = 25;

struct Outcome {
  std::vector<Recorder::Tuple> tuples;
  std::string report;
};

// One batch per port, then close.
Outcome Whole(const OperatorCase& c) {
  HolderTable holders;
  std::unique_ptr<Operator> op = harness::Build(c, false, &holders);
  Recorder rec(op->output_schema(), BatchKind::kLifetime, false);
  op->Push(0, Rows(0, 0, kRows, kGap), rec);
  op->Push(1, Rows(1, 0, kRows, kGap), rec);
  op->AdvanceTo(Time::Infinity(), rec);
  ExpectConsistent(Bounded(op), kBuffer);
  return {rec.Tuples(), Bounded(op).Report()};
}

CQ_TEST(bounded_join_bounds_its_buffers_and_counts_every_pair_under_every_scheduler) {
  for (const char* scheduler : {"mqt", "fifo", "mandf", "admandf"}) {
    const OperatorCase c = Case(scheduler, kBuffer);
    HolderTable holders;
    std::unique_ptr<Operator> op = harness::Build(c, false, &holders);
    Recorder rec(op->output_schema(), BatchKind::kLifetime, false);
    // A row at a time on each side, progress after each: the same run as Whole's.
    for (int64_t i = 0; i < kRows; ++i) {
      op->Push(0, Rows(0, i, i + 1, kGap), rec);
      op->AdvanceTo({i * kGap, 0}, rec);
      op->Push(1, Rows(1, i, i + 1, kGap), rec);
      op->AdvanceTo({i * kGap + kGap / 2, 0}, rec);
      ExpectConsistent(Bounded(op), kBuffer);
    }
    op->AdvanceTo(Time::Infinity(), rec);
    const json::Value r = json::Parse(Bounded(op).Report());
    CQ_EXPECT(r["evicted"].integer() > 0);  // an overload
    CQ_EXPECT(r["dropped"].array().back().integer() > 0);
    CQ_EXPECT_EQ(r["pending"].array().front().integer(), 0);  // close() ran what was left
    const Outcome whole = Whole(c);
    CQ_EXPECT(rec.Tuples() == whole.tuples);
    CQ_EXPECT(Bounded(op).Report() == whole.report);
  }
}

std::string SnapshotOf(const Operator& op) {
  SnapshotWriter w;
  op.Snapshot(w);
  return w.bytes();
}

CQ_TEST(bounded_join_snapshot_restores_the_same_bytes_and_goes_on_alike) {
  for (const char* scheduler : {"mqt", "admandf"}) {
    const OperatorCase c = Case(scheduler, kBuffer);
    HolderTable holders;
    std::unique_ptr<Operator> op = harness::Build(c, false, &holders);
    Recorder rec(op->output_schema(), BatchKind::kLifetime, false);
    op->Push(0, Rows(0, 0, 120, kGap), rec);
    op->Push(1, Rows(1, 0, 90, kGap), rec);
    op->AdvanceTo({90 * kGap, 0}, rec);
    const std::string bytes = SnapshotOf(*op);
    std::unique_ptr<Operator> again = harness::Build(c, false, &holders);
    SnapshotReader r(bytes.data(), bytes.size());
    again->Restore(r);
    CQ_EXPECT_EQ(r.left(), 0u);
    CQ_EXPECT(SnapshotOf(*again) == bytes);
    Recorder a(op->output_schema(), BatchKind::kLifetime, false), b(op->output_schema(), BatchKind::kLifetime, false);
    for (auto* o : {op.get(), again.get()}) {
      Recorder& out = o == op.get() ? a : b;
      o->Push(0, Rows(0, 120, kRows, kGap), out);
      o->Push(1, Rows(1, 90, kRows, kGap), out);
      o->AdvanceTo(Time::Infinity(), out);
    }
    CQ_EXPECT(a.Tuples() == b.Tuples());
    CQ_EXPECT(!a.Tuples().empty());
    CQ_EXPECT(Bounded(op).Report() == dynamic_cast<const SwjBounded&>(*again).Report());
    // A damaged snapshot is refused.
    std::unique_ptr<Operator> third = harness::Build(c, false, &holders);
    SnapshotReader cut(bytes.data(), bytes.size() / 2);
    CQ_EXPECT_THROWS(third->Restore(cut), CqError);
  }
}

CQ_TEST(bounded_join_with_room_to_spare_gives_the_exact_rows) {
  // A tuple every 4,000 ticks per side and B above every window's content: nothing is dropped,
  // and query i's rows (lo ≤ i ≤ hi) are the exact join's (slice ≤ i).
  const OperatorCase c = Case("mqt", 1000);
  OperatorCase exact = c;
  exact.spec = c.spec.substr(0, c.spec.find(R"(, "bounded")")) + "}";
  HolderTable holders;
  std::unique_ptr<Operator> bounded = harness::Build(c, false, &holders);
  std::unique_ptr<Operator> plain = harness::Build(exact, false, &holders);
  Recorder got(bounded->output_schema(), BatchKind::kLifetime, false);
  Recorder want(plain->output_schema(), BatchKind::kLifetime, false);
  for (auto [op, rec] : {std::pair{bounded.get(), &got}, std::pair{plain.get(), &want}}) {
    op->Push(0, Rows(0, 0, kRows, 20), *rec);
    op->Push(1, Rows(1, 0, kRows, 20), *rec);
    op->AdvanceTo(Time::Infinity(), *rec);
  }
  const json::Value r = json::Parse(Bounded(bounded).Report());
  for (const json::Value& d : r["dropped"].array()) CQ_EXPECT_EQ(d.integer(), 0);
  for (int64_t q = 1; q <= static_cast<int64_t>(kWindows.size()); ++q) {
    std::vector<Recorder::Tuple> a, b;
    for (const Recorder::Tuple& t : got.Tuples()) {
      const size_t hi = t.values.rfind(','), lo = t.values.rfind(',', hi - 1);
      if (std::stoll(t.values.substr(lo + 1, hi - lo - 1)) <= q && q <= std::stoll(t.values.substr(hi + 1)))
        a.push_back({t.values.substr(0, lo), t.start, t.end});
    }
    for (const Recorder::Tuple& t : want.Tuples()) {
      const size_t comma = t.values.rfind(',');
      if (std::stoll(t.values.substr(comma + 1)) <= q) b.push_back({t.values.substr(0, comma), t.start, t.end});
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CQ_EXPECT(a == b);
    CQ_EXPECT(!a.empty());
  }
}

}  // namespace
}  // namespace cq::test
