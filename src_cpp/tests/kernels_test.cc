// Every kernel family, called as compiled expressions call them: looked up in the registry by name
// and argument types, over hand-built columns. Several cases use 130 rows so that the 64-row word
// loops run twice and then a tail; Call() also checks that each result is well formed.
#include <cmath>
#include <cstring>
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
std::vector<std::optional<R>> Zip(const std::vector<std::optional<T>>& a, const std::vector<std::optional<T>>& b, F f) {
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
  CQ_EXPECT_EQ(ReadF64(Call("add", {Col(a), Col(b)}, n)),
               Zip<double>(av, bv, [](double x, double y) { return x + y; }));
  CQ_EXPECT_EQ(ReadF64(Call("subtract", {Col(a), Col(b)}, n)),
               Zip<double>(av, bv, [](double x, double y) { return x - y; }));
  CQ_EXPECT_EQ(ReadF64(Call("multiply", {Col(a), Col(b)}, n)),
               Zip<double>(av, bv, [](double x, double y) { return x * y; }));
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
      {"equal", std::equal_to<T>()},  {"not_equal", std::not_equal_to<T>()},
      {"less", std::less<T>()},       {"less_equal", std::less_equal<T>()},
      {"greater", std::greater<T>()}, {"greater_equal", std::greater_equal<T>()}};
  for (const auto& [name, f] : ops) {
    Bools want;
    for (int64_t i = 0; i < n; ++i)
      want.push_back(lv[i] && rv[i] ? std::optional<bool>(f(*lv[i], *rv[i])) : std::nullopt);
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
        const std::string tag =
            "n=" + std::to_string(n) + " nulls " + std::to_string(nulls_a) + "/" + std::to_string(nulls_b) + ": ";
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
  const std::vector<std::vector<bool>> nulls = {[&] {
                                                  std::vector<bool> v;
                                                  for (auto& x : iv) v.push_back(!x);
                                                  return v;
                                                }(),
                                                std::vector<bool>(n, false),
                                                [&] {
                                                  std::vector<bool> v;
                                                  for (auto& x : sv) v.push_back(!x);
                                                  return v;
                                                }(),
                                                [&] {
                                                  std::vector<bool> v;
                                                  for (auto& x : bv) v.push_back(!x);
                                                  return v;
                                                }(),
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

// ---- CASE ------------------------------------------------------------------------------------

// Row i of a kernel argument (a column's row, or the scalar), as ValueToString prints it.
std::string Cell(const Datum& d, int64_t i) {
  if (!d.is_scalar()) return ValueToString(*d.column, i);
  Column one = Broadcast(d.scalar, 1);
  return ValueToString(one, 0);
}
std::vector<std::string> Cells(const Column& c) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < c.length; ++i) out.push_back(ValueToString(c, i));
  return out;
}

// CASE row by row: the value of the first condition that is TRUE, else the last argument.
std::vector<std::string> CaseReference(const std::vector<Datum>& args, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    size_t pick = args.size() - 1;
    for (size_t j = 0; j + 1 < args.size(); j += 2) {
      if (Cell(args[j], i) == "true") {
        pick = j + 1;
        break;
      }
    }
    out.push_back(Cell(args[pick], i));
  }
  return out;
}

Column RandomColumn(Rng& rng, TypeId type, int64_t n, int null_every) {
  switch (type) {
    case TypeId::kInt64: return I64(RandomI64(rng, n, -50, 50, null_every));
    case TypeId::kFloat64: {
      F64s v;
      for (int64_t i = 0; i < n; ++i)
        v.push_back(null_every && rng.Below(null_every) == 0 ? std::optional<double>() : rng.Below(1000) / 8.0 - 60);
      return F64(v);
    }
    case TypeId::kUtf8: {
      const std::vector<std::string> words = {"", "a", "bb", "ccc", "\xc3\xa9t\xc3\xa9", "a longer string than most"};
      Strs v;
      for (int64_t i = 0; i < n; ++i)
        v.push_back(null_every && rng.Below(null_every) == 0 ? std::optional<std::string>() : words[rng.Below(6)]);
      return Str(v);
    }
    default: return Bool(RandomBools(rng, n, null_every));
  }
}

Datum RandomScalar(Rng& rng, TypeId type) {
  Column one = RandomColumn(rng, type, 1, 4);
  Datum d;
  d.scalar = ScalarAt(one, 0);
  return d;
}

