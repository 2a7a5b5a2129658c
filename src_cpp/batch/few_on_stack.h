#pragma once
// A working array of n values that lives on the stack when n is small. Loops run instant by
// instant with a row or two, and a heap allocation per call then costs more than the rows' work.
#include <cstddef>
#include <vector>

namespace cq {

template <typename T, size_t N>
class FewOnStack {
 public:
  explicit FewOnStack(size_t n, T fill = T{}) {
    if (n > N) {
      many_.assign(n, fill);
      data_ = many_.data();
    } else {
      for (size_t i = 0; i < n; ++i) few_[i] = fill;
      data_ = few_;
    }
  }
  FewOnStack(const FewOnStack&) = delete;
  FewOnStack& operator=(const FewOnStack&) = delete;

  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T few_[N];
  std::vector<T> many_;
  T* data_;
};

}  // namespace cq
