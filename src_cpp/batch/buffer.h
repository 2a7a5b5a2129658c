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
  T* as() const {
    return reinterpret_cast<T*>(data);
  }

  // 64-byte aligned (Arrow's recommendation, and what SIMD loads like), zero padding past `size`
  // up to the next multiple of 64 so that word-wise bitmap loops may read the last word whole.
  static Buffer Allocate(int64_t size);
  static Buffer AllocateZeroed(int64_t size);
  // A view into `parent` that shares its ownership.
  static Buffer Slice(const Buffer& parent, int64_t offset, int64_t size) {
    return Buffer{parent.owner, parent.data + offset, size};
  }
};

// Asks the C allocator (glibc's; elsewhere a no-op) to keep what the engine frees for its next
// batch, once per process. See buffer.cc for why.
void KeepWorkingMemory();

// Values of one fixed-width type appended to a Buffer that doubles as it fills, then handed over
// without a copy: for operators that cannot know their output's length before they have made it.
template <typename T>
class BufferBuilder {
 public:
  void Append(T v) {
    if (size_ == capacity_) Grow(size_ + 1);
    data()[size_++] = v;
  }
  // Room for n values, exactly n when it must grow: a caller that knows how many rows come asks
  // for them, and a one-row result (an instant of a row pushed alone) takes a one-row buffer, not
  // the 64 values Append starts with, which a consumer keeping the row would hold for it.
  void Reserve(int64_t n) {
    if (n > capacity_) Grow(n, true);
  }
  // Replaces the contents by n values (a restored snapshot).
  void Assign(const T* p, int64_t n) {
    size_ = 0;
    Reserve(n);
    if (n) std::memcpy(data(), p, static_cast<size_t>(n) * sizeof(T));
    size_ = n;
  }
  T* data() const { return buffer_.as<T>(); }
  T& operator[](int64_t i) const { return data()[i]; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The values so far (the builder is empty afterwards). The tail past them is zeroed up to the
  // next 64 bytes, as Buffer::Allocate promises.
  Buffer Finish() {
    Buffer out = buffer_;
    const int64_t bytes = size_ * static_cast<int64_t>(sizeof(T));
    if (out.data) std::memset(out.data + bytes, 0, static_cast<size_t>((bytes / 64 + 1) * 64 - bytes));
    else out = Buffer::Allocate(0);
    out.size = bytes;
    buffer_ = {};
    size_ = capacity_ = 0;
    return out;
  }

 private:
  [[gnu::noinline]] void Grow(int64_t need, bool exact = false) {  // out of line: Append stays inlined
    int64_t cap = exact ? need : capacity_ < 64 ? 64 : capacity_ * 2;
    while (cap < need) cap *= 2;
    Buffer bigger = Buffer::Allocate(cap * static_cast<int64_t>(sizeof(T)));
    if (size_) std::memcpy(bigger.data, buffer_.data, static_cast<size_t>(size_) * sizeof(T));
    buffer_ = std::move(bigger);
    capacity_ = cap;
  }
  Buffer buffer_;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace cq
