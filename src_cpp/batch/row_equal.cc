#include "batch/row_equal.h"

namespace cq {

namespace {

template <typename Eq>
bool NullAware(const Column& a, int64_t i, const Column& b, int64_t j, Eq eq) {
  const bool va = a.IsValid(i), vb = b.IsValid(j);
  if (!va || !vb) return va == vb;
  return eq();
}

bool EqI64(const Column& a, int64_t i, const Column& b, int64_t j) {
  return NullAware(a, i, b, j, [&] { return a.i64()[i] == b.i64()[j]; });
}
bool EqF64(const Column& a, int64_t i, const Column& b, int64_t j) {
  // NaN equals NaN for grouping and set operations, as in Spark and DuckDB.
  return NullAware(a, i, b, j, [&] {
    double x = a.f64()[i], y = b.f64()[j];
    return x == y || (x != x && y != y);
  });
}
bool EqBool(const Column& a, int64_t i, const Column& b, int64_t j) {
  return NullAware(a, i, b, j, [&] { return a.BoolAt(i) == b.BoolAt(j); });
}
bool EqUtf8(const Column& a, int64_t i, const Column& b, int64_t j) {
  return NullAware(a, i, b, j, [&] { return a.StrAt(i) == b.StrAt(j); });
}
bool EqNull(const Column&, int64_t, const Column&, int64_t) { return true; }

}  // namespace

RowEqual::RowEqual(const Schema& schema) {
  for (const Field& f : schema) {
    switch (f.type) {
      case TypeId::kInt64: fns_.push_back(EqI64); break;
      case TypeId::kFloat64: fns_.push_back(EqF64); break;
      case TypeId::kBool: fns_.push_back(EqBool); break;
      case TypeId::kUtf8: fns_.push_back(EqUtf8); break;
      case TypeId::kNull: fns_.push_back(EqNull); break;
    }
  }
}

}  // namespace cq
