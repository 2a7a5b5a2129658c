#include "operators/project.h"

#include "base/errors.h"
#include "operators/registry.h"
#include "rows/row_expression.h"

namespace cq {

Project::Project(std::vector<std::unique_ptr<Expression>> exprs, Schema output, const Schema& input, BatchKind kind)
    : exprs_(std::move(exprs)), schema_(std::make_shared<const Schema>(std::move(output))), input_(input), kind_(kind) {
}

void Project::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  Batch b;
  b.kind = batch.kind;
  b.schema = schema_;
  b.length = n;
  b.columns.reserve(exprs_.size());
  for (const auto& e : exprs_) b.columns.push_back(e->Evaluate(batch));
  b.constant_duration = batch.constant_duration;
  if (batch.has_selection) {
    const uint32_t* idx = batch.sel();
    b.sync = GatherTime(batch.sync, idx, n);
    b.other = GatherTime(batch.other, idx, n);
    if (!batch.holders.empty()) {
      b.holders = Buffer::Allocate(n * sizeof(HolderId));
      for (int64_t k = 0; k < n; ++k) b.holders.as<HolderId>()[k] = batch.holders.as<const HolderId>()[idx[k]];
    }
  } else {
    b.sync = batch.sync;
    b.other = batch.other;
    b.holders = batch.holders;
  }
  out.Emit(std::move(b));
}

namespace {
class ProjectRows final : public RowOperator {
 public:
  // A null expression is start(): the row's start tick (a stream row's arrival).
  explicit ProjectRows(std::vector<std::unique_ptr<RowExpression>> exprs) : exprs_(std::move(exprs)) {
    for (const auto& e : exprs_) strings_ |= e && e->type() == TypeId::kUtf8;
  }
  void Push(int, const Row& in, RowEmitter& out) override {
    // One set of output values per depth of nesting: a loop may bring a row back into this
    // projection while the last one is still on its way.
    if (depth_ == scratch_.size()) scratch_.emplace_back(exprs_.size());
    Value* v = scratch_[depth_].data();
    ++depth_;
    struct Leave {
      size_t& d;
      ~Leave() { --d; }
    } leave{depth_};
    for (size_t k = 0; k < exprs_.size(); ++k)
      v[k] = exprs_[k] ? exprs_[k]->Evaluate(in.values) : Value::Int(in.sync.tick);
    Row r = in;
    r.values = v;
    out.Emit(r);
    if (strings_)
      for (size_t k = 0; k < exprs_.size(); ++k)
        if (exprs_[k] && exprs_[k]->type() == TypeId::kUtf8 && v[k].valid) ReleaseString(v[k].s);
  }
  bool stateful() const override { return false; }

 private:
  std::vector<std::unique_ptr<RowExpression>> exprs_;
  bool strings_ = false;
  std::vector<std::vector<Value>> scratch_;
  size_t depth_ = 0;
};
}  // namespace

std::unique_ptr<RowOperator> Project::ToRows() {
  std::vector<std::unique_ptr<RowExpression>> exprs;
  for (const auto& e : exprs_) exprs.push_back(e->is_start() ? nullptr : RowExpression::From(*e));
  return std::make_unique<ProjectRows>(std::move(exprs));
}

bool Project::passes_through() const {
  if (exprs_.size() != input_.size()) return false;
  for (size_t i = 0; i < exprs_.size(); ++i)
    if (!exprs_[i]->is_column() || exprs_[i]->column_index() != static_cast<int>(i) ||
        exprs_[i]->type() != input_[i].type)
      return false;
  return true;
}

std::string Project::Explain() const {
  std::string s = "Project ";
  for (size_t i = 0; i < exprs_.size(); ++i) {
    if (i) s += ", ";
    std::string e = exprs_[i]->ToString(input_);
    s += e == (*schema_)[i].name ? e : e + " AS " + (*schema_)[i].name;
  }
  return s;
}

void RegisterProject(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "project",
              .description = "the select list",
              .lifetimes = D::Lifetimes::kFirstInput,
              .columns = D::Columns::kProject,
              .keeps_identity = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext&) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "project takes one input");
               std::vector<std::unique_ptr<Expression>> exprs;
               Schema out;
               const json::Array& names = s.params["names"].array();
               const json::Array& specs = s.params["exprs"].array();
               CQ_CHECK(names.size() == specs.size(), "project names and exprs differ in length");
               for (size_t i = 0; i < specs.size(); ++i) {
                 exprs.push_back(Expression::Compile(specs[i], *in[0].schema));
                 out.push_back({names[i].str(), exprs.back()->type()});
               }
               return std::make_unique<Project>(std::move(exprs), std::move(out), *in[0].schema, in[0].kind);
             });
}

}  // namespace cq
