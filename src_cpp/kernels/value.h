#pragma once
// One value of a row (rows/ROWS.md): what a row form of a kernel reads and returns
// (kernels/row_form.h), and what loop regions' rows are made of (rows/row.h).
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>

namespace cq {

// An immutable string shared by reference count (single-threaded: an engine runs on one thread at
// a time). Rows carry strings rarely; the count lets a kept row share the bytes it was given.
struct StrBlock {
  mutable uint32_t refs;
  uint32_t size;
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view view() const { return {data(), size}; }
};

// A new string with one reference (the caller's).
const StrBlock* NewString(std::string_view v);
inline void RetainString(const StrBlock* s) { ++s->refs; }
inline void ReleaseString(const StrBlock* s) {
  if (--s->refs == 0) std::free(const_cast<StrBlock*>(s));
}

// One value: int64, the bits of a double, a bool as 0/1, or a string; `valid` is false for NULL.
struct Value {
  union {
    int64_t i;
    double d;
    const StrBlock* s;
  };
  bool valid;

  static Value Int(int64_t v) {
    Value x;
    x.i = v;
    x.valid = true;
    return x;
  }
  static Value Double(double v) {
    Value x;
    x.d = v;
    x.valid = true;
    return x;
  }
  static Value Bool(bool v) { return Int(v ? 1 : 0); }
  // A new string: the caller owns the reference (RowLayout::Release, or a store's Remove).
  static Value String(std::string_view v) {
    Value x;
    x.s = NewString(v);
    x.valid = true;
    return x;
  }
  static Value Null() {
    Value x;
    x.i = 0;
    x.valid = false;
    return x;
  }
};
static_assert(sizeof(Value) == 16 && std::is_trivially_copyable_v<Value>);

}  // namespace cq
