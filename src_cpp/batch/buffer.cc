#include "batch/buffer.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cq {

namespace {

int64_t Padded(int64_t size) { return ((size + 63) / 64) * 64 + 64; }

// Buffers up to 1 MiB are recycled through per-thread free lists by size class. Loops run instant
// by instant (paper 000 §3.2), so their batches hold a row or two, and aligned_alloc/free of a few
// hundred bytes (glibc's memalign path, which bypasses its fast caches) cost more than the rows'
// processing; whole batches' buffers (512 KiB for 65,536 int64) would otherwise be fresh pages
// each time. Blocks freed on another thread join that thread's lists.
//
// A pooled block holds the shared_ptr control block and the bytes together (allocate_shared with
// the pool as allocator): one pop from a free list per buffer, one push when its last view goes,
// where a separate control block cost a second list and a deleter call.
constexpr int kClasses = 14;                      // capacities 128, 256, ..., 1 MiB
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

constexpr size_t Keep(int k) { return static_cast<size_t>(std::max<int64_t>(4, kKeepBytes >> (7 + k))); }

// The bytes of a class-K buffer. The constructor is user-provided so that allocate_shared leaves
// them uninitialized (callers overwrite the payload; Allocate clears the padding).
template <int K>
struct alignas(64) Payload {
  Payload() {}
  unsigned char bytes[int64_t{128} << K];
};

// Hands allocate_shared blocks from the class's free list. Every block of a class has the same
// size: that of the one control-block-plus-payload type allocated for it.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  int k;
  explicit PoolAllocator(int cls) : k(cls) {}
  template <typename U>
  PoolAllocator(const PoolAllocator<U>& o) : k(o.k) {}
  T* allocate(size_t n) {
    if (n == 1 && pool_alive && !pool.free[k].empty()) {
      void* p = pool.free[k].back();
      pool.free[k].pop_back();
      return static_cast<T*>(p);
    }
    pool_alive = true;
    const size_t align = std::max<size_t>(64, alignof(T));
    const size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n == 1 && pool_alive && pool.free[k].size() < Keep(k)) pool.free[k].push_back(p);
    else std::free(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>& o) const {
    return k == o.k;
  }
  template <typename U>
  bool operator!=(const PoolAllocator<U>& o) const {
    return k != o.k;
  }
};

template <int K>
std::shared_ptr<void> MakePooled(uint8_t** data) {
  auto p = std::allocate_shared<Payload<K>>(PoolAllocator<Payload<K>>(K));
  *data = p->bytes;
  return p;
}

template <int... K>
std::shared_ptr<void> MakePooled(int k, uint8_t** data, std::integer_sequence<int, K...>) {
  using Maker = std::shared_ptr<void> (*)(uint8_t**);
  static constexpr Maker makers[] = {&MakePooled<K>...};
  return makers[k](data);
}

}  // namespace

Buffer Buffer::Allocate(int64_t size) {
  int64_t cap = Padded(size);
  Buffer b;
  if (cap <= (int64_t{128} << (kClasses - 1))) {
    const int k = ClassOf(cap);
    cap = int64_t{128} << k;
    b.owner = MakePooled(k, &b.data, std::make_integer_sequence<int, kClasses>());
  } else {
    void* p = std::aligned_alloc(64, static_cast<size_t>(cap));
    if (!p) throw std::bad_alloc();
    b.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    b.data = static_cast<uint8_t*>(p);
  }
  // Only the padding promised is cleared (to the next multiple of 64, and 64 bytes more): callers
  // overwrite the payload, and bitmap loops may read the padding as whole words. The rest of the
  // size class is never read; clearing it cost a builder that doubles into a larger class half a
  // buffer of memset each time.
  const int64_t tail_start = (size / 64) * 64;
  std::memset(b.data + tail_start, 0, static_cast<size_t>(std::min(cap, Padded(size)) - tail_start));
  b.size = size;
  return b;
}

// Every batch builds index arrays, run lists and output columns of a few hundred KiB to tens of
// MiB, frees them, and builds them again for the next batch. glibc serves blocks above its mmap
// threshold (128 KiB until a free raises it) with fresh mappings and gives the top of the heap back
// once 128 KiB are free there, so each batch paid page faults and zeroing of pages for memory it
// had just freed: a fifth of a columnar run's time (perf, paper 000's open query). Blocks up to
// 32 MiB now come from the heap, and up to 512 MiB of free heap top is kept; larger ones still map.
void KeepWorkingMemory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
  });
#endif
}

Buffer Buffer::AllocateZeroed(int64_t size) {
  Buffer b = Allocate(size);
  std::memset(b.data, 0, static_cast<size_t>(size));
  return b;
}

}  // namespace cq
