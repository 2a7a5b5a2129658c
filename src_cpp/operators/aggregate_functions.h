#pragma once
// What an aggregate function keeps per group and how a value changes it: one definition of COUNT,
// SUM, AVG, MIN, MAX (optionally DISTINCT) for both forms of the aggregate operator —
// aggregate.cc over batches, aggregate_rows.cc over the rows of a loop (rows/ROWS.md).
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "batch/types.h"

namespace cq {
class SnapshotWriter;
class SnapshotReader;
}  // namespace cq

namespace cq::aggfn {

enum class Fn : uint8_t { kCountStar, kCount, kSum, kAvg, kMin, kMax };
// What a row does to an accumulator, decided once per aggregate rather than per row.
enum class Op : uint8_t { kRows, kNothing, kCountValid, kInt, kDouble, kMultiset };

// Non-null values (rows for COUNT(*)) and their sum; with DISTINCT, of the distinct values.
// Integers are summed exactly in 128 bits: SUM wraps to int64 at the end as SQL engines do, and
// AVG divides the exact sum.
struct Acc {
  int64_t count = 0;
  __int128 isum = 0;
  double dsum = 0;
};
struct DoubleLess {  // a total order, NaN last, so that a NaN cannot break the map
  bool operator()(double a, double b) const { return a < b || (b != b && a == a); }
};
struct Multiset {  // value -> copies; one map used, by the argument's type (bool as 0/1)
  std::map<int64_t, int64_t> ints;
  std::map<double, int64_t, DoubleLess> doubles;
  std::map<std::string, int64_t, std::less<>> strings;
};
// A result: int64, double bits or bool; a utf8 result lives in a string beside it.
struct Result {
  uint64_t bits = 0;
  bool valid = false;
};
// One non-null argument value, read as the argument's type says: int64 (and bool as 0/1),
// double, or string.
struct Arg {
  int64_t i = 0;
  double d = 0;
  std::string_view s;
};

[[gnu::always_inline]] inline void AddInt(Acc& acc, int64_t v, int64_t sign) {
  acc.count += sign;
  acc.isum += sign > 0 ? v : -static_cast<__int128>(v);
}
[[gnu::always_inline]] inline void AddDouble(Acc& acc, double v, int64_t sign) {
  // A sum of doubles that added and took away the same values need not be 0 again: an empty
  // group starts from 0 exactly.
  if ((acc.count += sign) == 0) acc.dsum = 0;
  else acc.dsum += static_cast<double>(sign) * v;
}
// `sign` copies of the value into (or out of) the multiset; with DISTINCT, the accumulator counts
// and sums the values whose copies go from 0 to 1 or back.
void ApplyMultiset(Multiset& set, Acc& acc, TypeId type, const Arg& v, int64_t sign, bool distinct);
// MIN or MAX of the multiset (a utf8 result goes to *s).
Result Extreme(bool min, TypeId type, const Multiset& set, std::string* s);
// The value of COUNT(*), COUNT, SUM or AVG from its accumulator (MIN and MAX: Extreme).
[[gnu::always_inline]] inline Result Compute(Fn fn, TypeId result, TypeId arg, const Acc& acc) {
  Result v;
  switch (fn) {
    case Fn::kCountStar:
    case Fn::kCount:
      v.valid = true;
      v.bits = static_cast<uint64_t>(acc.count);
      return v;
    case Fn::kSum:
    case Fn::kAvg: {
      if (acc.count == 0) return v;
      v.valid = true;
      if (fn == Fn::kSum && result == TypeId::kInt64) {
        v.bits = static_cast<uint64_t>(acc.isum);  // wraps, as int64 arithmetic does
        return v;
      }
      // (A sum that fits 64 bits converts in one instruction; the 128-bit conversion is a call.)
      const int64_t narrow = static_cast<int64_t>(acc.isum);
      double x = arg == TypeId::kFloat64 ? acc.dsum
                 : narrow == acc.isum    ? static_cast<double>(narrow)
                                         : static_cast<double>(acc.isum);
      if (fn == Fn::kAvg) x /= static_cast<double>(acc.count);
      std::memcpy(&v.bits, &x, 8);
      return v;
    }
    case Fn::kMin:
    case Fn::kMax: break;
  }
  return v;
}

// Engine snapshots of the per-group state both forms keep: the multisets (each value and its
// copies), and the check of restored accumulators and multisets — counts that later rows add to and
// take from without overflow (an overflowing count or sum would be undefined behaviour).
void SnapshotSets(SnapshotWriter& w, const std::vector<Multiset>& sets);
void RestoreSets(SnapshotReader& r, std::vector<Multiset>& sets);
bool Restorable(const Acc& acc);

}  // namespace cq::aggfn