CQ_TEST(case_when_takes_the_first_true_condition_and_null_is_not_true) {
  Column c1 = Bool({true, false, N, false, N, true});
  Column c2 = Bool({false, true, true, N, N, true});
  Column v1 = I64({1, 2, 3, 4, 5, 6});
  Column e = I64({-1, -2, -3, -4, N, -6});
  Column r = Call("case_when", {Col(c1), Col(v1), Col(c2), ScalarI64(100), Col(e)}, 6);
  CQ_EXPECT_EQ(ReadI64(r), (I64s{1, 100, 100, -4, N, 6}));
  // Without ELSE (the planner's NULL), and with a NULL THEN value.
  CQ_EXPECT_EQ(ReadI64(Call("case_when", {Col(c1), ScalarI64(N), Col(c2), Col(v1), ScalarI64(N)}, 6)),
               (I64s{N, 2, 3, N, N, N}));
  // Every result type.
  Column s = Str({"a", "b", "c", "d", "e", "f"});
  CQ_EXPECT_EQ(ReadStr(Call("case_when", {Col(c1), Col(s), Col(c2), ScalarStr("two"), ScalarStr("")}, 6)),
               (Strs{"a", "two", "two", "", "", "f"}));
  CQ_EXPECT_EQ(ReadF64(Call("case_when", {Col(c2), ScalarF64(0.5), ScalarF64(-1.0)}, 6)),
               (F64s{-1.0, 0.5, 0.5, -1.0, -1.0, 0.5}));
  CQ_EXPECT_EQ(ReadBool(Call("case_when", {Col(c1), Col(c2), ScalarBool(N)}, 6)), (Bools{false, N, N, N, N, true}));
}

CQ_TEST(case_when_every_type_and_arity_against_a_row_wise_reference) {
  Rng rng(5);
  for (TypeId type : {TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool}) {
    for (int whens : {1, 2, 3, 7, 15, 16, 40}) {
      for (int64_t n : {1, 64, 130}) {
        std::vector<Column> cols;
        cols.reserve(static_cast<size_t>(2 * whens + 1));
        std::vector<Datum> args;
        for (int a = 0; a < 2 * whens + 1; ++a) {
          const TypeId t = (a % 2 == 0 && a < 2 * whens) ? TypeId::kBool : type;
          // About one argument in four is a scalar (NULL ones too); the first is always a column.
          if (a > 0 && rng.Below(4) == 0) {
            args.push_back(RandomScalar(rng, t));
          } else {
            // Sparse conditions, so that later branches get rows too.
            cols.push_back(t == TypeId::kBool && a < 2 * whens ? Bool([&] {
              Bools v;
              for (int64_t i = 0; i < n; ++i)
                v.push_back(rng.Below(5) == 0 ? std::optional<bool>() : rng.Below(whens + 1) == 0);
              return v;
            }())
                                                               : RandomColumn(rng, t, n, 5));
            args.push_back(Col(cols.back()));
          }
        }
        const std::string tag =
            std::string(TypeName(type)) + " whens=" + std::to_string(whens) + " n=" + std::to_string(n) + ": ";
        CQ_EXPECT_EQ(tag + Show(Cells(Call("case_when", args, n))), tag + Show(CaseReference(args, n)));
      }
    }
  }
}

CQ_TEST(case_when_one_branch_for_every_row_is_that_branch) {
  Column v = I64({1, N, 3});
  Column c = Bool({false, false, N});
  // A constant TRUE condition: the column itself, not a copy.
  Column r = Call("case_when", {ScalarBool(true), Col(v), ScalarI64(0)}, 3);
  CQ_EXPECT(r.values.data == v.values.data);
  CQ_EXPECT_EQ(ReadI64(r), (I64s{1, N, 3}));
  // No condition is ever TRUE: the ELSE scalar, repeated.
  CQ_EXPECT_EQ(ReadI64(Call("case_when", {Col(c), Col(v), ScalarBool(N), Col(v), ScalarI64(7)}, 3)), (I64s{7, 7, 7}));
  CQ_EXPECT_EQ(ReadStr(Call("case_when", {Col(c), ScalarStr("x"), ScalarStr(N)}, 3)), (Strs{N, N, N}));
  // Zero rows.
  Column empty_b = Bool({}), empty_i = I64({});
  CQ_EXPECT_EQ(Call("case_when", {Col(empty_b), Col(empty_i), ScalarI64(1)}, 0).length, 0);
}

// ---- CAST --------------------------------------------------------------------------------------

// A table of (input, expected) cases as the input values and the expected values, with a NULL row
// at the end (NULL in, NULL out).
template <typename A, typename B>
auto Unzip(const std::vector<std::pair<A, B>>& cases) {
  using OptB = std::conditional_t<IsOptional<B>::value, B, std::optional<B>>;
  std::pair<std::vector<std::optional<A>>, std::vector<OptB>> out;
  for (const auto& [a, b] : cases) {
    out.first.push_back(a);
    out.second.push_back(b);
  }
  out.first.push_back(std::nullopt);
  out.second.push_back(std::nullopt);
  return out;
}

