#pragma once
// A kernel's row form: the same function applied to one row's Values, for loop regions
// (rows/ROWS.md), where a batch of one or two rows costs more than the row's work. As in DuckDB's
// ScalarFunction and Velox's simple functions, a function is written once, as an operation on
// values (AddOp, Float64ToInt64, ...), and both forms are templates over it: the vector loop over
// columns and scalars (kernels/<family>.cc) and the row form here. Each registered Kernel carries
// both (Kernel::row), so a kernel without a row form cannot go unnoticed (src_cpp/tests/rows_test.cc
// checks every one against its vector form).
//
// A row expression is a tree of RowNodes (rows/row_expression.h builds it from a compiled
// Expression). A call's node is bound once, when the tree is built, to an evaluator made by its
// kernel's RowBind from the call's argument types and kinds; so a row pays one indirect call per
// call node and no test of what its arguments are.
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "batch/types.h"
#include "kernels/value.h"

namespace cq {

struct RowNode {
  enum class Kind : uint8_t { kColumn, kLiteral, kCall };
  // The node's value for `row`; a string result is a reference the caller owns.
  using Eval = Value (*)(const RowNode& node, const Value* row);

  RowNode() = default;
  RowNode(const RowNode&) = delete;
  RowNode& operator=(const RowNode&) = delete;
  ~RowNode() {
    if (kind == Kind::kLiteral && type == TypeId::kUtf8 && literal.valid) ReleaseString(literal.s);
  }

