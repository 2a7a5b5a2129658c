#include "batch/partition.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "batch/row_hash.h"

namespace cq {

namespace {

constexpr int64_t kBlock = 4096;

// The parts of rows [at, at + n) of `keys`, n <= kBlock, into part[0, n).
void PartsOf(std::span<const Column> keys, int64_t at, int64_t n, int parts, bool as_double, uint64_t* part) {
  std::vector<Column> block;
  block.reserve(keys.size());
  for (const Column& c : keys) {
    Column s = SliceColumn(c, at, n);
    if (as_double && s.type == TypeId::kInt64) {
      Buffer d = Buffer::Allocate(n * 8);
      const int64_t* in = s.i64();
      double* out = d.as<double>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(in[i]);
      s.type = TypeId::kFloat64;
      s.values = std::move(d);
    }
    block.push_back(std::move(s));
  }
  HashRows(block, n, part);
  // (high 32 bits × parts) / 2^32, without a division.
  for (int64_t i = 0; i < n; ++i) part[i] = ((part[i] >> 32) * static_cast<uint64_t>(parts)) >> 32;
}

}  // namespace

void PartitionRows(std::span<const Column> keys, int64_t n, int parts, bool as_double, int64_t* order,
                   int64_t* counts) {
  for (int p = 0; p < parts; ++p) counts[p] = 0;
  if (keys.empty() || parts == 1) {
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    counts[0] = n;
    return;
  }
  // Two passes over the blocks (count, then place): the parts are not kept for the whole input.
  uint64_t part[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t m = std::min(kBlock, n - at);
    PartsOf(keys, at, m, parts, as_double, part);
    for (int64_t i = 0; i < m; ++i) ++counts[part[i]];
  }
  std::vector<int64_t> next(static_cast<size_t>(parts), 0);
  for (int p = 1; p < parts; ++p) next[p] = next[p - 1] + counts[p - 1];
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t m = std::min(kBlock, n - at);
    PartsOf(keys, at, m, parts, as_double, part);
    for (int64_t i = 0; i < m; ++i) order[next[part[i]]++] = at + i;
  }
}

std::vector<int64_t> RowsOfPart(std::span<const Column> keys, int64_t n, int parts, int part, bool as_double) {
  std::vector<int64_t> rows;
  if (keys.empty() || parts == 1) {
    if (part == 0)
      for (int64_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  rows.reserve(static_cast<size_t>(n / parts + n / (4 * parts) + 16));
  uint64_t of[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t m = std::min(kBlock, n - at);
    PartsOf(keys, at, m, parts, as_double, of);
    for (int64_t i = 0; i < m; ++i)
      if (of[i] == static_cast<uint64_t>(part)) rows.push_back(at + i);
  }
  return rows;
}

std::vector<TimedChunk> MergeByTime(const std::vector<std::vector<TimedChunk>>& parts, std::span<const int> time,
                                    int64_t chunk_rows) {
  // Every chunk of every part is a source; a part's cursor is its chunk and row.
  std::vector<const Column*> sources;
  std::vector<std::vector<uint32_t>> source_of(parts.size());
  size_t width = 0;
  for (size_t p = 0; p < parts.size(); ++p)
    for (const TimedChunk& c : parts[p])
      if (c.length) {
        source_of[p].push_back(static_cast<uint32_t>(sources.size()));
        sources.push_back(c.columns.data());
        width = c.columns.size();
      }
  struct Cursor {
    size_t chunk = 0;
    int64_t row = 0;
  };
  std::vector<Cursor> at(parts.size());
  auto chunk_of = [&](size_t p) -> const Column* { return sources[source_of[p][at[p].chunk]]; };
  std::vector<int64_t> lengths;  // of each source, in source order
  for (const auto& part : parts)
    for (const TimedChunk& c : part)
      if (c.length) lengths.push_back(c.length);
  // The head of part p: its current row's time, then the part (ties in part order).
  using Head = std::tuple<int64_t, int64_t, size_t>;
  auto head = [&](size_t p) -> Head {
    const Column* cols = chunk_of(p);
    const int64_t r = at[p].row;
    return {cols[time[0]].i64()[r], time.size() > 1 ? cols[time[1]].i64()[r] : 0, p};
  };
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p)
    if (!source_of[p].empty()) heads.push(head(p));
  for (int64_t l : lengths) total += l;

  std::vector<TimedChunk> out;
  std::vector<uint32_t> which, rows;
  while (total > 0) {
    const int64_t n = std::min(chunk_rows, total);
    which.resize(static_cast<size_t>(n));
    rows.resize(static_cast<size_t>(n));
    int64_t k = 0;
    while (k < n) {
      const size_t p = std::get<2>(heads.top());
      heads.pop();
      // A run of part p: while its rows come before the next part's head (ties: p first when p
      // is the lower part, which the heap's order already says).
      const bool alone = heads.empty();
      const Head next = alone ? Head{} : heads.top();
      bool more = true;
      while (k < n && more) {
        const uint32_t s = source_of[p][at[p].chunk];
        which[k] = s;
        rows[k] = static_cast<uint32_t>(at[p].row);
        ++k;
        if (++at[p].row == lengths[s]) {
          at[p].row = 0;
          if (++at[p].chunk == source_of[p].size()) {
            more = false;
            break;
          }
        }
        more = alone || head(p) < next;
      }
      if (at[p].chunk < source_of[p].size()) heads.push(head(p));
    }
    TimedChunk chunk;
    chunk.length = n;
    chunk.columns.resize(width);
    GatherColumns(sources.data(), sources.size(), width, which.data(), rows.data(), n, chunk.columns.data());
    out.push_back(std::move(chunk));
    total -= n;
  }
  return out;
}

}  // namespace cq
