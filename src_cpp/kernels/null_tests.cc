// IS NULL / IS NOT NULL: never NULL themselves.
#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

// The definition, on words of validity bits: the vector form applies it to the bitmap a byte at a
// time, the row form to one bit.
template <bool kIsNull>
struct NullTestOp {
  template <typename W>
  static W Apply(W valid) {
    return kIsNull ? static_cast<W>(~valid) : valid;
  }
};

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
    for (int64_t i = 0; i < nbytes; ++i) out.values.data[i] = NullTestOp<kIsNull>::Apply(v[i]);
  } else {
    const uint8_t fill = NullTestOp<kIsNull>::template Apply<uint8_t>(all_valid ? 0xFF : 0);
    std::memset(out.values.data, fill, static_cast<size_t>(nbytes));
  }
  return out;
}

template <bool kIsNull>
Value NullTestRow(const RowNode& e, const Value* row) {
  bool owned;
  const Value a = row::Arg(e, 0, row, &owned);
  const TypeId t = e.args[0]->type;
  const uint64_t valid = a.valid && t != TypeId::kNull;
  row::Drop(t, a, owned);
  return Value::Bool(NullTestOp<kIsNull>::template Apply<uint64_t>(valid) & 1);
}
template <bool kIsNull>
RowNode::Eval BindNullTest(const RowNode&) {
  return NullTestRow<kIsNull>;
}

}  // namespace

void RegisterNullKernels(KernelRegistry& r) {
  auto C = NullHandling::kCustom;
  for (TypeId t : {TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool, TypeId::kNull}) {
    r.Register({"is_null", {t}, TypeId::kBool, C, "a IS NULL", NullTest<true>, BindNullTest<true>});
    r.Register({"is_not_null", {t}, TypeId::kBool, C, "a IS NOT NULL", NullTest<false>, BindNullTest<false>});
  }
}

}  // namespace cq
