// Casts the planner inserts to type mixed arithmetic and comparisons (int64 -> float64). The
// user-facing CAST of every type pair arrives with the full language.
#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

Column Int64ToFloat64(const Datum* args, int64_t n) {
  if (kernel::AnyNullScalar(args, 1)) return Column::Nulls(TypeId::kFloat64, n);
  Column out;
  out.type = TypeId::kFloat64;
  out.length = n;
  out.validity = kernel::AndValidity(args, 1, n, &out.null_count);
  out.values = Buffer::Allocate(n * 8);
  double* o = out.values.as<double>();
  const int64_t* p = args[0].column->i64();
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<double>(p[i]);
  return out;
}

}  // namespace

void RegisterCastKernels(KernelRegistry& r) {
  r.Register({"cast_float64", {TypeId::kInt64}, TypeId::kFloat64, NullHandling::kPropagate,
              "CAST(a AS DOUBLE)", Int64ToFloat64});
}

}  // namespace cq
