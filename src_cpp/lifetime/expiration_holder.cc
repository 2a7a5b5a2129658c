#include "lifetime/expiration_holder.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"

namespace cq {

void HolderTable::Allocate(int64_t n, HolderId* out) {
  int64_t k = 0;
  while (k < n && !free_.empty()) {
    out[k++] = free_.back();
    free_.pop_back();
  }
  CQ_CHECK(static_cast<int64_t>(next_) + (n - k) < static_cast<int64_t>(kNoHolder),
           "more than 4 billion pending expiration holders");
  for (; k < n; ++k) out[k] = next_++;
}

void HolderTable::Release(const HolderId* ids, int64_t n) {
  if (pins_.empty()) {
    free_.insert(free_.end(), ids, ids + n);
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const HolderId id = ids[k];
    if (id < pins_.size() && pins_[id] > 0) released_[id] = 1;
    else free_.push_back(id);
  }
}

void HolderTable::Pin(const HolderId* ids, int64_t n) {
  if (pins_.size() < next_) {
    pins_.resize(next_, 0);
    released_.resize(next_, 0);
  }
  for (int64_t k = 0; k < n; ++k) {
    CQ_CHECK(ids[k] < next_, "pinning holder id " + std::to_string(ids[k]) + " that was never handed out");
    ++pins_[ids[k]];
  }
}

void HolderTable::Unpin(const HolderId* ids, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const HolderId id = ids[k];
    CQ_CHECK(id < pins_.size() && pins_[id] > 0, "unpinning holder id " + std::to_string(id) + " that is not pinned");
    if (--pins_[id] == 0 && released_[id]) {
      released_[id] = 0;
      free_.push_back(id);
    }
  }
}

void HolderTable::Snapshot(SnapshotWriter& w) const {
  w.U32(next_);
  w.PodVec(free_);
  w.PodVec(pins_);
  w.PodVec(released_);
}

void HolderTable::Restore(SnapshotReader& r) {
  next_ = r.Below<uint32_t>(kNoHolder, "the ids handed out");
  r.PodVec(free_, "the free ids", [&](HolderId id) { return id < next_; });
  r.PodVec(pins_, "the pins");
  r.PodVec(released_, "the released flags", [](uint8_t b) { return b <= 1; });
  CQ_SNAPSHOT_CHECK(pins_.size() == released_.size() && pins_.size() <= next_, "the pins do not match the ids");
  // Each id in use is named by a pending row of the state that follows (4 bytes or more), so a
  // damaged count cannot make consumers size arrays by ids that no row holds.
  const uint64_t live = next_ - std::min<uint64_t>(free_.size(), next_);
  if (live > r.left() / 4)
    SnapshotReader::Corrupt("the ids in use: expected at most " + std::to_string(r.left() / 4) +
                            " (one per 4 bytes of the state that follows), found " + std::to_string(live));
  std::vector<uint8_t> seen(next_, 0);
  for (HolderId id : free_) {
    if (seen[id]++) SnapshotReader::Corrupt("the free ids: id " + std::to_string(id) + " is free twice");
  }
}

}  // namespace cq
