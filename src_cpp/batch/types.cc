#include "batch/types.h"

namespace cq {

std::string_view TypeName(TypeId t) {
  switch (t) {
    case TypeId::kNull: return "null";
    case TypeId::kBool: return "bool";
    case TypeId::kInt64: return "int64";
    case TypeId::kFloat64: return "float64";
    case TypeId::kUtf8: return "utf8";
  }
  return "?";
}

std::optional<TypeId> TypeFromName(std::string_view name) {
  if (name == "null") return TypeId::kNull;
  if (name == "bool") return TypeId::kBool;
  if (name == "int64") return TypeId::kInt64;
  if (name == "float64") return TypeId::kFloat64;
  if (name == "utf8") return TypeId::kUtf8;
  return std::nullopt;
}

const char* CqlTypeName(TypeId t) {
  switch (t) {
    case TypeId::kInt64: return "BIGINT";
    case TypeId::kFloat64: return "DOUBLE";
    case TypeId::kUtf8: return "VARCHAR";
    case TypeId::kBool: return "BOOLEAN";
    case TypeId::kNull: break;
  }
  return "NULL";
}

const char* ArrowFormat(TypeId t) {
  switch (t) {
    case TypeId::kNull: return "n";
    case TypeId::kBool: return "b";
    case TypeId::kInt64: return "l";
    case TypeId::kFloat64: return "g";
    case TypeId::kUtf8: return "u";
  }
  return "n";
}

std::optional<TypeId> TypeFromArrowFormat(std::string_view f) {
  if (f == "n") return TypeId::kNull;
  if (f == "b") return TypeId::kBool;
  if (f == "l") return TypeId::kInt64;
  if (f == "g") return TypeId::kFloat64;
  if (f == "u") return TypeId::kUtf8;
  return std::nullopt;
}

std::string SchemaToString(const Schema& schema) {
  std::string s = "(";
  for (size_t i = 0; i < schema.size(); ++i) {
    if (i) s += ", ";
    s += schema[i].name + " " + std::string(TypeName(schema[i].type));
  }
  return s + ")";
}

}  // namespace cq
