// cq::Engine driven as the binding drives it: a plan in the planner's JSON, batches through the
// Arrow bridge (the last column is the int64 timestamp), results drained from the query sink.
//
// ISTREAM is checked against a reference model of its definition (SEMANTICS.md §4.3): at each
// instant t it emits the rows starting at t minus, as a bag, the rows ending at t. The engine has
// several code paths for this (distinct ticks, runs of equal ticks, the general per-row path, batch
// boundaries inside an instant), so the same input is pushed under many batchings and must give the
// same output every time.
#include <map>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

// ---- plans ------------------------------------------------------------------------------------

// Windows as the planner writes them (cq_py/planner/planner.py, _window).
std::string Range(int64_t ticks) { return R"("kind": "range", "range": {"ticks": )" + std::to_string(ticks) + "}"; }
const std::string kNow = R"("kind": "now")";
const std::string kUnbounded = R"("kind": "unbounded")";

// WHERE a % 3 <> 0 (NULL for a NULL a, so such rows never pass).
const std::string kAModThreeNotZero =
    R"({"kind": "call", "fn": "not_equal", "type": "bool", "args": [
         {"kind": "call", "fn": "modulo", "type": "int64", "args": [
           {"kind": "column", "index": 0, "type": "int64"}, {"kind": "literal", "type": "int64", "value": 3}]},
         {"kind": "literal", "type": "int64", "value": 0}]})";

// The operators the planner emits for
//   REGISTER STREAM s(a INT, b VARCHAR);
//   REGISTER QUERY q AS [ISTREAM(] SELECT a, b FROM s [window] [WHERE predicate] [)];
std::string Plan(const std::string& window, const std::string& predicate, bool istream, bool expose_steps = false) {
  std::string ops =
      R"({"id": 0, "op": "stream_scan", "inputs": [], "stream": "s", "schema": [["a", "int64"], ["b", "utf8"]]})";
  ops += R"(, {"id": 1, "op": "window", "inputs": [0], )" + window + "}";
  int last = 1;
  if (!predicate.empty()) {
    ops += R"(, {"id": 2, "op": "filter", "inputs": [1], "predicate": )" + predicate + "}";
    last = 2;
  }
  ops += R"(, {"id": 3, "op": "project", "inputs": [)" + std::to_string(last) + R"(], "names": ["a", "b"], "exprs": [
            {"kind": "column", "index": 0, "type": "int64"}, {"kind": "column", "index": 1, "type": "utf8"}]})";
  last = 3;
  if (istream) {
    ops += R"(, {"id": 4, "op": "istream", "inputs": [3], "lifetime": "constant"})";
    last = 4;
  }
  ops += R"(, {"id": 5, "op": "sink", "inputs": [)" + std::to_string(last) + R"(], "query": "q", "expose_steps": )" +
         (expose_steps ? "true" : "false") + "}";
  return R"({"operators": [)" + ops + "]}";
}

std::unique_ptr<Engine> MakeEngine(const std::string& plan) {
  auto e = std::make_unique<Engine>(EngineOptions{});
  e->AddPlan(plan);
  return e;
}

// ---- input and output -------------------------------------------------------------------------

struct Input {
  I64s a;
  Strs b;
  std::vector<int64_t> ts;
};

ImportedBatch Slice(const Input& in, size_t from, size_t to) {
  I64s a(in.a.begin() + from, in.a.begin() + to);
  Strs b(in.b.begin() + from, in.b.begin() + to);
  I64s ts(in.ts.begin() + from, in.ts.begin() + to);
  return MakeBatch({"a", "b", "ts"}, {I64(a), Str(b), I64(ts)}, static_cast<int64_t>(to - from));
}

