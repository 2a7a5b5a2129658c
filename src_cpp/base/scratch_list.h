#pragma once
// A list whose storage outlives its uses: working lists refilled at every call (a tracker's
// changes, a merge's picks). A std::vector would construct every element again each time it
// grows back to its size (zero-filling, or running a Time's initializers), so the room here is raw
// memory, written before it is read.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace cq {

template <typename T>
class ScratchList {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  ScratchList() = default;
  ScratchList(const ScratchList&) = delete;
  ScratchList& operator=(const ScratchList&) = delete;
  ScratchList(ScratchList&& o) noexcept : items_(std::move(o.items_)), n_(o.n_), cap_(o.cap_) { o.n_ = o.cap_ = 0; }
  ScratchList& operator=(ScratchList&& o) noexcept {
    items_ = std::move(o.items_);
    n_ = o.n_;
    cap_ = o.cap_;
    o.n_ = o.cap_ = 0;
    return *this;
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* data() { return reinterpret_cast<T*>(items_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(items_.get()); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }
  void clear() { n_ = 0; }
  // n slots at the end, to be written before they are read.
  T* Append(size_t n) {
    if (n_ + n > cap_) Grow(std::max(n_ + n, 2 * cap_));
    T* p = data() + n_;
    n_ += n;
    return p;
  }
  void push_back(const T& x) { *Append(1) = x; }
  // Keeps the first n.
  void Truncate(size_t n) { n_ = std::min(n_, n); }

 private:
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{alignof(T)}); }
  };
  void Grow(size_t cap) {
    std::unique_ptr<unsigned char, Free> bigger(
        static_cast<unsigned char*>(::operator new(cap * sizeof(T), std::align_val_t{alignof(T)})));
    if (n_) std::memcpy(bigger.get(), items_.get(), n_ * sizeof(T));
    items_ = std::move(bigger);
    cap_ = cap;
  }
  std::unique_ptr<unsigned char, Free> items_;
  size_t n_ = 0, cap_ = 0;
};

}  // namespace cq
