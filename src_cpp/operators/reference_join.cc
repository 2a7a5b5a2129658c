#include "operators/reference_join.h"

#include "base/errors.h"
#include "operators/registry.h"

namespace cq {

ReferenceOperator::ReferenceOperator(int id, const Schema& input, const Schema& read, BatchKind kind, txn::ReadLog* log)
    : id_(id), input_(input), kind_(kind), log_(log) {
  Schema out = input;
  for (const Field& f : read) out.push_back(f);
  schema_ = std::make_shared<const Schema>(std::move(out));
}

txn::TransactionManager* AreaManager(const OperatorSpec& s, txn::Bindings& b, const std::string& name,
                                     const std::shared_ptr<txn::Controlled>& source) {
  if (!b.managers || b.managers->options().strategy == txn::Strategy::kNone) return nullptr;
  const json::Value* area = s.params.find("redo_area");
  if (area == nullptr || area->is_null()) return nullptr;
  const json::Value* query = s.params.find("txn_query");
  txn::TransactionManager& m =
      b.managers->Get(area->integer(), query && !query->is_null() ? query->str() : "#" + std::to_string(s.id));
  m.Add(name, source);
  return &m;
}

OperatorDescriptor ReferenceDescriptor(std::string name, std::string description) {
  using D = OperatorDescriptor;
  return {.name = std::move(name),
          .description = std::move(description),
          .lifetimes = D::Lifetimes::kFirstInput,
          .partition = D::Partition::kNever,
          .columns = D::Columns::kExtend,
          .keeps_identity = true,
          .shareable = false};
}

ReferenceJoin::ReferenceJoin(int id, std::shared_ptr<txn::Resource> resource, bool scan,
                             std::vector<std::unique_ptr<Expression>> keys, std::unique_ptr<Expression> residual,
                             const Schema& input, BatchKind kind, txn::ReadLog* log)
    : ReferenceOperator(id, input, resource->spec().columns, kind, log), resource_(std::move(resource)), scan_(scan),
      keys_(std::move(keys)), residual_(std::move(residual)) {}

void ReferenceJoin::Push(int, const Batch& given, Emitter& out) {
  const int64_t n = given.num_rows();
  if (n == 0) return;
  Batch storage;
  const Batch& in = given.CompactInto(storage);
  txn::ResourceRead read;
  if (scan_) {
    read = manager_ ? manager_->Scan(*resource_, in.sync.At(0)) : resource_->Scan();
  } else {
    Columns keys;
    for (const auto& k : keys_) keys.push_back(k->Evaluate(in));
    read = manager_ ? manager_->Lookup(*resource_, keys, n, in.sync.At(0)) : resource_->Lookup(keys, n);
  }
  if (log_) log_->Add({id_, resource_->spec().name, read.version, in.sync.At(0), read.rows_read});
  // The pairs (stream row, resource row): each probe's match, or every row of the resource.
  std::vector<uint32_t> left, right;
  if (scan_) {
    left.reserve(static_cast<size_t>(n * read.length));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = 0; r < read.length; ++r) {
        left.push_back(static_cast<uint32_t>(i));
        right.push_back(static_cast<uint32_t>(r));
      }
  } else {
    for (int64_t i = 0; i < n; ++i)
      if (read.match[i] >= 0) {
        left.push_back(static_cast<uint32_t>(i));
        right.push_back(static_cast<uint32_t>(read.match[i]));
      }
  }
  const auto m = static_cast<int64_t>(left.size());
  if (m == 0) return;
  // The stream side's rows with their times and holders, as a selection of the input gathered.
  Batch picked = in;
  if (m != n || scan_) {
    picked.has_selection = true;
    picked.selection = Buffer::Allocate(m * 4);
    std::copy(left.begin(), left.end(), picked.selection.as<uint32_t>());
    picked.selection_count = m;
    picked = picked.Compact();
  }
  Batch o = std::move(picked);
  o.schema = schema_;
  for (const Column& c : read.columns) o.columns.push_back(Gather(c, right.data(), m));
  if (residual_) {
    const Column pred = residual_->Evaluate(o);
    std::vector<uint32_t> keep;
    for (int64_t i = 0; i < m; ++i)
      if (pred.IsValid(i) && pred.BoolAt(i)) keep.push_back(static_cast<uint32_t>(i));
    if (keep.empty()) return;
    if (static_cast<int64_t>(keep.size()) != m) {
      o.has_selection = true;
      o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
      std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
      o.selection_count = static_cast<int64_t>(keep.size());
    }
  }
  out.Emit(std::move(o));
}

std::string ReferenceJoin::Explain() const {
  std::string s = "ReferenceJoin " + resource_->spec().name + (scan_ ? " SCAN" : " ACCESS KEY");
  if (!scan_) {
    std::string on;
    for (size_t k = 0; k < keys_.size(); ++k)
      on += (k ? " AND " : "") + resource_->spec().columns[resource_->spec().key[k]].name + " = " +
            keys_[k]->ToString(input_);
    s += " (" + on + ")";
  }
  if (residual_) s += " where " + residual_->ToString(*schema_);
  return s;
}

void RegisterReferenceJoin(OperatorRegistry& r) {
  r.Register(ReferenceDescriptor(
                 "reference_join",
                 "reference join (a stream's rows joined with a resource as it stands when each is processed)"),
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "reference_join takes one input");
               const std::string name = s.params["resource"].str();
               if (!ctx.txn || !ctx.txn->resources.count(name))
                 throw CqError(ErrorKind::kInput, "reference join: no resource '" + name + "' is bound to the engine");
               std::shared_ptr<txn::Resource> resource = ctx.txn->resources.at(name);
               const bool scan = s.params["access"].str() == "scan";
               std::vector<std::unique_ptr<Expression>> keys;
               if (!scan) {
                 for (const json::Value& e : s.params["keys"].array())
                   keys.push_back(Expression::Compile(e, *in[0].schema));
                 CQ_CHECK(keys.size() == resource->spec().key.size(), "reference_join: one expression per key column");
                 for (size_t k = 0; k < keys.size(); ++k)
                   CQ_CHECK(keys[k]->type() == resource->spec().columns[resource->spec().key[k]].type,
                            "reference_join: a key expression of another type than its key column");
               }
               Schema both = *in[0].schema;
               for (const Field& f : resource->spec().columns) both.push_back(f);
               std::unique_ptr<Expression> residual;
               if (const json::Value* res = s.params.find("residual"); res && !res->is_null()) {
                 residual = Expression::Compile(*res, both);
                 CQ_CHECK(residual->type() == TypeId::kBool, "reference_join residual must be boolean");
               }
               auto op = std::make_unique<ReferenceJoin>(s.id, resource, scan, std::move(keys), std::move(residual),
                                                         *in[0].schema, in[0].kind, &ctx.txn->log);
               // In a redo area under a strategy, reads go through the area's transaction manager.
               op->set_manager(AreaManager(s, *ctx.txn, name, resource));
               return op;
             });
}

}  // namespace cq
