#include "batch/partition.h"

#include <vector>

#include "batch/row_hash.h"

namespace cq {

void PartitionRows(std::span<const Column> keys, int64_t n, int parts, bool as_double, int64_t* order,
                   int64_t* counts) {
  for (int p = 0; p < parts; ++p) counts[p] = 0;
  if (keys.empty() || parts == 1) {
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    counts[0] = n;
    return;
  }
  std::vector<Column> widened;
  std::span<const Column> hashed = keys;
  if (as_double) {
    widened.assign(keys.begin(), keys.end());
    for (Column& c : widened) {
      if (c.type != TypeId::kInt64) continue;
      Buffer d = Buffer::Allocate(n * 8);
      double* out = d.as<double>();
      const int64_t* in = c.i64();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(in[i]);
      c.type = TypeId::kFloat64;
      c.values = std::move(d);
    }
    hashed = widened;
  }
  std::vector<uint64_t> hashes(static_cast<size_t>(n));
  HashRows(hashed, n, hashes.data());
  // The part of row i, in place of its hash: (high 32 bits × parts) / 2^32, without a division.
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t p = ((hashes[i] >> 32) * static_cast<uint64_t>(parts)) >> 32;
    hashes[i] = p;
    ++counts[p];
  }
  std::vector<int64_t> at(static_cast<size_t>(parts), 0);
  for (int p = 1; p < parts; ++p) at[p] = at[p - 1] + counts[p - 1];
  for (int64_t i = 0; i < n; ++i) order[at[hashes[i]]++] = i;
}

}  // namespace cq
