// AND, OR, NOT with SQL's three-valued logic (ARCHITECTURE.md §3.6): FALSE AND NULL is FALSE, TRUE
// OR NULL is TRUE, anything else with a NULL is NULL. Evaluated 64 rows at a time on the bitmaps.
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

using kernel::BoolWords;

template <bool kAnd>
Column AndOr(std::span<const Datum> args, int64_t n) {
  BoolWords a(args[0]), b(args[1]);
  Column out;
  out.type = TypeId::kBool;
  out.length = n;
  const int64_t nbytes = bitmap::Bytes(n), words = bitmap::Words(n);
  out.values = Buffer::Allocate(nbytes);
  Buffer valid = Buffer::Allocate(nbytes);
  uint64_t* ov = out.values.as<uint64_t>();
  uint64_t* oval = valid.as<uint64_t>();
  uint64_t all_valid = ~0ull;
  for (int64_t w = 0; w < words; ++w) {
    const uint64_t av = a.validity(w, nbytes), ad = a.value(w, nbytes) & av;
    const uint64_t bv = b.validity(w, nbytes), bd = b.value(w, nbytes) & bv;
    uint64_t v, d;
    if constexpr (kAnd) {
      // Known when both are known, or when either is a known FALSE.
      v = (av & bv) | (av & ~ad) | (bv & ~bd);
      d = ad & bd;
    } else {
      // Known when both are known, or when either is a known TRUE.
      v = (av & bv) | ad | bd;
      d = ad | bd;
    }
    ov[w] = d & v;
    oval[w] = v;
    if (w < words - 1 || n % 64 == 0) all_valid &= v;
    else all_valid &= v | (~0ull << (n % 64));
  }
  if (all_valid != ~0ull) {
    out.validity = valid;
    out.null_count = n - bitmap::CountSet(valid.data, n);
  }
  return out;
}

Column Not(std::span<const Datum> args, int64_t n) {
  if (args[0].is_scalar()) {
    Scalar s = args[0].scalar;
    s.b = !s.b;
    return Broadcast(s, n);
  }
  const Column& c = *args[0].column;
  Column out;
  out.type = TypeId::kBool;
  out.length = n;
  out.validity = c.validity;
  out.null_count = c.null_count;
  const int64_t nbytes = bitmap::Bytes(n);
  out.values = Buffer::Allocate(nbytes);
  for (int64_t i = 0; i < nbytes; ++i) out.values.data[i] = static_cast<uint8_t>(~c.bits()[i]);
  return out;
}

}  // namespace

void RegisterLogicalKernels(KernelRegistry& r) {
  const TypeId B = TypeId::kBool;
  auto C = NullHandling::kCustom;
  r.Register({"and", {B, B}, B, C, "a AND b, three-valued", AndOr<true>});
  r.Register({"or", {B, B}, B, C, "a OR b, three-valued", AndOr<false>});
  r.Register({"not", {B}, B, NullHandling::kPropagate, "NOT a (NULL stays NULL)", Not});
}

}  // namespace cq
