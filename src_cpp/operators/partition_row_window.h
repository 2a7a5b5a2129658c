#pragma once
// [Partition By k, ... Rows N]: [Rows N] within each partition — a tuple ends when the N-th later
// tuple with the same key arrives (paper 000 Fig. 1 keeps one row per stock id this way). Ends are
// pending until then, exactly as in RowWindow.
//
// State per key: the holder ids of its pending tuples, oldest first. Keys are looked up by their
// encoded bytes; 1,000,000 keys cost a few tens of bytes each. A batch finds its rows' keys a
// column at a time (GroupIndex: a flat table probed by value), and the encoded bytes are built
// only for a key the batch form has not met before.
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/group_index.h"
#include "operators/operator.h"

namespace cq {

class PartitionRowWindow final : public Operator {
 public:
  PartitionRowWindow(int64_t rows, std::vector<int> keys, const Schema& input, HolderTable* holders);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;
  size_t partitions() const { return slot_of_.size(); }

 private:
  class Rows;
  struct Pending {
    HolderId id;
    uint32_t batch;  // which Push created it (to spot tuples of the batch being processed)
    uint32_t row;
  };
  struct Queue {
    std::vector<Pending> items;
    uint32_t head = 0;
    size_t size() const { return items.size() - head; }
  };
  void EncodeKey(const Batch& b, int64_t row, std::string* out) const;

  int64_t rows_;
  std::vector<int> keys_;
  Schema schema_;
  HolderTable* holders_;
  std::unordered_map<std::string, uint32_t> slot_of_;
  std::vector<Queue> queues_;
  // A cache in front of slot_of_ (not part of the state: the row form adds to slot_of_ alone):
  // the dense id of each key met by Push, and the slot of each id (kNoSlot until looked up).
  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;
  std::vector<TypeId> key_types_;
  GroupIndex index_;
  std::vector<uint32_t> slot_of_id_;
  std::vector<uint32_t> ids_;  // Push's scratch: each row's key id
  // Push's scratch, kept between calls: loops push a row per instant.
  std::vector<HolderId> ended_ids_;
  std::vector<uint32_t> ended_by_;  // the row whose arrival fixes the end
  std::vector<HolderId> unused_;    // ids of rows that ended inside this batch: never emitted
  std::string key_;
  uint32_t batch_seq_ = 0;
};

}  // namespace cq
