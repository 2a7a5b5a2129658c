#pragma once
// A model's call (paper 002's models; REGISTER MODEL name (args) RETURNS (cols)): `name(args)` in a
// select list or WHERE. The model is a function other programs replace while queries run
// (ResourceStore.set_model); it is applied to a whole batch of argument columns at once, never per
// row, and its result columns are appended to the input's rows. Under executor="scheduled" an
// evaluation is one row, so one call. Each call goes through the model interface
// (txn/resource.h), which returns the model's version with the result, and into the read log.
// State: none of its own.
#include <memory>
#include <string>
#include <vector>

#include "kernels/expression.h"
#include "operators/reference_join.h"
#include "txn/resource.h"

namespace cq {

class ModelApply final : public ReferenceOperator {
 public:
  ModelApply(int id, std::string model, std::shared_ptr<txn::Model> impl, std::vector<std::unique_ptr<Expression>> args,
             Schema arg_schema, Schema returns, const Schema& input, BatchKind kind, txn::ReadLog* log);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::string Explain() const override;

 private:
  std::string model_;
  std::shared_ptr<txn::Model> impl_;
  std::vector<std::unique_ptr<Expression>> args_;
  Schema arg_schema_, returns_;
};

}  // namespace cq
