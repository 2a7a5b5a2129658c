#pragma once
// Hashes of whole rows, computed a column at a time, for the operators that must find equal rows:
// the Negative Tuple method pairs a negative tuple with its positive by value (the cost the Direct
// method avoids), and set operations and DISTINCT group by value. Consistent with RowEqual: equal
// rows (NULL = NULL, NaN = NaN, -0.0 = 0.0) hash alike.
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "batch/column.h"

namespace cq {

// A row's hash starts from kRowHashSeed and folds in each value's hash as MixHash(h * 31 + v); a
// NULL's is kNullHash, a string's HashBytes. The row form (rows/row.h's ValueHash, RowLayout) hashes
// from the same pieces, so a row hashes alike in either form.
inline constexpr uint64_t kRowHashSeed = 0x2545F4914F6CDD1DULL;
inline constexpr uint64_t kNullHash = 0x9e3779b97f4a7c15ULL;

// hashes[i] for rows [0, n) of `columns` (compact).
void HashRows(std::span<const Column> columns, int64_t n, uint64_t* hashes);

// Appends row `row` of `c` to `out` as bytes that are equal exactly when the values are equal as
// grouping keys (NULL is one key, -0.0 = 0.0): hash-map keys for partitions and groups.
void AppendKey(const Column& c, int64_t row, std::string* out);
// The same bytes for one value of `type` held outside a column (a row of a loop): NULL unless
// `valid`; else its 8 bytes `bits` (int64, a double's bits, a bool as 0/1) or the string `s`.
void AppendKeyOf(TypeId type, bool valid, uint64_t bits, std::string_view s, std::string* out);

// The bits of a double as a grouping key: -0.0 = 0.0 and every NaN is one NaN.
inline uint64_t KeyBitsOf(double v) {
  if (v == 0) v = 0;
  if (v != v) v = std::numeric_limits<double>::quiet_NaN();
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return bits;
}

inline uint64_t MixHash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t HashBytes(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a, then mixed
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return MixHash(h);
}

}  // namespace cq
