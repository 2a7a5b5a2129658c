#pragma once
// Memory the columns point into. A Buffer is a view (pointer + size) plus shared ownership of
// whatever keeps the bytes alive: an allocation of ours, or an imported Arrow array whose release
// callback runs when the last view goes away. That is how input columns flow through operators and
// back out to Python without a copy.
#include <cstdint>
#include <cstring>
#include <memory>

namespace cq {

struct Buffer {
  std::shared_ptr<void> owner;
  uint8_t* data = nullptr;
  int64_t size = 0;

  bool empty() const { return data == nullptr; }
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(data); }

  // 64-byte aligned (Arrow's recommendation, and what SIMD loads like), zero padding past `size`
  // up to the next multiple of 64 so that word-wise bitmap loops may read the last word whole.
  static Buffer Allocate(int64_t size);
  static Buffer AllocateZeroed(int64_t size);
  // A view into `parent` that shares its ownership.
  static Buffer Slice(const Buffer& parent, int64_t offset, int64_t size) {
    return Buffer{parent.owner, parent.data + offset, size};
  }
};

}  // namespace cq
