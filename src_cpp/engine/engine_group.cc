#include "engine/engine_group.h"

#include <algorithm>
#include <tuple>

#include "base/errors.h"
#include "batch/partition.h"

namespace cq {

EngineGroup::EngineGroup(std::vector<Engine*> engines)
    : engines_(std::move(engines)), workers_(static_cast<int>(engines_.size())) {}

void EngineGroup::Push(const std::string& stream, std::vector<ImportedBatch> batches, int key, bool as_double,
                       int64_t slice_rows, int64_t last) {
  const int parts = size();
  std::vector<int64_t> starts{0};  // each batch's first row in the push
  for (const ImportedBatch& b : batches) starts.push_back(starts.back() + b.length);
  const int64_t n = starts.back();
  // Rows [lo, hi) of the push, batch by batch: f(batch, its first row of them, their count).
  auto each_run = [&](int64_t lo, int64_t hi, auto&& f) {
    for (size_t b = 0; b < batches.size(); ++b) {
      const int64_t from = std::max(lo, starts[b]), to = std::min(hi, starts[b + 1]);
      if (from < to) f(b, from - starts[b], to - from);
    }
  };
  if (key < 0) {
    // Rows that meet no other row: contiguous runs, slices of the caller's columns.
    workers_.Run(parts, [&](int p) {
      std::vector<ImportedBatch> mine;
      each_run(n * p / parts, n * (p + 1) / parts, [&](size_t b, int64_t at, int64_t m) {
        ImportedBatch s;
        s.names = batches[b].names;
        s.length = m;
        for (const Column& c : batches[b].columns) s.columns.push_back(SliceColumn(c, at, m));
        mine.push_back(std::move(s));
      });
      if (!mine.empty()) engines_[static_cast<size_t>(p)]->Push(stream, std::move(mine));
      engines_[static_cast<size_t>(p)]->AdvanceInput(stream, {last, 0});
    });
    return;
  }
  for (const ImportedBatch& b : batches)
    CQ_CHECK(static_cast<size_t>(key) < b.columns.size(), "EngineGroup::Push: no such key column");
  // Each row's part, the threads hashing a share of the rows each; then each engine's thread picks
  // its rows a slice at a time (a branch-free scan of the parts) and gathers their columns.
  std::vector<uint16_t> part(static_cast<size_t>(n));
  workers_.Run(parts, [&](int t) {
    each_run(n * t / parts, n * (t + 1) / parts, [&](size_t b, int64_t at, int64_t m) {
      PartsOfRows(std::span<const Column>(&batches[b].columns[static_cast<size_t>(key)], 1), at, m, parts, as_double,
                  part.data() + starts[b] + at);
    });
  });
  const int64_t step = std::max<int64_t>(1, slice_rows) * parts;
  workers_.Run(parts, [&](int p) {
    Engine& engine = *engines_[static_cast<size_t>(p)];
    std::vector<uint32_t> rows;
    for (size_t b = 0; b < batches.size(); ++b) {
      const ImportedBatch& batch = batches[b];
      for (int64_t at = 0; at < batch.length; at += step) {
        const int64_t m = std::min(step, batch.length - at);
        const uint16_t* of = part.data() + starts[b] + at;
        rows.resize(static_cast<size_t>(m));
        int64_t found = 0;
        for (int64_t i = 0; i < m; ++i) {
          rows[static_cast<size_t>(found)] = static_cast<uint32_t>(at + i);
          found += of[i] == p;
        }
        if (!found) continue;
        std::vector<ImportedBatch> mine(1);
        mine[0].names = batch.names;
        mine[0].length = found;
        for (const Column& c : batch.columns) mine[0].columns.push_back(Gather(c, rows.data(), found));
        engine.Push(stream, std::move(mine));
      }
    }
    engine.AdvanceInput(stream, {last, 0});
  });
}

void EngineGroup::Advance(Time t) {
  workers_.Run(size(), [&](int p) { engines_[static_cast<size_t>(p)]->Advance(t); });
}

void EngineGroup::Close() {
  workers_.Run(size(), [&](int p) { engines_[static_cast<size_t>(p)]->Close(); });
}

std::vector<OutputChunk> EngineGroup::Drain(const std::string& query, std::span<const int> time, int64_t chunk_rows) {
  const size_t width = engines_[0]->OutputSchema(query).size();
  CQ_CHECK(!time.empty() && time.size() <= 2, "EngineGroup::Drain: one or two time columns");
  for (int c : time) CQ_CHECK(c >= 0 && static_cast<size_t>(c) < width, "EngineGroup::Drain: no such time column");
  std::vector<std::vector<OutputChunk>> got;
  for (Engine* e : engines_) {
    got.push_back(e->Drain(query));
    std::erase_if(got.back(), [](const OutputChunk& c) { return c.length == 0; });
  }
  std::vector<size_t> full;  // the engines with rows
  for (size_t p = 0; p < got.size(); ++p)
    if (!got[p].empty()) full.push_back(p);
  std::vector<OutputChunk> out;
  auto concat = [&](const std::vector<size_t>& order) {
    for (size_t p : order)
      for (OutputChunk& c : got[p]) out.push_back(std::move(c));
  };
  if (full.size() <= 1) {
    concat(full);
    return out;
  }
  // (first time, last time, engine) of each engine's rows: when they follow one another, the rows
  // are in order as they are (ties: engine order, as the merge's).
  auto at = [&](const OutputChunk& c, int64_t r) {
    return std::make_tuple(c.columns[static_cast<size_t>(time[0])].i64()[r],
                           time.size() > 1 ? c.columns[static_cast<size_t>(time[1])].i64()[r] : int64_t{0});
  };
  std::vector<std::tuple<std::tuple<int64_t, int64_t>, std::tuple<int64_t, int64_t>, size_t>> ends;
  for (size_t p : full) ends.emplace_back(at(got[p].front(), 0), at(got[p].back(), got[p].back().length - 1), p);
  std::sort(ends.begin(), ends.end());
  bool apart = true;
  for (size_t i = 1; i < ends.size(); ++i) {
    const auto& [a0, a1, ap] = ends[i - 1];
    const auto& [b0, b1, bp] = ends[i];
    apart &= a1 < b0 || (a1 == b0 && ap < bp);
  }
  if (apart) {
    std::vector<size_t> order;
    for (const auto& e : ends) order.push_back(std::get<2>(e));
    concat(order);
    return out;
  }
  std::vector<std::vector<TimedChunk>> in(got.size());
  for (size_t p = 0; p < got.size(); ++p)
    for (OutputChunk& c : got[p]) in[p].push_back({std::vector<Column>(c.columns.begin(), c.columns.end()), c.length});
  got.clear();
  std::vector<TimedChunk> merged = MergeByTime(in, time, std::max<int64_t>(1, chunk_rows), &workers_, size());
  for (TimedChunk& m : merged) {
    OutputChunk c;
    for (Column& col : m.columns) c.columns.push_back(std::move(col));
    c.length = m.length;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cq
