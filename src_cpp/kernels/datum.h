#pragma once
// Kernel arguments: a column of the batch's length, or a scalar (a literal) that stands for every
// row. Kernels are templated over both, so `b * 2` never materializes the 2.
#include <string>
#include <vector>

#include "batch/column.h"

namespace cq {

struct Scalar {
  TypeId type = TypeId::kNull;
  bool valid = false;
  int64_t i64 = 0;
  double f64 = 0;
  bool b = false;
  std::string str;
};

struct Datum {
  const Column* column = nullptr;  // when null, `scalar` holds the value
  Scalar scalar;

  bool is_scalar() const { return column == nullptr; }
  TypeId type() const { return column ? column->type : scalar.type; }
};

// A column of `n` copies of `s`.
Column Broadcast(const Scalar& s, int64_t n);
// Row i of `c` as a scalar.
Scalar ScalarAt(const Column& c, int64_t i);

}  // namespace cq
