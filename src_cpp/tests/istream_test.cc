// The ISTREAM operator on its own, fed lifetime batches by hand: the constant-duration strategy,
// and the general one (materialized ends of any length, batches of different constant durations,
// ghosts, tuples that never end, selection vectors), which decides an instant once it is
// complete. Checked against the definition, as in engine_test.cc.
#include <algorithm>
#include <limits>
#include <map>

#include "operators/stream_difference.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

struct Collect final : Emitter {
  std::vector<Batch> batches;
  void Emit(Batch b) override { batches.push_back(b.Compact()); }
  void EmitEnds(EndBatch) override {}
  // "value@tick" per emitted row.
  std::vector<std::string> Rows() const {
    std::vector<std::string> out;
    for (const Batch& b : batches) {
      CQ_EXPECT(b.kind == BatchKind::kStream);
      for (int64_t i = 0; i < b.length; ++i)
        out.push_back(std::to_string(b.columns[0].i64()[i]) + "@" + std::to_string(b.sync.tick_data()[i]));
    }
    return out;
  }
};

struct Row {
  int64_t v;
  int64_t start;
  Time end;
  bool selected;  // false: deselected by an upstream filter; the row does not exist
};

const Schema kSchema = {{"v", TypeId::kInt64}};

// A lifetime batch of `rows`: ends materialized, or implicit when `constant` is set (then every
// row's end must be start + *constant).
Batch LifetimeBatch(const std::vector<Row>& rows, std::optional<Duration> constant) {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(kSchema);
  b.length = static_cast<int64_t>(rows.size());
  I64s v, start, end_ticks, end_steps;
  std::vector<uint32_t> sel;
  bool any_steps = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    v.push_back(rows[i].v);
    start.push_back(rows[i].start);
    end_ticks.push_back(rows[i].end.tick);
    end_steps.push_back(rows[i].end.step);
    any_steps |= rows[i].end.step != 0;
    if (rows[i].selected) sel.push_back(static_cast<uint32_t>(i));
  }
  b.columns = {I64(v)};
  b.sync.ticks = I64(start).values;
  if (constant) {
    b.constant_duration = constant;
  } else {
    b.other.ticks = I64(end_ticks).values;
    if (any_steps) b.other.steps = I64(end_steps).values;
  }
  if (sel.size() != rows.size()) {
    b.has_selection = true;
    b.selection = Buffer::Allocate(static_cast<int64_t>(sel.size()) * 4);
    std::copy(sel.begin(), sel.end(), b.selection.as<uint32_t>());
    b.selection_count = static_cast<int64_t>(sel.size());
  }
  return b;
}

// R(t) − R(t⁻) at every start instant t: the starts at t minus, as a bag, the ends at t. A ghost
// (end = start) is never in R, so it is neither emitted nor cancels anything.
std::vector<std::string> Reference(const std::vector<Row>& rows) {
  std::map<int64_t, std::vector<const Row*>> starts;
  std::map<Time, std::map<int64_t, int>> ends;
  for (const Row& r : rows) {
    if (!r.selected) continue;
    starts[r.start].push_back(&r);
    if (Time{r.start, 0} < r.end && !r.end.IsInfinite()) ++ends[r.end][r.v];
  }
  std::vector<std::string> out;
  for (const auto& [t, rs] : starts) {
    std::map<int64_t, int> ending = ends[Time{t, 0}];
    for (const Row* r : rs) {
      if (r->end == Time{t, 0}) continue;  // ghost
      if (ending[r->v] > 0) {
        --ending[r->v];
        continue;
      }
      out.push_back(std::to_string(r->v) + "@" + std::to_string(t));
    }
  }
  return out;
}

CQ_TEST(istream_materialized_ends_ghosts_and_never_ending_rows) {
  const Time inf = Time::Infinity();
  // 1 lives [0, 5); 2 never ends; 3 is a ghost at 5 and cancels nothing; at 5, 1 ends and starts
  // again (no insert); 4 lives [5, 5+ε) and so is not there at 6, where it starts anew.
  const std::vector<Row> rows = {{1, 0, {5, 0}, true}, {2, 0, inf, true},     {3, 5, {5, 0}, true},
                                 {1, 5, {9, 0}, true}, {3, 5, {7, 0}, true},  {4, 5, {5, 1}, true},
                                 {4, 6, {8, 0}, true}, {2, 6, {7, 0}, false}, {3, 7, {8, 0}, true}};
  CQ_EXPECT_EQ(Reference(rows), (std::vector<std::string>{"1@0", "2@0", "3@5", "4@5", "4@6"}));
  for (size_t cut : {size_t{1}, size_t{2}, size_t{4}, rows.size()}) {
    IStream op(kSchema, /*constant=*/false);
    Collect out;
    for (size_t from = 0; from < rows.size(); from += cut) {
      const std::vector<Row> part(rows.begin() + from, rows.begin() + std::min(rows.size(), from + cut));
      op.Push(0, LifetimeBatch(part, std::nullopt), out);
      op.AdvanceTo(Time{part.back().start, 0}, out);
    }
    // The last instant (7) is decided once it is complete.
    CQ_EXPECT(out.Rows().size() <= Reference(rows).size());
    op.AdvanceTo(Time::Infinity(), out);
    CQ_EXPECT_EQ("cut " + std::to_string(cut) + ": " + Show(out.Rows()),
                 "cut " + std::to_string(cut) + ": " + Show(Reference(rows)));
    CQ_EXPECT_EQ(op.retained_rows(), 0);
  }
}

