#pragma once
// Expiration-time holders (paper 003 §4.1): the slot through which an operator that cannot fix a
// result's end time (row windows, aggregates) fixes it later. Batches carry holder *ids*, never a
// heap object per tuple: ids come from one engine-owned table, dense and recycled, so consumers
// index flat arrays by id and 10,000,000 pending tuples cost a few bytes each (LIFETIMES.md).
#include <cstdint>
#include <vector>

#include "batch/batch.h"

namespace cq {

class SnapshotWriter;
class SnapshotReader;

class HolderTable {
 public:
  // `n` ids not in use, written to `out`. Recycled ids come first, so ids stay dense.
  void Allocate(int64_t n, HolderId* out);
  // The ids' ends have been emitted (and so seen by every consumer): they may be reused. A pinned
  // id is reused only after its last Unpin.
  void Release(const HolderId* ids, int64_t n);
  // One id at a time (row forms, rows/ROWS.md): the same as Allocate(1) / Release(1), inline.
  HolderId AllocateOne() {
    if (!free_.empty()) {
      const HolderId id = free_.back();
      free_.pop_back();
      return id;
    }
    HolderId id;
    Allocate(1, &id);
    return id;
  }
  void ReleaseOne(HolderId id) {
    if (pins_.empty()) free_.push_back(id);
    else Release(&id, 1);
  }
  // An executor that queues end fixes between operators (the heartbeat executor) pins the ids of
  // each queued EndBatch until the consumer has taken it: the producer releases an id right after
  // emitting its end, and reusing it while that end still waits in a queue would let a new tuple
  // meet the old tuple's end downstream. Pins count (one per queued batch naming the id).
  void Pin(const HolderId* ids, int64_t n);
  void Unpin(const HolderId* ids, int64_t n);
  // Queued end batches naming `id` now.
  uint32_t pins(HolderId id) const { return id < pins_.size() ? pins_[id] : 0; }
  int64_t live() const { return static_cast<int64_t>(next_) - static_cast<int64_t>(free_.size()); }
  // One past the largest id ever handed out: the size a flat array indexed by id needs.
  HolderId capacity() const { return next_; }

  // Engine snapshots: the ids in operators' state stay valid after a restore only if the table
  // hands out and recycles ids exactly as before, so all of it is saved (free list order too).
  void Snapshot(SnapshotWriter& w) const;
  void Restore(SnapshotReader& r);

 private:
  std::vector<HolderId> free_;
  HolderId next_ = 0;
  std::vector<uint32_t> pins_;     // by id: queued end batches naming it (empty: nothing ever pinned)
  std::vector<uint8_t> released_;  // by id: released while pinned, free at its last Unpin
};

}  // namespace cq
