#include "batch/partition.h"

#include <algorithm>
#include <memory>
#include <utility>

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
  // Every non-empty chunk of every part is a source of the gather. The parts are few (one per
  // core): the least head is found by a scan, in part order, so that a tie goes to the lower part.
  std::vector<const Column*> sources;
  std::vector<int64_t> lengths;
  std::vector<std::vector<uint32_t>> chunks(parts.size());  // each part's sources, in order
  std::vector<std::vector<int64_t>> first(parts.size());    // the part's row number of each's first
  std::vector<int64_t> size(parts.size(), 0);
  size_t width = 0;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p)
    for (const TimedChunk& c : parts[p])
      if (c.length) {
        chunks[p].push_back(static_cast<uint32_t>(sources.size()));
        first[p].push_back(size[p]);
        sources.push_back(c.columns.data());
        lengths.push_back(c.length);
        width = c.columns.size();
        size[p] += c.length;
        total += c.length;
      }
  using Key = std::pair<int64_t, int64_t>;  // (time, ε-step or 0)
  auto key_at = [&](uint32_t src, int64_t row) -> Key {
    const Column* cols = sources[src];
    return {cols[time[0]].i64()[row], time.size() > 1 ? cols[time[1]].i64()[row] : 0};
  };
  // The chunk (index in the part's list) holding row r of part p.
  auto chunk_of = [&](size_t p, int64_t r) {
    return static_cast<size_t>(std::upper_bound(first[p].begin(), first[p].end(), r) - first[p].begin() - 1);
  };
  // The first row of part p at or after `v`.
  auto lower = [&](size_t p, const Key& v) -> int64_t {
    for (size_t c = 0; c < chunks[p].size(); ++c) {
      const uint32_t src = chunks[p][c];
      if (key_at(src, lengths[src] - 1) < v) continue;
      int64_t lo = 0, hi = lengths[src] - 1;  // key_at(hi) >= v
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (key_at(src, mid) < v) lo = mid + 1;
        else hi = mid;
      }
      return first[p][c] + lo;
    }
    return size[p];
  };

  // Rows [from[p], to[p]) of every part merged into which/rows from `at` on.
  // (Not cleared: every place is written.)
  std::unique_ptr<uint32_t[]> which(new uint32_t[static_cast<size_t>(total)]);
  std::unique_ptr<uint32_t[]> rows(new uint32_t[static_cast<size_t>(total)]);
  struct Cursor {
    size_t part = 0, chunk = 0;
    const int64_t* t0 = nullptr;
    const int64_t* t1 = nullptr;
    int64_t row = 0, length = 0, left = 0;
  };
  auto merge = [&](const std::vector<int64_t>& from, const std::vector<int64_t>& to, int64_t at) {
    std::vector<Cursor> live;  // parts with rows left, in part order
    auto load = [&](Cursor& c) {
      const uint32_t src = chunks[c.part][c.chunk];
      c.t0 = sources[src][time[0]].i64();
      c.t1 = time.size() > 1 ? sources[src][time[1]].i64() : nullptr;
      c.length = lengths[src];
    };
    for (size_t p = 0; p < parts.size(); ++p)
      if (from[p] < to[p]) {
        Cursor c;
        c.part = p;
        c.chunk = chunk_of(p, from[p]);
        load(c);
        c.row = from[p] - first[p][c.chunk];
        c.left = to[p] - from[p];
        live.push_back(c);
      }
    auto before = [](const Cursor& a, const Cursor& b) {
      const int64_t x = a.t0[a.row], y = b.t0[b.row];
      return x < y || (x == y && a.t1 && a.t1[a.row] < b.t1[b.row]);
    };
    while (!live.empty()) {
      size_t best = 0;
      for (size_t i = 1; i < live.size(); ++i)
        if (before(live[i], live[best])) best = i;
      Cursor& c = live[best];
      which[static_cast<size_t>(at)] = chunks[c.part][c.chunk];
      rows[static_cast<size_t>(at)] = static_cast<uint32_t>(c.row);
      ++at;
      if (--c.left == 0) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(best));
      } else if (++c.row == c.length) {
        ++c.chunk;
        load(c);
        c.row = 0;
      }
    }
  };

  // The order first (the source and row of every output row), then the columns, chunk by chunk.
  // With workers, both by all threads at once: the order in segments of time cut at pivots (rows
  // of the largest part), each part's rows of a segment found by binary search (rows equal to a
  // pivot all fall after it, so a tie stays in part order), and the chunks shared out.
  const int segments = workers && threads > 1 && total > 4096 ? threads : 1;
  std::vector<std::vector<int64_t>> cut(static_cast<size_t>(segments) + 1, std::vector<int64_t>(parts.size(), 0));
  cut[static_cast<size_t>(segments)] = size;
  if (segments > 1) {
    const size_t big = static_cast<size_t>(std::max_element(size.begin(), size.end()) - size.begin());
    for (int k = 1; k < segments; ++k) {
      const int64_t r = size[big] * k / segments;
      const size_t c = chunk_of(big, r);
      const Key pivot = key_at(chunks[big][c], r - first[big][c]);
      for (size_t p = 0; p < parts.size(); ++p) cut[static_cast<size_t>(k)][p] = lower(p, pivot);
    }
  }
  std::vector<int64_t> offset(static_cast<size_t>(segments) + 1, 0);
  for (int k = 0; k < segments; ++k) {
    int64_t n = 0;
    for (size_t p = 0; p < parts.size(); ++p) n += cut[static_cast<size_t>(k) + 1][p] - cut[static_cast<size_t>(k)][p];
    offset[static_cast<size_t>(k) + 1] = offset[static_cast<size_t>(k)] + n;
  }
  const int64_t count = (total + chunk_rows - 1) / chunk_rows;
  std::vector<TimedChunk> out(static_cast<size_t>(count));
  auto gather = [&](int t, int step) {
    for (int64_t c = t; c < count; c += step) {
      const int64_t at = c * chunk_rows, n = std::min(chunk_rows, total - at);
      TimedChunk& chunk = out[static_cast<size_t>(c)];
      chunk.length = n;
      chunk.columns.resize(width);
      GatherColumns(sources.data(), sources.size(), width, which.get() + at, rows.get() + at, n, chunk.columns.data());
    }
  };
  if (segments > 1) {
    workers->Run(segments, [&](int k) {
      merge(cut[static_cast<size_t>(k)], cut[static_cast<size_t>(k) + 1], offset[static_cast<size_t>(k)]);
    });
    const int step = static_cast<int>(std::min<int64_t>(threads, count));
    workers->Run(step, [&](int t) { gather(t, step); });
  } else {
    merge(cut[0], cut[1], 0);
    gather(0, 1);
  }
  return out;
}

}  // namespace cq
