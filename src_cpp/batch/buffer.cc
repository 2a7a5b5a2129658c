#include "batch/buffer.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

namespace cq {

namespace {

int64_t Padded(int64_t size) { return ((size + 63) / 64) * 64 + 64; }

// Buffers up to 1 MiB are recycled through per-thread free lists by size class. Loops run instant
// by instant (paper 000 §3.2), so their batches hold a row or two, and aligned_alloc/free of a few
// hundred bytes (glibc's memalign path, which bypasses its fast caches) cost more than the rows'
// processing; whole batches' buffers (512 KiB for 65,536 int64) would otherwise be fresh pages
// each time. Blocks freed on another thread join that thread's lists.
constexpr int kClasses = 14;                  // capacities 128, 256, ..., 1 MiB
constexpr int64_t kKeepBytes = int64_t{8} << 20;  // kept per class and thread (at least 4 blocks)

struct Pool {
  std::vector<void*> free[kClasses];
  ~Pool();
};
thread_local bool pool_alive = false;  // trivially destructible: readable after the pool is gone
thread_local Pool pool;

Pool::~Pool() {
  pool_alive = false;
  for (auto& list : free)
    for (void* p : list) std::free(p);
}

int ClassOf(int64_t cap) {
  int k = 0;
  while ((int64_t{128} << k) < cap) ++k;
  return k;
}

void Recycle(int k, void* p) {
  const size_t keep = static_cast<size_t>(std::max<int64_t>(4, kKeepBytes >> (7 + k)));
  if (pool_alive && pool.free[k].size() < keep) {
    pool.free[k].push_back(p);
  } else {
    std::free(p);
  }
}

// The shared_ptr control blocks of pooled buffers come from a per-thread free list too: one
// malloc/free pair per buffer was a third of a loop instant's allocator traffic.
constexpr size_t kBlockBytes = 64;
thread_local bool blocks_alive = false;
struct BlockList {
  std::vector<void*> free;
  ~BlockList() {
    blocks_alive = false;
    for (void* p : free) ::operator delete(p);
  }
};
thread_local BlockList blocks;

template <typename T>
struct BlockAllocator {
  using value_type = T;
  BlockAllocator() = default;
  template <typename U>
  BlockAllocator(const BlockAllocator<U>&) {}
  T* allocate(size_t n) {
    static_assert(sizeof(T) <= kBlockBytes, "control block larger than a pooled block");
    if (n == 1 && blocks_alive && !blocks.free.empty()) {
      void* p = blocks.free.back();
      blocks.free.pop_back();
      return static_cast<T*>(p);
    }
    blocks_alive = true;
    return static_cast<T*>(::operator new(n == 1 ? kBlockBytes : n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1 && blocks_alive && blocks.free.size() < 65536) blocks.free.push_back(p);
    else ::operator delete(p);
  }
  template <typename U>
  bool operator==(const BlockAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const BlockAllocator<U>&) const { return false; }
};

}  // namespace

Buffer Buffer::Allocate(int64_t size) {
  int64_t cap = Padded(size);
  void* p = nullptr;
  Buffer b;
  if (cap <= (int64_t{128} << (kClasses - 1))) {
    const int k = ClassOf(cap);
    cap = int64_t{128} << k;
    pool_alive = true;
    auto& list = pool.free[k];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
    } else {
      p = std::aligned_alloc(64, static_cast<size_t>(cap));
      if (!p) throw std::bad_alloc();
    }
    b.owner = std::shared_ptr<void>(p, [k](void* q) { Recycle(k, q); }, BlockAllocator<void>());
  } else {
    p = std::aligned_alloc(64, static_cast<size_t>(cap));
    if (!p) throw std::bad_alloc();
    b.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  // Only the tail padding is cleared: callers overwrite the payload, and bitmap loops may read the
  // padding as whole words.
  const int64_t tail_start = (size / 64) * 64;
  std::memset(static_cast<uint8_t*>(p) + tail_start, 0, static_cast<size_t>(cap - tail_start));
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
