#pragma once
// A batch operator inside a loop region (rows/ROWS.md): an operator with no row form. The rows it
// is given wait, in arrival order, until it must advance (or an end is fixed for one of them: it
// is written into the waiting row); then they go in as batches, one per run of rows on a port, and
// what the operator emits goes on as rows. Correct for every operator, and as slow as a batch per
// instant: the operators of loops have row forms.
#include <memory>
#include <optional>
#include <vector>

#include "operators/operator.h"
#include "operators/rows_from_batches.h"
#include "rows/batch_rows.h"
#include "rows/row_operator.h"

namespace cq {

class BatchAdapter final : public RowOperator {
 public:
  struct Input {
    std::shared_ptr<const Schema> schema;
    BatchKind kind;
    std::optional<Duration> duration;  // the edge's planned constant duration, if any
  };
  BatchAdapter(Operator* op, std::vector<Input> inputs);

  void Push(int port, const Row& row, RowEmitter& out) override;
  void PushEnd(int port, HolderId id, Time end, RowEmitter& out) override;
  void AdvanceTo(Time progress, RowEmitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  void Closing(int64_t last_tick) override { op_->Closing(last_tick); }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  // Consecutive rows of one port, waiting.
  struct Run {
    int port;
    RowBatchBuilder rows;
  };
  void Flush(RowEmitter& out);
  Run& RunFor(int port);

  Operator* op_;
  std::vector<Input> inputs_;
  std::vector<Run> runs_;  // the first used_ are waiting, in arrival order
  size_t used_ = 0;
  Time first_ = Time::Infinity();  // the earliest waiting row
  RowsFromBatches to_rows_;
};

}  // namespace cq
