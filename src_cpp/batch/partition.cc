#include "batch/partition.h"

#include <algorithm>

#include "batch/row_hash.h"

namespace cq {

namespace {

constexpr int64_t kBlock = 4096;

// HashRows' hash of a row of one column, from the hash of its value, made a part: (high 32 bits
// × parts) / 2^32, without a division.
inline uint64_t PartOfValueHash(uint64_t value_hash, uint64_t parts) {
  return ((MixHash(kRowHashSeed * 31 + value_hash) >> 32) * parts) >> 32;
}

// The parts of rows [at, at + n) of `keys`, n <= kBlock, into part[0, n).
void PartsOf(std::span<const Column> keys, int64_t at, int64_t n, int parts, bool as_double, uint64_t* part) {
  const uint64_t scale = static_cast<uint64_t>(parts);
  if (keys.size() == 1 && !keys[0].has_nulls() &&
      (keys[0].type == TypeId::kInt64 || keys[0].type == TypeId::kFloat64)) {
    // One number column without NULLs (the usual key): HashRows' hash of it, in one loop.
    const Column& c = keys[0];
    if (c.type == TypeId::kFloat64) {
      for (int64_t i = 0; i < n; ++i) part[i] = PartOfValueHash(MixHash(KeyBitsOf(c.f64()[at + i])), scale);
    } else if (as_double) {
      for (int64_t i = 0; i < n; ++i)
        part[i] = PartOfValueHash(MixHash(KeyBitsOf(static_cast<double>(c.i64()[at + i]))), scale);
    } else {
      for (int64_t i = 0; i < n; ++i) part[i] = PartOfValueHash(MixHash(static_cast<uint64_t>(c.i64()[at + i])), scale);
    }
    return;
  }
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
  for (int64_t i = 0; i < n; ++i) part[i] = ((part[i] >> 32) * scale) >> 32;
}

}  // namespace

int PartOfNumber(double v, int parts) {
  return static_cast<int>(PartOfValueHash(MixHash(KeyBitsOf(v)), static_cast<uint64_t>(parts)));
}

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

void PartsOfRows(std::span<const Column> keys, int64_t at, int64_t n, int parts, bool as_double, uint16_t* part) {
  if (keys.empty() || parts == 1) {
    std::fill(part, part + n, uint16_t{0});
    return;
  }
  uint64_t of[kBlock];
  for (int64_t done = 0; done < n; done += kBlock) {
    const int64_t m = std::min(kBlock, n - done);
    PartsOf(keys, at + done, m, parts, as_double, of);
    for (int64_t i = 0; i < m; ++i) part[done + i] = static_cast<uint16_t>(of[i]);
  }
}

std::vector<int64_t> RowsOfPart(std::span<const Column> keys, int64_t n, int parts, int part, bool as_double) {
  std::vector<int64_t> rows;
  if (keys.empty() || parts == 1) {
    if (part == 0)
      for (int64_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  // Written without a branch (a row is in the part about 1 time in `parts`: a branch on it would
  // mispredict half the time for two parts), then cut to the rows found.
  rows.resize(static_cast<size_t>(n));
  int64_t found = 0;
  uint64_t of[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t m = std::min(kBlock, n - at);
    PartsOf(keys, at, m, parts, as_double, of);
    for (int64_t i = 0; i < m; ++i) {
      rows[static_cast<size_t>(found)] = at + i;
      found += of[i] == static_cast<uint64_t>(part);
    }
  }
  rows.resize(static_cast<size_t>(found));
  return rows;
}

std::vector<TimedChunk> MergeByTime(const std::vector<std::vector<TimedChunk>>& parts, std::span<const int> time,
                                    int64_t chunk_rows, Workers* workers, int threads) {
  // Every non-empty chunk of every part is a source of the gather; each part has a cursor over its
  // chunks. The parts are few (one per core): the least head is found by a scan, in part order,
  // so that a tie goes to the lower part.
  std::vector<const Column*> sources;
  struct Cursor {
    std::vector<uint32_t> chunks;  // its sources, in order
    size_t chunk = 0;
    const int64_t* t0 = nullptr;
    const int64_t* t1 = nullptr;
    int64_t row = 0, length = 0;
  };
  std::vector<Cursor> cur(parts.size());
  std::vector<int64_t> lengths;
  size_t width = 0;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p)
    for (const TimedChunk& c : parts[p])
      if (c.length) {
        cur[p].chunks.push_back(static_cast<uint32_t>(sources.size()));
        sources.push_back(c.columns.data());
        lengths.push_back(c.length);
        width = c.columns.size();
        total += c.length;
      }
  auto load = [&](Cursor& c) {  // the cursor's current chunk
    const Column* cols = sources[c.chunks[c.chunk]];
    c.t0 = cols[time[0]].i64();
    c.t1 = time.size() > 1 ? cols[time[1]].i64() : nullptr;
    c.row = 0;
    c.length = lengths[c.chunks[c.chunk]];
  };
  std::vector<size_t> live;  // parts with rows left, in part order
  for (size_t p = 0; p < parts.size(); ++p)
    if (!cur[p].chunks.empty()) {
      load(cur[p]);
      live.push_back(p);
    }
  auto before = [&](const Cursor& a, const Cursor& b) {
    const int64_t x = a.t0[a.row], y = b.t0[b.row];
    return x < y || (x == y && a.t1 && a.t1[a.row] < b.t1[b.row]);
  };

  // The order first (the source and row of every output row), then the columns, chunk by chunk:
  // with workers, their threads write the chunks at once.
  std::vector<uint32_t> which(static_cast<size_t>(total)), rows(static_cast<size_t>(total));
  for (int64_t k = 0; k < total; ++k) {
    size_t best = 0;
    for (size_t i = 1; i < live.size(); ++i)
      if (before(cur[live[i]], cur[live[best]])) best = i;
    Cursor& c = cur[live[best]];
    which[static_cast<size_t>(k)] = c.chunks[c.chunk];
    rows[static_cast<size_t>(k)] = static_cast<uint32_t>(c.row);
    if (++c.row == c.length) {
      if (++c.chunk < c.chunks.size()) load(c);
      else live.erase(live.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  const int64_t count = (total + chunk_rows - 1) / chunk_rows;
  std::vector<TimedChunk> out(static_cast<size_t>(count));
  auto gather = [&](int t, int step) {
    for (int64_t c = t; c < count; c += step) {
      const int64_t at = c * chunk_rows, n = std::min(chunk_rows, total - at);
      TimedChunk& chunk = out[static_cast<size_t>(c)];
      chunk.length = n;
      chunk.columns.resize(width);
      GatherColumns(sources.data(), sources.size(), width, which.data() + at, rows.data() + at, n,
                    chunk.columns.data());
    }
  };
  if (workers && threads > 1 && count > 1) {
    const int step = static_cast<int>(std::min<int64_t>(threads, count));
    workers->Run(step, [&](int t) { gather(t, step); });
  } else {
    gather(0, 1);
  }
  return out;
}

}  // namespace cq
