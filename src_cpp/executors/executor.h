#pragma once
// What the engine needs of an executor (SEMANTICS.md §5): the DTS executor (paper 000 §3.2, run as
// a hybrid) and the heartbeat baseline (§2.3) run the same operators over the same plan; they
// differ only in when each operator runs. Operators own their state; executors own scheduling.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "operators/operator.h"

namespace cq {

// Producers before consumers among `ids`, the smallest ready id first (the order registration
// gives, which explain() shows). `feeds(id, visit)` calls visit(consumer) for each edge to follow.
// Ids it cannot order (on or behind a cycle) go to `left`.
template <typename Feeds>
std::vector<int> ProducersFirst(const std::vector<int>& ids, const Feeds& feeds, std::vector<int>* left = nullptr) {
  std::map<int, int> indegree;
  for (int id : ids) indegree[id] = 0;
  for (int id : ids) feeds(id, [&](int c) { ++indegree[c]; });
  std::set<int> ready;
  for (const auto& [id, d] : indegree)
    if (d == 0) ready.insert(id);
  std::vector<int> order;
  while (!ready.empty()) {
    const int id = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(id);
    feeds(id, [&](int c) {
      if (--indegree[c] == 0) ready.insert(c);
    });
  }
  if (left)
    for (const auto& [id, d] : indegree)
      if (d > 0) left->push_back(id);
  return order;
}

class Executor {
 public:
  virtual ~Executor() = default;
  // Adds operators (ids must be new; inputs must name existing or newly added operators). Either
  // every operator is added or, on an exception, none is.
  virtual void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) = 0;
  // Removes operators that no remaining operator reads (a dropped query's, paper 001 §3.3), freeing
  // their state; the others keep theirs and their place in time. Either all go or, on an
  // exception, none does.
  virtual void Remove(const std::vector<int>& ids) = 0;
  // Rows entering at source operator `source`.
  virtual void Push(int source, const Batch& batch) = 0;
  // Source `source` will not produce anything below `progress` any more.
  virtual void AdvanceTo(const std::map<int, Time>& source_progress) = 0;
  // Hands `batch` to operator `consumer` alone, as if `producer`, one of its inputs, had emitted
  // it: what a relation holds, for an operator added while the engine runs (SEMANTICS.md §4).
  virtual void Replay(int producer, int consumer, const Batch& batch) = 0;

  virtual Operator* op(int id) const = 0;
  // Operator ids in the order explain() shows them (the executor's schedule order).
  virtual const std::vector<int>& order() const = 0;
  virtual const std::vector<int>& inputs(int id) const = 0;
  // The form operator `id` runs in: "batch" (whole batches), "rows" (its row form, in a loop's
  // region) or "adapted" (a row form made of its batch form, for an operator that has none).
  virtual std::string form(int id) const { return "batch"; }
  // Whether it counts evaluations (items taken from input queues), and operator `id`'s count.
  virtual bool counts_evaluations() const { return false; }
  virtual int64_t evaluations(int id) const { return 0; }

  // Engine snapshots: the executor's own state (its place in time, rows queued between
  // operators), not the operators' (the engine saves those). Restore reads it into an executor
  // holding the same operators, and checks it against the sources' progress as restored.
  virtual void Snapshot(SnapshotWriter& w) const = 0;
  virtual void Restore(SnapshotReader& r, const std::map<int, Time>& source_progress) = 0;
  // One operator's state, in whatever form the executor runs it (the DTS executor runs loops' in
  // row form, rows/ROWS.md).
  virtual void SnapshotOperator(int id, SnapshotWriter& w) const { op(id)->Snapshot(w); }
  virtual void RestoreOperator(int id, SnapshotReader& r) { op(id)->Restore(r); }
};

}  // namespace cq