CQ_TEST(cast_float64_to_int64_truncates_saturates_and_nan_is_zero) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Column a = F64({1.9, -1.9, 0.5, -0.5, -0.0, nan, inf, -inf, 9.3e18, -9.3e18, 9223372036854775807.0,
                  -9223372036854775808.0, 9223372036854774784.0, N});
  CQ_EXPECT_EQ(ReadI64(Call("cast_int64", {Col(a)}, 14)),
               (I64s{1, -1, 0, 0, 0, 0, kMax, kMin, kMax, kMin, kMax, kMin, 9223372036854774784, N}));
}

CQ_TEST(cast_between_numbers_and_booleans) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Column i = I64({0, 1, -1, kMin, N});
  CQ_EXPECT_EQ(ReadBool(Call("cast_bool", {Col(i)}, 5)), (Bools{false, true, true, true, N}));
  Column f = F64({0.0, -0.0, 1e-300, -2.5, nan, N});
  CQ_EXPECT_EQ(ReadBool(Call("cast_bool", {Col(f)}, 6)), (Bools{false, false, true, true, true, N}));
  Column b = Bool({true, false, N});
  CQ_EXPECT_EQ(ReadI64(Call("cast_int64", {Col(b)}, 3)), (I64s{1, 0, N}));
  CQ_EXPECT_EQ(ReadF64(Call("cast_float64", {Col(b)}, 3)), (F64s{1.0, 0.0, N}));
  // Casts that cannot fail share the input's validity.
  Column r = Call("cast_float64", {Col(i)}, 5);
  CQ_EXPECT(r.validity.data == i.validity.data);
  // Over 130 rows: the bit-packing loop and its tail.
  Rng rng(6);
  I64s iv = RandomI64(rng, 130, -2, 2, 7);
  Bools want;
  for (auto x : iv) want.push_back(x ? std::optional<bool>(*x != 0) : std::nullopt);
  CQ_EXPECT_EQ(ReadBool(Call("cast_bool", {Col(I64(iv))}, 130)), want);
}

// Doubles as Java's Double.toString (JDK 19 and later: the shortest digits, at least two; JDK 17
// prints a few values otherwise, 1e23 as 9.999999999999999E22).
CQ_TEST(cast_to_utf8_prints_integers_booleans_and_doubles_as_java_does) {
  Column i = I64({0, -7, kMax, kMin, N});
  CQ_EXPECT_EQ(ReadStr(Call("cast_utf8", {Col(i)}, 5)),
               (Strs{"0", "-7", "9223372036854775807", "-9223372036854775808", N}));
  Column b = Bool({true, false, N});
  CQ_EXPECT_EQ(ReadStr(Call("cast_utf8", {Col(b)}, 3)), (Strs{"true", "false", N}));
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<double, std::string>> doubles = {{0.0, "0.0"},
                                                               {-0.0, "-0.0"},
                                                               {1.0, "1.0"},
                                                               {-0.5, "-0.5"},
                                                               {100.0, "100.0"},
                                                               {1.5, "1.5"},
                                                               {0.1 + 0.2, "0.30000000000000004"},
                                                               {1e7, "1.0E7"},
                                                               {9999999.0, "9999999.0"},
                                                               {9999999.5, "9999999.5"},
                                                               {12345678.9, "1.23456789E7"},
                                                               {1e10, "1.0E10"},
                                                               {-1e10, "-1.0E10"},
                                                               {0.001, "0.001"},
                                                               {0.00123, "0.00123"},
                                                               {0.0001, "1.0E-4"},
                                                               {-1.5e-5, "-1.5E-5"},
                                                               {1e21, "1.0E21"},
                                                               {1e23, "1.0E23"},
                                                               {123456.789, "123456.789"},
                                                               {1.7976931348623157e308, "1.7976931348623157E308"},
                                                               {2.2250738585072014e-308, "2.2250738585072014E-308"},
                                                               {4.9e-324, "4.9E-324"},
                                                               {1e-323, "9.9E-324"},
                                                               {-4.9e-324, "-4.9E-324"},
                                                               {5e-322, "5.0E-322"},
                                                               {std::numeric_limits<double>::quiet_NaN(), "NaN"},
                                                               {inf, "Infinity"},
                                                               {-inf, "-Infinity"},
                                                               {9007199254740993.0, "9.007199254740992E15"},
                                                               {1234567.0, "1234567.0"}};
  const auto [in, want] = Unzip(doubles);
  CQ_EXPECT_EQ(ReadStr(Call("cast_utf8", {Col(F64(in))}, static_cast<int64_t>(in.size()))), want);
}

