// Every kernel family, called as compiled expressions call them: looked up in the registry by name
// and argument types, over hand-built columns. Several cases use 130 rows so that the 64-row word
// loops run twice and then a tail; Call() also checks that each result is well formed.
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "kernels/registry.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr auto N = std::nullopt;

template <typename T>
std::vector<std::optional<T>> Repeat(std::optional<T> v, int64_t n) {
  return std::vector<std::optional<T>>(static_cast<size_t>(n), v);
}

// Row-wise reference of a null-propagating binary operation.
template <typename R, typename T, typename F>
std::vector<std::optional<R>> Zip(const std::vector<std::optional<T>>& a,
                                  const std::vector<std::optional<T>>& b, F f) {
  std::vector<std::optional<R>> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(a[i] && b[i] ? f(*a[i], *b[i]) : std::optional<R>());
  return out;
}

I64s RandomI64(Rng& rng, int64_t n, int64_t lo, int64_t hi, int null_every) {
  I64s v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(null_every && rng.Below(null_every) == 0 ? std::optional<int64_t>() : lo + rng.Below(hi - lo + 1));
  return v;
}

Bools RandomBools(Rng& rng, int64_t n, int null_every) {
  Bools v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(null_every && rng.Below(null_every) == 0 ? std::optional<bool>() : rng.Below(2) == 1);
  return v;
}

// ---- arithmetic -------------------------------------------------------------------------------

CQ_TEST(add_subtract_multiply_int64_wrap_on_overflow) {
  Column a = I64({kMax, kMin, 5, N, -3});
  Column b = I64({1, 1, 7, 2, N});
  CQ_EXPECT_EQ(ReadI64(Call("add", {Col(a), Col(b)}, 5)), (I64s{kMin, kMin + 1, 12, N, N}));
  CQ_EXPECT_EQ(ReadI64(Call("subtract", {Col(a), Col(b)}, 5)), (I64s{kMax - 1, kMax, -2, N, N}));
  CQ_EXPECT_EQ(ReadI64(Call("multiply", {Col(a), Col(b)}, 5)), (I64s{kMax, kMin, 35, N, N}));
  // Column op scalar and scalar op column.
  CQ_EXPECT_EQ(ReadI64(Call("multiply", {Col(a), ScalarI64(2)}, 5)), (I64s{-2, 0, 10, N, -6}));
  CQ_EXPECT_EQ(ReadI64(Call("subtract", {ScalarI64(0), Col(a)}, 5)), (I64s{kMin + 1, kMin, -5, N, 3}));
  CQ_EXPECT_EQ(ReadI64(Call("add", {ScalarI64(kMax), Col(b)}, 5)), (I64s{kMin, kMin, kMin + 6, kMin + 1, N}));
  // A NULL scalar makes every row NULL.
  CQ_EXPECT_EQ(ReadI64(Call("add", {Col(a), ScalarI64(N)}, 5)), Repeat<int64_t>(N, 5));
  CQ_EXPECT_EQ(ReadI64(Call("multiply", {ScalarI64(N), Col(b)}, 5)), Repeat<int64_t>(N, 5));
}

