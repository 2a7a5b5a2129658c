#pragma once
// Expiration-time holders (paper 003 §4.1): the slot through which an operator that cannot fix a
// result's end time (row windows, aggregates) fixes it later. Batches carry holder *ids*, never a
// heap object per tuple: ids come from one engine-owned table, dense and recycled, so consumers
// index flat arrays by id and 10,000,000 pending tuples cost a few bytes each (LIFETIMES.md).
#include <cstdint>
#include <limits>
#include <vector>

namespace cq {

using HolderId = uint32_t;
inline constexpr HolderId kNoHolder = std::numeric_limits<HolderId>::max();

class HolderTable {
 public:
  // `n` ids not in use, written to `out`. Recycled ids come first, so ids stay dense.
  void Allocate(int64_t n, HolderId* out);
  // The ids' ends have been emitted (and so seen by every consumer): they may be reused.
  void Release(const HolderId* ids, int64_t n);
  int64_t live() const { return static_cast<int64_t>(next_) - static_cast<int64_t>(free_.size()); }
  // One past the largest id ever handed out: the size a flat array indexed by id needs.
  HolderId capacity() const { return next_; }

 private:
  std::vector<HolderId> free_;
  HolderId next_ = 0;
};

}  // namespace cq
