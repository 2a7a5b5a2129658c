#include "batch/bitmap.h"

#include <cstring>

namespace cq::bitmap {

int64_t CountSet(const uint8_t* bits, int64_t n) {
  int64_t count = 0;
  int64_t full = n / 64;
  for (int64_t w = 0; w < full; ++w) {
    uint64_t word;
    std::memcpy(&word, bits + w * 8, 8);
    count += __builtin_popcountll(word);
  }
  for (int64_t i = full * 64; i < n; ++i) count += Get(bits, i);
  return count;
}

void CopyBits(const uint8_t* src, int64_t offset, int64_t n, uint8_t* dst) {
  if (offset % 8 == 0) {
    std::memcpy(dst, src + offset / 8, static_cast<size_t>(Bytes(n)));
    return;
  }
  std::memset(dst, 0, static_cast<size_t>(Bytes(n)));
  for (int64_t i = 0; i < n; ++i)
    if (Get(src, offset + i)) Set(dst, i);
}

}  // namespace cq::bitmap