CQ_TEST(arithmetic_float64_combines_validity_over_130_rows) {
  const int64_t n = 130;
  F64s av, bv;
  for (int64_t i = 0; i < n; ++i) {
    av.push_back(i % 7 == 0 ? std::optional<double>() : i * 0.5);
    bv.push_back(i % 11 == 3 ? std::optional<double>() : 1.5 - i);
  }
  Column a = F64(av), b = F64(bv);
  CQ_EXPECT_EQ(ReadF64(Call("add", {Col(a), Col(b)}, n)), Zip<double>(av, bv, [](double x, double y) { return x + y; }));
  CQ_EXPECT_EQ(ReadF64(Call("subtract", {Col(a), Col(b)}, n)), Zip<double>(av, bv, [](double x, double y) { return x - y; }));
  CQ_EXPECT_EQ(ReadF64(Call("multiply", {Col(a), Col(b)}, n)), Zip<double>(av, bv, [](double x, double y) { return x * y; }));
  CQ_EXPECT_EQ(ReadF64(Call("add", {Col(a), ScalarF64(0.25)}, n)),
               Zip<double>(av, Repeat<double>(0.25, n), [](double x, double y) { return x + y; }));
  CQ_EXPECT_EQ(ReadF64(Call("subtract", {ScalarF64(0.25), Col(b)}, n)),
               Zip<double>(Repeat<double>(0.25, n), bv, [](double x, double y) { return x - y; }));
  // One side without nulls: the result shares the other side's validity.
  Column full = F64(Repeat<double>(2.0, n));
  Column r = Call("multiply", {Col(full), Col(a)}, n);
  CQ_EXPECT_EQ(r.null_count, a.null_count);
  CQ_EXPECT_EQ(ReadF64(r), Zip<double>(Repeat<double>(2.0, n), av, [](double x, double y) { return x * y; }));
  // No nulls on either side: no validity at all.
  Column clean = Call("add", {Col(full), Col(full)}, n);
  CQ_EXPECT(clean.validity.empty());
  CQ_EXPECT_EQ(clean.null_count, 0);
}

CQ_TEST(divide_gives_float64_and_null_on_zero_divisor) {
  const int64_t n = 130;
  F64s av, bv;
  for (int64_t i = 0; i < n; ++i) {
    av.push_back(i % 13 == 1 ? std::optional<double>() : static_cast<double>(i) - 60);
    bv.push_back(i % 9 == 2 ? std::optional<double>() : (i % 5 == 0 ? (i % 10 ? -0.0 : 0.0) : i * 0.25));
  }
  Column a = F64(av), b = F64(bv);
  auto div = [](double x, double y) -> std::optional<double> { return y == 0 ? std::nullopt : std::optional(x / y); };
  F64s want;
  for (int64_t i = 0; i < n; ++i) want.push_back(av[i] && bv[i] ? div(*av[i], *bv[i]) : std::nullopt);
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(a), Col(b)}, n)), want);
  // Zero divisors in a column without any other null.
  Column c = F64({1.0, 0.0, 3.0});
  Column d = F64({2.0, 4.0, 0.0});
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(c), Col(d)}, 3)), (F64s{0.5, 0.0, N}));
  CQ_EXPECT_EQ(ReadF64(Call("divide", {ScalarF64(1.0), Col(d)}, 3)), (F64s{0.5, 0.25, N}));
  // A zero (or NULL) scalar divisor: every row is NULL.
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(a), ScalarF64(0.0)}, n)), Repeat<double>(N, n));
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(a), ScalarF64(-0.0)}, n)), Repeat<double>(N, n));
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(a), ScalarF64(N)}, n)), Repeat<double>(N, n));
  CQ_EXPECT_EQ(ReadF64(Call("divide", {Col(a), ScalarF64(4.0)}, n)),
               Zip<double>(av, Repeat<double>(4.0, n), [](double x, double y) { return x / y; }));
  // Integer division only exists as an explicit cast: the planner casts int operands to float64.
  CQ_EXPECT(KernelRegistry::Global().Find("divide", {TypeId::kInt64, TypeId::kInt64}) == nullptr);
}

CQ_TEST(modulo_int64_sign_of_dividend_null_on_zero_and_min_by_minus_one) {
  Column a = I64({7, -7, 7, -7, 5, kMin, kMin, 3, N, 4, kMin});
  Column b = I64({3, 3, -3, -3, 0, -1, 1, N, 2, -1, 7});
  CQ_EXPECT_EQ(ReadI64(Call("modulo", {Col(a), Col(b)}, 11)), (I64s{1, -1, 1, -1, N, 0, 0, N, N, 0, kMin % 7}));
  CQ_EXPECT_EQ(ReadI64(Call("modulo", {Col(a), ScalarI64(-1)}, 11)), (I64s{0, 0, 0, 0, 0, 0, 0, 0, N, 0, 0}));
  CQ_EXPECT_EQ(ReadI64(Call("modulo", {Col(a), ScalarI64(0)}, 11)), Repeat<int64_t>(N, 11));
  CQ_EXPECT_EQ(ReadI64(Call("modulo", {ScalarI64(kMin), Col(b)}, 11)),
               (I64s{kMin % 3, kMin % 3, kMin % -3, kMin % -3, N, 0, 0, N, 0, 0, kMin % 7}));
  // A NULL divisor whose hidden value is 0 or -1 stays NULL (and does not trap).
  Column hidden = I64({N, N});
  hidden.values.as<int64_t>()[0] = 0;
  hidden.values.as<int64_t>()[1] = -1;
  CQ_EXPECT_EQ(ReadI64(Call("modulo", {ScalarI64(kMin), Col(hidden)}, 2)), (I64s{N, N}));
}

