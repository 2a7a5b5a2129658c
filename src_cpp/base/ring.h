#pragma once
// A FIFO with deque's interface over one circular array. Operators retain batches in arrival order
// and let them go from the front; loops do so a batch or two per instant, and std::deque allocates
// a block per element once elements are larger than its 512-byte blocks (a Batch is). Once warm,
// this allocates nothing.
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <utility>

namespace cq {

template <typename T>
class Ring {
 public:
  using value_type = T;

  template <bool kConst>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;
    using Owner = std::conditional_t<kConst, const Ring*, Ring*>;
    Iter(Owner ring, size_t i) : ring_(ring), i_(i) {}
    reference operator*() const { return (*ring_)[i_]; }
    pointer operator->() const { return &(*ring_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Owner ring_;
    size_t i_;
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  Ring() = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  Ring(Ring&& o) noexcept { Swap(o); }
  Ring& operator=(Ring&& o) noexcept {
    Ring tmp(std::move(o));
    Swap(tmp);
    return *this;
  }
  ~Ring() {
    clear();
    if (slots_) std::allocator<T>().deallocate(slots_, cap_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return slots_[(head_ + i) & (cap_ - 1)]; }
  const T& operator[](size_t i) const { return slots_[(head_ + i) & (cap_ - 1)]; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  template <typename... A>
  T& emplace_back(A&&... a) {
    if (size_ == cap_) Grow();
    T* p = ::new (static_cast<void*>(&slots_[(head_ + size_) & (cap_ - 1)])) T(std::forward<A>(a)...);
    ++size_;
    return *p;
  }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void push_back(const T& v) { emplace_back(v); }
  void pop_front() {
    slots_[head_].~T();
    head_ = (head_ + 1) & (cap_ - 1);
    --size_;
  }
  void pop_back() {
    back().~T();
    --size_;
  }
  void clear() {
    while (size_) pop_front();
    head_ = 0;
  }

 private:
  void Grow() {
    const size_t cap = cap_ ? cap_ * 2 : 4;
    T* slots = std::allocator<T>().allocate(cap);
    for (size_t i = 0; i < size_; ++i) {
      T& v = (*this)[i];
      ::new (static_cast<void*>(slots + i)) T(std::move(v));
      v.~T();
    }
    if (slots_) std::allocator<T>().deallocate(slots_, cap_);
    slots_ = slots;
    cap_ = cap;
    head_ = 0;
  }
  void Swap(Ring& o) {
    std::swap(slots_, o.slots_);
    std::swap(cap_, o.cap_);
    std::swap(head_, o.head_);
    std::swap(size_, o.size_);
  }

  T* slots_ = nullptr;
  size_t cap_ = 0;  // a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace cq
