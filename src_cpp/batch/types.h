#pragma once
// The column types of the engine. CQL's INT/BIGINT are int64, DOUBLE/FLOAT/REAL float64,
// VARCHAR/CHAR/STRING utf8 and BOOLEAN bool (bit-packed, as Arrow stores it). kNull is the type of
// an untyped NULL literal before the planner gives it a type.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cq {

enum class TypeId : uint8_t { kNull, kBool, kInt64, kFloat64, kUtf8 };

std::string_view TypeName(TypeId t);
std::optional<TypeId> TypeFromName(std::string_view name);
// The Arrow C Data Interface format string of a type ("l", "g", "u", "b", "n").
const char* ArrowFormat(TypeId t);
// The CQL name of a type (BIGINT, DOUBLE, VARCHAR, BOOLEAN; NULL), for messages to users.
const char* CqlTypeName(TypeId t);
std::optional<TypeId> TypeFromArrowFormat(std::string_view format);

struct Field {
  std::string name;
  TypeId type;
};

using Schema = std::vector<Field>;

std::string SchemaToString(const Schema& schema);

}  // namespace cq
