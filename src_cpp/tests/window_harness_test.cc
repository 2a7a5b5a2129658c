// The windows in the operator harness (tests/operator_harness.h): [Now], [Range T], [Range
// Unbounded] (operators/window.h), [Range T Slide S] (slide_window.h), [Rows N] (row_window.h) and
// [Partition By k Rows N] (partition_row_window.h), each with its Negative Tuple variant
// (negative_time_window.h, negative_row_window.h): the batch form, the row form, snapshots, the
// batch form turned into its row form half way and back, and the negative variant in each of those
// ways give the same tuples over the same random streams (ticks with ε-steps, several tuples an
// instant, NULLs, equal keys).
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;

// The input stream: k INT, s STRING, d DOUBLE.
const Schema kStream = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"d", TypeId::kFloat64}};

OperatorCase Case(const std::string& name, const std::string& spec) {
  OperatorCase c;
  c.name = name;
  c.spec = spec;
  c.inputs = {{kStream, BatchKind::kStream}};
  return c;
}

std::vector<OperatorCase> Cases() {
  return {
      Case("[Now]", R"({"op": "window", "kind": "now"})"),
      Case("[Range 3]", R"({"op": "window", "kind": "range", "range": {"ticks": 3}})"),
      Case("[Range 1]", R"({"op": "window", "kind": "range", "range": {"ticks": 1}})"),
      Case("[Range Unbounded]", R"({"op": "window", "kind": "unbounded"})"),
      Case("[Range 4 Slide 2]", R"({"op": "slide_window", "range": {"ticks": 4}, "slide": {"ticks": 2}})"),
      Case("[Range 2 Slide 3]", R"({"op": "slide_window", "range": {"ticks": 2}, "slide": {"ticks": 3}})"),
      Case("[Rows 1]", R"({"op": "row_window", "rows": 1})"),
      Case("[Rows 3]", R"({"op": "row_window", "rows": 3})"),
      Case("[Partition By k Rows 1]", R"({"op": "partition_row_window", "rows": 1, "keys": [0]})"),
      Case("[Partition By k Rows 2]", R"({"op": "partition_row_window", "rows": 2, "keys": [0]})"),
      Case("[Partition By s, d Rows 2]", R"({"op": "partition_row_window", "rows": 2, "keys": [1, 2]})"),
  };
}

CQ_TEST(windows_forms_agree_in_the_harness) {
  for (const OperatorCase& c : Cases())
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
}

}  // namespace
}  // namespace cq::test
