#pragma once
// An expression evaluated one row at a time (rows/ROWS.md): the compiled Expression's tree, its
// literals folded as there, each call bound to the row form of its kernel (kernels/row_form.h) —
// the same definition its vector form is made from, so both forms compute the same values
// (Spark's non-ANSI rules: integer overflow wraps, x / 0 and x % 0 are NULL, three-valued logic,
// CAST DOUBLE -> BIGINT truncates and saturates); rows_test.cc checks every kernel both ways.
#include <memory>

#include "kernels/expression.h"
#include "kernels/row_form.h"
#include "rows/row.h"

namespace cq {

class RowExpression {
 public:
  static std::unique_ptr<RowExpression> From(const Expression& e);

  TypeId type() const { return root_.type; }
  bool is_column() const { return root_.kind == RowNode::Kind::kColumn; }
  int column_index() const { return root_.column; }

  // The value for `row`. A string result is a reference the caller owns: ReleaseString it.
  Value Evaluate(const Value* row) const { return root_.eval(root_, row); }
  // For predicates: TRUE, not FALSE or NULL.
  bool IsTrue(const Value* row) const {
    const Value v = root_.eval(root_, row);
    return v.valid && v.i != 0;
  }

 private:
  RowExpression() = default;
  RowNode root_;
};

}  // namespace cq