CQ_TEST(istream_constant_duration_releases_rows_once_they_cannot_cancel) {
  // [Range 3] over starts 0..9: progress p lets go of the rows that ended before p; those ending
  // exactly at p stay, since a start may still come at p.
  IStream op(kSchema, /*constant=*/true);
  Collect out;
  std::vector<Row> rows;
  for (int64_t t = 0; t < 10; ++t) rows.push_back({t % 2, t, {t + 3, 0}, true});
  op.Push(0, LifetimeBatch(std::vector<Row>(rows.begin(), rows.begin() + 4), Duration::Ticks(3)), out);
  op.Push(0, LifetimeBatch(std::vector<Row>(rows.begin() + 4, rows.end()), Duration::Ticks(3)), out);
  // Starts come in order, so rows ending before the latest start (9) can cancel nothing any more
  // even without progress: only starts 6..9 (ending at 9..12) are kept.
  CQ_EXPECT_EQ(op.retained_rows(), 4);
  op.AdvanceTo(Time{9, 0}, out);
  CQ_EXPECT_EQ(op.retained_rows(), 4);
  op.AdvanceTo(Time{12, 0}, out);
  CQ_EXPECT_EQ(op.retained_rows(), 1);
  op.AdvanceTo(Time::Infinity(), out);
  CQ_EXPECT_EQ(op.retained_rows(), 0);
  // The value ending at t started at t - 3, of the other parity: nothing is cancelled.
  CQ_EXPECT_EQ(out.Rows(), Reference(rows));
  CQ_EXPECT_EQ(out.Rows().size(), 10);
}

CQ_TEST(istream_general_strategy_mixes_constant_and_other_lifetimes) {
  // Constant [Range 3] batches first, then lifetimes of other lengths (a union of windows): the
  // rows alive from the first batches keep their ends (start + 3) and cancel starts at them.
  IStream op(kSchema, /*constant=*/false);
  Collect out;
  std::vector<Row> all;
  auto push = [&](const std::vector<Row>& rows, std::optional<Duration> d) {
    op.Push(0, LifetimeBatch(rows, d), out);
    all.insert(all.end(), rows.begin(), rows.end());
  };
  push({{1, 0, {3, 0}, true}, {2, 1, {4, 0}, true}, {3, 1, {4, 0}, false}}, Duration::Ticks(3));
  push({{1, 2, {5, 0}, true}, {2, 2, {5, 0}, true}}, Duration::Ticks(3));
  // The switch, inside no instant: 1 (from 0) ends at 3, 2 (from 1) at 4, 1 and 2 (from 2) at 5.
  push({{1, 3, {10, 0}, true}, {2, 4, {4, 0}, true}, {2, 4, {6, 0}, true}}, std::nullopt);
  // Another constant duration: still the heap. At 5 the 1 and one 2 from 2 are cancelled; at 6
  // the 1 from 5 ends as a 1 starts.
  push({{1, 5, {6, 0}, true}, {2, 5, {6, 0}, true}, {2, 5, {6, 0}, true}, {1, 6, {7, 0}, true}}, Duration::Ticks(1));
  op.AdvanceTo(Time::Infinity(), out);
  CQ_EXPECT_EQ(out.Rows(), Reference(all));
  CQ_EXPECT_EQ(out.Rows(), (std::vector<std::string>{"1@0", "2@1", "1@2", "2@2", "2@5"}));
}

