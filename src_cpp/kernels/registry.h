#pragma once
// Expression kernels, registered by name and argument types (ARCHITECTURE.md §3.6, after Arrow's
// FunctionRegistry), each in two forms made from one definition: vectorized (`fn`) and on one row
// (`row`, for loop regions). The planner resolves every call to one kernel when a plan is loaded, so no
// lookup happens per batch; Python reads the same registry (cq_core.kernel_signatures()) to type
// expressions, so the two sides cannot disagree about what exists.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/datum.h"
#include "kernels/row_form.h"

namespace cq {

// How a kernel treats null inputs: kPropagate (any null argument gives null, plus the kernel may
// add nulls of its own, e.g. x / 0), kCustom (the kernel decides: three-valued AND/OR, IS NULL).
enum class NullHandling : uint8_t { kPropagate, kCustom };

// At least one argument is a column: calls over scalars only are folded to a scalar when the
// expression is compiled (kernels/expression.cc), so kernels need no all-scalar path. `args` has
// as many Datums as the call has arguments (a variadic kernel reads its arity from it).
using KernelFn = Column (*)(std::span<const Datum> args, int64_t length);

struct Kernel {
  std::string name;
  std::vector<TypeId> args;
  TypeId result;
  NullHandling nulls;
  std::string doc;
  KernelFn fn;
  // The same function on one row (kernels/row_form.h), made from the definition `fn` is made from.
  RowBind row;
  // Variadic kernels (after Arrow's VarArgs): the first `repeat` types of `args` are a group that
  // occurs one or more times, the rest follow once. case_when over T is args {bool, T, T} with
  // repeat 2: (bool, T)+ T. 0 means exactly `args`.
  int repeat = 0;

  // Whether a call with these argument types binds to this kernel (the name aside).
  bool Accepts(const std::vector<TypeId>& actual) const;
};

class KernelRegistry {
 public:
  static const KernelRegistry& Global();
  void Register(Kernel k);
  const Kernel* Find(const std::string& name, const std::vector<TypeId>& args) const;
  const std::vector<Kernel>& kernels() const { return kernels_; }

 private:
  std::vector<Kernel> kernels_;
};

// Registration functions, one per kernel family (kernels/<family>.cc).
void RegisterArithmeticKernels(KernelRegistry& r);
void RegisterComparisonKernels(KernelRegistry& r);
void RegisterLogicalKernels(KernelRegistry& r);
void RegisterNullKernels(KernelRegistry& r);
void RegisterCastKernels(KernelRegistry& r);
void RegisterConditionalKernels(KernelRegistry& r);

}  // namespace cq
