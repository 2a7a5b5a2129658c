#pragma once
// Engines that each run one part of the input, driven as one (cq_py's Engine(threads=N),
// cq_py/partitions.py). The whole of a call runs here, on the group's threads, engine k always on
// thread k: a push is split in one columnar pass and every engine runs its part at once; a query's
// outputs are merged in time order with every thread writing output columns.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "arrow/bridge.h"
#include "base/workers.h"
#include "engine/engine.h"

namespace cq {

class EngineGroup {
 public:
  // The engines are the caller's, and outlive the group.
  explicit EngineGroup(std::vector<Engine*> engines);

  int size() const { return static_cast<int>(engines_.size()); }
  const Engine& engine(int k) const { return *engines_[static_cast<size_t>(k)]; }

  // Pushes `batches` of stream `stream`, checked whole before (Engine::Check on one engine: the
  // engines' progress is alike), whose last row is at `last`. With `key` >= 0 (a column), each row
  // goes to the engine of its key's part (PartsOfRows), each engine gathering its own rows
  // `slice_rows` at a time (memory follows the slices, not the push); with `key` < 0 (a stream whose
  // rows meet no other row), engine p takes the p-th of size() contiguous runs, uncopied. Then each
  // engine's input comes to `last`. The first engine's error, if any, after all have run.
  void Push(const std::string& stream, std::vector<ImportedBatch> batches, int key, bool as_double, int64_t slice_rows,
            int64_t last);
  // Engine::Advance / Close of every engine at once.
  void Advance(Time t);
  void Close();
  // Every engine's new rows of `query`, in the order of its int64 columns `time` (a stream's ts, a
  // relation's start, and their ε-steps when shown): rows of equal times in engine order, each
  // engine's in its own order, as chunks of at most `chunk_rows` rows. Parts whose times do not
  // overlap (a stream split in runs) go out as they are, uncopied.
  std::vector<OutputChunk> Drain(const std::string& query, std::span<const int> time, int64_t chunk_rows);

 private:
  std::vector<Engine*> engines_;
  Workers workers_;
};

}  // namespace cq
