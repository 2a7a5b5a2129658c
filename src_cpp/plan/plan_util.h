#pragma once
// Reading the pieces of operator specs that several operators share.
#include "batch/types.h"
#include "plan/json.h"
#include "time/time.h"

namespace cq {

// {"ticks": n, "steps": m} or {"infinite": true}
Duration DurationFromJson(const json::Value& v);
// [["name", "type"], ...]
Schema SchemaFromJson(const json::Value& v);

}  // namespace cq
