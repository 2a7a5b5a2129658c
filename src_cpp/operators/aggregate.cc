#include "operators/aggregate.h"

#include <cstring>

#include "batch/row_hash.h"
#include "engine/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {

bool SameScalar(const Scalar& a, const Scalar& b) {
  if (a.valid != b.valid) return false;
  if (!a.valid) return true;
  switch (a.type) {
    case TypeId::kInt64: return a.i64 == b.i64;
    case TypeId::kFloat64: return a.f64 == b.f64 || (a.f64 != a.f64 && b.f64 != b.f64);
    case TypeId::kBool: return a.b == b.b;
    case TypeId::kUtf8: return a.str == b.str;
    case TypeId::kNull: return true;
  }
  return false;
}

}  // namespace

Aggregate::Aggregate(const Schema& input, std::vector<std::unique_ptr<Expression>> keys, std::vector<Spec> aggs,
                     Schema output, std::unique_ptr<InstantTracker> tracker, bool negative, HolderTable* holders)
    : input_(input), output_(std::move(output)), keys_(std::move(keys)), aggs_(std::move(aggs)),
      tracker_(std::move(tracker)), negative_(negative), holders_(holders) {
  shared_output_ = std::make_shared<const Schema>(output_);
  Schema derived;
  for (size_t k = 0; k < keys_.size(); ++k) derived.push_back({"k" + std::to_string(k), keys_[k]->type()});
  for (size_t a = 0; a < aggs_.size(); ++a)
    if (aggs_[a].arg) derived.push_back({"a" + std::to_string(a), aggs_[a].arg->type()});
  derived_schema_ = std::make_shared<const Schema>(std::move(derived));
}

void Aggregate::Push(int, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  // What the groups need of each row: its keys and arguments, with its lifetime.
  const Batch b = in.Compact();
  Batch d = b;
  d.schema = derived_schema_;
  d.columns.clear();
  for (const auto& k : keys_) d.columns.push_back(k->Evaluate(b));
  for (const auto& a : aggs_)
    if (a.arg) d.columns.push_back(a.arg->Evaluate(b));
  tracker_->Push(d);
}

void Aggregate::PushEnds(int, const EndBatch& ends, Emitter&) { tracker_->PushEnds(ends); }

void Aggregate::Apply(const Batch& b, uint32_t row, int sign) {
  std::string key;
  std::vector<Scalar> keys;
  for (size_t k = 0; k < keys_.size(); ++k) AppendKey(b.columns[k], row, &key);
  auto [it, fresh] = group_of_.try_emplace(key, static_cast<uint32_t>(groups_.size()));
  if (fresh) {
    groups_.emplace_back();
    for (size_t k = 0; k < keys_.size(); ++k) keys.push_back(ScalarAt(b.columns[k], row));
    groups_.back().keys = std::move(keys);
    groups_.back().accs.resize(aggs_.size());
    is_touched_.push_back(0);
  }
  const uint32_t gi = it->second;
  Group& g = groups_[gi];
  if (!is_touched_[gi]) {
    is_touched_[gi] = 1;
    touched_.push_back(gi);
  }
  g.rows += sign;
  size_t col = keys_.size();
  for (size_t a = 0; a < aggs_.size(); ++a) {
    Acc& acc = g.accs[a];
    const Spec& spec = aggs_[a];
    if (!spec.arg) {  // COUNT(*)
      acc.count += sign;
      continue;
    }
    const Scalar v = ScalarAt(b.columns[col++], row);
    if (!v.valid) continue;  // aggregates skip NULLs (SQL)
    acc.count += sign;
    Key k;
    switch (v.type) {
      case TypeId::kInt64:
        k = v.i64;
        acc.isum = static_cast<int64_t>(static_cast<uint64_t>(acc.isum) + static_cast<uint64_t>(sign) * static_cast<uint64_t>(v.i64));
        acc.dsum += sign * static_cast<double>(v.i64);
        break;
      case TypeId::kFloat64:
        k = v.f64 == 0 ? 0.0 : v.f64;
        acc.dsum += sign * v.f64;
        break;
      case TypeId::kUtf8: k = v.str; break;
      case TypeId::kBool: k = v.b; break;
      case TypeId::kNull: break;
    }
    if (spec.distinct || spec.fn == "min" || spec.fn == "max") {
      auto [vit, added] = acc.values.try_emplace(k, 0);
      vit->second += sign;
      if (vit->second == 0) acc.values.erase(vit);
    }
  }
}

