// Expressions compiled from the planner's JSON and evaluated over batches, with and without a
// selection vector; calls over literals only are folded when compiled.
#include <limits>

#include "base/json.h"
#include "kernels/expression.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

// The planner's expression JSON (cq_py/planner/expressions.py, TypedExpr.to_plan).
std::string ColumnRef(int index, const std::string& type) {
  return R"({"kind": "column", "index": )" + std::to_string(index) + R"(, "type": ")" + type + "\"}";
}
std::string Literal(const std::string& type, const std::string& value_json) {
  return R"({"kind": "literal", "type": ")" + type + R"(", "value": )" + value_json + "}";
}
std::string CallOf(const std::string& fn, const std::string& type, const std::vector<std::string>& args) {
  std::string s = R"({"kind": "call", "fn": ")" + fn + R"(", "type": ")" + type + R"(", "args": [)";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + "]}";
}

const Schema kSchema = {{"a", TypeId::kInt64}, {"x", TypeId::kFloat64}, {"s", TypeId::kUtf8}, {"f", TypeId::kBool}};
const std::string A = ColumnRef(0, "int64"), X = ColumnRef(1, "float64"), S = ColumnRef(2, "utf8"),
                  F = ColumnRef(3, "bool");

std::unique_ptr<Expression> Compile(const std::string& text) { return Expression::Compile(json::Parse(text), kSchema); }

Batch TestBatch() {
  Batch b;
  b.schema = std::make_shared<const Schema>(kSchema);
  b.columns = {I64({1, 2, 3, N, 5, 6}), F64({0.5, 1.5, N, 3.5, 4.5, 5.5}), Str({"x", "y", "x", "z", N, "x"}),
               Bool({true, false, N, true, true, false})};
  b.length = 6;
  return b;
}

void Select(Batch& b, const std::vector<uint32_t>& rows) {
  b.has_selection = true;
  b.selection = Buffer::Allocate(static_cast<int64_t>(rows.size()) * 4);
  for (size_t i = 0; i < rows.size(); ++i) b.selection.as<uint32_t>()[i] = rows[i];
  b.selection_count = static_cast<int64_t>(rows.size());
}

CQ_TEST(column_reference_without_selection_is_the_batch_column) {
  Batch b = TestBatch();
  auto e = Compile(S);
  CQ_EXPECT(e->is_column());
  CQ_EXPECT_EQ(e->column_index(), 2);
  CQ_EXPECT_EQ(e->type(), TypeId::kUtf8);
  Column c = e->Evaluate(b);
  CQ_EXPECT(c.values.data == b.columns[2].values.data);  // no copy
  CQ_EXPECT_EQ(ReadStr(c), (Strs{"x", "y", "x", "z", N, "x"}));
}

CQ_TEST(calls_evaluate_over_a_batch) {
  Batch b = TestBatch();
  // a + 1 > 3
  auto gt =
      Compile(CallOf("greater", "bool", {CallOf("add", "int64", {A, Literal("int64", "1")}), Literal("int64", "3")}));
  CQ_EXPECT_EQ(ReadBool(gt->Evaluate(b)), (Bools{false, false, true, N, true, true}));
  // s = 'x' AND (f OR x < 2.0)
  auto pred = Compile(CallOf("and", "bool",
                             {CallOf("equal", "bool", {S, Literal("utf8", R"("x")")}),
                              CallOf("or", "bool", {F, CallOf("less", "bool", {X, Literal("float64", "2.0")})})}));
  CQ_EXPECT_EQ(ReadBool(pred->Evaluate(b)), (Bools{true, false, N, false, N, false}));
  // CAST(a AS DOUBLE) / x, as the planner types a mixed division.
  auto div = Compile(CallOf("divide", "float64", {CallOf("cast_float64", "float64", {A}), X}));
  CQ_EXPECT_EQ(ReadF64(div->Evaluate(b)), (F64s{2.0, 2.0 / 1.5, N, N, 5.0 / 4.5, 6.0 / 5.5}));
  CQ_EXPECT_EQ(div->ToString(kSchema), "divide(cast_float64(a), x)");
}