// Pushes `in` cut into batches of the given sizes (cycled; 0 = all the rest), either one Push per
// batch or all batches in one Push.
void PushAll(Engine& e, const Input& in, const std::vector<size_t>& sizes, bool one_push = false) {
  std::vector<ImportedBatch> batches;
  size_t k = 0;
  for (size_t from = 0; from < in.ts.size(); ++k) {
    const size_t size = sizes[k % sizes.size()];
    const size_t to = size == 0 ? in.ts.size() : std::min(in.ts.size(), from + size);
    batches.push_back(Slice(in, from, to));
    from = to;
  }
  if (one_push) {
    e.Push("s", std::move(batches));
  } else {
    for (ImportedBatch& b : batches) {
      std::vector<ImportedBatch> one;
      one.push_back(std::move(b));
      e.Push("s", std::move(one));
    }
  }
}

std::string Cell(const Column& c, int64_t i) {
  if (c.type == TypeId::kNull || !c.IsValid(i)) return "NULL";
  switch (c.type) {
    case TypeId::kInt64: return std::to_string(c.i64()[i]);
    case TypeId::kFloat64: return Show(c.f64()[i]);
    case TypeId::kUtf8: return "'" + std::string(c.StrAt(i)) + "'";
    case TypeId::kBool: return c.BoolAt(i) ? "TRUE" : "FALSE";
    case TypeId::kNull: break;
  }
  return "NULL";
}

// Drained rows as "a|b|ts" (stream) or "a|b|start|end" (relation).
std::vector<std::string> Drain(Engine& e, const std::string& query = "q") {
  std::vector<std::string> rows;
  for (const OutputChunk& chunk : e.Drain(query)) {
    for (int64_t i = 0; i < chunk.length; ++i) {
      std::string row;
      for (size_t c = 0; c < chunk.columns.size(); ++c) {
        CQ_EXPECT_EQ(chunk.columns[c].length, chunk.length);
        if (c) row += '|';
        row += Cell(chunk.columns[c], i);
      }
      rows.push_back(row);
    }
  }
  return rows;
}

std::string Row(std::optional<int64_t> a, std::optional<std::string> b, int64_t ts) {
  return (a ? std::to_string(*a) : "NULL") + "|" + (b ? "'" + *b + "'" : "NULL") + "|" + std::to_string(ts);
}

// The reference: ISTREAM(SELECT a, b FROM s [Range d] WHERE pred), d > 0 finite, by definition.
std::vector<std::string> ReferenceIStream(const Input& in, int64_t d, bool filter) {
  auto passes = [&](size_t i) { return !filter || (in.a[i] && *in.a[i] % 3 != 0); };
  std::map<int64_t, std::vector<std::string>> by_ts;  // passing rows' values, per start
  for (size_t i = 0; i < in.ts.size(); ++i)
    if (passes(i)) by_ts[in.ts[i]].push_back(Row(in.a[i], in.b[i], 0));
  std::vector<std::string> out;
  for (const auto& [t, starts] : by_ts) {
    std::map<std::string, int> ending;  // R(t⁻) − R(t): the rows whose lifetime [t - d, t) ends now
    if (auto it = by_ts.find(t - d); it != by_ts.end())
      for (const std::string& v : it->second) ++ending[v];
    for (const std::string& v : starts) {
      if (ending[v] > 0) {
        --ending[v];
        continue;
      }
      out.push_back(v.substr(0, v.size() - 1) + std::to_string(t));
    }
  }
  return out;
}

// Few distinct values (so that ends and starts often match), some NULLs, runs of equal timestamps
// when `runs`, strictly increasing timestamps otherwise.
Input RandomInput(Rng& rng, size_t n, bool runs) {
  Input in;
  int64_t t = rng.Below(5);
  static const std::vector<std::optional<std::string>> kB = {"x", "y", N};
  for (size_t i = 0; i < n; ++i) {
    in.a.push_back(rng.Below(12) == 0 ? std::optional<int64_t>() : rng.Below(4));
    in.b.push_back(kB[rng.Below(3)]);
    in.ts.push_back(t);
    t += runs ? std::vector<int64_t>{0, 0, 0, 1, 1, 2, 5}[rng.Below(7)] : 1 + rng.Below(3);
  }
  return in;
}