CQ_TEST(cast_utf8_to_int64_trims_truncates_fractions_and_refuses_the_rest) {
  const std::vector<std::pair<std::string, std::optional<int64_t>>> cases = {{"42", 42},
                                                                             {"-42", -42},
                                                                             {"+42", 42},
                                                                             {"  42\t\n", 42},
                                                                             {"\x7f"
                                                                              "5\x01",
                                                                              5},
                                                                             {"007", 7},
                                                                             {"1.9", 1},
                                                                             {"-1.9", -1},
                                                                             {"1.", 1},
                                                                             {".5", 0},
                                                                             {"-.5", 0},
                                                                             {"9223372036854775807", kMax},
                                                                             {"-9223372036854775808", kMin},
                                                                             {"9223372036854775807.99", kMax},
                                                                             {"9223372036854775808", N},
                                                                             {"-9223372036854775809", N},
                                                                             {"99999999999999999999", N},
                                                                             {"", N},
                                                                             {"  ", N},
                                                                             {"-", N},
                                                                             {"+", N},
                                                                             {".", N},
                                                                             {"-.", N},
                                                                             {"1e3", N},
                                                                             {"1.5e3", N},
                                                                             {"0x10", N},
                                                                             {"1 2", N},
                                                                             {"1.2.3", N},
                                                                             {"1.x", N},
                                                                             {"--1", N},
                                                                             {"+-1", N},
                                                                             {"abc", N},
                                                                             {"1,000", N},
                                                                             {"\xef\xbc\x91", N} /* fullwidth 1 */};
  const auto [in, want] = Unzip(cases);
  CQ_EXPECT_EQ(ReadI64(Call("cast_int64", {Col(Str(in))}, static_cast<int64_t>(in.size()))), want);
}

CQ_TEST(cast_utf8_to_float64_reads_java_numbers_and_spark_special_values) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, std::optional<double>>> cases = {
      {"1", 1.0},
      {"-1.5", -1.5},
      {"+2.25", 2.25},
      {" 3.5\t", 3.5},
      {"1.", 1.0},
      {".5", 0.5},
      {"-.5", -0.5},
      {"1e3", 1000.0},
      {"1E+3", 1000.0},
      {"2.5e-3", 0.0025},
      {"1.5d", 1.5},
      {"1.5F", 1.5},
      {"7f", 7.0},
      {"0x1p3", 8.0},
      {"0X1.8P1", 3.0},
      {"-0x10p0", -16.0},
      {"0x1p-1074", 4.9e-324},
      {"0x1.8p1d", 3.0},
      {"0x.8p1", 1.0},
      {"0x1.p1", 2.0},
      {"0.30000000000000004", 0.1 + 0.2},
      {"123456789012345678901234567890", 1.2345678901234568e29},
      {"1e400", inf},
      {"-1e400", -inf},
      {"1e-400", 0.0},
      {"4.9e-324", 4.9e-324},
      {"2e-324", 0.0},
      {"1.7976931348623157e308", 1.7976931348623157e308},
      {"0.0000001e99999999999999999999", inf},
      {"Infinity", inf},
      {"-Infinity", -inf},
      {"+Infinity", inf},
      {"infinity", inf},
      {"INF", inf},
      {"-inf", -inf},
      {" +Inf ", inf},
      {"", N},
      {" ", N},
      {"-", N},
      {".", N},
      {"e5", N},
      {"1e", N},
      {"1e+", N},
      {"1.2.3", N},
      {"1 2", N},
      {"1_000", N},
      {"0x10", N},
      {"0x", N},
      {"0xp1", N},
      {"0x1.p", N},
      {"1d5", N},
      {"1.5dd", N},
      {"d", N},
      {"infinityx", N},
      {"nanx", N},
      {"-nan", N},
      {"++1", N},
      {"1,5", N},
      {"abc", N}};
  const auto [in, want] = Unzip(cases);
  CQ_EXPECT_EQ(ReadF64(Call("cast_float64", {Col(Str(in))}, static_cast<int64_t>(in.size()))), want);
  // NaN in any case (and Java's signed NaN), which == cannot compare.
  Column nans = Str({"NaN", "nan", " NAN ", "-NaN", "+NaN"});
  for (std::optional<double> v : ReadF64(Call("cast_float64", {Col(nans)}, 5))) CQ_EXPECT(v && std::isnan(*v));
  // The sign of zero survives.
  F64s zeros = ReadF64(Call("cast_float64", {Col(Str({"-0", "-1e-400", "0"}))}, 3));
  CQ_EXPECT(std::signbit(*zeros[0]) && std::signbit(*zeros[1]) && !std::signbit(*zeros[2]));
}