CQ_TEST(modulo_float64_is_fmod_and_null_on_zero) {
  Column a = F64({-7.5, 7.5, 7.5, N, 1.0});
  Column b = F64({2.0, -2.0, 0.0, 1.0, 3.0});
  CQ_EXPECT_EQ(ReadF64(Call("modulo", {Col(a), Col(b)}, 5)), (F64s{-1.5, 1.5, N, N, 1.0}));
  CQ_EXPECT_EQ(ReadF64(Call("modulo", {Col(a), ScalarF64(0.0)}, 5)), Repeat<double>(N, 5));
}

CQ_TEST(negate_wraps_int64_min_and_flips_float_sign) {
  Column a = I64({kMin, kMax, 0, -5, N});
  CQ_EXPECT_EQ(ReadI64(Call("negate", {Col(a)}, 5)), (I64s{kMin, kMin + 1, 0, 5, N}));
  Column f = F64({1.5, 0.0, N});
  F64s r = ReadF64(Call("negate", {Col(f)}, 3));
  CQ_EXPECT_EQ(r, (F64s{-1.5, -0.0, N}));
  CQ_EXPECT(std::signbit(*r[1]));
}

CQ_TEST(cast_float64_from_int64) {
  Column a = I64({0, -5, (int64_t{1} << 53) + 1, kMax, N});
  CQ_EXPECT_EQ(ReadF64(Call("cast_float64", {Col(a)}, 5)),
               (F64s{0.0, -5.0, 9007199254740992.0, 9223372036854775808.0, N}));
}

// ---- comparisons ------------------------------------------------------------------------------

// The six comparison kernels against C++'s own operators, row by row; `lv` and `rv` are the
// values each side stands for (a scalar repeated).
template <typename T>
void ExpectComparisons(const Datum& l, const Datum& r, const std::vector<std::optional<T>>& lv,
                       const std::vector<std::optional<T>>& rv) {
  const int64_t n = static_cast<int64_t>(lv.size());
  const std::pair<const char*, std::function<bool(const T&, const T&)>> ops[] = {
      {"equal", std::equal_to<T>()},       {"not_equal", std::not_equal_to<T>()},
      {"less", std::less<T>()},            {"less_equal", std::less_equal<T>()},
      {"greater", std::greater<T>()},      {"greater_equal", std::greater_equal<T>()}};
  for (const auto& [name, f] : ops) {
    Bools want;
    for (int64_t i = 0; i < n; ++i) want.push_back(lv[i] && rv[i] ? std::optional<bool>(f(*lv[i], *rv[i])) : std::nullopt);
    CQ_EXPECT_EQ(std::string(name) + " " + Show(ReadBool(Call(name, {l, r}, n))), std::string(name) + " " + Show(want));
  }
}

CQ_TEST(compare_int64_columns_and_scalars_both_orders_130_rows) {
  Rng rng(1);
  const int64_t n = 130;
  I64s av = RandomI64(rng, n, -3, 3, 6), bv = RandomI64(rng, n, -3, 3, 6);
  Column a = I64(av), b = I64(bv);
  ExpectComparisons<int64_t>(Col(a), Col(b), av, bv);
  ExpectComparisons<int64_t>(Col(a), ScalarI64(1), av, Repeat<int64_t>(1, n));
  ExpectComparisons<int64_t>(ScalarI64(1), Col(a), Repeat<int64_t>(1, n), av);
  ExpectComparisons<int64_t>(Col(a), ScalarI64(N), av, Repeat<int64_t>(N, n));
  // Extremes compare as integers, not through a subtraction that could overflow.
  Column e = I64({kMin, kMax, -1});
  ExpectComparisons<int64_t>(Col(e), ScalarI64(kMax), I64s{kMin, kMax, -1}, Repeat<int64_t>(kMax, 3));
  ExpectComparisons<int64_t>(ScalarI64(kMin), Col(e), Repeat<int64_t>(kMin, 3), I64s{kMin, kMax, -1});
}

