#pragma once
// What a batch operator emits, handed on as rows: the row form of an operator whose rows are
// computed a batch at a time (row windows), and the DTS executor's BatchAdapter, which runs a batch
// operator inside a loop region (rows/ROWS.md).
#include "operators/operator.h"
#include "rows/row_operator.h"

namespace cq {

// An Emitter that hands what a batch operator emits on as rows.
class RowsFromBatches final : public Emitter {
 public:
  explicit RowsFromBatches(RowEmitter* out = nullptr) : out_(out) {}
  void set(RowEmitter* out) { out_ = out; }
  void Emit(Batch batch) override { Forward(batch); }
  void Forward(const Batch& batch) override;
  void EmitEnds(EndBatch ends) override;

 private:
  RowEmitter* out_;
};

}  // namespace cq