CQ_TEST(evaluation_follows_the_selection_vector) {
  Batch b = TestBatch();
  Select(b, {5, 0, 3});
  auto a = Compile(A);
  CQ_EXPECT_EQ(ReadI64(a->Evaluate(b)), (I64s{6, 1, N}));
  auto s = Compile(S);
  CQ_EXPECT_EQ(ReadStr(s->Evaluate(b)), (Strs{"x", "x", "z"}));
  auto neg = Compile(CallOf("negate", "int64", {A}));
  CQ_EXPECT_EQ(ReadI64(neg->Evaluate(b)), (I64s{-6, -1, N}));
  auto both = Compile(CallOf("and", "bool", {F, CallOf("is_not_null", "bool", {A})}));
  CQ_EXPECT_EQ(ReadBool(both->Evaluate(b)), (Bools{false, true, false}));
  // A literal stands for every selected row.
  auto lit = Compile(Literal("utf8", R"("k")"));
  CQ_EXPECT_EQ(ReadStr(lit->Evaluate(b)), (Strs{"k", "k", "k"}));
  // An empty selection: zero rows, whatever the expression.
  Select(b, {});
  CQ_EXPECT_EQ(both->Evaluate(b).length, 0);
}

CQ_TEST(start_is_each_rows_start_tick) {
  // MASTER queries sharing a window keep a stream row's arrival as a column (start()).
  Batch b = TestBatch();
  b.sync.ticks = Buffer::Allocate(6 * 8);
  for (int64_t i = 0; i < 6; ++i) b.sync.ticks.as<int64_t>()[i] = 10 * i;
  auto start = Compile(R"({"kind": "start", "type": "int64"})");
  CQ_EXPECT(start->is_start());
  CQ_EXPECT_EQ(ReadI64(start->Evaluate(b)), (I64s{0, 10, 20, 30, 40, 50}));
  Select(b, {5, 0, 3});
  CQ_EXPECT_EQ(ReadI64(start->Evaluate(b)), (I64s{50, 0, 30}));
  auto later = Compile(CallOf("add", "int64", {R"({"kind": "start", "type": "int64"})", A}));
  CQ_EXPECT_EQ(ReadI64(later->Evaluate(b)), (I64s{56, 1, N}));
}

CQ_TEST(calls_over_literals_are_folded_when_compiled) {
  struct Case {
    std::string spec;
    std::optional<std::string> value;  // ScalarToString-like rendering; nullopt for NULL
  };
  auto render = [](const Scalar& s) -> std::optional<std::string> {
    if (!s.valid) return std::nullopt;
    switch (s.type) {
      case TypeId::kInt64: return std::to_string(s.i64);
      case TypeId::kFloat64: return Show(s.f64);
      case TypeId::kBool: return s.b ? "true" : "false";
      case TypeId::kUtf8: return s.str;
      case TypeId::kNull: return "?";
    }
    return "?";
  };
  const std::string one = Literal("int64", "1"), two = Literal("int64", "2");
  const std::string null_bool = Literal("bool", "null");
  const Case cases[] = {
      {CallOf("add", "int64", {one, two}), "3"},
      {CallOf("multiply", "int64",
              {CallOf("add", "int64", {one, two}), CallOf("negate", "int64", {Literal("int64", "4")})}),
       "-12"},
      {CallOf("and", "bool", {null_bool, Literal("bool", "false")}), "false"},
      {CallOf("and", "bool", {Literal("bool", "true"), null_bool}), N},
      {CallOf("or", "bool", {null_bool, Literal("bool", "true")}), "true"},
      {CallOf("not", "bool", {null_bool}), N},
      {CallOf("divide", "float64", {Literal("float64", "1.0"), Literal("float64", "0.0")}), N},
      {CallOf("divide", "float64", {Literal("float64", "1"), Literal("float64", "4")}), "0.25"},
      {CallOf("modulo", "int64", {Literal("int64", "-9223372036854775808"), Literal("int64", "-1")}), "0"},
      {CallOf("add", "int64", {Literal("int64", "null"), one}), N},
      {CallOf("add", "int64", {one, Literal("int64", "null")}), N},
      {CallOf("is_null", "bool", {Literal("null", "null")}), "true"},
      {CallOf("is_not_null", "bool", {one}), "true"},
      {CallOf("equal", "bool", {Literal("utf8", R"("\u00e9")"), Literal("utf8", R"("\u00e9")")}), "true"},
      {CallOf("less", "bool", {Literal("utf8", R"("a")"), Literal("utf8", "null")}), N},
      {CallOf("cast_float64", "float64", {Literal("int64", "3")}), "3"},
      {CallOf("cast_int64", "int64", {Literal("utf8", R"(" 12.7 ")")}), "12"},
      {CallOf("cast_utf8", "utf8", {Literal("float64", "1e10")}), "1.0E10"},
      {CallOf("cast_bool", "bool", {Literal("utf8", R"("maybe")")}), N},
      {CallOf("case_when", "int64", {Literal("bool", "false"), one, null_bool, two, Literal("int64", "3")}), "3"},
      {CallOf("case_when", "int64",
              {Literal("bool", "true"), one, Literal("bool", "true"), two, Literal("int64", "null")}),
       "1"},
      {CallOf("case_when", "utf8", {null_bool, Literal("utf8", R"("x")"), Literal("utf8", "null")}), N},
  };
  for (const Case& c : cases) {
    auto e = Compile(c.spec);
    CQ_EXPECT(e->is_literal());
    CQ_EXPECT_EQ(c.spec + " -> " + Show(render(e->literal())), c.spec + " -> " + Show(c.value));
    // A folded literal still evaluates to one value per row.
    Batch b = TestBatch();
    CQ_EXPECT_EQ(e->Evaluate(b).length, 6);
  }
  // Only the literal part of a call over a column folds.
  auto e = Compile(CallOf("add", "int64", {A, CallOf("add", "int64", {one, two})}));
  CQ_EXPECT(!e->is_literal());
  CQ_EXPECT_EQ(e->ToString(kSchema), "add(a, 3)");
  Batch b = TestBatch();
  CQ_EXPECT_EQ(ReadI64(e->Evaluate(b)), (I64s{4, 5, 6, N, 8, 9}));
}