// ---- ISTREAM ----------------------------------------------------------------------------------

CQ_TEST(istream_over_range_emits_the_rows_that_pass_the_filter) {
  auto e = MakeEngine(Plan(Range(10), kAModThreeNotZero, true));
  CQ_EXPECT_EQ(e->OutputSchema("q").size(), 3);
  CQ_EXPECT_EQ(e->OutputSchema("q")[2].name, "ts");
  Input in{{1, 3, 4, N, 5, 6}, {"p", "q", N, "r", "s", "t"}, {0, 1, 1, 2, 3, 4}};
  PushAll(*e, in, {0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'p'|0", "4|NULL|1", "5|'s'|3"}));
  e->Close();
  CQ_EXPECT(Drain(*e).empty());
}

CQ_TEST(istream_does_not_emit_a_value_that_ends_and_starts_at_the_same_instant) {
  // [Range 10]: ⟨7, 'v'⟩ at 0 lives [0, 10); again at 10 it is in R(10) and in R(10⁻): no insert.
  // At 20 the row from 10 ends as the one at 20 starts: again nothing. At 35, a new insert.
  Input in{{7, 7, 7, 7}, {"v", "v", "v", "v"}, {0, 10, 20, 35}};
  auto e = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e, in, {0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"7|'v'|0", "7|'v'|35"}));
  // One tick later it is a new insert: [0, 10) has ended before 11.
  auto e2 = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e2, Input{{7, 7}, {"v", "v"}, {0, 11}}, {0});
  CQ_EXPECT_EQ(Drain(*e2), (std::vector<std::string>{"7|'v'|0", "7|'v'|11"}));
  // A different value at the same instant is an insert; NULLs compare equal (bag semantics).
  auto e3 = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e3, Input{{7, N, 8, N}, {"v", N, "v", N}, {0, 0, 10, 10}}, {0});
  CQ_EXPECT_EQ(Drain(*e3), (std::vector<std::string>{"7|'v'|0", "NULL|NULL|0", "8|'v'|10"}));
}

