#pragma once
// Reading the pieces of operator specs that several operators share.
#include "base/json.h"
#include "batch/types.h"
#include "lifetime/expiration_set.h"
#include "time/time.h"

namespace cq {

// {"ticks": n, "steps": m} or {"infinite": true}
Duration DurationFromJson(const json::Value& v);
// [["name", "type"], ...]
Schema SchemaFromJson(const json::Value& v);
// "lifetime": "constant" when the planner proved the input's lifetimes share one duration.
bool PlannedConstant(const json::Value& spec);
// "expiration": "lazy" (default) | "insertion_sort" | "fifo".
ExpirationPolicy PlannedPolicy(const json::Value& spec);

}  // namespace cq
