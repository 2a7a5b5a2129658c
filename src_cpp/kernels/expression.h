#pragma once
// A compiled scalar expression: the plan's expression tree with every call bound to its kernel and
// every literal (and every call over literals only) folded into a Scalar.
#include <memory>
#include <vector>

#include "base/json.h"
#include "batch/batch.h"
#include "kernels/registry.h"

namespace cq {

class Expression {
 public:
  // `spec` is the planner's JSON: {"kind": "column", "index": i, "type": t} |
  // {"kind": "literal", "type": t, "value": v} | {"kind": "call", "fn": name, "args": [...], "type": t} |
  // {"kind": "start", "type": "BIGINT"}: the row's start tick (a stream row's arrival; MASTER queries
  // sharing a window keep it as a column, cq_py/planner/master_sharing.py). Batch form only.
  static std::unique_ptr<Expression> Compile(const json::Value& spec, const Schema& input);

  TypeId type() const { return type_; }
  bool is_column() const { return kind_ == Kind::kColumn; }
  int column_index() const { return column_; }
  bool is_literal() const { return kind_ == Kind::kLiteral; }
  bool is_start() const { return kind_ == Kind::kStart; }
  const Scalar& literal() const { return literal_; }
  // A call: its kernel and arguments (rows/row_expression.h compiles the same tree for rows).
  const Kernel* kernel() const { return kernel_; }
  size_t arg_count() const { return args_.size(); }
  const Expression& arg(size_t i) const { return *args_[i]; }

  // The value for each selected row of `batch`, as a compact column of batch.num_rows() rows.
  // A bare column reference over an unselected batch is the batch's own column (no copy).
  Column Evaluate(const Batch& batch) const;
  std::string ToString(const Schema& input) const;

 private:
  enum class Kind { kColumn, kLiteral, kCall, kStart };

  Kind kind_ = Kind::kLiteral;
  TypeId type_ = TypeId::kNull;
  int column_ = -1;
  Scalar literal_;
  const Kernel* kernel_ = nullptr;
  std::vector<std::unique_ptr<Expression>> args_;
};

}  // namespace cq
