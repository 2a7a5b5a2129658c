#include "rows/row_expression.h"

#include <cmath>
#include <limits>
#include <string>

#include "base/errors.h"
#include "batch/bitmap.h"
#include "rows/batch_rows.h"

namespace cq {

namespace {

Value FromScalar(const Scalar& s) {
  if (!s.valid || s.type == TypeId::kNull) return Value::Null();
  switch (s.type) {
    case TypeId::kInt64: return Value::Int(s.i64);
    case TypeId::kFloat64: return Value::Double(s.f64);
    case TypeId::kBool: return Value::Bool(s.b);
    case TypeId::kUtf8: return Value::String(s.str);
    case TypeId::kNull: break;
  }
  return Value::Null();
}

// A one-row column holding v (for the kernels without a scalar function here).
Column OneRow(TypeId type, const Value& v) {
  Column c;
  c.type = type;
  c.length = 1;
  if (type == TypeId::kNull || !v.valid) {
    if (type == TypeId::kNull) {
      c.null_count = 1;
      return c;
    }
    c.null_count = 1;
    c.validity = Buffer::AllocateZeroed(1);
  }
  switch (type) {
    case TypeId::kInt64:
    case TypeId::kFloat64:
      c.values = Buffer::Allocate(8);
      std::memcpy(c.values.data, &v.i, 8);
      if (!v.valid) std::memset(c.values.data, 0, 8);
      break;
    case TypeId::kBool:
      c.values = Buffer::AllocateZeroed(1);
      if (v.valid && v.i) bitmap::SetTo(c.values.data, 0, true);
      break;
    case TypeId::kUtf8: {
      const std::string_view s = v.valid ? v.s->view() : std::string_view();
      c.offsets = Buffer::Allocate(8);
      c.offsets.as<int32_t>()[0] = 0;
      c.offsets.as<int32_t>()[1] = static_cast<int32_t>(s.size());
      c.values = Buffer::Allocate(static_cast<int64_t>(s.size()));
      if (!s.empty()) std::memcpy(c.values.data, s.data(), s.size());
      break;
    }
    case TypeId::kNull: break;
  }
  return c;
}

int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

// The scalar functions, one per kernel family, with the kernels' semantics (kernels/*.cc).
struct Natives {
  using E = RowExpression;

  // Both string arguments evaluated, NULL if either is (kPropagate), and released after `f`.
  template <typename F>
  static Value StringBinary(const E& e, const Value* row, F f) {
    bool oa, ob;
    const Value a = e.Arg(0, row, &oa);
    if (!a.valid) return Value::Null();  // (a NULL holds no string)
    const Value b = e.Arg(1, row, &ob);
    Value r = b.valid ? f(a, b) : Value::Null();
    E::Drop(TypeId::kUtf8, a, oa);
    E::Drop(TypeId::kUtf8, b, ob);
    return r;
  }
  template <typename F>
  static Value Unary(const E& e, const Value* row, F f) {  // (no scalar function here takes a string)
    bool oa;
    const Value a = e.Arg(0, row, &oa);
    return a.valid ? f(a) : Value::Null();
  }