CQ_TEST(an_advance_to_a_later_step_is_progress_at_that_step_only) {
  // Inputs sit at step 0: after Advance({-5, 1}) a push at tick 10 makes the progress (10, 0), not
  // (10, 1), so the rows ending at 10 still cancel equal rows pushed later at 10.
  auto e = MakeEngine(Plan(Range(10), "", true));
  e->Advance({-5, 1});
  for (const Input& in : {Input{{1}, {"v"}, {0}}, Input{{2}, {"v"}, {10}}, Input{{1}, {"v"}, {10}}})
    PushAll(*e, in, {0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'v'|0", "2|'v'|10"}));
  // After Advance({10, 1}) nothing at tick 10 may come any more: (10, 0) is below (10, 1).
  auto e2 = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e2, Input{{1}, {"v"}, {0}}, {0});
  e2->Advance({10, 1});
  CQ_EXPECT_THROWS(PushAll(*e2, Input{{1}, {"v"}, {10}}, {0}), CqError);
  PushAll(*e2, Input{{1}, {"v"}, {11}}, {0});
  CQ_EXPECT_EQ(Drain(*e2), (std::vector<std::string>{"1|'v'|0", "1|'v'|11"}));
}

CQ_TEST(istream_bag_difference_counts_duplicates) {
  // Two copies start at 0; at 10 both end and three start: one insert.
  Input in{{1, 1, 1, 1, 1}, {"v", "v", "v", "v", "v"}, {0, 0, 10, 10, 10}};
  for (const std::vector<size_t>& sizes : std::vector<std::vector<size_t>>{{0}, {1}, {2}, {3, 1}}) {
    auto e = MakeEngine(Plan(Range(10), "", true));
    PushAll(*e, in, sizes);
    CQ_EXPECT_EQ(Show(sizes) + Show(Drain(*e)),
                 Show(sizes) + Show(std::vector<std::string>{"1|'v'|0", "1|'v'|0", "1|'v'|10"}));
  }
}

CQ_TEST(istream_same_result_across_batch_boundaries_inside_equal_timestamp_runs) {
  // Runs of equal timestamps, the filter, and ends matching starts, cut every way.
  Input in{{1, 2, 1, 1, 2, 3, 1, 2, 1, 5},
           {"x", "x", "x", "y", "x", "x", "x", "x", "y", "x"},
           {0, 0, 0, 5, 5, 5, 10, 10, 10, 15}};
  const std::vector<std::string> want = ReferenceIStream(in, 10, true);
  // ⟨3,'x'⟩ is filtered out. At 10, a ⟨1,'x'⟩ and the ⟨2,'x'⟩ of 0 end as copies start: only ⟨1,'y'⟩
  // is inserted; at 15 the rows of 5 end, and ⟨5,'x'⟩ is new.
  CQ_EXPECT_EQ(
      want, (std::vector<std::string>{"1|'x'|0", "2|'x'|0", "1|'x'|0", "1|'y'|5", "2|'x'|5", "1|'y'|10", "5|'x'|15"}));
  for (const std::vector<size_t>& sizes :
       std::vector<std::vector<size_t>>{{0}, {1}, {2}, {3}, {4}, {7}, {1, 2}, {2, 5}, {8, 1}}) {
    for (bool one_push : {false, true}) {
      auto e = MakeEngine(Plan(Range(10), kAModThreeNotZero, true));
      PushAll(*e, in, sizes, one_push);
      const std::string tag = "sizes " + Show(sizes) + (one_push ? " in one push: " : ": ");
      CQ_EXPECT_EQ(tag + Show(Drain(*e)), tag + Show(want));
    }
  }
}

CQ_TEST(istream_matches_the_reference_on_random_input) {
  Rng rng(42);
  int cases = 0;
  for (bool runs : {true, false}) {
    for (int64_t d : {1, 2, 3, 10}) {
      for (bool filter : {false, true}) {
        const Input in = RandomInput(rng, 300, runs);
        const std::vector<std::string> want = ReferenceIStream(in, d, filter);
        for (const std::vector<size_t>& sizes :
             std::vector<std::vector<size_t>>{{0}, {1}, {7}, {64}, {100, 3, 1}, {13, 50}}) {
          auto e = MakeEngine(Plan(Range(d), filter ? kAModThreeNotZero : "", true));
          PushAll(*e, in, sizes);
          e->Close();
          const std::string tag = std::string(runs ? "runs" : "increasing") + " d=" + std::to_string(d) +
                                  (filter ? " filtered" : "") + " sizes " + Show(sizes) + ": ";
          CQ_EXPECT_EQ(tag + Show(Drain(*e)), tag + Show(want));
          ++cases;
        }
      }
    }
  }
  CQ_EXPECT_EQ(cases, 96);
}

CQ_TEST(istream_with_advances_between_pushes) {
  // Advance() promises no input below t; the instant at t itself stays open.
  Input in{{1, 1, 1, 1}, {"v", "v", "v", "v"}, {0, 10, 10, 25}};
  auto e = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e, Input{{1}, {"v"}, {0}}, {0});
  e->Advance(Time{10, 0});
  PushAll(*e, Input{{1, 1}, {"v", "v"}, {10, 10}}, {1});
  e->Advance(Time{15, 0});
  PushAll(*e, Input{{1}, {"v"}, {25}}, {0});
  CQ_EXPECT_EQ(Drain(*e), ReferenceIStream(in, 10, false));
  CQ_EXPECT_EQ(Drain(*e).size(), 0);  // drained
  // A push below an advance is rejected.
  CQ_EXPECT_THROWS(PushAll(*e, Input{{1}, {"v"}, {24}}, {0}), CqError);
}

