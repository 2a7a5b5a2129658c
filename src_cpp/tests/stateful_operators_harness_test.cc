// The other stateful operators in the operator harness (tests/operator_harness.h), each in every
// way it can be driven: the delay (operators/delay.h; what it keeps for queries registered later,
// its backlog, recorded with its output), the reissue of expiration holders (reissue_holders.h;
// the map of ids given out), and a relation's scan (relation_scan.h; the alive copies of each
// value, in batch form only, direct and negative). (A query's output: query_sink_harness_test.cc.)
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::Cell;
using harness::InputTuple;
using harness::OperatorCase;

const Schema kInput = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}};

CQ_TEST(delay_forms_agree_in_the_harness) {
  for (const char* d : {R"({"ticks": 2})", R"({"ticks": 0, "steps": 1})", R"({"ticks": 1, "steps": 1})"}) {
    OperatorCase c;
    c.name = std::string("delay ") + d;
    c.spec = std::string(R"({"op": "delay", "duration": )") + d + "}";
    c.inputs = {{kInput, BatchKind::kStream}};
    c.backlog = true;
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;
  }
}

CQ_TEST(reissue_holders_forms_agree_in_the_harness) {
  OperatorCase c;
  c.name = "reissue_holders";
  c.spec = R"({"op": "reissue_holders"})";
  c.inputs = {{kInput, BatchKind::kLifetime}};
  for (uint64_t seed = 1; seed <= 100; ++seed)
    if (harness::ExpectFormsAgree(c, seed) > 0) break;
}

// A relation's changes: k, s and the op ("+" insert, "-" delete). A delete of values with no alive
// copy becomes an insert (the engine refuses such a push before it reaches the scan).
CQ_TEST(relation_scan_forms_agree_in_the_harness) {
  const Schema changes = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"op", TypeId::kUtf8}};
  OperatorCase c;
  c.name = "relation_scan";
  c.spec = R"({"op": "relation_scan", "relation": "r", "schema": [["k", "int64"], ["s", "utf8"]]})";
  c.inputs = {{changes, BatchKind::kStream}};
  c.rows = false;
  c.source = true;
  c.exact = false;  // (a copy inserted and deleted at one instant goes out, or not, by how batches cut)
  c.value = [](Rng& rng, int, size_t col, TypeId) -> Cell {
    if (col == 2) return std::string(rng.Below(3) == 0 ? "+" : "-");
    if (rng.Below(5) == 0) return std::monostate{};
    if (col == 0) return rng.Below(3);
    return std::string(1, static_cast<char>('a' + rng.Below(2)));
  };
  c.adjust = [](std::vector<InputTuple>& tuples) {
    std::map<std::string, int64_t> alive;
    for (InputTuple& t : tuples) {
      const std::string key = harness::ShowCell(t.values[0]) + "," + harness::ShowCell(t.values[1]);
      std::string& op = std::get<std::string>(t.values[2]);
      if (op == "-" && alive[key] == 0) op = "+";
      alive[key] += op == "+" ? 1 : -1;
    }
  };
  for (uint64_t seed = 1; seed <= 100; ++seed)
    if (harness::ExpectFormsAgree(c, seed) > 0) break;
}

}  // namespace
}  // namespace cq::test
