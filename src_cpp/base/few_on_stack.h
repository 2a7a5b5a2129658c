#pragma once
// A working array of n values that lives on the stack when n is small. Loops run instant by
// instant with a row or two, and a heap allocation per call then costs more than the rows' work.
// Only the n values are constructed (an expression's argument slots hold strings and buffers).
#include <cstddef>
#include <new>
#include <vector>

namespace cq {

template <typename T, size_t N>
class FewOnStack {
 public:
  explicit FewOnStack(size_t n, const T& fill = T{}) : n_(n) {
    if (n > N) {
      many_.assign(n, fill);
      data_ = many_.data();
    } else {
      data_ = reinterpret_cast<T*>(few_);
      for (size_t i = 0; i < n; ++i) ::new (static_cast<void*>(data_ + i)) T(fill);
    }
  }
  ~FewOnStack() {
    if (n_ <= N)
      for (size_t i = 0; i < n_; ++i) data_[i].~T();
  }
  FewOnStack(const FewOnStack&) = delete;
  FewOnStack& operator=(const FewOnStack&) = delete;

  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  alignas(T) unsigned char few_[N * sizeof(T)];
  std::vector<T> many_;
  size_t n_;
  T* data_;
};

}  // namespace cq
