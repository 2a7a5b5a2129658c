// UNION ALL (operators/union_all.h) in the operator harness (tests/operator_harness.h): over two
// and three inputs, streams and relations (known ends, ghosts, pending ends fixed later, at close
// or never), its batch form, its row form, snapshots, the batch form turned into its row form half
// way and back, and under the Negative Tuple method give the same tuples.
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;

const Schema kInput = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}};

OperatorCase Case(const std::string& name, int inputs, BatchKind kind) {
  OperatorCase c;
  c.name = name;
  c.spec = R"({"op": "union_all"})";
  for (int k = 0; k < inputs; ++k) c.inputs.push_back({kInput, kind});
  return c;
}

CQ_TEST(union_all_forms_agree_in_the_harness) {
  for (const OperatorCase& c : {Case("UNION ALL of two relations", 2, BatchKind::kLifetime),
                                Case("UNION ALL of three relations", 3, BatchKind::kLifetime),
                                Case("UNION ALL of two streams", 2, BatchKind::kStream)})
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
}

}  // namespace
}  // namespace cq::test