CQ_TEST(cast_utf8_to_bool_accepts_spark_words_in_any_case) {
  Strs in = {"t", "TRUE", " True ", "y",   "Yes", "1",   "f",   "false", "\tFALSE\n", "n",    "NO",
             "0", "",     "2",      "1.0", "on",  "off", "tru", "yess",  "-1",        "null", N};
  Bools want = {true,  true, true, true, true, true, false, false, false, false, false,
                false, N,    N,    N,    N,    N,    N,     N,     N,     N,     N};
  CQ_EXPECT_EQ(ReadBool(Call("cast_bool", {Col(Str(in))}, static_cast<int64_t>(in.size()))), want);
}

CQ_TEST(cast_float64_to_utf8_reads_back_as_the_same_double) {
  // Random bit patterns: every finite double's text parses back to it, bit for bit.
  Rng rng(7);
  const int64_t n = 4000;
  F64s in;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = rng.Next();
    if (i % 4 == 0) bits &= 0x800FFFFFFFFFFFFFull;  // subnormals too
    double d;
    std::memcpy(&d, &bits, 8);
    in.push_back(std::isfinite(d) ? d : 1.0);
  }
  Column text = Call("cast_utf8", {Col(F64(in))}, n);
  F64s back = ReadF64(Call("cast_float64", {Col(text)}, n));
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t a, b;
    std::memcpy(&a, &*in[i], 8);
    std::memcpy(&b, &*back[i], 8);
    same += a == b;
  }
  CQ_EXPECT_EQ(same, n);
  // And integers of the whole BIGINT range, through VARCHAR.
  I64s iv = {kMin, kMax, N};
  for (int k = 0; k < 199; ++k) iv.push_back(static_cast<int64_t>(rng.Next() >> (k % 64)));
  CQ_EXPECT_EQ(ReadI64(Call("cast_int64", {Col(Call("cast_utf8", {Col(I64(iv))}, 202))}, 202)), iv);
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
  // Every cast between two different types.
  for (TypeId from : {I, F, S, B})
    for (const auto& [name, to] : {std::pair{"cast_int64", I}, {"cast_float64", F}, {"cast_utf8", S}, {"cast_bool", B}})
      if (from != to)
        CQ_EXPECT_EQ(std::string(name) + (r.Find(name, {from}) ? " found" : " missing"), std::string(name) + " found");
  // case_when is variadic: (bool, T)+ T, for any number of WHENs.
  CQ_EXPECT_EQ(r.Find("case_when", {B, S, S})->result, S);
  CQ_EXPECT_EQ(r.Find("case_when", {B, F, B, F, F})->result, F);
  std::vector<TypeId> many;
  for (int k = 0; k < 100; ++k) many.insert(many.end(), {B, I});
  many.push_back(I);
  CQ_EXPECT_EQ(r.Find("case_when", many)->result, I);
  CQ_EXPECT(r.Find("case_when", {B, I}) == nullptr);  // no ELSE: the planner adds NULL
  CQ_EXPECT(r.Find("case_when", {I}) == nullptr);
  CQ_EXPECT(r.Find("case_when", {B, I, I, I}) == nullptr);     // a value where a condition goes
  CQ_EXPECT(r.Find("case_when", {B, I, B, F, I}) == nullptr);  // branches of different types
  CQ_EXPECT(r.Find("case_when", {I, I, I}) == nullptr);        // a condition that is not BOOLEAN
  std::set<std::pair<std::string, std::vector<TypeId>>> seen;
  for (const Kernel& k : r.kernels()) {
    CQ_EXPECT(k.fn != nullptr);
    CQ_EXPECT(!k.doc.empty());
    CQ_EXPECT(seen.insert({k.name, k.args}).second);
  }
  for (const char* name :
       {"add",         "subtract",   "multiply",     "divide",        "modulo",    "negate",   "equal", "not_equal",
        "less",        "less_equal", "greater",      "greater_equal", "and",       "or",       "not",   "is_null",
        "is_not_null", "cast_int64", "cast_float64", "cast_utf8",     "cast_bool", "case_when"}) {
    bool found = false;
    for (const Kernel& k : r.kernels()) found |= k.name == name;
    CQ_EXPECT_EQ(std::string(name) + (found ? " registered" : " missing"), std::string(name) + " registered");
  }
}

}  // namespace
}  // namespace cq::test
