#include "engine/row_parts.h"

#include <algorithm>
#include <span>
#include <utility>

#include "batch/partition.h"

namespace cq {

RowParts::RowParts(std::vector<Engine*> engines) : engines_(std::move(engines)) {
  CQ_CHECK(!engines_.empty(), "RowParts: no engine");
}

void RowParts::SetKey(const std::string& stream, int key) { Of(stream).key = key; }

RowParts::Input& RowParts::Of(const std::string& stream) {
  auto it = inputs_.find(stream);
  if (it == inputs_.end()) {
    it = inputs_.emplace(stream, Input{}).first;
    it->second.told.assign(engines_.size(), Time::kMinTick);
  }
  return it->second;
}

int RowParts::Push(const std::string& stream, std::vector<ImportedBatch> row) {
  CheckUsable();
  CQ_CHECK(row.size() == 1 && row[0].length == 1 && !row[0].columns.empty(), "RowParts::Push takes one row");
  const std::vector<Column>& columns = row[0].columns;
  Input& in = Of(stream);
  int p = 0;
  if (in.key >= 0 && parts() > 1) {
    CQ_CHECK(static_cast<size_t>(in.key) + 1 < columns.size(), "RowParts: the key column is not in the row");
    const Column& key = columns[static_cast<size_t>(in.key)];
    if (key.IsValid(0) && key.type == TypeId::kInt64) {
      p = PartOfNumber(static_cast<double>(key.i64()[0]), parts());  // (the usual key, the short way)
    } else if (key.IsValid(0) && key.type == TypeId::kFloat64) {
      p = PartOfNumber(key.f64()[0], parts());
    } else {
      int64_t order = 0;
      std::vector<int64_t> counts(engines_.size());
      PartitionRows(std::span<const Column>(&key, 1), 1, parts(), true, &order, counts.data());
      while (counts[static_cast<size_t>(p)] == 0) ++p;
    }
  }
  const Column& ts = columns.back();
  const int64_t tick = ts.IsValid(0) && ts.type == TypeId::kInt64 ? ts.i64()[0] : Time::kMinTick;
  Engine& e = *engines_[static_cast<size_t>(p)];
  if (tick < in.progress && in.told[p] < in.progress) {
    // Below the input's progress, which this engine has not been told: it learns it first, then
    // refuses the row as one engine would.
    e.AdvanceInput(stream, {in.progress, 0});
    in.told[p] = in.progress;
  }
  try {
    e.Push(stream, std::move(row));
  } catch (const CqError& err) {
    if (err.kind() == ErrorKind::kRunaway || err.kind() == ErrorKind::kInternal) Stop(err.kind(), err.what());
    throw;
  }
  if (tick > in.told[p]) {
    in.told[p] = tick;
    if (tick > in.progress) {
      in.progress = tick;
      behind_ = behind_ || parts() > 1;
    }
  }
  return p;
}

void RowParts::Moved(const std::string& stream, int64_t tick) {
  Input& in = Of(stream);
  in.progress = std::max(in.progress, tick);
  for (int64_t& t : in.told) t = std::max(t, tick);
}

void RowParts::CatchUp() {
  if (!behind_) return;
  CheckUsable();
  for (auto& [stream, in] : inputs_) {
    for (size_t p = 0; p < engines_.size(); ++p) {
      if (in.told[p] >= in.progress) continue;
      try {
        engines_[p]->AdvanceInput(stream, {in.progress, 0});
      } catch (const CqError& err) {
        if (err.kind() == ErrorKind::kRunaway || err.kind() == ErrorKind::kInternal) Stop(err.kind(), err.what());
        throw;
      }
      in.told[p] = in.progress;
    }
  }
  behind_ = false;
}

int64_t RowParts::Progress(const std::string& stream) const {
  auto it = inputs_.find(stream);
  return it == inputs_.end() ? Time::kMinTick : it->second.progress;
}

void RowParts::Stop(ErrorKind kind, const std::string& what) {
  if (!failed_) failed_ = std::make_unique<CqError>(kind, what);
}

void RowParts::CheckUsable() const {
  if (failed_)
    throw CqError(failed_->kind(), std::string("the engine stopped at an earlier error and cannot go on (create a new "
                                               "Engine): ") +
                                       failed_->what());
}

}  // namespace cq
