// CASE WHEN c1 THEN v1 [WHEN c2 THEN v2 ...] ELSE e END as one variadic kernel,
// case_when(c1, v1, c2, v2, ..., e): each row takes the value of the first condition that is TRUE
// (NULL is not TRUE), else e. The planner casts every value to the result type, makes a missing
// ELSE a NULL of it, and turns CASE x WHEN v into x = v conditions.
//
// Columnar in two passes: the conditions are read 64 rows a word to pick each row's branch
// (a later condition is only looked at for the rows still open), then one GatherMulti copies
// every row's value from its branch — a scalar branch is a one-row column that every row it
// picks reads row 0 of.
#include <bit>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

// Where a condition takes its branch: where it is TRUE (NULL is not). On words of values and
// validities: 64 rows at a time in the vector form, one row as bit 0 in the row form.
template <typename W>
W Takes(W value, W valid) {
  return value & valid;
}

Column CaseWhen(std::span<const Datum> args, int64_t n) {
  const size_t whens = args.size() / 2;  // branch `whens` is ELSE
  auto value_of = [&](size_t branch) -> const Datum& {
    return args[branch < whens ? 2 * branch + 1 : args.size() - 1];
  };

  std::vector<uint32_t> which(static_cast<size_t>(n), static_cast<uint32_t>(whens));
  std::vector<kernel::BoolWords> conds;
  conds.reserve(whens);
  for (size_t j = 0; j < whens; ++j) conds.emplace_back(args[2 * j]);
  const int64_t nbytes = bitmap::Bytes(n), words = bitmap::Words(n);
  for (int64_t w = 0; w < words; ++w) {
    uint64_t open = (w == words - 1 && n % 64) ? (uint64_t{1} << (n % 64)) - 1 : ~uint64_t{0};
    for (size_t j = 0; j < whens && open; ++j) {
      uint64_t hit = Takes(conds[j].value(w, nbytes), conds[j].validity(w, nbytes)) & open;
      open &= ~hit;
      for (; hit; hit &= hit - 1) which[static_cast<size_t>(w * 64 + std::countr_zero(hit))] = static_cast<uint32_t>(j);
    }
  }

  // Every row took one branch (a constant condition, or data that happens to agree): that
  // branch's column as it is, or its scalar repeated.
  if (n > 0 && std::all_of(which.begin(), which.end(), [&](uint32_t b) { return b == which[0]; })) {
    const Datum& v = value_of(which[0]);
    return v.is_scalar() ? Broadcast(v.scalar, n) : *v.column;
  }

  std::vector<Column> scalars;  // one-row columns of the scalar branches
  scalars.reserve(whens + 1);
  std::vector<const Column*> srcs;
  std::vector<uint32_t> row_mask;  // a row of a column branch reads its own row, of a scalar row 0
  for (size_t b = 0; b <= whens; ++b) {
    const Datum& v = value_of(b);
    if (v.is_scalar()) {
      scalars.push_back(Broadcast(v.scalar, 1));
      srcs.push_back(&scalars.back());
      row_mask.push_back(0);
    } else {
      srcs.push_back(v.column);
      row_mask.push_back(~uint32_t{0});
    }
  }
  std::vector<uint32_t> rows(static_cast<size_t>(n));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i) & row_mask[which[i]];
  return GatherMulti(srcs, which.data(), rows.data(), n);
}

// One row: the conditions are evaluated in order up to the first TRUE, and only its value.
Value CaseWhenRow(const RowNode& e, const Value* row) {
  const size_t n = e.args.size();
  for (size_t k = 0; k + 1 < n; k += 2) {
    bool owned;  // (a condition is a bool: nothing to release)
    const Value c = row::Arg(e, k, row, &owned);
    if (Takes<uint64_t>(c.i != 0, c.valid) & 1) return row::Own(e, k + 1, row);
  }
  return row::Own(e, n - 1, row);
}
RowNode::Eval BindCaseWhen(const RowNode&) { return CaseWhenRow; }

}  // namespace

void RegisterConditionalKernels(KernelRegistry& r) {
  const TypeId B = TypeId::kBool;
  for (TypeId t : {TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool}) {
    Kernel k{"case_when",
             {B, t, t},
             t,
             NullHandling::kCustom,
             "CASE WHEN c1 THEN v1 ... ELSE e END: the value of the first TRUE condition, else e",
             CaseWhen,
             BindCaseWhen};
    k.repeat = 2;  // (condition, value)+ then the ELSE value
    r.Register(std::move(k));
  }
}

}  // namespace cq
