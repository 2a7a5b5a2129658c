#include "kernels/registry.h"

#include <cstring>

namespace cq {

const KernelRegistry& KernelRegistry::Global() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterArithmeticKernels(r);
    RegisterComparisonKernels(r);
    RegisterLogicalKernels(r);
    RegisterNullKernels(r);
    RegisterCastKernels(r);
    RegisterConditionalKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::Register(Kernel k) { kernels_.push_back(std::move(k)); }

bool Kernel::Accepts(const std::vector<TypeId>& actual) const {
  if (repeat == 0) return actual == args;
  const size_t n = actual.size(), m = args.size(), r = static_cast<size_t>(repeat);
  if (n < m || (n - m) % r != 0) return false;
  const size_t tail = n - (m - r);  // where the arguments after the repeated groups begin
  for (size_t i = 0; i < n; ++i)
    if (actual[i] != (i < tail ? args[i % r] : args[i - (n - m)])) return false;
  return true;
}

const Kernel* KernelRegistry::Find(const std::string& name, const std::vector<TypeId>& args) const {
  for (const Kernel& k : kernels_)
    if (k.name == name && k.Accepts(args)) return &k;
  return nullptr;
}

Column Broadcast(const Scalar& s, int64_t n) {
  if (!s.valid) return Column::Nulls(s.type, n);
  Column c;
  c.type = s.type;
  c.length = n;
  switch (s.type) {
    case TypeId::kInt64: {
      c.values = Buffer::Allocate(n * 8);
      int64_t* p = c.values.as<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = s.i64;
      break;
    }
    case TypeId::kFloat64: {
      c.values = Buffer::Allocate(n * 8);
      double* p = c.values.as<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = s.f64;
      break;
    }
    case TypeId::kBool:
      c.values = Buffer::Allocate(bitmap::Bytes(n));
      std::memset(c.values.data, s.b ? 0xFF : 0, static_cast<size_t>(bitmap::Bytes(n)));
      break;
    case TypeId::kUtf8: {
      int64_t len = static_cast<int64_t>(s.str.size());
      c.offsets = Buffer::Allocate((n + 1) * 4);
      c.values = Buffer::Allocate(len * n);
      int32_t* o = c.offsets.as<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        o[i] = static_cast<int32_t>(i * len);
        std::memcpy(c.values.data + i * len, s.str.data(), static_cast<size_t>(len));
      }
      o[n] = static_cast<int32_t>(n * len);
      break;
    }
    case TypeId::kNull: c.null_count = n; break;
  }
  return c;
}

Scalar ScalarAt(const Column& c, int64_t i) {
  Scalar s;
  s.type = c.type;
  if (c.type == TypeId::kNull || !c.IsValid(i)) return s;
  s.valid = true;
  switch (c.type) {
    case TypeId::kInt64: s.i64 = c.i64()[i]; break;
    case TypeId::kFloat64: s.f64 = c.f64()[i]; break;
    case TypeId::kBool: s.b = c.BoolAt(i); break;
    case TypeId::kUtf8: s.str = std::string(c.StrAt(i)); break;
    case TypeId::kNull: break;
  }
  return s;
}

}  // namespace cq
