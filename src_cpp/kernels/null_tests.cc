// IS NULL / IS NOT NULL: never NULL themselves.
#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

template <bool kIsNull>
Column NullTest(std::span<const Datum> args, int64_t n) {
  const Datum& a = args[0];
  Column out;
  out.type = TypeId::kBool;
  out.length = n;
  const int64_t nbytes = bitmap::Bytes(n);
  out.values = Buffer::Allocate(nbytes);
  bool all_valid;
  const uint8_t* v = nullptr;
  if (a.is_scalar()) {
    all_valid = a.scalar.valid;
  } else if (a.column->type == TypeId::kNull) {
    all_valid = false;
  } else {
    all_valid = !a.column->has_nulls();
    v = a.column->validity.data;
  }
  if (v) {
    for (int64_t i = 0; i < nbytes; ++i) out.values.data[i] = kIsNull ? static_cast<uint8_t>(~v[i]) : v[i];
  } else {
    std::memset(out.values.data, (all_valid != kIsNull) ? 0xFF : 0, static_cast<size_t>(nbytes));
  }
  return out;
}

}  // namespace

void RegisterNullKernels(KernelRegistry& r) {
  auto C = NullHandling::kCustom;
  for (TypeId t : {TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool, TypeId::kNull}) {
    r.Register({"is_null", {t}, TypeId::kBool, C, "a IS NULL", NullTest<true>});
    r.Register({"is_not_null", {t}, TypeId::kBool, C, "a IS NOT NULL", NullTest<false>});
  }
}

}  // namespace cq
