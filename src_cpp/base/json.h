#pragma once
// A small JSON reader for plans: the Python planner hands the core its operator graph as JSON text
// once per `execute`, so the core can also load plans in its own tests without Python.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cq::json {

struct Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value, std::less<>>;

struct Value {
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v =
      nullptr;

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_number() const { return is_int() || std::holds_alternative<double>(v); }

  // Typed accessors throw CqError(kInternal) on a mismatch: a malformed plan is a planner bug.
  const Object& object() const;
  const Array& array() const;
  const std::string& str() const;
  int64_t integer() const;
  double number() const;
  bool boolean() const;
  const Value& operator[](std::string_view key) const;  // throws when missing
  const Value* find(std::string_view key) const;        // nullptr when missing
};

Value Parse(std::string_view text);

}  // namespace cq::json
