#pragma once
// [Rows N] and [Partition By k Rows N] under the Negative Tuple method: a tuple goes out as a
// positive at its arrival; when the N-th later tuple (of its partition) arrives, the window sends
// the tuple again as a negative stamped with that arrival's time.
//
// One state, two drivers (rows/ROWS.md): the last N tuples of each partition, oldest first. The
// batch form (Push) keeps them by reference to their input batches, from which it gathers the
// negatives; the row form (ToRows, for loop regions) keeps them a row each. Which layout holds
// them is the last form's: a form that finds the tuples in the other's layout takes them over
// first (a loop that joins later turns the window into its row form at any time, and back).
// Snapshots write the batch form's layout, whichever holds the tuples.
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ring.h"
#include "operators/operator.h"
#include "rows/row.h"

namespace cq {

class NegativeRowWindow final : public Operator {
 public:
  NegativeRowWindow(int64_t rows, std::vector<int> keys, const Schema& input);
  ~NegativeRowWindow() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return "Window [Rows " + std::to_string(rows_) + "] (negative tuples)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  template <typename Item>
  struct Fifo {
    std::vector<Item> items;  // from `head` on
    size_t head = 0;
    size_t size() const { return items.size() - head; }
    Item Pop() {
      const Item x = items[head++];
      if (head > 64 && head * 2 > items.size()) {
        items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
      }
      return x;
    }
  };

  // ---- the batch form's layout: each partition's tuples as (input batch, row)
  struct Ref {
    uint32_t seq;
    uint32_t row;
  };
  struct Kept {
    uint32_t seq;
    Batch batch;
    int64_t live;  // its rows still in a queue
  };
  struct Batches {
    Ring<Kept> kept;
    Fifo<Ref> all;  // no partitions
    std::unordered_map<std::string, Fifo<Ref>> partitions;
    bool holds() const { return !kept.empty(); }
  };
  Fifo<Ref>& QueueOf(const Batch& b, int64_t row, std::string* key);
  // The row layout's tuples as the batch layout holds them: one batch, numbered next_seq_.
  void BatchesOfRows(Batches* out) const;
  void TakeFromRows();
  void WriteBatches(SnapshotWriter& w, const Batches& b, uint32_t next_seq) const;

  Batches b_;
  uint32_t next_seq_ = 0;

  // ---- the row form's layout: values in a RowStore, each partition a FIFO of slots and starts
  struct Arrival {
    uint32_t slot;
    uint32_t unused;  // (no padding)
    Time start;
  };
  bool RowsHold() const { return store_.size() != 0; }
  uint32_t RowQueueOf(const Value* v);
  void TakeFromBatches();
  void ClearRows();

  RowStore store_;
  std::vector<Fifo<Arrival>> queues_;
  std::unordered_map<std::string, uint32_t> index_;  // partition key bytes -> queues_ index

  int64_t rows_;
  std::vector<int> keys_;  // empty: one partition
  std::shared_ptr<const Schema> schema_;
  std::string key_;
};

}  // namespace cq
