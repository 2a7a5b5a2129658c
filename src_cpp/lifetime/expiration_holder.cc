#include "lifetime/expiration_holder.h"

#include "engine/errors.h"

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

void HolderTable::Release(const HolderId* ids, int64_t n) { free_.insert(free_.end(), ids, ids + n); }

}  // namespace cq