CQ_TEST(istream_over_a_ghost_window_emits_nothing) {
  auto e = MakeEngine(Plan(Range(0), "", true));
  Input in{{1, 2, 2, 3}, {"a", "b", "b", "c"}, {1, 2, 2, 3}};
  PushAll(*e, in, {1});
  PushAll(*e, Input{{4}, {"d"}, {7}}, {0});
  e->Close();
  CQ_EXPECT(Drain(*e).empty());
}

CQ_TEST(istream_over_now_and_unbounded_emits_every_row) {
  // Nothing ends at an input instant: [Now] ends one ε-step later, unbounded never.
  Input in{{1, 1, 1}, {"v", "v", "v"}, {0, 0, 1}};
  for (const std::string& w : {kNow, kUnbounded}) {
    auto e = MakeEngine(Plan(w, "", true));
    PushAll(*e, in, {1});
    CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'v'|0", "1|'v'|0", "1|'v'|1"}));
  }
}

// ---- relation output --------------------------------------------------------------------------

CQ_TEST(relation_output_has_start_and_end) {
  Input in{{1, 2, 3}, {"x", N, "z"}, {0, 4, 9}};
  {
    auto e = MakeEngine(Plan(Range(10), kAModThreeNotZero, false));
    const Schema& s = e->OutputSchema("q");
    CQ_ASSERT(s.size() == 4);
    CQ_EXPECT_EQ(s[2].name, "start");
    CQ_EXPECT_EQ(s[3].name, "end");
    PushAll(*e, in, {0});
    CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|0|10", "2|NULL|4|14"}));
  }
  {
    // [Range Unbounded]: the end is NULL (still alive at close).
    auto e = MakeEngine(Plan(kUnbounded, "", false));
    PushAll(*e, in, {2});
    e->Close();
    CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|0|NULL", "2|NULL|4|NULL", "3|'z'|9|NULL"}));
  }
  {
    // [Now] with the ε-steps exposed: [t, t+ε).
    auto e = MakeEngine(Plan(kNow, "", false, /*expose_steps=*/true));
    CQ_EXPECT_EQ(e->OutputSchema("q").size(), 6);
    PushAll(*e, in, {0});
    CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|0|0|0|1", "2|NULL|4|4|0|1", "3|'z'|9|9|0|1"}));
  }
}

// ---- input validation -------------------------------------------------------------------------

CQ_TEST(decreasing_timestamps_throw_with_the_row_and_change_nothing) {
  const std::string plan = Plan(Range(10), "", true);
  auto e = MakeEngine(plan);
  auto reference = MakeEngine(plan);
  PushAll(*e, Input{{1, 2}, {"x", "x"}, {0, 5}}, {0});
  PushAll(*reference, Input{{1, 2}, {"x", "x"}, {0, 5}}, {0});

  // Inside one batch: row 2 goes back in time.
  auto err = CQ_CATCH(PushAll(*e, Input{{1, 1, 1}, {"x", "x", "x"}, {6, 9, 8}}, {0}));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->kind(), ErrorKind::kInput);
  CQ_EXPECT_EQ(err->row(), 2);
  CQ_EXPECT_EQ(err->stream(), "s");
  CQ_EXPECT(std::string(err->what()).find("row 2") != std::string::npos);
  // Across batches of one push: the row index counts from the push's first row, and the valid
  // first batch does not run either.
  err = CQ_CATCH(PushAll(*e, Input{{1, 1, 1, 1}, {"x", "x", "x", "x"}, {10, 10, 12, 11}}, {2}, /*one_push=*/true));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->row(), 3);
  // Below the stream's progress (its latest timestamp), at the first row of a push.
  err = CQ_CATCH(PushAll(*e, Input{{1}, {"x"}, {4}}, {0}));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->row(), 0);
  CQ_EXPECT(std::string(err->what()).find("progress") != std::string::npos);
  // A NULL timestamp.
  {
    std::vector<ImportedBatch> bad;
    bad.push_back(MakeBatch({"a", "b", "ts"}, {I64({1, 1}), Str({"x", "x"}), I64({7, N})}, 2));
    err = CQ_CATCH(e->Push("s", std::move(bad)));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT_EQ(err->row(), 1);
  }
  CQ_EXPECT(Drain(*e) == Drain(*reference));

  // The engine is as if the bad pushes never happened: the same later input gives the same output.
  const Input later{{1, 2, 1}, {"x", "x", "x"}, {5, 10, 15}};
  PushAll(*e, later, {1});
  PushAll(*reference, later, {1});
  e->Close();
  reference->Close();
  const std::vector<std::string> got = Drain(*e);
  CQ_EXPECT_EQ(got, Drain(*reference));
  // ⟨1,'x'⟩ at 15 is cancelled by the one from 5 ending.
  CQ_EXPECT_EQ(got, (std::vector<std::string>{"1|'x'|5", "2|'x'|10"}));
}

