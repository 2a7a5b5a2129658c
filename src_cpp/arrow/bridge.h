#pragma once
// Columns in and out through the Arrow C Data Interface, without copying values: an imported
// array's buffers become our Buffers (owning a reference that calls the producer's release when the
// last column using them is gone), and an exported array's buffers are ours, kept alive until the
// consumer (pyarrow) calls release.
#include <span>
#include <string>
#include <vector>

#include "arrow/c_abi.h"
#include "batch/column.h"

namespace cq {

struct ImportedBatch {
  std::vector<std::string> names;
  std::vector<Column> columns;
  int64_t length = 0;
};

// Takes ownership of `array` (moves it out: `array->release` is null afterwards); reads `schema`
// without taking it. The schema must be a struct ("+s") of supported primitive types; anything
// else throws CqError(kInput) naming the column and its format. On an error the array may or may
// not have been taken already: callers release it if `array->release` is still set.
ImportedBatch ImportStruct(const ArrowSchema* schema, ArrowArray* array);

// Fills `schema` and `array` (a struct of the given columns). On return the consumer owns both.
void ExportStruct(const std::vector<std::string>& names, std::span<const Column> columns, int64_t length,
                  ArrowSchema* schema, ArrowArray* array);

}  // namespace cq
