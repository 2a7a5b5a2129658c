#include "plan/plan_util.h"

#include "base/errors.h"

namespace cq {

Duration DurationFromJson(const json::Value& v) {
  if (const json::Value* inf = v.find("infinite"); inf && inf->boolean()) return Duration::Infinite();
  Duration d;
  d.ticks = v["ticks"].integer();
  if (const json::Value* s = v.find("steps")) d.steps = s->integer();
  CQ_CHECK(d.ticks >= 0 && d.steps >= 0, "negative duration in plan");
  return d;
}

Schema SchemaFromJson(const json::Value& v) {
  Schema schema;
  for (const json::Value& f : v.array()) {
    const json::Array& pair = f.array();
    CQ_CHECK(pair.size() == 2, "schema field must be [name, type]");
    auto t = TypeFromName(pair[1].str());
    CQ_CHECK(t.has_value(), "unknown type '" + pair[1].str() + "'");
    schema.push_back({pair[0].str(), *t});
  }
  return schema;
}

bool PlannedConstant(const json::Value& spec) {
  const json::Value* v = spec.find("lifetime");
  return v && v->str() == "constant";
}

ExpirationPolicy PlannedPolicy(const json::Value& spec) {
  const json::Value* v = spec.find("expiration");
  if (!v || v->str() == "lazy") return ExpirationPolicy::kLazy;
  if (v->str() == "insertion_sort") return ExpirationPolicy::kInsertionSort;
  CQ_CHECK(v->str() == "fifo", "unknown expiration policy '" + v->str() + "'");
  return ExpirationPolicy::kFifo;
}

}  // namespace cq
