#pragma once
// Building blocks shared by the kernel families: per-row accessors for columns and scalars (so one
// template serves column-column, column-scalar and scalar-column), and validity combination.
#include <algorithm>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include "kernels/datum.h"

namespace cq::kernel {

// The column type of a C++ value type.
template <typename T>
constexpr TypeId kTypeOf = std::is_same_v<T, int64_t>  ? TypeId::kInt64
                           : std::is_same_v<T, double> ? TypeId::kFloat64
                           : std::is_same_v<T, bool>   ? TypeId::kBool
                                                       : TypeId::kUtf8;

template <typename T>
struct ColumnIn {
  const T* p;
  T operator()(int64_t i) const { return p[i]; }
};
template <typename T>
struct ScalarIn {
  T v;
  T operator()(int64_t) const { return v; }
};
struct BoolColumnIn {
  const uint8_t* bits;
  bool operator()(int64_t i) const { return bitmap::Get(bits, i); }
};
struct StrColumnIn {
  const Column* c;
  std::string_view operator()(int64_t i) const { return c->StrAt(i); }
};
struct StrScalarIn {
  std::string_view v;
  std::string_view operator()(int64_t) const { return v; }
};

// True when some argument is a null scalar: the whole result of a null-propagating kernel is null.
inline bool AnyNullScalar(std::span<const Datum> args) {
  for (const Datum& a : args)
    if (a.is_scalar() && !a.scalar.valid) return true;
  return false;
}

// The AND of the arguments' validity bitmaps over `length` rows; empty when every row is valid.
inline Buffer AndValidity(std::span<const Datum> args, int64_t length, int64_t* null_count) {
  *null_count = 0;
  const Column* first = nullptr;
  int with_nulls = 0;
  for (const Datum& a : args) {
    if (a.is_scalar() || !a.column->has_nulls()) continue;
    if (!first) first = a.column;
    ++with_nulls;
  }
  if (with_nulls == 0) return {};
  if (with_nulls == 1) {
    *null_count = first->null_count;
    return first->validity;  // shared, not copied
  }
  Buffer out = Buffer::Allocate(bitmap::Bytes(length));
  const int64_t words = bitmap::Words(length);
  uint64_t* o = out.as<uint64_t>();
  std::memcpy(o, first->validity.data, static_cast<size_t>(bitmap::Bytes(length)));
  for (const Datum& a : args) {
    if (a.is_scalar() || !a.column->has_nulls() || a.column == first) continue;
    const uint8_t* v = a.column->validity.data;
    for (int64_t w = 0; w < words; ++w) {
      uint64_t x = 0;
      std::memcpy(&x, v + w * 8, static_cast<size_t>(std::min<int64_t>(8, bitmap::Bytes(length) - w * 8)));
      o[w] &= x;
    }
  }
  *null_count = length - bitmap::CountSet(out.data, length);
  return out;
}

// A bool argument read 64 rows at a time: its values and its validity, as words (a scalar is the
// same word for every row). Three-valued logic and CASE's conditions work on these words.
struct BoolWords {
  const uint8_t* values = nullptr;
  const uint8_t* valid = nullptr;
  uint64_t const_value = 0, const_valid = ~0ull;

  explicit BoolWords(const Datum& d) {
    if (d.is_scalar()) {
      const_value = (d.scalar.valid && d.scalar.b) ? ~0ull : 0;
      const_valid = d.scalar.valid ? ~0ull : 0;
    } else {
      values = d.column->bits();
      if (d.column->has_nulls()) valid = d.column->validity.data;
    }
  }
  static uint64_t Load(const uint8_t* p, int64_t w, int64_t nbytes) {
    uint64_t x = 0;
    std::memcpy(&x, p + w * 8, static_cast<size_t>(std::min<int64_t>(8, nbytes - w * 8)));
    return x;
  }
  // Word w of the values and of the validity; `nbytes` is the bitmaps' size in bytes.
  uint64_t value(int64_t w, int64_t nbytes) const { return values ? Load(values, w, nbytes) : const_value; }
  uint64_t validity(int64_t w, int64_t nbytes) const {
    if (values) return valid ? Load(valid, w, nbytes) : ~0ull;
    return const_valid;
  }
};

// Writes pred(i) for i in [0, n) as a bitmap. The predicate fills 64 bytes at a time (a loop the
// compiler vectorizes); a multiply then packs each 8 bytes of 0/1 into one byte of bits.
template <typename Pred>
inline void FillBits(uint8_t* out, int64_t n, Pred pred) {
  const int64_t full = n / 64;
  uint64_t* words = reinterpret_cast<uint64_t*>(out);
  alignas(64) uint8_t tmp[64];
  for (int64_t w = 0; w < full; ++w) {
    const int64_t base = w * 64;
    for (int j = 0; j < 64; ++j) tmp[j] = static_cast<uint8_t>(pred(base + j));
    uint64_t word = 0;
    for (int c = 0; c < 8; ++c) {
      uint64_t x;
      std::memcpy(&x, tmp + 8 * c, 8);
      word |= ((x * 0x0102040810204080ULL) >> 56) << (8 * c);
    }
    words[w] = word;
  }
  if (full * 64 < n) {
    uint64_t word = 0;
    for (int64_t i = full * 64; i < n; ++i) word |= static_cast<uint64_t>(pred(i)) << (i - full * 64);
    words[full] = word;
  }
}

}  // namespace cq::kernel
