#pragma once
// A vector whose first N elements live inside the object. A batch's column list is copied each
// time an operator retains the batch (trackers, entry queues, delays), and loops retain a batch
// of a row or two several times per instant: a heap block per copy cost more than the copy's
// reference counts. Past N elements it behaves as std::vector.
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace cq {

// Whether a T may be moved by copying its bytes (the source then being forgotten, not destroyed):
// true of anything trivially copyable, and of types made of shared_ptrs, pointers and integers
// (libstdc++'s shared_ptr holds no pointer to itself), which declare it by specializing this.
template <typename T>
struct TriviallyRelocatable : std::is_trivially_copyable<T> {};

template <typename T, size_t N>
class InlineVector {
 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  InlineVector() = default;
  explicit InlineVector(size_t n) { resize(n); }
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  InlineVector(std::vector<T>&& v) {  // NOLINT: implicit, as the builders return std::vector
    reserve(v.size());
    for (T& x : v) push_back(std::move(x));
  }
  InlineVector(const InlineVector& o) { assign(o.begin(), o.end()); }
  InlineVector(InlineVector&& o) noexcept { Take(std::move(o)); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      Free();
      Take(std::move(o));
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  InlineVector& operator=(std::vector<T>&& v) {
    clear();
    reserve(v.size());
    for (T& x : v) push_back(std::move(x));
    return *this;
  }
  ~InlineVector() { Free(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > cap_) Grow(n);
  }
  template <typename... A>
  T& emplace_back(A&&... a) {
    if (size_ == cap_) Grow(cap_ * 2);
    T* p = ::new (static_cast<void*>(data_ + size_)) T(std::forward<A>(a)...);
    ++size_;
    return *p;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void pop_back() { data_[--size_].~T(); }
  void clear() {
    for (size_t i = 0; i < size_; ++i) data_[i].~T();
    size_ = 0;
  }
  void resize(size_t n) {
    while (size_ > n) pop_back();
    reserve(n);
    while (size_ < n) emplace_back();
  }
  template <typename It>
  void assign(It first, It last) {
    clear();
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }

 private:
  T* Inline() { return reinterpret_cast<T*>(inline_); }
  bool OnHeap() const { return data_ != reinterpret_cast<const T*>(inline_); }
  [[gnu::noinline]] void Grow(size_t n) {  // out of line: emplace_back stays small
    T* p = std::allocator<T>().allocate(n);
    for (size_t i = 0; i < size_; ++i) {
      ::new (static_cast<void*>(p + i)) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (OnHeap()) std::allocator<T>().deallocate(data_, cap_);
    data_ = p;
    cap_ = n;
  }
  void Free() {
    clear();
    if (OnHeap()) std::allocator<T>().deallocate(data_, cap_);
    data_ = Inline();
    cap_ = N;
  }
  // Into an empty, inline vector.
  void Take(InlineVector&& o) {
    if (o.OnHeap()) {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.Inline();
      o.cap_ = N;
      o.size_ = 0;
      return;
    }
    if constexpr (TriviallyRelocatable<T>::value) {
      // A batch is moved several times on its way through the operators: its columns' bytes move
      // in one copy, with no reference count touched.
      std::memcpy(static_cast<void*>(data_), static_cast<const void*>(o.data_), o.size_ * sizeof(T));
    } else {
      for (size_t i = 0; i < o.size_; ++i) {
        ::new (static_cast<void*>(data_ + i)) T(std::move(o.data_[i]));
        o.data_[i].~T();
      }
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T* data_ = reinterpret_cast<T*>(inline_);
  size_t size_ = 0;
  size_t cap_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace cq
