// The hash join (operators/hash_join.h) in the operator harness (tests/operator_harness.h): its
// batch form, its row form, snapshots, either form turned into the other half way (the state moves
// between the stores), and the Negative Tuple variant give the same result tuples — for an
// equi-join on one int64 column (the direct key), with a residual, a theta join (residual only), a
// cross product, keys of several columns with a string, a string, a double, a bool and a computed
// key, over lifetimes of any kind (known ends, ghosts, pending ends fixed later, at close or never)
// and over constant durations (zero: ghosts only, [Now], whole ticks), with each expiration policy.
// The default domains make NULL keys, duplicates and equal timestamps common.
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;

// Left: k INT, s STRING, x INT, d DOUBLE, b BOOL. Right: k INT, s STRING, y INT, d DOUBLE.
const Schema kLeft = {
    {"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"x", TypeId::kInt64}, {"d", TypeId::kFloat64}, {"b", TypeId::kBool}};
const Schema kRight = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"y", TypeId::kInt64}, {"d", TypeId::kFloat64}};
const char* kLeftTypes[] = {"int64", "utf8", "int64", "float64", "bool"};
const char* kRightTypes[] = {"int64", "utf8", "int64", "float64"};

std::string Col(int i, const char* type) {
  return std::string(R"({"kind": "column", "index": )") + std::to_string(i) + R"(, "type": ")" + type + "\"}";
}
std::string L(int i) { return Col(i, kLeftTypes[i]); }
std::string R(int i) { return Col(i, kRightTypes[i]); }
// Column i of the right input in the joined row.
std::string JR(int i) { return Col(static_cast<int>(kLeft.size()) + i, kRightTypes[i]); }
std::string Call(const std::string& fn, const std::string& type, const std::string& a, const std::string& b) {
  return R"({"kind": "call", "fn": ")" + fn + R"(", "type": ")" + type + R"(", "args": [)" + a + ", " + b + "]}";
}
std::string Mod3(const std::string& a) {
  return Call("modulo", "int64", a, R"({"kind": "literal", "type": "int64", "value": 3})");
}

OperatorCase Case(const std::string& name, const std::string& left_keys, const std::string& right_keys,
                  const std::string& residual = "null", std::optional<Duration> constant = std::nullopt,
                  const std::string& expiration = "lazy") {
  OperatorCase c;
  c.name = "join " + name;
  c.spec = R"({"op": "join", "left_keys": [)" + left_keys + R"(], "right_keys": [)" + right_keys +
           R"(], "residual": )" + residual + R"(, "expiration": ")" + expiration + "\"}";
  c.inputs = {{kLeft, BatchKind::kLifetime}, {kRight, BatchKind::kLifetime}};
  c.constant = constant;
  c.negative_ghosts = true;
  return c;
}

std::vector<OperatorCase> Cases() {
  const std::string x_below_y = Call("less", "bool", L(2), JR(2));
  return {
      Case("a.k = b.k", L(0), R(0)),
      Case("a.k = b.k and a.x < b.y", L(0), R(0), x_below_y),
      Case("a.x < b.y (theta)", "", "", x_below_y),
      Case("cross product", "", ""),
      Case("a.k = b.k and a.s = b.s", L(0) + ", " + L(1), R(0) + ", " + R(1)),
      Case("a.s = b.s and a.d = b.d", L(1) + ", " + L(3), R(1) + ", " + R(3), x_below_y),
      Case("a.b = (b.y < b.k)", L(4), Call("less", "bool", R(2), R(0))),
      Case("a.k % 3 = b.y % 3", Mod3(L(0)), Mod3(R(2))),
      Case("a.k = b.k over [Range 3]", L(0), R(0), "null", Duration::Ticks(3), "fifo"),
      Case("a.k = b.k and a.x < b.y over [Now]", L(0), R(0), x_below_y, Duration{0, 1, false}),
      Case("a.s = b.s over zero durations", L(1), R(1), "null", Duration::Ticks(0)),
      Case("a.k = b.k over [Range 2 + e]", L(0), R(0), "null", Duration{2, 1, false}, "insertion_sort"),
      Case("a.k = b.k, insertion sort", L(0), R(0), "null", std::nullopt, "insertion_sort"),
      Case("a.x < b.y (theta) over [Range 4]", "", "", x_below_y, Duration::Ticks(4), "fifo"),
  };
}

CQ_TEST(join_forms_agree_in_the_harness) {
  for (const OperatorCase& c : Cases())
    for (uint64_t seed = 1; seed <= 60; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
}

}  // namespace
}  // namespace cq::test
