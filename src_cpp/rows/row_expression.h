#pragma once
// An expression evaluated one row at a time (rows/ROWS.md): the compiled Expression's tree, its
// literals folded as there, each call bound to a scalar function with the semantics of its kernel
// (Spark's non-ANSI rules: integer overflow wraps, x / 0 and x % 0 are NULL, three-valued logic,
// CAST DOUBLE -> BIGINT truncates and saturates). Calls without a scalar function here (the casts
// from and to VARCHAR, whose formats are involved) run their kernel over one-row columns, so both
// forms share one definition of what they compute; rows_test.cc checks every scalar function
// against its kernel.
#include <memory>
#include <vector>

#include "kernels/expression.h"
#include "rows/row.h"

namespace cq {

class RowExpression {
 public:
  static std::unique_ptr<RowExpression> From(const Expression& e);
  ~RowExpression();

  TypeId type() const { return type_; }
  bool is_column() const { return kind_ == Kind::kColumn; }
  int column_index() const { return column_; }

  // The value for `row`. A string result is a reference the caller owns: ReleaseString it.
  Value Evaluate(const Value* row) const { return eval_(*this, row); }
  // For predicates: TRUE, not FALSE or NULL.
  bool IsTrue(const Value* row) const {
    const Value v = eval_(*this, row);
    return v.valid && v.i != 0;
  }

 private:
  enum class Kind : uint8_t { kColumn, kLiteral, kCall };
  using Eval = Value (*)(const RowExpression&, const Value*);
  RowExpression() = default;

  // Argument i: a column's value or a literal is borrowed, a call's result owned (`owned`).
  Value Arg(size_t i, const Value* row, bool* owned) const {
    const RowExpression& a = *args_[i];
    if (a.kind_ == Kind::kColumn) {
      *owned = false;
      return row[a.column_];
    }
    if (a.kind_ == Kind::kLiteral) {
      *owned = false;
      return a.literal_;
    }
    *owned = true;
    return a.eval_(a, row);
  }
  static void Drop(TypeId t, const Value& v, bool owned) {
    if (owned && t == TypeId::kUtf8 && v.valid) ReleaseString(v.s);
  }
  TypeId arg_type(size_t i) const { return args_[i]->type_; }

  friend struct Natives;
  static Value EvalColumn(const RowExpression& e, const Value* row);
  static Value EvalLiteral(const RowExpression& e, const Value* row);
  static Value EvalKernel(const RowExpression& e, const Value* row);

  Kind kind_ = Kind::kLiteral;
  TypeId type_ = TypeId::kNull;
  int column_ = -1;
  Value literal_ = Value::Null();  // a string literal is a reference this expression owns
  std::vector<std::unique_ptr<RowExpression>> args_;
  const Kernel* kernel_ = nullptr;
  Eval eval_ = nullptr;
};

}  // namespace cq