CQ_TEST(compare_float64_columns_and_scalars) {
  F64s av = {1.0, -0.0, 2.5, N, -1e300, 3.0, 0.1 + 0.2};
  F64s bv = {1.0, 0.0, 2.0, 1.0, N, 4.0, 0.3};
  Column a = F64(av), b = F64(bv);
  ExpectComparisons<double>(Col(a), Col(b), av, bv);
  ExpectComparisons<double>(Col(a), ScalarF64(2.5), av, Repeat<double>(2.5, 7));
  ExpectComparisons<double>(ScalarF64(2.5), Col(b), Repeat<double>(2.5, 7), bv);
}

CQ_TEST(compare_utf8_bytewise_columns_and_scalars_both_orders) {
  const std::vector<std::string> words = {"", "a", "ab", "abc", "b", "z", "\xc3\xa9" /* é */, "Z"};
  Rng rng(2);
  const int64_t n = 130;
  Strs av, bv;
  for (int64_t i = 0; i < n; ++i) {
    av.push_back(rng.Below(9) == 0 ? std::optional<std::string>() : words[rng.Below(8)]);
    bv.push_back(rng.Below(9) == 0 ? std::optional<std::string>() : words[rng.Below(8)]);
  }
  Column a = Str(av), b = Str(bv);
  ExpectComparisons<std::string>(Col(a), Col(b), av, bv);
  ExpectComparisons<std::string>(Col(a), ScalarStr("ab"), av, Repeat<std::string>("ab", n));
  ExpectComparisons<std::string>(ScalarStr("ab"), Col(b), Repeat<std::string>("ab", n), bv);
  ExpectComparisons<std::string>(ScalarStr(N), Col(b), Repeat<std::string>(N, n), bv);
  // Code-point order: 'é' (U+00E9) sorts after 'z', and a prefix before its extensions.
  Column e = Str({"\xc3\xa9", "a"});
  CQ_EXPECT_EQ(ReadBool(Call("greater", {Col(e), ScalarStr("z")}, 2)), (Bools{true, false}));
  CQ_EXPECT_EQ(ReadBool(Call("less", {ScalarStr(""), Col(e)}, 2)), (Bools{true, true}));
}

CQ_TEST(compare_bool_columns_and_scalars) {
  Bools av = {true, true, false, false, N, true};
  Bools bv = {true, false, true, false, true, N};
  Column a = Bool(av), b = Bool(bv);
  ExpectComparisons<bool>(Col(a), Col(b), av, bv);
  ExpectComparisons<bool>(Col(a), ScalarBool(false), av, Repeat<bool>(false, 6));
  ExpectComparisons<bool>(ScalarBool(true), Col(b), Repeat<bool>(true, 6), bv);
}

// ---- three-valued logic -----------------------------------------------------------------------

std::optional<bool> And3(std::optional<bool> a, std::optional<bool> b) {
  if (a == false || b == false) return false;
  if (!a || !b) return std::nullopt;
  return true;
}
std::optional<bool> Or3(std::optional<bool> a, std::optional<bool> b) {
  if (a == true || b == true) return true;
  if (!a || !b) return std::nullopt;
  return false;
}

CQ_TEST(and_or_full_truth_tables) {
  // All nine combinations, written out rather than computed by And3/Or3.
  Column a = Bool({true, true, true, false, false, false, N, N, N});
  Column b = Bool({true, false, N, true, false, N, true, false, N});
  CQ_EXPECT_EQ(ReadBool(Call("and", {Col(a), Col(b)}, 9)), (Bools{true, false, N, false, false, false, N, false, N}));
  CQ_EXPECT_EQ(ReadBool(Call("or", {Col(a), Col(b)}, 9)), (Bools{true, true, true, true, false, N, true, N, N}));
  // Commutative.
  CQ_EXPECT_EQ(ReadBool(Call("and", {Col(b), Col(a)}, 9)), (Bools{true, false, N, false, false, false, N, false, N}));
  CQ_EXPECT_EQ(ReadBool(Call("or", {Col(b), Col(a)}, 9)), (Bools{true, true, true, true, false, N, true, N, N}));
}

