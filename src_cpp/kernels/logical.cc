// AND, OR, NOT with SQL's three-valued logic (ARCHITECTURE.md §3.6): FALSE AND NULL is FALSE, TRUE OR NULL is
// TRUE, anything else with a NULL is NULL. Defined on bit-parallel words, so one definition serves
// 64 rows at a time on the bitmaps (the vector form) and one row as bit 0 (the row form).
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

using kernel::BoolWords;

// a AND b / a OR b on words of values (0 where NULL) and validities: the result's value bits
// (0 where NULL) and validity.
template <bool kAnd>
struct AndOrOp {
  template <typename W>
  static void Apply(W ad, W av, W bd, W bv, W* d, W* v) {
    if constexpr (kAnd) {
      // Known when both are known, or when either is a known FALSE.
      *v = (av & bv) | (av & ~ad) | (bv & ~bd);
      *d = ad & bd & *v;
    } else {
      // Known when both are known, or when either is a known TRUE.
      *v = (av & bv) | ad | bd;
      *d = (ad | bd) & *v;
    }
  }
};
struct NotOp {
  template <typename W>
  static W Apply(W x) {
    return static_cast<W>(~x);
  }
};

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
    AndOrOp<kAnd>::Apply(ad, av, bd, bv, &d, &v);
    ov[w] = d;
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
    s.b = NotOp::Apply<uint8_t>(s.b) & 1;
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
  for (int64_t i = 0; i < nbytes; ++i) out.values.data[i] = NotOp::Apply(c.bits()[i]);
  return out;
}

// One row: b is evaluated only when a does not decide (the op applied to a and an unknown b).
template <bool kAnd>
Value AndOrRow(const RowNode& e, const Value* row) {
  bool owned;
  const Value a = row::Arg(e, 0, row, &owned);
  const uint64_t av = a.valid, ad = a.valid && a.i != 0;
  uint64_t d, v;
  AndOrOp<kAnd>::template Apply<uint64_t>(ad, av, 0, 0, &d, &v);
  if (v & 1) return Value::Bool(d & 1);
  const Value b = row::Arg(e, 1, row, &owned);
  AndOrOp<kAnd>::template Apply<uint64_t>(ad, av, b.valid && b.i != 0, b.valid, &d, &v);
  return v & 1 ? Value::Bool(d & 1) : Value::Null();
}
template <bool kAnd>
RowNode::Eval BindAndOr(const RowNode&) {
  return AndOrRow<kAnd>;
}
struct NotValue {
  static Value Apply(Value a) { return Value::Bool(NotOp::Apply<uint64_t>(static_cast<uint64_t>(a.i)) & 1); }
};

}  // namespace

void RegisterLogicalKernels(KernelRegistry& r) {
  const TypeId B = TypeId::kBool;
  auto C = NullHandling::kCustom;
  r.Register({"and", {B, B}, B, C, "a AND b, three-valued", AndOr<true>, BindAndOr<true>});
  r.Register({"or", {B, B}, B, C, "a OR b, three-valued", AndOr<false>, BindAndOr<false>});
  r.Register({"not", {B}, B, NullHandling::kPropagate, "NOT a (NULL stays NULL)", Not, row::BindUnary<NotValue>});
}

}  // namespace cq