  // The binary functions on numbers, as operations on two valid values. Their calls are bound to
  // how each argument is read — a column, a literal or a call — when the expression is built
  // (NumberCall), so a row pays no test of its arguments' kinds: in a loop's filter such as
  // `id % n = k`, its two calls cost 50 instructions a row instead of 92.
  struct AddI {
    static Value Apply(Value a, Value b) { return Value::Int(Wrap(static_cast<uint64_t>(a.i) + static_cast<uint64_t>(b.i))); }
  };
  struct SubI {
    static Value Apply(Value a, Value b) { return Value::Int(Wrap(static_cast<uint64_t>(a.i) - static_cast<uint64_t>(b.i))); }
  };
  struct MulI {
    static Value Apply(Value a, Value b) { return Value::Int(Wrap(static_cast<uint64_t>(a.i) * static_cast<uint64_t>(b.i))); }
  };
  struct ModI {
    static Value Apply(Value a, Value b) {
      if (b.i == 0) return Value::Null();
      return Value::Int(b.i == -1 ? 0 : a.i % b.i);  // INT64_MIN % -1 overflows in C++; it is 0
    }
  };
  struct AddF {
    static Value Apply(Value a, Value b) { return Value::Double(a.d + b.d); }
  };
  struct SubF {
    static Value Apply(Value a, Value b) { return Value::Double(a.d - b.d); }
  };
  struct MulF {
    static Value Apply(Value a, Value b) { return Value::Double(a.d * b.d); }
  };
  struct DivF {
    static Value Apply(Value a, Value b) { return b.d == 0 ? Value::Null() : Value::Double(a.d / b.d); }
  };
  struct ModF {
    static Value Apply(Value a, Value b) { return b.d == 0 ? Value::Null() : Value::Double(std::fmod(a.d, b.d)); }
  };
  // One function per comparison and type, so that a row pays no dispatch on the type.
  template <typename Op>
  struct CompareInt {
    static Value Apply(Value a, Value b) { return Value::Bool(Op()(a.i, b.i)); }
  };
  template <typename Op>
  struct CompareDouble {
    static Value Apply(Value a, Value b) { return Value::Bool(Op()(a.d, b.d)); }
  };

  using Read = E::Kind;  // how an argument is read: its kind
  // An argument that is not a string, read as bound (nothing to own or release).
  template <Read K>
  static Value ReadNumber(const E& a, const Value* row) {
    if constexpr (K == Read::kColumn) return row[a.column_];
    else if constexpr (K == Read::kLiteral) return a.literal_;
    else return a.eval_(a, row);
  }
  template <typename Op, Read A, Read B>
  static Value Number(const E& e, const Value* row) {
    const Value a = ReadNumber<A>(*e.args_[0], row);
    if (!a.valid) return Value::Null();
    const Value b = ReadNumber<B>(*e.args_[1], row);
    return b.valid ? Op::Apply(a, b) : Value::Null();
  }
  template <typename Op, Read A>
  static E::Eval NumberCall(Read b) {
    switch (b) {
      case Read::kColumn: return Number<Op, A, Read::kColumn>;
      case Read::kLiteral: return Number<Op, A, Read::kLiteral>;
      case Read::kCall: break;
    }
    return Number<Op, A, Read::kCall>;
  }
  template <typename Op>
  static E::Eval NumberCall(const std::vector<Read>& reads) {
    switch (reads[0]) {
      case Read::kColumn: return NumberCall<Op, Read::kColumn>(reads[1]);
      case Read::kLiteral: return NumberCall<Op, Read::kLiteral>(reads[1]);
      case Read::kCall: break;
    }
    return NumberCall<Op, Read::kCall>(reads[1]);
  }

  static Value NegI(const E& e, const Value* r) {
    return Unary(e, r, [](Value a) { return Value::Int(Wrap(0ull - static_cast<uint64_t>(a.i))); });
  }
  static Value NegF(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Double(-a.d); }); }

  template <typename Op>
  static Value CompareString(const E& e, const Value* r) {
    return StringBinary(e, r, [](Value a, Value b) { return Value::Bool(Op()(a.s->view(), b.s->view())); });
  }
  template <typename Op>
  static E::Eval CompareFor(TypeId t, const std::vector<Read>& reads) {
    switch (t) {
      case TypeId::kInt64:
      case TypeId::kBool: return NumberCall<CompareInt<Op>>(reads);
      case TypeId::kFloat64: return NumberCall<CompareDouble<Op>>(reads);
      case TypeId::kUtf8: return CompareString<Op>;
      case TypeId::kNull: break;
    }
    return nullptr;
  }

