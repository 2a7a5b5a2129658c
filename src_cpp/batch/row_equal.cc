#include "batch/row_equal.h"

namespace cq {

RowEqual::RowEqual(const Schema& schema) {
  types_.reserve(schema.size());
  numbers_only_ = schema.size() <= 64;
  for (const Field& f : schema) {
    numbers_only_ &= f.type == TypeId::kInt64 || f.type == TypeId::kFloat64;
    if (f.type == TypeId::kFloat64) floats_ |= uint64_t{1} << (types_.size() & 63);
    types_.push_back(f.type);
  }
}

bool RowEqual::ValuesEqual(TypeId type, const Column& x, int64_t i, const Column& y, int64_t j) {
  const bool vx = x.IsValid(i), vy = y.IsValid(j);
  if (!vx || !vy) return vx == vy;
  switch (type) {
    case TypeId::kInt64: return x.i64()[i] == y.i64()[j];
    case TypeId::kFloat64: return FloatsEqual(x.f64()[i], y.f64()[j]);
    case TypeId::kBool: return x.BoolAt(i) == y.BoolAt(j);
    case TypeId::kUtf8: return x.StrAt(i) == y.StrAt(j);
    case TypeId::kNull: return true;
  }
  return true;
}

}  // namespace cq
