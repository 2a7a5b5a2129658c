#pragma once
// Engines that each run one part of the input (cq_py's Engine(threads=N)) fed one row at a time
// (Engine.push_row). A row needs no split: it goes whole to the engine of its key, in one call,
// and only that engine runs. The others learn how far the input has come lazily (CatchUp), before
// anything reads their results, checks a time against them or feeds them a push: telling every
// engine at every row would run every engine at every row.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arrow/bridge.h"
#include "base/errors.h"
#include "engine/engine.h"

namespace cq {

class RowParts {
 public:
  // `engines` (at least one) outlive this object: the binding keeps them alive with it.
  explicit RowParts(std::vector<Engine*> engines);

  int parts() const { return static_cast<int>(engines_.size()); }
  // The declared columns of input `stream` (all engines have the same inputs).
  const Schema& InputSchema(const std::string& stream) const { return engines_[0]->InputSchema(stream); }
  // Input `stream` is split by its declared column `key` (hashed as batch/partition.h's
  // PartitionRows hashes it with as_double, so a row lands where a push would put it); with -1 its
  // rows all go to the first engine (a stream without a key: no operator relates two of its rows).
  void SetKey(const std::string& stream, int key);

  // Pushes `row` (one batch of one row in Engine::Push's form: the declared columns, a relation's
  // op, the timestamp in ticks) of `stream` to the engine of its key and returns that engine's
  // index. A row
  // below the input's progress is refused by that engine as by one engine; on any error nothing
  // of the input changes (that engine may have been told the input's progress, which it would
  // have been told anyway).
  int Push(const std::string& stream, std::vector<ImportedBatch> row);
  // Every engine has been told that `stream` came to `tick` (a push split over all of them, an
  // advance): nothing to catch up below it.
  void Moved(const std::string& stream, int64_t tick);
  // Tells every engine the progress that rows pushed to the others brought.
  void CatchUp();
  // The furthest tick of `stream` that a row or Moved brought (the least tick when none).
  int64_t Progress(const std::string& stream) const;

  // An error while running (a runaway loop) in one engine stops them all, as it stops one.
  void Stop(ErrorKind kind, const std::string& what);
  void CheckUsable() const;

 private:
  struct Input {
    int key = -1;
    int64_t progress = Time::kMinTick;
    std::vector<int64_t> told;  // how far each engine has been told (at least `progress` of Moved)
  };
  Input& Of(const std::string& stream);

  std::vector<Engine*> engines_;
  std::map<std::string, Input, std::less<>> inputs_;
  bool behind_ = false;  // some engine has not been told how far some input came
  std::unique_ptr<CqError> failed_;
};

}  // namespace cq