  // Three-valued: FALSE AND x is FALSE, TRUE OR x is TRUE, otherwise NULL if either is.
  template <bool kAnd>
  static Value AndOr(const E& e, const Value* r) {
    bool oa, ob;
    const Value a = e.Arg(0, r, &oa);
    if (a.valid && (a.i != 0) != kAnd) return Value::Bool(!kAnd);  // decided by a
    const Value b = e.Arg(1, r, &ob);
    if (b.valid && (b.i != 0) != kAnd) return Value::Bool(!kAnd);
    if (!a.valid || !b.valid) return Value::Null();
    return Value::Bool(kAnd);
  }
  static Value Not(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Bool(a.i == 0); }); }

  template <bool kIsNull>
  static Value NullTest(const E& e, const Value* r) {
    bool oa;
    const Value a = e.Arg(0, r, &oa);
    const bool valid = a.valid && e.arg_type(0) != TypeId::kNull;
    E::Drop(e.arg_type(0), a, oa);
    return Value::Bool(valid != kIsNull);
  }

  static Value F64ToI64(const E& e, const Value* r) {
    return Unary(e, r, [](Value a) {
      const double d = a.d;
      if (std::isnan(d)) return Value::Int(0);
      if (d >= 9223372036854775808.0) return Value::Int(std::numeric_limits<int64_t>::max());
      if (d <= -9223372036854775808.0) return Value::Int(std::numeric_limits<int64_t>::min());
      return Value::Int(static_cast<int64_t>(d));
    });
  }
  static Value I64ToF64(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Double(static_cast<double>(a.i)); }); }
  static Value BoolToI64(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Int(a.i ? 1 : 0); }); }
  static Value BoolToF64(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Double(a.i ? 1.0 : 0.0); }); }
  static Value I64ToBool(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Bool(a.i != 0); }); }
  static Value F64ToBool(const E& e, const Value* r) { return Unary(e, r, [](Value a) { return Value::Bool(a.d != 0); }); }

  // case_when(c1, v1, ..., e): the value of the first TRUE condition, else e.
  static Value CaseWhen(const E& e, const Value* r) {
    const size_t n = e.args_.size();
    for (size_t k = 0; k + 1 < n; k += 2) {
      bool oc;
      const Value c = e.Arg(k, r, &oc);
      if (c.valid && c.i) return Own(e, k + 1, r);
    }
    return Own(e, n - 1, r);
  }
  // Argument i as a value the caller owns.
  static Value Own(const E& e, size_t i, const Value* r) {
    bool o;
    Value v = e.Arg(i, r, &o);
    if (!o && e.arg_type(i) == TypeId::kUtf8 && v.valid) RetainString(v.s);
    return v;
  }

  static E::Eval Find(const std::string& fn, const std::vector<TypeId>& args, const std::vector<Read>& reads) {
    const TypeId I = TypeId::kInt64, F = TypeId::kFloat64, B = TypeId::kBool;
    const TypeId a0 = args.empty() ? TypeId::kNull : args[0];
    if (args.size() == 2 && args[0] == args[1]) {
      if (a0 == I) {
        if (fn == "add") return NumberCall<AddI>(reads);
        if (fn == "subtract") return NumberCall<SubI>(reads);
        if (fn == "multiply") return NumberCall<MulI>(reads);
        if (fn == "modulo") return NumberCall<ModI>(reads);
      }
      if (a0 == F) {
        if (fn == "add") return NumberCall<AddF>(reads);
        if (fn == "subtract") return NumberCall<SubF>(reads);
        if (fn == "multiply") return NumberCall<MulF>(reads);
        if (fn == "divide") return NumberCall<DivF>(reads);
        if (fn == "modulo") return NumberCall<ModF>(reads);
      }
      if (a0 != TypeId::kNull) {
        if (fn == "equal") return CompareFor<std::equal_to<>>(a0, reads);
        if (fn == "not_equal") return CompareFor<std::not_equal_to<>>(a0, reads);
        if (fn == "less") return CompareFor<std::less<>>(a0, reads);
        if (fn == "less_equal") return CompareFor<std::less_equal<>>(a0, reads);
        if (fn == "greater") return CompareFor<std::greater<>>(a0, reads);
        if (fn == "greater_equal") return CompareFor<std::greater_equal<>>(a0, reads);
      }
      if (a0 == B) {
        if (fn == "and") return AndOr<true>;
        if (fn == "or") return AndOr<false>;
      }
    }
    if (args.size() == 1) {
      if (fn == "is_null") return NullTest<true>;
      if (fn == "is_not_null") return NullTest<false>;
      if (fn == "negate" && a0 == I) return NegI;
      if (fn == "negate" && a0 == F) return NegF;
      if (fn == "not" && a0 == B) return Not;
      if (fn == "cast_int64" && a0 == F) return F64ToI64;
      if (fn == "cast_int64" && a0 == B) return BoolToI64;
      if (fn == "cast_float64" && a0 == I) return I64ToF64;
      if (fn == "cast_float64" && a0 == B) return BoolToF64;
      if (fn == "cast_bool" && a0 == I) return I64ToBool;
      if (fn == "cast_bool" && a0 == F) return F64ToBool;
    }
    if (fn == "case_when" && args.size() >= 3 && args.size() % 2 == 1) return CaseWhen;
    return nullptr;
  }
};

