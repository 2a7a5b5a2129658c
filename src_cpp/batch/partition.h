#pragma once
// The parts of a push for engines that each run one part of the input (cq_py's Engine(threads=N)):
// rows with equal keys go to one part, so an operator that relates rows of one key value (a
// partitioned window, a join or an aggregate on the key) finds them all in one engine.
#include <cstdint>
#include <span>

#include "batch/column.h"

namespace cq {

// The part of each of rows [0, n) of `keys` (compact columns) among `parts`, by the rows' hash
// (HashRows: NULL = NULL, NaN = NaN, -0.0 = 0.0). With `as_double`, int64 columns are hashed as
// the doubles they convert to, so that a BIGINT key and a DOUBLE key that compare equal (a join of
// an INT column with a DOUBLE one) land in one part. The part comes from the hash's high bits:
// the engines' own hash tables index by its low bits, which would otherwise be alike in a part.
// Writes `order`, n rows: the rows of part 0, then those of part 1, ..., each part's in input
// order; and counts[p], the rows of part p. Nothing of `keys` (no column) puts every row in part 0.
void PartitionRows(std::span<const Column> keys, int64_t n, int parts, bool as_double, int64_t* order,
                   int64_t* counts);

}  // namespace cq
