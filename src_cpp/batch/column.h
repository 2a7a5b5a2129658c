#pragma once
// A column: Arrow's physical layout (validity bitmap + values, + int32 offsets for utf8) with the
// array offset already applied, so kernels index from 0. Columns are immutable once built and
// share their buffers freely.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/inline_vector.h"
#include "batch/bitmap.h"
#include "batch/buffer.h"
#include "batch/types.h"

namespace cq {

struct Column {
  TypeId type = TypeId::kNull;
  int64_t length = 0;
  int64_t null_count = 0;
  Buffer validity;  // empty when there is no null
  Buffer values;    // int64 / double / bit-packed bool / utf8 bytes
  Buffer offsets;   // utf8 only: length + 1 int32 offsets into `values`

  bool IsValid(int64_t i) const { return validity.empty() || bitmap::Get(validity.data, i); }
  bool has_nulls() const { return null_count != 0 && !validity.empty(); }

  const int64_t* i64() const { return values.as<const int64_t>(); }
  const double* f64() const { return values.as<const double>(); }
  const uint8_t* bits() const { return values.data; }
  const int32_t* offs() const { return offsets.as<const int32_t>(); }
  bool BoolAt(int64_t i) const { return bitmap::Get(values.data, i); }
  std::string_view StrAt(int64_t i) const {
    const int32_t* o = offs();
    return {reinterpret_cast<const char*>(values.data) + o[i], static_cast<size_t>(o[i + 1] - o[i])};
  }

  // An all-null column of the given type and length (used for NULL literals and empty inputs).
  static Column Nulls(TypeId type, int64_t length);
};

// Three buffers (shared_ptr, pointer, size) and plain fields: relocatable by a copy of its bytes.
template <>
struct TriviallyRelocatable<Column> : std::true_type {};

// Fills the offsets and bytes of `out`, a utf8 column of n values, value k being view(k).
template <typename View>
void FillStrings(Column& out, int64_t n, View view);

// Rows `idx[0..n)` of `col`, in that order, as a new compact column. This is the one place where a
// selection is turned into data; operators call it only where they must materialize.
Column Gather(const Column& col, const uint32_t* idx, int64_t n);
// Rows [offset, offset + n) of col. Zero-copy for fixed-width values and utf8; bitmaps are shifted
// when offset is not a multiple of 8.
Column SliceColumn(const Column& col, int64_t offset, int64_t n);
// The concatenation of several columns of one type.
Column Concat(const Column* const* cols, int64_t count);
// Rows taken from several columns of one type: row k is srcs[which[k]][rows[k]]. One pass, no
// allocation per row, whatever the interleaving of sources.
Column GatherMulti(const std::vector<const Column*>& srcs, const uint32_t* which, const uint32_t* rows, int64_t n);
// The columns of n rows taken from several sources that share a schema: out[c] row k is column c
// of source which[k] (its columns at sources[which[k]][0, width)), row rows[k]. When every column
// holds 8-byte numbers without NULLs, all of them go in one pass over the rows (a merge moves every
// column of a row together, and reads `which` and `rows` once per row instead of once per column),
// with `extra` — one more int64 array per source, gathered into `extra_dst` — in the same pass;
// otherwise a GatherMulti per column and `extra` in a pass of its own.
void GatherColumns(const Column* const* sources, size_t nsrc, size_t width, const uint32_t* which, const uint32_t* rows,
                   int64_t n, Column* out, const int64_t* const* extra = nullptr, int64_t* extra_dst = nullptr);
// Row `i` of `c` as a user reads it in a message: 42, 2.5, 'text' (quotes doubled), true, NULL.
std::string ValueToString(const Column& c, int64_t i);

template <typename View>
void FillStrings(Column& out, int64_t n, View view) {
  int64_t total = 0;
  for (int64_t k = 0; k < n; ++k) total += static_cast<int64_t>(view(k).size());
  if (total > INT32_MAX) throw std::length_error("utf8 column exceeds 2 GiB in one batch");
  out.offsets = Buffer::Allocate((n + 1) * 4);
  out.values = Buffer::Allocate(total);
  int32_t* o = out.offsets.as<int32_t>();
  int32_t pos = 0;
  for (int64_t k = 0; k < n; ++k) {
    o[k] = pos;
    const std::string_view v = view(k);
    // An empty view may have no data at all (memcpy from null is undefined even for 0 bytes).
    if (!v.empty()) std::memcpy(out.values.data + pos, v.data(), v.size());
    pos += static_cast<int32_t>(v.size());
  }
  o[n] = pos;
}

}  // namespace cq
