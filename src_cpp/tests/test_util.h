#pragma once
// Columns, kernel arguments and record batches built by hand, and read back, for the core's tests.
// Values are std::optional so that a NULL is written where it is: I64({1, std::nullopt, 3}).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arrow/bridge.h"
#include "base/errors.h"
#include "batch/column.h"
#include "kernels/datum.h"
#include "tests/harness.h"

namespace cq::test {

using I64s = std::vector<std::optional<int64_t>>;
using F64s = std::vector<std::optional<double>>;
using Strs = std::vector<std::optional<std::string>>;
using Bools = std::vector<std::optional<bool>>;

// Compact columns (validity only when there is a null, as the core builds them).
Column I64(const I64s& v);
Column F64(const F64s& v);
Column Str(const Strs& v);
Column Bool(const Bools& v);

I64s ReadI64(const Column& c);
F64s ReadF64(const Column& c);
Strs ReadStr(const Column& c);
Bools ReadBool(const Column& c);

// Rows of `c` that are not valid: what null_count must say.
int64_t CountNulls(const Column& c);

// Kernel arguments. A Datum only points at its column: the column must outlive the call.
Datum Col(const Column& c);
Datum ScalarI64(std::optional<int64_t> v);
Datum ScalarF64(std::optional<double> v);
Datum ScalarStr(std::optional<std::string> v);
Datum ScalarBool(std::optional<bool> v);

// Looks the kernel up by name and the arguments' types, as the expression compiler does, and runs
// it over `n` rows. A missing kernel ends the test case.
Column Call(const std::string& fn, const std::vector<Datum>& args, int64_t n);

// A deterministic pseudo-random sequence (tests must fail the same way every time).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  // Uniform in [0, n).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t s_;
};

// A record batch as the binding hands it to the engine: the columns exported through the Arrow C
// Data Interface and imported back (so the buffers are views owned by the imported array).
ImportedBatch MakeBatch(const std::vector<std::string>& names, const std::vector<Column>& columns, int64_t length);

// Runs f and returns the CqError it threw; a test failure (and nullopt) when it threw nothing.
template <typename F>
std::optional<CqError> CatchCqError(F&& f, const char* file, int line) {
  try {
    f();
  } catch (const CqError& e) {
    return e;
  }
  Fail(file, line, "expected a CqError, nothing was thrown");
  return std::nullopt;
}
#define CQ_CATCH(stmt) ::cq::test::CatchCqError([&] { stmt; }, __FILE__, __LINE__)

}  // namespace cq::test