CQ_TEST(istream_matches_the_reference_on_random_lifetimes) {
  Rng rng(9);
  for (int round = 0; round < 40; ++round) {
    // Batches of random size; the first `constant_batches` use [Range 3], the rest any lifetime.
    const int64_t constant_batches = rng.Below(4);
    const int64_t nbatches = constant_batches + 1 + rng.Below(6);
    IStream op(kSchema, /*constant=*/false);
    Collect out;
    std::vector<Row> all;
    int64_t t = 0;
    for (int64_t k = 0; k < nbatches; ++k) {
      const bool constant = k < constant_batches;
      std::vector<Row> rows;
      const int64_t n = 1 + rng.Below(k % 3 == 0 ? 70 : 6);
      for (int64_t i = 0; i < n; ++i) {
        t += std::vector<int64_t>{0, 0, 1, 1, 2}[rng.Below(5)];
        Time end;
        if (constant) {
          end = Time{t + 3, 0};
        } else {
          switch (rng.Below(6)) {
            case 0: end = Time{t, 0}; break;        // ghost
            case 1: end = Time::Infinity(); break;  // never ends
            case 2: end = Time{t, 1}; break;        // [Now]
            default: end = Time{t + 1 + rng.Below(4), 0};
          }
        }
        rows.push_back({rng.Below(3), t, end, rng.Below(5) != 0});
      }
      op.Push(0, LifetimeBatch(rows, constant ? std::optional(Duration::Ticks(3)) : std::nullopt), out);
      all.insert(all.end(), rows.begin(), rows.end());
      // Progress as the engine reports it: the latest start, sometimes a little beyond.
      if (rng.Below(3) == 0) {
        t += rng.Below(2);
        op.AdvanceTo(Time{t, 0}, out);
      }
    }
    op.AdvanceTo(Time::Infinity(), out);
    const std::string tag = "round " + std::to_string(round) + ": ";
    CQ_EXPECT_EQ(tag + Show(out.Rows()), tag + Show(Reference(all)));
    CQ_EXPECT_EQ(tag + std::to_string(op.retained_rows()), tag + "0");
  }
}

}  // namespace
}  // namespace cq::test

namespace cq::test {
namespace {

CQ_TEST(istream_cancels_many_rows_against_many_as_bags_of_floats) {
  // Five rows end at 1 as five start there: the plain path hashes them and compares rows whose
  // hashes agree. -0.0 cancels 0.0 and NaN cancels NaN, once each, as RowEqual has it; a second
  // NaN and 3.5 are new. Both column orders: the float first, and behind an equal integer.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const bool float_first : {false, true}) {
    const Field k{"k", TypeId::kInt64}, v{"v", TypeId::kFloat64};
    const Schema schema = float_first ? Schema{v, k} : Schema{k, v};
    const size_t fc = float_first ? 0 : 1;
    auto batch = [&](const std::vector<double>& values, int64_t start, int64_t end) {
      Batch b;
      b.kind = BatchKind::kLifetime;
      b.schema = std::make_shared<const Schema>(schema);
      b.length = static_cast<int64_t>(values.size());
      Column ks = I64(I64s(values.size(), 7)), vs = F64(F64s(values.begin(), values.end()));
      b.columns = float_first ? Columns{vs, ks} : Columns{ks, vs};
      b.sync.ticks = I64(I64s(values.size(), start)).values;
      b.other.ticks = I64(I64s(values.size(), end)).values;
      return b;
    };
    IStream op(schema, /*constant=*/false);
    Collect out;
    op.Push(0, batch({0.0, nan, 1.5, 2.5, 1.5}, 0, 1), out);
    op.Push(0, batch({-0.0, nan, nan, 1.5, 3.5}, 1, 2), out);
    op.AdvanceTo(Time::Infinity(), out);
    std::vector<std::string> at1;
    for (const Batch& b : out.batches)
      for (int64_t i = 0; i < b.length; ++i)
        if (b.sync.tick_data()[i] == 1) at1.push_back(std::to_string(b.columns[fc].f64()[i]));
    CQ_EXPECT_EQ(
        std::string(float_first ? "float first: " : "int first: ") + Show(at1),
        std::string(float_first ? "float first: " : "int first: ") + Show(std::vector<std::string>{"nan", "3.500000"}));
  }
}

CQ_TEST(istream_cancels_against_more_than_64_ending_rows_in_pieces) {
  // 150 rows end at 1 and 200 start there, in shuffled orders, so that a start's equal ends lie in
  // any of the pieces of 64 the plain path takes them in, and a value ends more times than it
  // starts or fewer. Checked against the definition.
  Rng rng(3);
  std::vector<Row> ending, starting;
  for (int64_t i = 0; i < 150; ++i) ending.push_back({(i * 37) % 50, 0, Time{1, 0}, true});
  for (int64_t i = 0; i < 200; ++i) starting.push_back({rng.Below(60), 1, Time{2, 0}, true});
  IStream op(kSchema, /*constant=*/false);
  Collect out;
  op.Push(0, LifetimeBatch(ending, std::nullopt), out);
  op.Push(0, LifetimeBatch(starting, std::nullopt), out);
  op.AdvanceTo(Time::Infinity(), out);
  std::vector<Row> all = ending;
  all.insert(all.end(), starting.begin(), starting.end());
  std::vector<std::string> got = out.Rows(), want = Reference(all);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  const auto at1 = std::count_if(want.begin(), want.end(), [](const std::string& r) { return r.ends_with("@1"); });
  CQ_EXPECT(at1 > 0 && at1 < 200);  // some starts cancelled, some not
  CQ_EXPECT_EQ(Show(got), Show(want));
}

}  // namespace
}  // namespace cq::test