CQ_TEST(case_when_and_casts_evaluate_over_a_selection) {
  Batch b = TestBatch();
  Select(b, {5, 0, 3, 4, 2});
  // CASE WHEN f THEN a WHEN s = 'x' THEN -a ELSE 0 END over rows 5, 0, 3, 4, 2:
  // f FALSE / s 'x' -> -6; f TRUE -> 1; f TRUE -> NULL (a NULL); f TRUE -> 5; f NULL / s 'x' -> -3.
  auto e = Compile(CallOf("case_when", "int64",
                          {F, A, CallOf("equal", "bool", {S, Literal("utf8", R"("x")")}),
                           CallOf("negate", "int64", {A}), Literal("int64", "0")}));
  CQ_EXPECT_EQ(ReadI64(e->Evaluate(b)), (I64s{-6, 1, N, 5, -3}));
  CQ_EXPECT_EQ(e->ToString(kSchema), "case_when(f, a, equal(s, 'x'), negate(a), 0)");
  auto text = Compile(CallOf("cast_utf8", "utf8", {X}));
  CQ_EXPECT_EQ(ReadStr(text->Evaluate(b)), (Strs{"5.5", "0.5", "3.5", "4.5", N}));
  auto back = Compile(CallOf("cast_float64", "float64", {CallOf("cast_utf8", "utf8", {X})}));
  CQ_EXPECT_EQ(ReadF64(back->Evaluate(b)), (F64s{5.5, 0.5, 3.5, 4.5, N}));
}

CQ_TEST(compile_rejects_plans_the_planner_cannot_produce) {
  auto kind_of = [](const std::optional<CqError>& e) { return e ? e->kind() : ErrorKind::kInput; };
  // No such kernel (mixed types are the planner's to cast).
  auto e1 = CQ_CATCH(Compile(CallOf("add", "int64", {A, X})));
  CQ_EXPECT_EQ(kind_of(e1), ErrorKind::kInternal);
  // case_when without its ELSE, or with branches of another type than the result.
  CQ_EXPECT_THROWS(Compile(CallOf("case_when", "int64", {F, A})), CqError);
  CQ_EXPECT_THROWS(Compile(CallOf("case_when", "int64", {F, A, X})), CqError);
  CQ_EXPECT_THROWS(Compile(CallOf("case_when", "float64", {F, A, A})), CqError);
  // The planner's type disagrees with the kernel's or the input's.
  CQ_EXPECT_THROWS(Compile(CallOf("greater", "int64", {A, A})), CqError);
  CQ_EXPECT_THROWS(Compile(ColumnRef(0, "float64")), CqError);
  CQ_EXPECT_THROWS(Compile(ColumnRef(4, "int64")), CqError);
  CQ_EXPECT_THROWS(Compile(ColumnRef(-1, "int64")), CqError);
  CQ_EXPECT_THROWS(Compile(R"({"kind": "column", "index": 0, "type": "int32"})"), CqError);
  CQ_EXPECT_THROWS(Compile(R"({"kind": "lambda", "type": "int64"})"), CqError);
  CQ_EXPECT_THROWS(Compile(R"({"kind": "column", "type": "int64"})"), CqError);  // no index
  CQ_EXPECT_THROWS(Compile(Literal("int64", "1.5")), CqError);
  CQ_EXPECT_THROWS(Compile(Literal("bool", "1")), CqError);
}

}  // namespace
}  // namespace cq::test