  Kind kind = Kind::kLiteral;
  TypeId type = TypeId::kNull;
  int column = -1;                             // kColumn
  Value literal = Value::Null();               // kLiteral; a string is a reference this node owns
  std::vector<std::unique_ptr<RowNode>> args;  // kCall
  Eval eval = nullptr;
};

// What a kernel gives a call for the row form: the evaluator of `call`, whose arguments are built.
using RowBind = RowNode::Eval (*)(const RowNode& call);

namespace row {

using Kind = RowNode::Kind;

// ---- arguments -----------------------------------------------------------------------------------

// Argument i of `call`: a column's value or a literal is borrowed, a call's result owned (`owned`).
inline Value Arg(const RowNode& call, size_t i, const Value* row, bool* owned) {
  const RowNode& a = *call.args[i];
  if (a.kind == Kind::kColumn) {
    *owned = false;
    return row[a.column];
  }
  if (a.kind == Kind::kLiteral) {
    *owned = false;
    return a.literal;
  }
  *owned = true;
  return a.eval(a, row);
}
// Lets go of an argument read by Arg.
inline void Drop(TypeId t, const Value& v, bool owned) {
  if (owned && t == TypeId::kUtf8 && v.valid) ReleaseString(v.s);
}
// Argument i as a value the caller owns.
inline Value Own(const RowNode& call, size_t i, const Value* row) {
  bool owned;
  Value v = Arg(call, i, row, &owned);
  if (!owned && call.args[i]->type == TypeId::kUtf8 && v.valid) RetainString(v.s);
  return v;
}
// An argument that is not a string (nothing to own or release), read as its kind K says.
template <Kind K>
Value ReadFixed(const RowNode& a, const Value* row) {
  if constexpr (K == Kind::kColumn) return row[a.column];
  else if constexpr (K == Kind::kLiteral) return a.literal;
  else return a.eval(a, row);
}

// ---- typed values ----------------------------------------------------------------------------

// A valid Value as the C++ type a function's definition takes (a string borrowed).
template <typename T>
T Get(const Value& v) {
  if constexpr (std::is_same_v<T, int64_t>) return v.i;
  else if constexpr (std::is_same_v<T, double>) return v.d;
  else if constexpr (std::is_same_v<T, bool>) return v.i != 0;
  else return v.s->view();
}
inline Value Make(int64_t v) { return Value::Int(v); }
inline Value Make(double v) { return Value::Double(v); }
inline Value Make(bool v) { return Value::Bool(v); }

// ---- adapters: the row form of a function's definition -----------------------------------------
// A "value op" has `static Value Apply(Value a[, Value b])` over valid arguments; NULL arguments
// give NULL (NullHandling::kPropagate) before it is called. The typed wrappers below make value ops
// of the definitions the vector loops use.

// Op::Apply(In[, In]) -> Out, the result never NULL.
template <typename In, typename Op>
struct Typed {
  static Value Apply(Value a) { return Make(Op::Apply(Get<In>(a))); }
  static Value Apply(Value a, Value b) { return Make(Op::Apply(Get<In>(a), Get<In>(b))); }
};
// Op::Apply(In, In) -> Out, NULL when the divisor (b) is zero: division and modulo.
template <typename In, typename Op>
struct ZeroIsNull {
  static Value Apply(Value a, Value b) {
    const In d = Get<In>(b);
    return d == 0 ? Value::Null() : Make(Op::Apply(Get<In>(a), d));
  }
};
// Op::Apply(string_view) -> std::optional<Out>, NULL when empty: parsing.
template <typename Op>
struct Partial {
  static Value Apply(Value a) {
    const auto v = Op::Apply(Get<std::string_view>(a));
    return v ? Make(*v) : Value::Null();
  }
};

// Binary over two non-strings: bound to how each argument is read, so a row pays no test of the
// arguments' kinds (in a loop's filter such as `id % n = k`, its two calls cost 50 instructions a
// row instead of 92).
template <typename Op, Kind A, Kind B>
Value Binary(const RowNode& e, const Value* row) {
  const Value a = ReadFixed<A>(*e.args[0], row);
  if (!a.valid) return Value::Null();
  const Value b = ReadFixed<B>(*e.args[1], row);
  return b.valid ? Op::Apply(a, b) : Value::Null();
}
template <typename Op, Kind A>
RowNode::Eval BindSecond(Kind b) {
  switch (b) {
    case Kind::kColumn: return Binary<Op, A, Kind::kColumn>;
    case Kind::kLiteral: return Binary<Op, A, Kind::kLiteral>;
    case Kind::kCall: break;
  }
  return Binary<Op, A, Kind::kCall>;
}
template <typename Op>
RowNode::Eval BindBinary(const RowNode& call) {
  const Kind b = call.args[1]->kind;
  switch (call.args[0]->kind) {
    case Kind::kColumn: return BindSecond<Op, Kind::kColumn>(b);
    case Kind::kLiteral: return BindSecond<Op, Kind::kLiteral>(b);
    case Kind::kCall: break;
  }
  return BindSecond<Op, Kind::kCall>(b);
}

// Unary over a non-string (the argument read by its kind at run time: unary calls are rare in loops).
template <typename Op>
Value Unary(const RowNode& e, const Value* row) {
  bool owned;
  const Value a = Arg(e, 0, row, &owned);
  return a.valid ? Op::Apply(a) : Value::Null();
}
template <typename Op>
RowNode::Eval BindUnary(const RowNode&) {
  return Unary<Op>;
}

// Over strings: the arguments read, NULL if one is, and released after Op.
template <typename Op>
Value StringUnary(const RowNode& e, const Value* row) {
  bool owned;
  const Value a = Arg(e, 0, row, &owned);
  if (!a.valid) return Value::Null();  // (a NULL holds no string)
  Value r = Op::Apply(a);
  Drop(TypeId::kUtf8, a, owned);
  return r;
}
template <typename Op>
Value StringBinary(const RowNode& e, const Value* row) {
  bool oa, ob;
  const Value a = Arg(e, 0, row, &oa);
  if (!a.valid) return Value::Null();
  const Value b = Arg(e, 1, row, &ob);
  Value r = b.valid ? Op::Apply(a, b) : Value::Null();
  Drop(TypeId::kUtf8, a, oa);
  Drop(TypeId::kUtf8, b, ob);
  return r;
}
template <typename Op>
RowNode::Eval BindStringUnary(const RowNode&) {
  return StringUnary<Op>;
}

}  // namespace row
}  // namespace cq
