#pragma once
// [Rows N] (paper 003 §3): the i-th tuple lives from its timestamp t_i until t_{i+N}, the
// timestamp of the N-th tuple after it (tuples with equal timestamps count in arrival order).
// That end is unknown while fewer than N tuples have followed, so the tuple leaves with an
// expiration holder and the window fixes the end when the N-th successor arrives (§4.1). Tuples
// whose N-th successor is in the same batch leave with their end already set.
//
// State: the holder ids of the (at most N) tuples still waiting for their end, in arrival order,
// in a ring: 4 bytes per pending tuple, nothing per tuple on the heap.
#include <vector>

#include "operators/operator.h"

namespace cq {

class RowWindow final : public Operator {
 public:
  RowWindow(int64_t rows, const Schema& input, HolderTable* holders);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;
  int64_t pending() const { return count_; }

 private:
  class Rows;
  HolderId& Slot(int64_t k) { return ring_[(head_ + k) % ring_.size()]; }
  void Append(HolderId h);

  int64_t rows_;
  Schema schema_;
  HolderTable* holders_;
  std::vector<HolderId> ring_;
  int64_t head_ = 0, count_ = 0;
};

}  // namespace cq
