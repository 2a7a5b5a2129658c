#pragma once
// Equality of whole rows across two batches of one schema, for the bag differences of
// ISTREAM/DSTREAM (and later set operations). NULL equals NULL here, as in SQL's set operations
// ("not distinct"). The column types are read once per schema; numbers without NULLs compare
// inline, since bag differences compare every start that meets an end at its instant, and the
// rest (NULLs, booleans, strings) out of line.
#include <bit>
#include <cstring>
#include <span>
#include <vector>

#include "batch/column.h"
#include "batch/row_hash.h"
#include "batch/types.h"

namespace cq {

class RowEqual {
 public:
  explicit RowEqual(const Schema& schema);
  bool operator()(std::span<const Column> a, int64_t i, std::span<const Column> b, int64_t j) const {
    for (size_t c = 0; c < types_.size(); ++c) {
      const Column &x = a[c], &y = b[c];
      const TypeId type = types_[c];
      if (type == TypeId::kNull) continue;
      if ((type == TypeId::kInt64 || type == TypeId::kFloat64) && !x.has_nulls() && !y.has_nulls()) {
        if (type == TypeId::kInt64 ? x.i64()[i] != y.i64()[j] : !FloatsEqual(x.f64()[i], y.f64()[j])) return false;
        continue;
      }
      if (!ValuesEqual(type, x, i, y, j)) return false;
    }
    return true;
  }

  // Whether the rows of a batch of this schema (its columns `cols`) may be compared by Plain: every
  // column a number, none with a NULL. Bag differences ask once per batch, not per row.
  bool IsPlain(std::span<const Column> cols) const {
    if (!numbers_only_) return false;
    for (const Column& c : cols)
      if (c.has_nulls()) return false;
    return true;
  }
  // operator() for rows of two batches IsPlain accepts: their 8-byte values are compared as bits,
  // and only differing bits of a float column are looked at as numbers. Always inlined: a
  // profile-guided build whose training saw few equal hashes called it out of line, which cost
  // bag differences of rows that do match (ISTREAM over a loop fed back: paper 000's query with
  // its loop opened, under the hybrid) 55 instructions per input tuple.
  [[gnu::always_inline]] bool Plain(std::span<const Column> a, int64_t i, std::span<const Column> b, int64_t j) const {
    for (size_t c = 0; c < a.size(); ++c) {
      int64_t p, q;
      std::memcpy(&p, a[c].values.data + i * 8, 8);
      std::memcpy(&q, b[c].values.data + j * 8, 8);
      if (p != q && !((floats_ >> c & 1) && FloatsEqual(a[c].f64()[i], b[c].f64()[j]))) return false;
    }
    return true;
  }
  size_t width() const { return types_.size(); }
  // A hash of a row IsPlain accepts, equal for rows Plain finds equal: bag differences of many
  // rows against many compare hashes first, and rows only where they agree. Every value's bits are
  // read as a double and keyed as one (KeyBitsOf), with no test of the column's type: an integer is
  // changed only where its bits are such a double, and then merely shares its hash. The values are
  // folded by rotate and xor, and mixed by one multiply at the end, which carries every bit into
  // the top ones (bag differences filter on those); it is odd, so rows collide only where their
  // folds do.
  uint64_t PlainHash(std::span<const Column> a, int64_t i) const {
    uint64_t h = 0;
    for (const Column& c : a) {
      double d;
      std::memcpy(&d, c.values.data + i * 8, 8);
      h = std::rotl(h, 23) ^ KeyBitsOf(d);
    }
    return h * 0x9E3779B97F4A7C15ULL;
  }

 private:
  // NaN equals NaN for grouping and set operations, as in Spark and DuckDB; 0.0 equals -0.0.
  static bool FloatsEqual(double p, double q) { return p == q || (p != p && q != q); }
  // One column's values, any type, NULLs included.
  [[gnu::noinline]] static bool ValuesEqual(TypeId type, const Column& x, int64_t i, const Column& y, int64_t j);

  std::vector<TypeId> types_;
  bool numbers_only_ = false;  // every column int64 or float64 (and at most 64 of them)
  uint64_t floats_ = 0;        // bit c: column c is float64
};

}  // namespace cq
