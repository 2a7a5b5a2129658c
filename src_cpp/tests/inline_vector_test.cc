// InlineVector (a batch's column list) and Ring (the FIFO operators retain batches in): elements
// survive every move between inline and heap storage, copies share buffers, and reference counts
// come out even — a relocation by bytes must neither drop nor double a count.
#include <cstdint>
#include <string>
#include <vector>

#include "base/ring.h"
#include "batch/batch.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

Column IntColumn(int64_t v) {
  Column c;
  c.type = TypeId::kInt64;
  c.length = 1;
  c.values = Buffer::Allocate(8);
  c.values.as<int64_t>()[0] = v;
  return c;
}

int64_t ValueOf(const Column& c) { return c.i64()[0]; }

CQ_TEST(inline_vector_keeps_values_and_counts_through_copies_and_moves) {
  const Column probe = IntColumn(42);
  const long base = probe.values.owner.use_count();
  {
    InlineVector<Column, 2> v;
    CQ_EXPECT(v.empty());
    v.push_back(probe);
    v.push_back(IntColumn(1));
    CQ_EXPECT_EQ(v.capacity(), 2u);  // still inline
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 1);

    InlineVector<Column, 2> moved(std::move(v));  // inline: relocated by bytes
    CQ_EXPECT(v.empty());
    CQ_EXPECT_EQ(moved.size(), 2u);
    CQ_EXPECT_EQ(ValueOf(moved[0]), 42);
    CQ_EXPECT_EQ(ValueOf(moved[1]), 1);
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 1);

    moved.push_back(IntColumn(2));  // spills to the heap
    CQ_EXPECT(moved.capacity() >= 3u);
    InlineVector<Column, 2> copy = moved;  // a copy shares the buffers
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 2);
    CQ_EXPECT(copy[2].values.data == moved[2].values.data);

    InlineVector<Column, 2> stolen;
    stolen = std::move(moved);  // heap: the block changes hands
    CQ_EXPECT(moved.empty());
    CQ_EXPECT_EQ(stolen.size(), 3u);
    CQ_EXPECT_EQ(ValueOf(stolen[2]), 2);
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 2);

    stolen.pop_back();
    stolen.resize(1);
    CQ_EXPECT_EQ(stolen.size(), 1u);
    CQ_EXPECT_EQ(ValueOf(stolen.back()), 42);
    copy = {IntColumn(7)};
    CQ_EXPECT_EQ(copy.size(), 1u);
    CQ_EXPECT_EQ(ValueOf(copy.front()), 7);
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 1);

    // From the builders' std::vector, element by element.
    InlineVector<Column, 2> from(std::vector<Column>{probe, probe, probe});
    CQ_EXPECT_EQ(from.size(), 3u);
    CQ_EXPECT_EQ(probe.values.owner.use_count(), base + 4);
  }
  CQ_EXPECT_EQ(probe.values.owner.use_count(), base);
}

CQ_TEST(inline_vector_of_strings_moves_element_by_element) {
  // std::string is not relocatable by bytes (its short form points into itself): the vector must
  // move it with its move constructor.
  InlineVector<std::string, 2> v{"a", "b"};
  InlineVector<std::string, 2> w(std::move(v));
  CQ_EXPECT_EQ(w[0], std::string("a"));
  w[1] += "c";
  CQ_EXPECT_EQ(w[1], std::string("bc"));
  w.push_back("d");
  CQ_EXPECT_EQ(w[2], std::string("d"));
}

CQ_TEST(ring_is_a_fifo_through_wraps_and_growth) {
  Ring<Batch> ring;
  std::vector<int64_t> model;
  int64_t next = 0, popped = 0;
  // Pushes and pops interleaved so that the head wraps around the array before it grows.
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < 3; ++k) {
      Batch b;
      b.length = 1;
      b.columns.push_back(IntColumn(next));
      ring.push_back(std::move(b));
      model.push_back(next++);
    }
    for (int k = 0; k < 2; ++k) {
      CQ_EXPECT_EQ(ValueOf(ring.front().columns[0]), model[popped]);
      ring.pop_front();
      ++popped;
    }
    CQ_EXPECT_EQ(ring.size(), model.size() - static_cast<size_t>(popped));
    for (size_t i = 0; i < ring.size(); ++i) CQ_EXPECT_EQ(ValueOf(ring[i].columns[0]), model[popped + i]);
    CQ_EXPECT_EQ(ValueOf(ring.back().columns[0]), next - 1);
  }
  int64_t expect = popped;
  for (const Batch& b : ring) CQ_EXPECT_EQ(ValueOf(b.columns[0]), expect++);
  ring.pop_back();
  CQ_EXPECT_EQ(ValueOf(ring.back().columns[0]), next - 2);
  Ring<Batch> other(std::move(ring));
  CQ_EXPECT(ring.empty());
  CQ_EXPECT_EQ(ValueOf(other.front().columns[0]), popped);
  other.clear();
  CQ_EXPECT(other.empty());
}

}  // namespace
}  // namespace cq::test
