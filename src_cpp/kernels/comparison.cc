// = <> < <= > >= over int64, float64, utf8 (bytewise, i.e. code-point order) and bool; the result
// is a bit-packed bool column, NULL where either side is NULL. Mixed int64/float64 comparisons are
// typed by the planner (the int side is cast to float64).
#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

using namespace kernel;

// The definitions; the vector loop (Compare) and the row form (CompareRow) are templates over them.
struct Eq {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a == b;
  }
};
struct Ne {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a != b;
  }
};
struct Lt {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a < b;
  }
};
struct Le {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a <= b;
  }
};
struct Gt {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a > b;
  }
};
struct Ge {
  template <typename A>
  static bool Apply(const A& a, const A& b) {
    return a >= b;
  }
};

template <typename Op, typename L, typename R>
void Fill(uint8_t* out, int64_t n, L l, R r) {
  FillBits(out, n, [&](int64_t i) { return Op::Apply(l(i), r(i)); });
}

template <typename Op>
Column Compare(std::span<const Datum> args, int64_t n) {
  if (AnyNullScalar(args)) return Column::Nulls(TypeId::kBool, n);
  Column out;
  out.type = TypeId::kBool;
  out.length = n;
  out.validity = AndValidity(args, n, &out.null_count);
  out.values = Buffer::Allocate(bitmap::Bytes(n));
  uint8_t* o = out.values.data;
  const Datum &a = args[0], &b = args[1];
  const bool as = a.is_scalar(), bs = b.is_scalar();
  switch (a.type()) {
    case TypeId::kInt64: {
      if (!as && !bs) Fill<Op>(o, n, ColumnIn<int64_t>{a.column->i64()}, ColumnIn<int64_t>{b.column->i64()});
      else if (!as) Fill<Op>(o, n, ColumnIn<int64_t>{a.column->i64()}, ScalarIn<int64_t>{b.scalar.i64});
      else if (!bs) Fill<Op>(o, n, ScalarIn<int64_t>{a.scalar.i64}, ColumnIn<int64_t>{b.column->i64()});
      else Fill<Op>(o, n, ScalarIn<int64_t>{a.scalar.i64}, ScalarIn<int64_t>{b.scalar.i64});
      break;
    }
    case TypeId::kFloat64: {
      if (!as && !bs) Fill<Op>(o, n, ColumnIn<double>{a.column->f64()}, ColumnIn<double>{b.column->f64()});
      else if (!as) Fill<Op>(o, n, ColumnIn<double>{a.column->f64()}, ScalarIn<double>{b.scalar.f64});
      else if (!bs) Fill<Op>(o, n, ScalarIn<double>{a.scalar.f64}, ColumnIn<double>{b.column->f64()});
      else Fill<Op>(o, n, ScalarIn<double>{a.scalar.f64}, ScalarIn<double>{b.scalar.f64});
      break;
    }
    case TypeId::kBool: {
      if (!as && !bs) Fill<Op>(o, n, BoolColumnIn{a.column->bits()}, BoolColumnIn{b.column->bits()});
      else if (!as) Fill<Op>(o, n, BoolColumnIn{a.column->bits()}, ScalarIn<bool>{b.scalar.b});
      else if (!bs) Fill<Op>(o, n, ScalarIn<bool>{a.scalar.b}, BoolColumnIn{b.column->bits()});
      else Fill<Op>(o, n, ScalarIn<bool>{a.scalar.b}, ScalarIn<bool>{b.scalar.b});
      break;
    }
    case TypeId::kUtf8: {
      if (!as && !bs) Fill<Op>(o, n, StrColumnIn{a.column}, StrColumnIn{b.column});
      else if (!as) Fill<Op>(o, n, StrColumnIn{a.column}, StrScalarIn{b.scalar.str});
      else if (!bs) Fill<Op>(o, n, StrScalarIn{a.scalar.str}, StrColumnIn{b.column});
      else Fill<Op>(o, n, StrScalarIn{a.scalar.str}, StrScalarIn{b.scalar.str});
      break;
    }
    case TypeId::kNull: return Column::Nulls(TypeId::kBool, n);
  }
  return out;
}

template <typename Op>
RowNode::Eval CompareRow(const RowNode& call) {
  switch (call.args[0]->type) {
    case TypeId::kInt64: return row::BindBinary<row::Typed<int64_t, Op>>(call);
    case TypeId::kFloat64: return row::BindBinary<row::Typed<double, Op>>(call);
    case TypeId::kBool: return row::BindBinary<row::Typed<bool, Op>>(call);
    case TypeId::kUtf8: return row::StringBinary<row::Typed<std::string_view, Op>>;
    case TypeId::kNull: break;
  }
  return nullptr;
}

}  // namespace

void RegisterComparisonKernels(KernelRegistry& r) {
  const TypeId B = TypeId::kBool;
  auto P = NullHandling::kPropagate;
  for (TypeId t : {TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool}) {
    r.Register({"equal", {t, t}, B, P, "a = b", Compare<Eq>, CompareRow<Eq>});
    r.Register({"not_equal", {t, t}, B, P, "a <> b", Compare<Ne>, CompareRow<Ne>});
    r.Register({"less", {t, t}, B, P, "a < b", Compare<Lt>, CompareRow<Lt>});
    r.Register({"less_equal", {t, t}, B, P, "a <= b", Compare<Le>, CompareRow<Le>});
    r.Register({"greater", {t, t}, B, P, "a > b", Compare<Gt>, CompareRow<Gt>});
    r.Register({"greater_equal", {t, t}, B, P, "a >= b", Compare<Ge>, CompareRow<Ge>});
  }
}

}  // namespace cq
