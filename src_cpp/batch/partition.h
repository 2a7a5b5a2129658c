#pragma once
// The parts of a push for engines that each run one part of the input (cq_py's Engine(threads=N)),
// and their outputs merged back in time order. Rows with equal keys go to one part, so an operator
// that relates rows of one key value (a partitioned window, a join or an aggregate on the key)
// finds them all in one engine.
#include <cstdint>
#include <span>
#include <vector>

#include "base/workers.h"
#include "batch/column.h"

namespace cq {

// The part among `parts` of rows [0, n) of `keys` (compact columns), by the rows' hash (HashRows:
// NULL = NULL, NaN = NaN, -0.0 = 0.0). With `as_double`, int64 columns are hashed as the doubles
// they convert to, so that a BIGINT key and a DOUBLE key that compare equal (a join of an INT
// column with a DOUBLE one) land in one part. The part comes from the hash's high bits: the
// engines' own hash tables index by its low bits, which would otherwise be alike in a part.
// Nothing of `keys` (no column) puts every row in part 0. The rows are hashed a block at a time:
// no array the size of the input is made but the output.
//
// PartitionRows writes `order`, n rows: the rows of part 0, then those of part 1, ..., each part's
// in input order; and counts[p], the rows of part p.
void PartitionRows(std::span<const Column> keys, int64_t n, int parts, bool as_double, int64_t* order, int64_t* counts);
// The part of one row whose key is one number `v` (an int64 as the double it converts to), as
// PartitionRows gives it with as_double: Engine.push_row's rows.
int PartOfNumber(double v, int parts);
// The parts of rows [at, at + n) of `keys`, as PartitionRows gives them, into part[0, n) (parts
// below 65,536).
void PartsOfRows(std::span<const Column> keys, int64_t at, int64_t n, int parts, bool as_double, uint16_t* part);
// The rows of part `part` alone, in input order (each engine's thread picks its own rows).
std::vector<int64_t> RowsOfPart(std::span<const Column> keys, int64_t n, int parts, int part, bool as_double);

// One chunk of a query's output: its columns and rows.
struct TimedChunk {
  std::vector<Column> columns;
  int64_t length = 0;
};

// The outputs of several parts merged in time order: each part's chunks hold its rows in order of
// the int64 columns `time` (ts, then its ε-step when shown); the result holds every row in that
// order, rows of equal times in part order and each part's in its own order (a stable merge), as
// chunks of at most `chunk_rows` rows. With `workers`, the chunks' columns are written by all its
// threads at once (the order of the rows is found first, in one pass).
std::vector<TimedChunk> MergeByTime(const std::vector<std::vector<TimedChunk>>& parts, std::span<const int> time,
                                    int64_t chunk_rows, Workers* workers = nullptr, int threads = 1);

}  // namespace cq