std::vector<Scalar> Aggregate::Result(const Group& g) const {
  std::vector<Scalar> out = g.keys;
  for (size_t a = 0; a < aggs_.size(); ++a) {
    const Acc& acc = g.accs[a];
    const Spec& spec = aggs_[a];
    Scalar r;
    r.type = spec.type;
    if (spec.fn == "count_star" || spec.fn == "count") {
      r.valid = true;
      r.i64 = spec.distinct ? static_cast<int64_t>(acc.values.size()) : acc.count;
    } else if (acc.count > 0) {
      r.valid = true;
      if (spec.distinct && (spec.fn == "sum" || spec.fn == "avg")) {
        int64_t is = 0;
        double ds = 0;
        for (const auto& [k, n] : acc.values) {
          if (const int64_t* i = std::get_if<int64_t>(&k)) {
            is = static_cast<int64_t>(static_cast<uint64_t>(is) + static_cast<uint64_t>(*i));
            ds += static_cast<double>(*i);
          } else {
            ds += std::get<double>(k);
          }
        }
        if (spec.fn == "avg") r.f64 = ds / static_cast<double>(acc.values.size());
        else if (spec.type == TypeId::kInt64) r.i64 = is;
        else r.f64 = ds;
      } else if (spec.fn == "sum") {
        if (spec.type == TypeId::kInt64) r.i64 = acc.isum;
        else r.f64 = acc.dsum;
      } else if (spec.fn == "avg") {
        r.f64 = acc.dsum / static_cast<double>(acc.count);
      } else {
        const Key& k = spec.fn == "min" ? acc.values.begin()->first : acc.values.rbegin()->first;
        std::visit([&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, int64_t>) r.i64 = x;
          else if constexpr (std::is_same_v<T, double>) r.f64 = x;
          else if constexpr (std::is_same_v<T, std::string>) r.str = x;
          else r.b = x;
        }, k);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

Time Aggregate::next_firing(int64_t) const { return tracker_->next_instant(); }

void Aggregate::AdvanceTo(Time progress, Emitter& out) {
  // Rows going out: their values, start, end (direct: open ends get a holder) and, for the
  // negative method, whether they are negative tuples; ends fixed for earlier results.
  std::vector<std::vector<Scalar>> rows;
  std::vector<Time> sync, other;
  std::vector<HolderId> holders;
  std::vector<HolderId> fixed_ids;
  std::vector<Time> fixed_at;
  std::unordered_map<HolderId, size_t> fresh;  // results started in this call: holder -> row
  std::vector<HolderId> unused;                 // their ids, when they also ended in this call
  auto close = [&](Group& g, Time t) {
    if (!g.open) return;
    if (negative_) {
      rows.push_back(g.result);
      sync.push_back(t);
      other.push_back(g.start);
      holders.push_back(kNoHolder);
    } else if (auto it = fresh.find(g.holder); it != fresh.end()) {
      // Started and ended in this call: it goes out with its end, without a holder.
      other[it->second] = t;
      holders[it->second] = kNoHolder;
      unused.push_back(g.holder);
      fresh.erase(it);
    } else {
      fixed_ids.push_back(g.holder);
      fixed_at.push_back(t);
    }
    g.open = false;
  };
  tracker_->AdvanceTo(progress, [&](Time t, const std::vector<InstantTracker::RowRef>& starts,
                                    const std::vector<InstantTracker::RowRef>& ends) {
    for (const auto& r : ends) Apply(tracker_->batch(r.seq), r.row, -1);
    for (const auto& r : starts) Apply(tracker_->batch(r.seq), r.row, +1);
    for (uint32_t gi : touched_) {
      is_touched_[gi] = 0;
      Group& g = groups_[gi];
      if (g.rows == 0) {
        close(g, t);
        continue;
      }
      std::vector<Scalar> now = Result(g);
      if (g.open) {
        bool same = true;
        for (size_t c = 0; c < now.size() && same; ++c) same = SameScalar(now[c], g.result[c]);
        if (same) continue;  // the value did not change: the result tuple lives on
        close(g, t);
      }
      g.open = true;
      g.result = now;
      g.start = t;
      rows.push_back(std::move(now));
      sync.push_back(t);
      other.push_back(Time::Infinity());
      if (negative_) {
        holders.push_back(kNoHolder);
      } else {
        HolderId h;
        holders_->Allocate(1, &h);
        g.holder = h;
        fresh[h] = holders.size();
        holders.push_back(h);
      }
    }
    touched_.clear();
  });
  if (progress.IsInfinite() && !negative_) {
    // Close: the current results never end.
    for (Group& g : groups_) close(g, Time::Infinity());
  }
  holders_->Release(unused.data(), static_cast<int64_t>(unused.size()));
  // Ends first (they belong to rows already out), then the new rows.
  if (!fixed_ids.empty()) {
    EndBatch eb;
    eb.length = static_cast<int64_t>(fixed_ids.size());
    eb.holders = Buffer::Allocate(eb.length * sizeof(HolderId));
    std::memcpy(eb.holders.data, fixed_ids.data(), fixed_ids.size() * sizeof(HolderId));
    eb.ends = MakeTimeColumn(fixed_at);
    out.EmitEnds(eb);
    holders_->Release(fixed_ids.data(), eb.length);
  }
  if (!rows.empty()) {
    Batch o;
    o.kind = BatchKind::kLifetime;
    o.schema = shared_output_;
    o.length = static_cast<int64_t>(rows.size());
    for (size_t c = 0; c < output_.size(); ++c) {
      std::vector<Scalar> col;
      col.reserve(rows.size());
      for (const auto& r : rows) col.push_back(r[c]);
      o.columns.push_back(ColumnOf(output_[c].type, col));
    }
    o.sync = MakeTimeColumn(sync);
    o.other = MakeTimeColumn(other);
    if (!negative_) {
      o.holders = Buffer::Allocate(o.length * sizeof(HolderId));
      std::memcpy(o.holders.data, holders.data(), holders.size() * sizeof(HolderId));
    }
    out.Emit(std::move(o));
  }
}

void RegisterAggregate(OperatorRegistry& r) {
  r.Register("aggregate", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                             const OperatorContext& ctx) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "an aggregate reads one relation");
    std::vector<std::unique_ptr<Expression>> keys;
    Schema output;
    for (const json::Value& k : s.params["keys"].array()) {
      keys.push_back(Expression::Compile(k, *in[0].schema));
      output.push_back({"k" + std::to_string(output.size()), keys.back()->type()});
    }
    std::vector<Aggregate::Spec> aggs;
    for (const json::Value& a : s.params["aggregates"].array()) {
      Aggregate::Spec spec;
      spec.fn = a["fn"].str();
      spec.distinct = a["distinct"].boolean();
      auto t = TypeFromName(a["type"].str());
      CQ_CHECK(t.has_value(), "unknown aggregate type");
      spec.type = *t;
      if (!a["arg"].is_null()) spec.arg = Expression::Compile(a["arg"], *in[0].schema);
      output.push_back({"a" + std::to_string(aggs.size()), spec.type});
      aggs.push_back(std::move(spec));
    }
    if (const json::Value* names = s.params.find("names"))
      for (size_t i = 0; i < output.size() && i < names->array().size(); ++i) output[i].name = names->array()[i].str();
    return std::make_unique<Aggregate>(*in[0].schema, std::move(keys), std::move(aggs), std::move(output),
                                       MakeInstantTracker(ctx.negative, static_cast<int>(PlannedPolicy(s.params)), false),
                                       ctx.negative, ctx.holders);
  });
}

}  // namespace cq