CQ_TEST(check_throws_what_push_would_and_runs_nothing) {
  auto e = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e, Input{{1}, {"x"}, {5}}, {0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|5"}));
  auto batch = [](std::vector<int64_t> ts) {
    std::vector<ImportedBatch> b;
    I64s a(ts.size(), 1), t(ts.begin(), ts.end());
    Strs s(ts.size(), "y");
    b.push_back(MakeBatch({"a", "b", "ts"}, {I64(a), Str(s), I64(t)}, static_cast<int64_t>(ts.size())));
    return b;
  };
  e->Check("s", batch({5, 6, 7}));  // fine: nothing runs
  CQ_EXPECT(Drain(*e).empty());
  auto err = CQ_CATCH(e->Check("s", batch({6, 4})));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->row(), 1);
  // The row numbers of a part of a larger push: messages name the whole push's rows.
  const int64_t rows[] = {10, 12};
  err = CQ_CATCH(e->Check("s", batch({6, 4}), true, rows));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->row(), 12);
  CQ_EXPECT(std::string(err->what()).find("row 12") != std::string::npos);
  CQ_EXPECT_THROWS(e->Check("nope", batch({6})), CqError);
  // The engine is as it was: a push from ts 5 on is taken, and nothing of the checked rows ran.
  PushAll(*e, Input{{2}, {"z"}, {5}}, {0});
  e->Close();
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"2|'z'|5"}));
  CQ_EXPECT_THROWS(e->Check("s", batch({20})), CqError);  // closed
}

CQ_TEST(advance_input_completes_the_instants_below_it_for_that_input_only) {
  // Two streams read by one query: an instant completes when both inputs have passed it.
  const std::string plan = R"({"operators": [
      {"id": 0, "op": "stream_scan", "inputs": [], "stream": "s", "schema": [["a", "int64"], ["b", "utf8"]]},
      {"id": 1, "op": "stream_scan", "inputs": [], "stream": "t", "schema": [["a", "int64"], ["b", "utf8"]]},
      {"id": 2, "op": "window", "inputs": [0], "kind": "now"},
      {"id": 3, "op": "window", "inputs": [1], "kind": "now"},
      {"id": 4, "op": "union_all", "inputs": [2, 3]},
      {"id": 5, "op": "istream", "inputs": [4], "lifetime": "general"},
      {"id": 6, "op": "sink", "inputs": [5], "query": "q", "expose_steps": false}]})";
  auto e = MakeEngine(plan);
  PushAll(*e, Input{{1}, {"x"}, {3}}, {0});
  e->AdvanceInput("s", Time{8, 0});
  CQ_EXPECT(Drain(*e).empty());  // t is still at -∞
  e->AdvanceInput("t", Time{4, 0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|3"}));
  // t may still have rows from 4 on, s only from 8 on: AdvanceInput is per input, not Advance.
  std::vector<ImportedBatch> late;
  late.push_back(MakeBatch({"a", "b", "ts"}, {I64({2}), Str({"y"}), I64({5})}, 1));
  e->Push("t", std::move(late));
  late.clear();
  late.push_back(MakeBatch({"a", "b", "ts"}, {I64({2}), Str({"y"}), I64({5})}, 1));
  auto err = CQ_CATCH(e->Push("s", std::move(late)));
  CQ_EXPECT(err && err->kind() == ErrorKind::kInput);
  e->AdvanceInput("s", Time{2, 0});  // behind: nothing
  e->AdvanceInput("t", Time{9, 0});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"2|'y'|5"}));
}

