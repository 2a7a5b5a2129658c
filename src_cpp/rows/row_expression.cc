#include "rows/row_expression.h"

#include "base/errors.h"

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

// A column or a literal at the root of an expression (as an argument, the call reads it in place):
// the value, a string with a reference for the caller.
Value EvalColumn(const RowNode& e, const Value* row) {
  const Value v = row[e.column];
  if (e.type == TypeId::kUtf8 && v.valid) RetainString(v.s);
  return v;
}
Value EvalLiteral(const RowNode& e, const Value*) {
  if (e.type == TypeId::kUtf8 && e.literal.valid) RetainString(e.literal.s);
  return e.literal;
}

void Build(const Expression& e, RowNode* n) {
  n->type = e.type();
  CQ_CHECK(!e.is_start(), "a row's start has no row form: it is read in batches only");
  if (e.is_column()) {
    n->kind = RowNode::Kind::kColumn;
    n->column = e.column_index();
    n->eval = EvalColumn;
    return;
  }
  if (e.is_literal()) {
    n->kind = RowNode::Kind::kLiteral;
    n->literal = FromScalar(e.literal());
    n->eval = EvalLiteral;
    return;
  }
  n->kind = RowNode::Kind::kCall;
  for (size_t i = 0; i < e.arg_count(); ++i) {
    n->args.push_back(std::make_unique<RowNode>());
    Build(e.arg(i), n->args.back().get());
  }
  const Kernel& k = *e.kernel();
  CQ_CHECK(k.row != nullptr, "kernel " + k.name + " has no row form (kernels/row_form.h)");
  n->eval = k.row(*n);
  CQ_CHECK(n->eval != nullptr, "kernel " + k.name + " has no row form for these arguments");
}

}  // namespace

std::unique_ptr<RowExpression> RowExpression::From(const Expression& e) {
  std::unique_ptr<RowExpression> r(new RowExpression());
  Build(e, &r->root_);
  return r;
}

}  // namespace cq
