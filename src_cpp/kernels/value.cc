#include "kernels/value.h"

#include <cstring>
#include <new>

namespace cq {

const StrBlock* NewString(std::string_view v) {
  void* p = std::malloc(sizeof(StrBlock) + v.size());
  if (!p) throw std::bad_alloc();
  StrBlock* s = static_cast<StrBlock*>(p);
  s->refs = 1;
  s->size = static_cast<uint32_t>(v.size());
  if (!v.empty()) std::memcpy(s + 1, v.data(), v.size());
  return s;
}

}  // namespace cq
