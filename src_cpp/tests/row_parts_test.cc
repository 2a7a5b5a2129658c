// engine/row_parts.h: one row at a time to the engine of its key; the others told the input's
// progress when caught up.
#include <memory>

#include "batch/partition.h"
#include "engine/row_parts.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

// REGISTER STREAM s(k INT, v INT); REGISTER QUERY q AS ISTREAM(SELECT k, v FROM s [Now]);
const std::string kPlan = R"({"operators": [
  {"id": 0, "op": "stream_scan", "inputs": [], "stream": "s", "schema": [["k", "int64"], ["v", "int64"]]},
  {"id": 1, "op": "window", "inputs": [0], "kind": "now"},
  {"id": 2, "op": "istream", "inputs": [1], "lifetime": "constant"},
  {"id": 3, "op": "sink", "inputs": [2], "query": "q", "expose_steps": false}]})";

struct Engines {
  std::vector<std::unique_ptr<Engine>> owned;
  std::vector<Engine*> all;
  explicit Engines(int n) {
    for (int i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<Engine>(EngineOptions{}));
      owned.back()->AddPlan(kPlan);
      all.push_back(owned.back().get());
    }
  }
};

std::vector<ImportedBatch> Row(int64_t k, int64_t v, int64_t ts) {
  std::vector<ImportedBatch> row;
  row.push_back(MakeBatch({"k", "v", "ts"}, {I64({k}), I64({v}), I64({ts})}, 1));
  return row;
}

int64_t Rows(Engine& e) {
  int64_t n = 0;
  for (const OutputChunk& c : e.Drain("q")) n += c.length;
  return n;
}

CQ_TEST(a_row_goes_to_the_engine_of_its_key_alone) {
  Engines e(3);
  RowParts parts(e.all);
  parts.SetKey("s", 0);
  for (int64_t k = 0; k < 20; ++k) {
    const int p = parts.Push("s", Row(k, k, k));
    CQ_EXPECT_EQ(p, PartOfNumber(static_cast<double>(k), 3));
    for (int q = 0; q < 3; ++q) CQ_EXPECT_EQ(Rows(*e.all[q]), q == p ? 1 : 0);
  }
  CQ_EXPECT_EQ(parts.Progress("s"), 19);
}

CQ_TEST(a_stream_without_a_key_goes_to_the_first_engine) {
  Engines e(2);
  RowParts parts(e.all);
  parts.SetKey("s", -1);
  for (int64_t k = 0; k < 5; ++k) CQ_EXPECT_EQ(parts.Push("s", Row(k, k, 0)), 0);
}

CQ_TEST(a_row_back_in_time_is_refused_by_an_engine_that_was_not_told_the_progress) {
  Engines e(2);
  RowParts parts(e.all);
  parts.SetKey("s", 0);
  int64_t in[2] = {-1, -1};  // a key of each part
  for (int64_t k = 0; in[0] < 0 || in[1] < 0; ++k) in[PartOfNumber(static_cast<double>(k), 2)] = k;
  parts.Push("s", Row(in[0], 1, 10));
  auto error = CQ_CATCH(parts.Push("s", Row(in[1], 1, 5)));
  CQ_ASSERT(error.has_value());
  CQ_EXPECT(std::string(error->what()).find("timestamps must not decrease") != std::string::npos);
  // Nothing changed: a row at the input's progress goes on in either part.
  CQ_EXPECT_EQ(parts.Push("s", Row(in[1], 2, 10)), 1);
  CQ_EXPECT_EQ(Rows(*e.all[0]) + Rows(*e.all[1]), 2);
}

CQ_TEST(catch_up_tells_every_engine_the_progress_and_moved_needs_none) {
  Engines e(2);
  RowParts parts(e.all);
  parts.SetKey("s", 0);
  int64_t first = 0;
  while (PartOfNumber(static_cast<double>(first), 2) != 0) ++first;
  parts.Push("s", Row(first, 1, 7));
  // Engine 1 has no row: until told, a row below 7 in it would be taken; after, it is refused.
  parts.CatchUp();
  auto error = CQ_CATCH(e.all[1]->Push("s", Row(1, 1, 6)));
  CQ_EXPECT(error.has_value());
  parts.Moved("s", 9);
  CQ_EXPECT_EQ(parts.Progress("s"), 9);
}

}  // namespace
}  // namespace cq::test