CQ_TEST(wrong_column_count_or_type_throws) {
  auto e = MakeEngine(Plan(Range(10), "", true));
  auto push = [&](std::vector<std::string> names, std::vector<Column> cols) {
    std::vector<ImportedBatch> b;
    b.push_back(MakeBatch(names, cols, cols[0].length));
    e->Push("s", std::move(b));
  };
  // No timestamp column.
  auto err = CQ_CATCH(push({"a", "b"}, {I64({1}), Str({"x"})}));
  CQ_EXPECT(err && err->kind() == ErrorKind::kInput);
  // One column too many.
  CQ_EXPECT_THROWS(push({"a", "b", "c", "ts"}, {I64({1}), Str({"x"}), I64({1}), I64({0})}), CqError);
  // A float64 where the stream has an int64.
  err = CQ_CATCH(push({"a", "b", "ts"}, {F64({1.0}), Str({"x"}), I64({0})}));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT(std::string(err->what()).find("'a'") != std::string::npos);
  // A timestamp that is not int64 ticks.
  CQ_EXPECT_THROWS(push({"a", "b", "ts"}, {I64({1}), Str({"x"}), F64({0.0})}), CqError);
  // A column of the null type stands for an all-NULL column of the stream's type.
  push({"a", "b", "ts"}, {I64({1, 2}), Column::Nulls(TypeId::kNull, 2), I64({3, 4})});
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|NULL|3", "2|NULL|4"}));
}

CQ_TEST(push_after_close_and_to_an_unknown_stream_throw) {
  auto e = MakeEngine(Plan(Range(10), "", true));
  PushAll(*e, Input{{1}, {"x"}, {0}}, {0});
  auto err = CQ_CATCH(e->Push("nope", {}));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT_EQ(err->kind(), ErrorKind::kInput);
  CQ_EXPECT_EQ(err->stream(), "nope");
  CQ_EXPECT(std::string(err->what()).find("registered streams: s") != std::string::npos);
  CQ_EXPECT_EQ(Drain(*e), (std::vector<std::string>{"1|'x'|0"}));
  e->Close();
  CQ_EXPECT(e->closed());
  e->Close();  // idempotent
  err = CQ_CATCH(PushAll(*e, Input{{1}, {"x"}, {5}}, {0}));
  CQ_EXPECT(err && err->kind() == ErrorKind::kInput);
  CQ_EXPECT_THROWS(e->Advance(Time{100, 0}), CqError);
  CQ_EXPECT_THROWS(e->AddPlan(Plan(Range(10), "", true)), CqError);
  // Unknown queries are the user's (semantic) error.
  err = CQ_CATCH(e->Drain("nope"));
  CQ_EXPECT(err && err->kind() == ErrorKind::kSemantic);
}

