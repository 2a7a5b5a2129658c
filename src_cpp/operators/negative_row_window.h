#pragma once
// [Rows N] and [Partition By k Rows N] under the Negative Tuple method: a tuple goes out as a
// positive at its arrival; when the N-th later tuple (of its partition) arrives, the window sends
// the tuple again as a negative stamped with that arrival's time. The window keeps the last N
// tuples (per partition) by reference to their batches; the row form (ToRows, for loop regions)
// keeps its own copies of them.
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ring.h"
#include "operators/operator.h"

namespace cq {

class NegativeRowWindow final : public Operator {
 public:
  NegativeRowWindow(int64_t rows, std::vector<int> keys, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return "Window [Rows " + std::to_string(rows_) + "] (negative tuples)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  struct Ref {
    uint32_t seq;
    uint32_t row;
  };
  struct Queue {
    std::vector<Ref> items;
    size_t head = 0;
    size_t size() const { return items.size() - head; }
  };
  struct Kept {
    uint32_t seq;
    Batch batch;
    int64_t live;
  };
  Queue& QueueOf(const Batch& b, int64_t row, std::string* key);

  int64_t rows_;
  std::vector<int> keys_;  // empty: one partition
  Schema schema_;
  Ring<Kept> kept_;
  uint32_t next_seq_ = 0;
  Queue all_;
  std::unordered_map<std::string, Queue> partitions_;
};

}  // namespace cq
