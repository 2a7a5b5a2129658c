// ISTREAM, DSTREAM (operators/stream_difference.h) and RSTREAM (operators/rstream.h) in the
// operator harness (tests/operator_harness.h): the batch form, the row form, snapshots, either form
// turned into the other half way (their one state, rows/instants.h, changes representation), and
// the Negative Tuple variant give the same stream, over inputs of each kind they are planned for
// (constant durations — zero, whole ticks, with an ε-step — and lifetimes of any kind with known,
// pending and never-fixed ends), with each expiration policy.
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;

// The input relation: k INT, s STRING, d DOUBLE, b BOOL (small domains: equal rows meet often).
const Schema kInput = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"d", TypeId::kFloat64}, {"b", TypeId::kBool}};

OperatorCase Case(const std::string& op, std::optional<Duration> constant = std::nullopt,
                  const std::string& expiration = "lazy") {
  OperatorCase c;
  c.name = op + (constant ? " over constant durations " + harness::ShowTime(Time{0, 0} + *constant) : "") + ", " +
           expiration;
  c.spec = R"({"op": ")" + op + R"(", "expiration": ")" + expiration + "\"" +
           (constant ? R"(, "lifetime": "constant")" : "") + "}";
  c.inputs = {{kInput, BatchKind::kLifetime}};
  c.constant = constant;
  // Few distinct rows, so that an instant's starts and ends cancel now and then.
  c.value = [](Rng& rng, int, size_t col, TypeId type) -> harness::Cell {
    if (rng.Below(12) == 0) return std::monostate{};
    switch (type) {
      case TypeId::kInt64: return rng.Below(3);
      case TypeId::kUtf8: return std::string(1, static_cast<char>('a' + rng.Below(2)));
      case TypeId::kFloat64: return static_cast<double>(rng.Below(2)) / 4;
      case TypeId::kBool: return col == 3 && rng.Below(4) == 0;
      default: return std::monostate{};
    }
  };
  return c;
}

std::vector<OperatorCase> DifferenceCases(const std::string& op) {
  std::vector<OperatorCase> cases = {Case(op), Case(op, std::nullopt, "fifo"),
                                     Case(op, std::nullopt, "insertion_sort")};
  if (op == "istream") {
    // The planner gives ISTREAM the constant-duration strategy (the batch form's own).
    cases.push_back(Case(op, Duration::Ticks(3), "fifo"));
    cases.push_back(Case(op, Duration::Ticks(1), "fifo"));
    cases.push_back(Case(op, Duration{2, 1, false}, "fifo"));
    cases.push_back(Case(op, Duration{0, 1, false}, "fifo"));  // [Now]
    cases.push_back(Case(op, Duration::Ticks(0), "fifo"));     // ghosts only
  }
  return cases;
}

CQ_TEST(istream_forms_agree_in_the_harness) {
  for (const OperatorCase& c : DifferenceCases("istream"))
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
}

CQ_TEST(dstream_forms_agree_in_the_harness) {
  for (const OperatorCase& c : DifferenceCases("dstream"))
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;
}

CQ_TEST(rstream_forms_agree_in_the_harness) {
  // The engine's progress P: beyond every input instant (ends come up to 5 ticks after the last
  // start), so R(t) goes out at every tick up to it, and at close ticks beyond it only where R later
  // drops. Input beyond P is not tried: inside a loop the row form decides ticks beyond P at their
  // instants (RStream says how), where the batch form waits for close().
  for (const std::string expiration : {"lazy", "insertion_sort"}) {
    OperatorCase c = Case("rstream", std::nullopt, expiration);
    c.furthest = c.ticks + 6;
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;
  }
}

}  // namespace
}  // namespace cq::test
