#include "operators/rows_from_batches.h"

#include "rows/batch_rows.h"

namespace cq {

void RowsFromBatches::Forward(const Batch& batch) {
  ForEachRow(batch, [&](const Row& row) { out_->Emit(row); });
}

void RowsFromBatches::EmitEnds(EndBatch ends) {
  const HolderId* ids = ends.ids();
  for (int64_t k = 0; k < ends.length; ++k) out_->EmitEnd(ids[k], ends.ends.At(k));
}

}  // namespace cq
