// OrderedRuns on its own: runs sorted by time, added in any interleaving of their times, handed out
// merged once a time is reached. Checked against the definition (a stable sort of every row by time,
// ties in arrival order) for every merge the class has: one run, two, a few, and many (the k-way
// heap), with and without ε-steps, through Release and ReleaseEach.
#include <algorithm>
#include <tuple>

#include "lifetime/ordered_runs.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

const Schema kSchema = {{"v", TypeId::kInt64}};

// A stream batch whose value column names each row: run * 1000 + row.
Batch Run(int64_t run, const std::vector<Time>& times) {
  Batch b;
  b.schema = std::make_shared<const Schema>(kSchema);
  b.length = static_cast<int64_t>(times.size());
  I64s v, ticks, steps;
  bool any_steps = false;
  for (size_t i = 0; i < times.size(); ++i) {
    v.push_back(run * 1000 + static_cast<int64_t>(i));
    ticks.push_back(times[i].tick);
    steps.push_back(times[i].step);
    any_steps |= times[i].step != 0;
  }
  b.columns = {I64(v)};
  b.sync.ticks = I64(ticks).values;
  if (any_steps) b.sync.steps = I64(steps).values;
  return b;
}

using Out = std::vector<std::tuple<int64_t, int64_t, int64_t>>;  // (tick, step, value)

void Append(Out& out, const Batch& b, int64_t k) {
  const int64_t row = b.Physical(k);
  const Time t = b.StartAt(row);
  out.emplace_back(t.tick, t.step, b.columns[0].i64()[row]);
}

// Random runs, released at a few increasing times, the output against the definition. `runs` runs
// of up to 12 rows. With `inputs` 0 their times interleave freely (heartbeat batches); with 1 or 2
// each run continues one of that many sorted inputs, picked at random, from where it stopped or at
// the same time (an input pushed in chunks; two such inputs meet in a union).
void Check(uint64_t seed, size_t runs, bool steps, int inputs, bool each) {
  Rng rng(seed);
  OrderedRuns held;
  Out all;  // every row with its arrival rank, for the definition
  std::vector<std::tuple<Time, size_t, int64_t>> keyed;
  int64_t base[2] = {0, 0};
  for (size_t r = 0; r < runs; ++r) {
    std::vector<Time> times;
    const int64_t input = inputs == 2 ? rng.Below(2) : 0;
    int64_t t = inputs ? base[input] : rng.Below(4);
    const int64_t n = rng.Below(13);
    for (int64_t i = 0; i < n; ++i) {
      t += rng.Below(3);
      times.push_back({t, steps ? rng.Below(2) : 0});
    }
    // Times are sorted by (tick, step) inside a run.
    std::sort(times.begin(), times.end(), [](Time a, Time b) { return a < b; });
    if (!times.empty()) base[input] = times.back().tick;
    for (size_t i = 0; i < times.size(); ++i) keyed.emplace_back(times[i], r, static_cast<int64_t>(r * 1000 + i));
    held.Add(Run(static_cast<int64_t>(r), times));
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  Out got;
  for (Time next : {Time{3, 0}, Time{3, 1}, Time{9, 0}, Time{20, 1}, Time::Infinity()}) {
    if (each) {
      held.ReleaseEach(next, [&](const Batch& b, int64_t k) { Append(got, b, k); });
    } else {
      const Batch b = held.Release(next);
      for (int64_t k = 0; k < b.num_rows(); ++k) Append(got, b, k);
    }
    const size_t released = got.size();
    size_t expect = 0;
    while (expect < keyed.size() && std::get<0>(keyed[expect]) < next) ++expect;
    CQ_EXPECT_EQ(released, expect);
  }
  CQ_EXPECT(held.empty());
  Out want;
  for (const auto& [t, r, v] : keyed) want.emplace_back(t.tick, t.step, v);
  CQ_EXPECT(got == want);
}

CQ_TEST(ordered_runs_merge_any_number_of_runs_in_time_then_arrival_order) {
  for (size_t runs = 1; runs <= 9; ++runs)
    for (uint64_t seed = 1; seed <= 40; ++seed)
      for (bool steps : {false, true})
        for (int inputs : {0, 1, 2})
          for (bool each : {false, true}) Check(seed * 31 + runs, runs, steps, inputs, each);
}

}  // namespace
}  // namespace cq::test
