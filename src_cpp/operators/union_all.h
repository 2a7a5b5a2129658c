#pragma once
// UNION ALL: the bag union of its inputs (SEMANTICS.md §4.2); every tuple keeps its lifetime. What reads
// a union must see it in time order (a join merges its inputs by time, a row window counts tuples
// in arrival order), so rows wait until every input's progress has passed them and go out merged;
// ends fixed for rows still waiting are written into them, the others pass straight on.
//
// One state, two drivers (rows/ROWS.md): the rows waiting, in time order, equal times in arrival
// order. The batch form (Push, PushEnds, AdvanceTo) keeps them as the runs they came in
// (OrderedRuns), the row form (ToRows, for loop regions) a row each in a FIFO per input. Which
// layout holds them is the last form's: a form that finds rows in the other's layout takes them
// over first (a loop that joins later turns the union into its row form at any time, and back).
// Snapshots write the batch form's layout, whichever holds the rows.
#include <memory>
#include <vector>

#include "lifetime/ordered_runs.h"
#include "operators/operator.h"
#include "rows/row.h"

namespace cq {

class UnionAll final : public Operator {
 public:
  UnionAll(const Schema& schema, BatchKind kind, int inputs);
  ~UnionAll() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t) const override;
  const Schema& output_schema() const override { return *shared_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override { return "UnionAll"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  BatchKind kind_;
  int inputs_;
  std::shared_ptr<const Schema> shared_;

  // ---- the batch form's layout
  OrderedRuns waiting_;
  // The row layout's rows, merged, as one run of the batch layout.
  Batch BatchOfRows() const;
  void TakeFromRows();

  // ---- the row form's layout
  struct Item {
    uint32_t slot;
    Time sync, other;
    HolderId holder;
    uint64_t seq;  // arrival order, which breaks ties
  };
  struct Port {
    std::vector<Item> items;  // waiting from `head` on; items[0] is the base-th ever
    size_t head = 0;
    uint64_t base = 0;
  };
  struct Where {
    uint32_t port;
    uint64_t abs;
  };
  static constexpr Where kNone{0xFFFFFFFFu, 0};
  bool RowsHold() const { return store_.size() != 0; }
  Time RowsHead() const;
  // A row kept in the FIFO of `port` (an input's, or the one past them for rows taken over).
  void Keep(size_t port, const Row& row);
  // f(item) for every waiting row below `progress`, merged by time, each taken out before f sees it.
  template <typename F>
  void ReleaseRows(Time progress, F&& f);
  void TakeFromBatches();
  void ClearRows();

  RowStore store_;
  std::vector<Port> ports_;  // one per input, and one more once rows were taken over
  std::vector<Where> held_;  // by holder id: where its row waits
  uint64_t arrivals_ = 0;
};

}  // namespace cq