CQ_TEST(and_or_with_scalar_true_false_null_operands) {
  const Bools cv = {true, false, N};
  Column c = Bool(cv);
  for (std::optional<bool> s : {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
    Bools want_and, want_or;
    for (auto x : cv) {
      want_and.push_back(And3(s, x));
      want_or.push_back(Or3(s, x));
    }
    const std::string tag = "scalar " + Show(s) + ": ";
    CQ_EXPECT_EQ(tag + Show(ReadBool(Call("and", {ScalarBool(s), Col(c)}, 3))), tag + Show(want_and));
    CQ_EXPECT_EQ(tag + Show(ReadBool(Call("and", {Col(c), ScalarBool(s)}, 3))), tag + Show(want_and));
    CQ_EXPECT_EQ(tag + Show(ReadBool(Call("or", {ScalarBool(s), Col(c)}, 3))), tag + Show(want_or));
    CQ_EXPECT_EQ(tag + Show(ReadBool(Call("or", {Col(c), ScalarBool(s)}, 3))), tag + Show(want_or));
  }
}

CQ_TEST(and_or_not_word_loops_and_tails) {
  Rng rng(3);
  for (int64_t n : {1, 63, 64, 65, 128, 130, 200}) {
    for (int nulls_a : {0, 4}) {
      for (int nulls_b : {0, 3}) {
        Bools av = RandomBools(rng, n, nulls_a), bv = RandomBools(rng, n, nulls_b);
        Column a = Bool(av), b = Bool(bv);
        Bools want_and, want_or, want_not;
        for (int64_t i = 0; i < n; ++i) {
          want_and.push_back(And3(av[i], bv[i]));
          want_or.push_back(Or3(av[i], bv[i]));
          want_not.push_back(av[i] ? std::optional<bool>(!*av[i]) : std::nullopt);
        }
        const std::string tag = "n=" + std::to_string(n) + " nulls " + std::to_string(nulls_a) + "/" +
                                std::to_string(nulls_b) + ": ";
        Column r_and = Call("and", {Col(a), Col(b)}, n);
        CQ_EXPECT_EQ(tag + Show(ReadBool(r_and)), tag + Show(want_and));
        CQ_EXPECT_EQ(tag + Show(ReadBool(Call("or", {Col(a), Col(b)}, n))), tag + Show(want_or));
        CQ_EXPECT_EQ(tag + Show(ReadBool(Call("not", {Col(a)}, n))), tag + Show(want_not));
        if (!nulls_a && !nulls_b) CQ_EXPECT(r_and.validity.empty());
      }
    }
  }
  // FALSE AND x and TRUE OR x are known whatever x is: no validity at all in the result.
  Bools xv = RandomBools(rng, 130, 2);
  Column x = Bool(xv);
  Column f = Call("and", {ScalarBool(false), Col(x)}, 130);
  CQ_EXPECT_EQ(ReadBool(f), Repeat<bool>(false, 130));
  CQ_EXPECT(f.validity.empty());
  Column t = Call("or", {Col(x), ScalarBool(true)}, 130);
  CQ_EXPECT_EQ(ReadBool(t), Repeat<bool>(true, 130));
  CQ_EXPECT(t.validity.empty());
}

CQ_TEST(not_three_valued_and_scalar) {
  Column a = Bool({true, false, N});
  CQ_EXPECT_EQ(ReadBool(Call("not", {Col(a)}, 3)), (Bools{false, true, N}));
  CQ_EXPECT_EQ(ReadBool(Call("not", {ScalarBool(true)}, 3)), (Bools{false, false, false}));
  CQ_EXPECT_EQ(ReadBool(Call("not", {ScalarBool(N)}, 2)), (Bools{N, N}));
}

// ---- IS NULL / IS NOT NULL --------------------------------------------------------------------

CQ_TEST(is_null_and_is_not_null_on_every_type_are_never_null) {
  const int64_t n = 130;
  Rng rng(4);
  I64s iv = RandomI64(rng, n, 0, 9, 5);
  F64s fv(n, 1.5);  // no null at all
  Strs sv;
  for (int64_t i = 0; i < n; ++i) sv.push_back(i % 3 ? std::optional<std::string>("s") : std::nullopt);
  Bools bv = RandomBools(rng, n, 2);
  const std::vector<Column> cols = {I64(iv), F64(fv), Str(sv), Bool(bv), Column::Nulls(TypeId::kNull, n)};
  const std::vector<std::vector<bool>> nulls = {
      [&] { std::vector<bool> v; for (auto& x : iv) v.push_back(!x); return v; }(),
      std::vector<bool>(n, false),
      [&] { std::vector<bool> v; for (auto& x : sv) v.push_back(!x); return v; }(),
      [&] { std::vector<bool> v; for (auto& x : bv) v.push_back(!x); return v; }(),
      std::vector<bool>(n, true)};
  for (size_t c = 0; c < cols.size(); ++c) {
    Bools want_null, want_not_null;
    for (int64_t i = 0; i < n; ++i) {
      want_null.push_back(nulls[c][i]);
      want_not_null.push_back(!nulls[c][i]);
    }
    const std::string tag = std::string(TypeName(cols[c].type)) + ": ";
    Column r = Call("is_null", {Col(cols[c])}, n);
    CQ_EXPECT_EQ(tag + Show(ReadBool(r)), tag + Show(want_null));
    CQ_EXPECT_EQ(r.null_count, 0);
    Column s = Call("is_not_null", {Col(cols[c])}, n);
    CQ_EXPECT_EQ(tag + Show(ReadBool(s)), tag + Show(want_not_null));
    CQ_EXPECT_EQ(s.null_count, 0);
  }
  CQ_EXPECT_EQ(ReadBool(Call("is_null", {ScalarI64(N)}, 3)), (Bools{true, true, true}));
  CQ_EXPECT_EQ(ReadBool(Call("is_not_null", {ScalarStr("x")}, 2)), (Bools{true, true}));
}

// ---- the registry -----------------------------------------------------------------------------

CQ_TEST(registry_finds_by_exact_signature_and_signatures_are_unique) {
  const KernelRegistry& r = KernelRegistry::Global();
  const TypeId I = TypeId::kInt64, F = TypeId::kFloat64, B = TypeId::kBool, S = TypeId::kUtf8;
  CQ_EXPECT(r.Find("add", {I, I}) != nullptr);
  CQ_EXPECT_EQ(r.Find("add", {F, F})->result, F);
  CQ_EXPECT(r.Find("add", {I, F}) == nullptr);  // mixed types are cast by the planner
  CQ_EXPECT(r.Find("add", {I}) == nullptr);
  CQ_EXPECT(r.Find("no_such_kernel", {I, I}) == nullptr);
  CQ_EXPECT_EQ(r.Find("less", {S, S})->result, B);
  CQ_EXPECT_EQ(r.Find("is_null", {TypeId::kNull})->result, B);
  CQ_EXPECT_EQ(r.Find("cast_float64", {I})->result, F);
  std::set<std::pair<std::string, std::vector<TypeId>>> seen;
  for (const Kernel& k : r.kernels()) {
    CQ_EXPECT(k.fn != nullptr);
    CQ_EXPECT(!k.doc.empty());
    CQ_EXPECT(seen.insert({k.name, k.args}).second);
  }
  for (const char* name : {"add", "subtract", "multiply", "divide", "modulo", "negate", "equal", "not_equal",
                           "less", "less_equal", "greater", "greater_equal", "and", "or", "not", "is_null",
                           "is_not_null", "cast_float64"}) {
    bool found = false;
    for (const Kernel& k : r.kernels()) found |= k.name == name;
    CQ_EXPECT_EQ(std::string(name) + (found ? " registered" : " missing"), std::string(name) + " registered");
  }
}

}  // namespace
}  // namespace cq::test