CQ_TEST(a_rejected_plan_adds_nothing) {
  Engine e(EngineOptions{});
  // The fragment registers stream s, then fails on an unknown operator.
  auto err = CQ_CATCH(e.AddPlan(R"({"operators": [
      {"id": 0, "op": "stream_scan", "inputs": [], "stream": "s", "schema": [["a", "int64"], ["b", "utf8"]]},
      {"id": 1, "op": "no_such_operator", "inputs": [0]}]})"));
  CQ_EXPECT(err && err->kind() == ErrorKind::kInternal);
  CQ_EXPECT(e.Queries().empty());
  CQ_EXPECT_THROWS(PushAll(e, Input{{1}, {"x"}, {0}}, {0}), CqError);  // s does not exist
  // So the whole plan, stream s included, can be added afterwards.
  e.AddPlan(Plan(Range(10), "", true));
  CQ_EXPECT_EQ(e.Queries(), (std::vector<std::string>{"q"}));
  PushAll(e, Input{{1}, {"x"}, {0}}, {0});
  CQ_EXPECT_EQ(Drain(e), (std::vector<std::string>{"1|'x'|0"}));
  // Registering s (or q) twice is rejected.
  CQ_EXPECT_THROWS(e.AddPlan(Plan(Range(10), "", true)), CqError);
  CQ_EXPECT(e.Explain().find("IStream") != std::string::npos);
}

// A second query r over q's ISTREAM (operator 4), as a later script registers it.
const std::string kReader = R"({"operators": [
    {"id": 6, "op": "filter", "inputs": [4], "predicate": )" +
                            kAModThreeNotZero + R"(},
    {"id": 7, "op": "sink", "inputs": [6], "query": "r", "expose_steps": false}]})";

CQ_TEST(dropping_a_query_removes_only_its_operators) {
  for (const std::string executor : {"dts", "heartbeat", "scheduled"}) {
    EngineOptions o;
    o.executor = executor;
    Engine e(o);
    e.AddPlan(Plan(Range(10), "", true));
    e.AddPlan(kReader);
    PushAll(e, Input{{1, 2, 3}, {"x", "y", "z"}, {0, 1, 2}}, {0});
    // Operator 4 is still read by r: refused, nothing changes.
    auto err = CQ_CATCH(e.AddPlan(R"({"drop": {"query": "q", "operators": [4, 5]}})"));
    CQ_EXPECT(err && err->kind() == ErrorKind::kInternal);
    err = CQ_CATCH(e.AddPlan(R"({"drop": {"query": "nope", "operators": [5]}})"));
    CQ_EXPECT(err && err->kind() == ErrorKind::kSemantic);
    CQ_EXPECT_EQ(e.Queries(), (std::vector<std::string>{"q", "r"}));
    e.AddPlan(R"({"drop": {"query": "q", "operators": [5]}})");
    CQ_EXPECT_EQ(e.Queries(), (std::vector<std::string>{"r"}));
    CQ_EXPECT(e.Explain().find("Output q") == std::string::npos);
    CQ_EXPECT_THROWS(e.Drain("q"), CqError);
    PushAll(e, Input{{4, 5}, {"u", "v"}, {3, 4}}, {0});
    e.Close();
    CQ_EXPECT_EQ(Drain(e, "r"), (std::vector<std::string>{"1|'x'|0", "2|'y'|1", "4|'u'|3", "5|'v'|4"}));
  }
}

CQ_TEST(a_snapshot_keeps_the_drops) {
  const std::string drop = R"({"drop": {"query": "r", "operators": [6, 7]}})";
  Engine e(EngineOptions{});
  e.AddPlan(Plan(Range(10), "", true));
  e.AddPlan(kReader);
  PushAll(e, Input{{1}, {"x"}, {0}}, {0});
  e.AddPlan(drop);
  const std::string snap = e.Snapshot();
  Engine again(EngineOptions{});
  again.AddPlan(Plan(Range(10), "", true));
  again.AddPlan(kReader);
  CQ_EXPECT_THROWS(again.Restore(snap), CqError);  // (the drop is missing)
  again.AddPlan(drop);
  again.Restore(snap);
  PushAll(again, Input{{2}, {"y"}, {1}}, {0});
  CQ_EXPECT_EQ(Drain(again), (std::vector<std::string>{"1|'x'|0", "2|'y'|1"}));
}

}  // namespace
}  // namespace cq::test
