// Buffer::Allocate: 64-byte aligned bytes with the padding up to the class's capacity cleared, in
// every size class and past them; pooled blocks come back to their class when the last view goes.
#include <cstdint>
#include <vector>

#include "batch/buffer.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

CQ_TEST(buffers_are_aligned_padded_and_recycled_by_class) {
  for (int64_t size :
       std::vector<int64_t>{0, 1, 8, 63, 64, 65, 1000, 4096, 65536 * 8, (int64_t{1} << 20) - 64, int64_t{3} << 20}) {
    Buffer b = Buffer::Allocate(size);
    CQ_EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 64, 0);
    CQ_EXPECT_EQ(b.size, size);
    const int64_t padded_end = ((size + 63) / 64) * 64 + 64;
    for (int64_t i = (size / 64) * 64; i < padded_end; ++i) CQ_EXPECT_EQ(b.data[i], 0);
    if (size) b.data[size - 1] = 0xff;  // the payload is writable to its end
  }
  // A freed block is the next of its class: the same bytes, cleared padding again.
  uint8_t* first;
  {
    Buffer b = Buffer::Allocate(100);
    first = b.data;
    std::fill(b.data, b.data + 256, uint8_t{0xab});
  }
  Buffer again = Buffer::Allocate(100);
  CQ_EXPECT(again.data == first);
  for (int64_t i = 64; i < 192; ++i) CQ_EXPECT_EQ(again.data[i], 0);
  // Views keep the block alive after the buffer they came from is gone.
  Buffer view;
  {
    Buffer b = Buffer::Allocate(16);
    b.data[3] = 7;
    view = Buffer::Slice(b, 3, 1);
  }
  CQ_EXPECT_EQ(view.data[0], 7);
  CQ_EXPECT(Buffer::Allocate(16).data != view.data - 3);
}

}  // namespace
}  // namespace cq::test
