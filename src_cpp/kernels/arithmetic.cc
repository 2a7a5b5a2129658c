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

// The definitions, one per function; the vector loops below and the row forms
// (kernels/row_form.h) are templates over them.
struct AddOp {
  static int64_t Apply(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  static double Apply(double a, double b) { return a + b; }
};
struct SubOp {
  static int64_t Apply(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  }
  static double Apply(double a, double b) { return a - b; }
};
struct MulOp {
  static int64_t Apply(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  static double Apply(double a, double b) { return a * b; }
};
// Division and modulo by a non-zero divisor (a zero one gives NULL: DivLike, row::ZeroIsNull).
struct DivOp {
  static double Apply(double a, double b) { return a / b; }
};
struct ModOp {
  // INT64_MIN % -1 overflows in C++; mathematically it is 0.
  static int64_t Apply(int64_t a, int64_t b) { return b == -1 ? int64_t(0) : a % b; }
  static double Apply(double a, double b) { return std::fmod(a, b); }
};
struct NegOp {
  static int64_t Apply(int64_t a) { return static_cast<int64_t>(0ull - static_cast<uint64_t>(a)); }
  static double Apply(double a) { return -a; }
};

template <typename T, typename Op, typename L, typename R>
void Loop(L l, R r, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Op::Apply(l(i), r(i));
}

template <typename T>
auto In(const Datum& d) {
  if constexpr (std::is_same_v<T, int64_t>) return d.scalar.i64;
  else return d.scalar.f64;
}

template <typename T>
const T* Ptr(const Datum& d) {
  return d.column->values.as<const T>();
}

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
template <typename T, typename Op>
Column DivLike(std::span<const Datum> args, int64_t n) {
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
    for (int64_t i = 0; i < n; ++i) o[i] = Op::Apply(av(i), d);
    out.validity = in_valid;
    out.null_count = nulls;
    return out;
  }
  const T* bp = Ptr<T>(b);
  bool any_zero = false;
  for (int64_t i = 0; i < n; ++i) {
    const T d = bp[i];
    any_zero |= (d == 0);
    o[i] = d == 0 ? T(0) : Op::Apply(av(i), d);
  }
  if (!any_zero) {
    out.validity = in_valid;
    out.null_count = nulls;
    return out;
  }
  out.validity = Buffer::Allocate(bitmap::Bytes(n));
  const uint8_t* iv = in_valid.empty() ? nullptr : in_valid.data;
  kernel::FillBits(out.validity.data, n, [&](int64_t i) { return bp[i] != 0 && (!iv || bitmap::Get(iv, i)); });
  out.null_count = n - bitmap::CountSet(out.validity.data, n);
  return out;
}

template <typename T, typename Op>
Column Unary(std::span<const Datum> args, int64_t n) {
  const TypeId type = std::is_same_v<T, int64_t> ? TypeId::kInt64 : TypeId::kFloat64;
  if (kernel::AnyNullScalar(args)) return Column::Nulls(type, n);
  Column out;
  out.type = type;
  out.length = n;
  out.validity = kernel::AndValidity(args, n, &out.null_count);
  out.values = Buffer::Allocate(n * 8);
  T* o = out.values.as<T>();
  const T* p = Ptr<T>(args[0]);
  for (int64_t i = 0; i < n; ++i) o[i] = Op::Apply(p[i]);
  return out;
}

// Both forms of a function from its definition.
template <typename T, typename Op>
Kernel BinaryKernel(const char* name, const char* doc) {
  const TypeId t = kernel::kTypeOf<T>;
  return {name, {t, t}, t, NullHandling::kPropagate, doc, Binary<T, Op>, row::BindBinary<row::Typed<T, Op>>};
}
template <typename T, typename Op>
Kernel DivisionKernel(const char* name, const char* doc) {
  const TypeId t = kernel::kTypeOf<T>;
  return {name, {t, t}, t, NullHandling::kPropagate, doc, DivLike<T, Op>, row::BindBinary<row::ZeroIsNull<T, Op>>};
}
template <typename T, typename Op>
Kernel UnaryKernel(const char* name, const char* doc) {
  const TypeId t = kernel::kTypeOf<T>;
  return {name, {t}, t, NullHandling::kPropagate, doc, Unary<T, Op>, row::BindUnary<row::Typed<T, Op>>};
}

}  // namespace

void RegisterArithmeticKernels(KernelRegistry& r) {
  r.Register(BinaryKernel<int64_t, AddOp>("add", "a + b (wraps on overflow)"));
  r.Register(BinaryKernel<double, AddOp>("add", "a + b"));
  r.Register(BinaryKernel<int64_t, SubOp>("subtract", "a - b (wraps on overflow)"));
  r.Register(BinaryKernel<double, SubOp>("subtract", "a - b"));
  r.Register(BinaryKernel<int64_t, MulOp>("multiply", "a * b (wraps on overflow)"));
  r.Register(BinaryKernel<double, MulOp>("multiply", "a * b"));
  r.Register(DivisionKernel<double, DivOp>("divide", "a / b; NULL when b = 0"));
  r.Register(DivisionKernel<int64_t, ModOp>("modulo", "a % b with the sign of a; NULL when b = 0"));
  r.Register(DivisionKernel<double, ModOp>("modulo", "fmod(a, b); NULL when b = 0"));
  r.Register(UnaryKernel<int64_t, NegOp>("negate", "-a (wraps on overflow)"));
  r.Register(UnaryKernel<double, NegOp>("negate", "-a"));
}

}  // namespace cq
