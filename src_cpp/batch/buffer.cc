#include "batch/buffer.h"

#include <cstdlib>
#include <new>

namespace cq {

namespace {
int64_t Padded(int64_t size) { return ((size + 63) / 64) * 64 + 64; }
}  // namespace

Buffer Buffer::Allocate(int64_t size) {
  int64_t cap = Padded(size);
  void* p = std::aligned_alloc(64, static_cast<size_t>(cap));
  if (!p) throw std::bad_alloc();
  // Only the tail padding is cleared: callers overwrite the payload, and bitmap loops may read the
  // padding as whole words.
  int64_t tail_start = (size / 64) * 64;
  std::memset(static_cast<uint8_t*>(p) + tail_start, 0, static_cast<size_t>(cap - tail_start));
  Buffer b;
  b.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  b.data = static_cast<uint8_t*>(p);
  b.size = size;
  return b;
}

Buffer Buffer::AllocateZeroed(int64_t size) {
  Buffer b = Allocate(size);
  std::memset(b.data, 0, static_cast<size_t>(size));
  return b;
}

}  // namespace cq
