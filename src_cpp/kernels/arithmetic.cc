// + - * / % and unary minus over int64 and float64.
// Overflow of int64 wraps (two's complement), as in Spark and Java; division and modulo by zero
// give NULL, as in Spark SQL and DuckDB; `/` always yields DOUBLE (the planner casts integer
// operands), so integer division only exists as an explicit CAST.
#include <cmath>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

using kernel::ColumnIn;
using kernel::ScalarIn;

struct AddOp {
  static int64_t I(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
  static double F(double a, double b) { return a + b; }
};
struct SubOp {
  static int64_t I(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
  static double F(double a, double b) { return a - b; }
};
struct MulOp {
  static int64_t I(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
  static double F(double a, double b) { return a * b; }
};

template <typename T, typename Op, typename L, typename R>
void Loop(L l, R r, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, int64_t>) out[i] = Op::I(l(i), r(i));
    else out[i] = Op::F(l(i), r(i));
  }
}

template <typename T>
auto In(const Datum& d) {
  if constexpr (std::is_same_v<T, int64_t>) return d.scalar.i64;
  else return d.scalar.f64;
}

template <typename T>
const T* Ptr(const Datum& d) { return d.column->values.as<const T>(); }

// Dispatches the four column/scalar combinations of a binary kernel to one templated loop.
template <typename T, typename Op>
Column Binary(std::span<const Datum> args, int64_t n) {
  const TypeId type = std::is_same_v<T, int64_t> ? TypeId::kInt64 : TypeId::kFloat64;
  if (kernel::AnyNullScalar(args)) return Column::Nulls(type, n);
  Column out;
  out.type = type;
  out.length = n;
  out.validity = kernel::AndValidity(args, n, &out.null_count);
  out.values = Buffer::Allocate(n * 8);
  T* o = out.values.as<T>();
  const Datum &a = args[0], &b = args[1];
  if (!a.is_scalar() && !b.is_scalar()) Loop<T, Op>(ColumnIn<T>{Ptr<T>(a)}, ColumnIn<T>{Ptr<T>(b)}, n, o);
  else if (!a.is_scalar()) Loop<T, Op>(ColumnIn<T>{Ptr<T>(a)}, ScalarIn<T>{In<T>(b)}, n, o);
  else if (!b.is_scalar()) Loop<T, Op>(ScalarIn<T>{In<T>(a)}, ColumnIn<T>{Ptr<T>(b)}, n, o);
  else Loop<T, Op>(ScalarIn<T>{In<T>(a)}, ScalarIn<T>{In<T>(b)}, n, o);
  return out;
}

// Division and modulo: a zero divisor yields NULL, so the result validity is the inputs' validity
// minus the rows whose divisor is zero.
template <typename T, typename Fn>
Column DivLike(std::span<const Datum> args, int64_t n, Fn fn) {
  const TypeId type = std::is_same_v<T, int64_t> ? TypeId::kInt64 : TypeId::kFloat64;
  if (kernel::AnyNullScalar(args)) return Column::Nulls(type, n);
  const Datum &a = args[0], &b = args[1];
  if (b.is_scalar() && In<T>(b) == 0) return Column::Nulls(type, n);
  Column out;
  out.type = type;
  out.length = n;
  int64_t nulls = 0;
  Buffer in_valid = kernel::AndValidity(args, n, &nulls);
  out.values = Buffer::Allocate(n * 8);
  T* o = out.values.as<T>();
  auto av = [&](int64_t i) -> T { return a.is_scalar() ? In<T>(a) : Ptr<T>(a)[i]; };
  if (b.is_scalar()) {
    const T d = In<T>(b);
    for (int64_t i = 0; i < n; ++i) o[i] = fn(av(i), d);
    out.validity = in_valid;
    out.null_count = nulls;
    return out;
  }
  const T* bp = Ptr<T>(b);
  bool any_zero = false;
  for (int64_t i = 0; i < n; ++i) {
    const T d = bp[i];
    any_zero |= (d == 0);
    o[i] = d == 0 ? T(0) : fn(av(i), d);
  }
  if (!any_zero) {
    out.validity = in_valid;
    out.null_count = nulls;
    return out;
  }
  out.validity = Buffer::Allocate(bitmap::Bytes(n));
  const uint8_t* iv = in_valid.empty() ? nullptr : in_valid.data;
  kernel::FillBits(out.validity.data, n, [&](int64_t i) {
    return bp[i] != 0 && (!iv || bitmap::Get(iv, i));
  });
  out.null_count = n - bitmap::CountSet(out.validity.data, n);
  return out;
}

Column DivF64(std::span<const Datum> args, int64_t n) {
  return DivLike<double>(args, n, [](double x, double y) { return x / y; });
}
Column ModI64(std::span<const Datum> args, int64_t n) {
  // INT64_MIN % -1 overflows in C++; mathematically it is 0.
  return DivLike<int64_t>(args, n, [](int64_t x, int64_t y) { return y == -1 ? int64_t(0) : x % y; });
}
Column ModF64(std::span<const Datum> args, int64_t n) {
  return DivLike<double>(args, n, [](double x, double y) { return std::fmod(x, y); });
}

template <typename T>
Column Negate(std::span<const Datum> args, int64_t n) {
  const TypeId type = std::is_same_v<T, int64_t> ? TypeId::kInt64 : TypeId::kFloat64;
  if (kernel::AnyNullScalar(args)) return Column::Nulls(type, n);
  Column out;
  out.type = type;
  out.length = n;
  out.validity = kernel::AndValidity(args, n, &out.null_count);
  out.values = Buffer::Allocate(n * 8);
  T* o = out.values.as<T>();
  const T* p = Ptr<T>(args[0]);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, int64_t>) o[i] = static_cast<int64_t>(0ull - static_cast<uint64_t>(p[i]));
    else o[i] = -p[i];
  }
  return out;
}

}  // namespace

void RegisterArithmeticKernels(KernelRegistry& r) {
  const TypeId I = TypeId::kInt64, F = TypeId::kFloat64;
  auto P = NullHandling::kPropagate;
  r.Register({"add", {I, I}, I, P, "a + b (wraps on overflow)", Binary<int64_t, AddOp>});
  r.Register({"add", {F, F}, F, P, "a + b", Binary<double, AddOp>});
  r.Register({"subtract", {I, I}, I, P, "a - b (wraps on overflow)", Binary<int64_t, SubOp>});
  r.Register({"subtract", {F, F}, F, P, "a - b", Binary<double, SubOp>});
  r.Register({"multiply", {I, I}, I, P, "a * b (wraps on overflow)", Binary<int64_t, MulOp>});
  r.Register({"multiply", {F, F}, F, P, "a * b", Binary<double, MulOp>});
  r.Register({"divide", {F, F}, F, P, "a / b; NULL when b = 0", DivF64});
  r.Register({"modulo", {I, I}, I, P, "a % b with the sign of a; NULL when b = 0", ModI64});
  r.Register({"modulo", {F, F}, F, P, "fmod(a, b); NULL when b = 0", ModF64});
  r.Register({"negate", {I}, I, P, "-a (wraps on overflow)", Negate<int64_t>});
  r.Register({"negate", {F}, F, P, "-a", Negate<double>});
}

}  // namespace cq
