#include "operators/model_apply.h"

#include "base/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

ModelApply::ModelApply(int id, std::string model, std::shared_ptr<txn::Model> impl,
                       std::vector<std::unique_ptr<Expression>> args, Schema arg_schema, Schema returns,
                       const Schema& input, BatchKind kind, txn::ReadLog* log)
    : ReferenceOperator(id, input, returns, kind, log), model_(std::move(model)), impl_(std::move(impl)),
      args_(std::move(args)), arg_schema_(std::move(arg_schema)), returns_(std::move(returns)) {}

void ModelApply::Push(int, const Batch& given, Emitter& out) {
  const int64_t n = given.num_rows();
  if (n == 0) return;
  Batch o = given.Compact();
  Columns args;
  for (const auto& a : args_) args.push_back(a->Evaluate(o));
  txn::ModelResult r = manager_ ? manager_->Apply(model_, *impl_, args, arg_schema_, n, o.sync.At(0))
                                : impl_->Apply(model_, args, arg_schema_, n);
  // The model is someone else's code: its result is checked before anything goes out.
  bool fits = r.columns.size() == returns_.size();
  for (size_t k = 0; fits && k < returns_.size(); ++k)
    fits = r.columns[k].type == returns_[k].type && r.columns[k].length == n;
  if (!fits) {
    std::string want, found;
    for (const Field& f : returns_) want += (want.empty() ? "" : ", ") + f.name + " " + CqlTypeName(f.type);
    for (const Column& c : r.columns)
      found += (found.empty() ? "" : ", ") + std::string(CqlTypeName(c.type)) + " x " + std::to_string(c.length);
    throw CqError(ErrorKind::kInput, "model '" + model_ + "' returned (" + found + ") for " + std::to_string(n) +
                                         " rows; expected (" + want + "), " + std::to_string(n) + " values each");
  }
  if (log_) log_->Add({id_, model_, r.version, o.sync.At(0), n});
  o.schema = schema_;
  for (Column& c : r.columns) o.columns.push_back(std::move(c));
  out.Emit(std::move(o));
}

std::string ModelApply::Explain() const {
  std::string args;
  for (const auto& a : args_) args += (args.empty() ? "" : ", ") + a->ToString(input_);
  std::string returns;
  for (const Field& f : returns_) returns += (returns.empty() ? "" : ", ") + f.name;
  return "ModelApply " + model_ + "(" + args + ") -> " + returns;
}

void RegisterModelApply(OperatorRegistry& r) {
  r.Register(
      ReferenceDescriptor("model_apply", "model call (a function other programs update, applied to a batch at once)"),
      [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
         const OperatorContext& ctx) -> std::unique_ptr<Operator> {
        CQ_CHECK(in.size() == 1, "model_apply takes one input");
        const std::string name = s.params["model"].str();
        if (!ctx.txn || !ctx.txn->models.count(name))
          throw CqError(ErrorKind::kInput, "model call: no model '" + name + "' is bound to the engine");
        std::vector<std::unique_ptr<Expression>> args;
        Schema arg_schema;
        for (const json::Value& e : s.params["args"].array()) {
          args.push_back(Expression::Compile(e, *in[0].schema));
          arg_schema.push_back({"arg" + std::to_string(args.size() - 1), args.back()->type()});
        }
        Schema returns = SchemaFromJson(s.params["returns"]);
        auto op =
            std::make_unique<ModelApply>(s.id, name, ctx.txn->models.at(name), std::move(args), std::move(arg_schema),
                                         std::move(returns), *in[0].schema, in[0].kind, &ctx.txn->log);
        // In a redo area under a strategy, calls go through the area's transaction manager.
        op->set_manager(AreaManager(s, *ctx.txn, name, ctx.txn->models.at(name)));
        return op;
      });
}

}  // namespace cq
