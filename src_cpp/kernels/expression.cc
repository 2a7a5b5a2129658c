#include "kernels/expression.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/errors.h"
#include "base/few_on_stack.h"

namespace cq {

namespace {

Scalar ScalarFromJson(TypeId type, const json::Value& v) {
  Scalar s;
  s.type = type;
  if (v.is_null()) return s;
  s.valid = true;
  switch (type) {
    case TypeId::kInt64: s.i64 = v.integer(); break;
    case TypeId::kFloat64: s.f64 = v.number(); break;
    case TypeId::kBool: s.b = v.boolean(); break;
    case TypeId::kUtf8: s.str = v.str(); break;
    case TypeId::kNull: s.valid = false; break;
  }
  return s;
}

std::string ScalarToString(const Scalar& s) {
  if (!s.valid) return "NULL";
  switch (s.type) {
    case TypeId::kInt64: return std::to_string(s.i64);
    case TypeId::kFloat64: {
      char buf[32];
      if (std::trunc(s.f64) == s.f64 && std::fabs(s.f64) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.1f", s.f64);
        return buf;
      }
      // The shortest form that reads back as the same double, as the user would write it.
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, s.f64);
        if (std::strtod(buf, nullptr) == s.f64) break;
      }
      return buf;
    }
    case TypeId::kBool: return s.b ? "TRUE" : "FALSE";
    case TypeId::kUtf8: return "'" + s.str + "'";
    case TypeId::kNull: return "NULL";
  }
  return "?";
}

}  // namespace

std::unique_ptr<Expression> Expression::Compile(const json::Value& spec, const Schema& input) {
  auto e = std::make_unique<Expression>();
  const std::string& kind = spec["kind"].str();
  auto type = TypeFromName(spec["type"].str());
  CQ_CHECK(type.has_value(), "unknown type '" + spec["type"].str() + "' in plan expression");
  e->type_ = *type;
  if (kind == "column") {
    e->kind_ = Kind::kColumn;
    e->column_ = static_cast<int>(spec["index"].integer());
    CQ_CHECK(e->column_ >= 0 && e->column_ < static_cast<int>(input.size()), "column index out of range");
    CQ_CHECK(input[e->column_].type == e->type_, "planner typed column '" + input[e->column_].name + "' as " +
                                                     spec["type"].str() + " but the input has " +
                                                     std::string(TypeName(input[e->column_].type)));
    return e;
  }
  if (kind == "start") {
    CQ_CHECK(e->type_ == TypeId::kInt64, "a row's start is a BIGINT");
    e->kind_ = Kind::kStart;
    return e;
  }
  if (kind == "literal") {
    e->kind_ = Kind::kLiteral;
    e->literal_ = ScalarFromJson(e->type_, spec["value"]);
    return e;
  }
  CQ_CHECK(kind == "call", "unknown expression kind '" + kind + "'");
  e->kind_ = Kind::kCall;
  std::vector<TypeId> arg_types;
  bool all_literal = true;
  for (const json::Value& a : spec["args"].array()) {
    e->args_.push_back(Compile(a, input));
    arg_types.push_back(e->args_.back()->type());
    all_literal &= e->args_.back()->is_literal();
  }
  const std::string& fn = spec["fn"].str();
  e->kernel_ = KernelRegistry::Global().Find(fn, arg_types);
  if (!e->kernel_) {
    std::string sig = fn + "(";
    for (size_t i = 0; i < arg_types.size(); ++i) sig += (i ? ", " : "") + std::string(TypeName(arg_types[i]));
    CQ_CHECK(false, "no kernel " + sig + ")");
  }
  CQ_CHECK(e->kernel_->result == e->type_, "planner and kernel disagree on the type of " + fn);
  if (all_literal) {
    // Fold: evaluate once over one row, keep the scalar.
    std::vector<Datum> args(e->args_.size());
    Column one_row = Broadcast(e->args_.empty() ? Scalar{} : e->args_[0]->literal_, 1);
    for (size_t i = 0; i < args.size(); ++i) args[i].scalar = e->args_[i]->literal_;
    // Kernels require one column argument: give them the first argument as a one-row column.
    if (!args.empty()) args[0].column = &one_row;
    Column r = e->kernel_->fn(args, 1);
    e->literal_ = ScalarAt(r, 0);
    e->kind_ = Kind::kLiteral;
    e->args_.clear();
    e->kernel_ = nullptr;
  }
  return e;
}

Column Expression::Evaluate(const Batch& batch) const {
  const int64_t n = batch.num_rows();
  switch (kind_) {
    case Kind::kColumn: {
      const Column& c = batch.columns[column_];
      return batch.has_selection ? Gather(c, batch.sel(), n) : c;
    }
    case Kind::kLiteral: return Broadcast(literal_, n);
    case Kind::kStart: {
      Column c;
      c.type = TypeId::kInt64;
      c.length = n;
      c.values = batch.has_selection ? GatherTime(batch.sync, batch.sel(), n).ticks : batch.sync.ticks;
      return c;
    }
    case Kind::kCall: break;
  }
  // Loops evaluate a row or two per call: the arguments live on the stack, and a bare column of an
  // unselected batch is read where it is.
  const size_t na = args_.size();
  FewOnStack<Column, 4> keep(na);  // Datums point into it
  FewOnStack<Datum, 4> args(na);
  for (size_t i = 0; i < na; ++i) {
    const Expression& a = *args_[i];
    if (a.kind_ == Kind::kLiteral) {
      args[i].scalar = a.literal_;
    } else if (a.kind_ == Kind::kColumn && !batch.has_selection) {
      args[i].column = &batch.columns[a.column_];
    } else {
      keep[i] = a.Evaluate(batch);
      args[i].column = &keep[i];
    }
  }
  return kernel_->fn(std::span<const Datum>(args.data(), na), n);
}

std::string Expression::ToString(const Schema& input) const {
  switch (kind_) {
    case Kind::kColumn: return input[column_].name;
    case Kind::kLiteral: return ScalarToString(literal_);
    case Kind::kStart: return "start()";
    case Kind::kCall: break;
  }
  std::string s = kernel_->name + "(";
  for (size_t i = 0; i < args_.size(); ++i) s += (i ? ", " : "") + args_[i]->ToString(input);
  return s + ")";
}

}  // namespace cq