std::unique_ptr<RowExpression> RowExpression::From(const Expression& e) {
  std::unique_ptr<RowExpression> r(new RowExpression());
  r->type_ = e.type();
  if (e.is_column()) {
    r->kind_ = Kind::kColumn;
    r->column_ = e.column_index();
    r->eval_ = EvalColumn;
    return r;
  }
  if (e.is_literal()) {
    r->kind_ = Kind::kLiteral;
    r->literal_ = FromScalar(e.literal());
    r->eval_ = EvalLiteral;
    return r;
  }
  r->kind_ = Kind::kCall;
  r->kernel_ = e.kernel();
  std::vector<TypeId> types;
  std::vector<Natives::Read> reads;
  for (size_t i = 0; i < e.arg_count(); ++i) {
    r->args_.push_back(From(e.arg(i)));
    types.push_back(r->args_.back()->type_);
    reads.push_back(r->args_.back()->kind_);
  }
  r->eval_ = Natives::Find(r->kernel_->name, types, reads);
  if (!r->eval_) r->eval_ = EvalKernel;
  return r;
}

RowExpression::~RowExpression() {
  if (kind_ == Kind::kLiteral && type_ == TypeId::kUtf8 && literal_.valid) ReleaseString(literal_.s);
}

Value RowExpression::EvalColumn(const RowExpression& e, const Value* row) {
  const Value v = row[e.column_];
  if (e.type_ == TypeId::kUtf8 && v.valid) RetainString(v.s);
  return v;
}

Value RowExpression::EvalLiteral(const RowExpression& e, const Value*) {
  if (e.type_ == TypeId::kUtf8 && e.literal_.valid) RetainString(e.literal_.s);
  return e.literal_;
}

Value RowExpression::EvalKernel(const RowExpression& e, const Value* row) {
  // The kernel over one-row columns; literal arguments stay scalars, as the batch form has them.
  const size_t n = e.args_.size();
  std::vector<Column> cols(n);
  std::vector<Datum> args(n);
  for (size_t i = 0; i < n; ++i) {
    const RowExpression& a = *e.args_[i];
    if (a.kind_ == Kind::kLiteral) {
      Scalar s;
      s.type = a.type_;
      s.valid = a.literal_.valid && a.type_ != TypeId::kNull;
      if (s.valid) {
        switch (a.type_) {
          case TypeId::kInt64: s.i64 = a.literal_.i; break;
          case TypeId::kFloat64: s.f64 = a.literal_.d; break;
          case TypeId::kBool: s.b = a.literal_.i != 0; break;
          case TypeId::kUtf8: s.str = std::string(a.literal_.s->view()); break;
          case TypeId::kNull: break;
        }
      }
      args[i].scalar = s;
      continue;
    }
    bool owned;
    const Value v = e.Arg(i, row, &owned);
    cols[i] = OneRow(a.type_, v);
    Drop(a.type_, v, owned);
    args[i].column = &cols[i];
  }
  const Column out = e.kernel_->fn(std::span<const Datum>(args.data(), n), 1);
  Value r = ColumnReader{&out}.At(0);
  return r;
}

}  // namespace cq
