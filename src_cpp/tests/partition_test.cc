// batch/partition.h: the parts of a push for engines that each run one part of the input.
#include <algorithm>
#include <map>
#include <set>

#include "batch/partition.h"
#include "batch/row_hash.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

std::vector<int> Parts(const std::vector<Column>& keys, int64_t n, int parts, bool as_double = false) {
  std::vector<int64_t> order(static_cast<size_t>(n)), counts(static_cast<size_t>(parts));
  PartitionRows(keys, n, parts, as_double, order.data(), counts.data());
  std::vector<int> part(static_cast<size_t>(n), -1);
  int64_t at = 0;
  for (int p = 0; p < parts; ++p) {
    int64_t previous = -1;
    for (int64_t k = 0; k < counts[p]; ++k, ++at) {
      CQ_EXPECT(order[at] > previous);  // each part's rows in input order
      previous = order[at];
      CQ_EXPECT_EQ(part[order[at]], -1);  // every row once
      part[order[at]] = p;
    }
  }
  CQ_EXPECT_EQ(at, n);
  return part;
}

CQ_TEST(equal_keys_go_to_one_part_and_parts_are_balanced) {
  Rng rng(7);
  I64s k;
  for (int i = 0; i < 20000; ++i) k.push_back(rng.Below(50) == 0 ? std::optional<int64_t>() : rng.Below(1000));
  for (int parts : {1, 2, 3, 8}) {
    const std::vector<int> part = Parts({I64(k)}, static_cast<int64_t>(k.size()), parts);
    std::map<std::optional<int64_t>, std::set<int>> where;
    std::vector<int64_t> sizes(static_cast<size_t>(parts));
    for (size_t i = 0; i < k.size(); ++i) {
      where[k[i]].insert(part[i]);
      ++sizes[part[i]];
    }
    for (const auto& [key, ps] : where) CQ_EXPECT_EQ(ps.size(), 1u);
    for (int64_t s : sizes) CQ_EXPECT(s > static_cast<int64_t>(k.size()) / parts / 2);
  }
}

CQ_TEST(keys_equal_as_values_go_to_one_part) {
  // -0.0 = 0.0 and NaN = NaN, as grouping and joins compare; with as_double, 3 = 3.0.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int parts : {2, 5, 16}) {
    const std::vector<int> f = Parts({F64({0.0, -0.0, nan, -nan, 3.0})}, 5, parts);
    CQ_EXPECT_EQ(f[0], f[1]);
    CQ_EXPECT_EQ(f[2], f[3]);
    const std::vector<int> i = Parts({I64({3, 0})}, 2, parts, /*as_double=*/true);
    CQ_EXPECT_EQ(i[0], f[4]);
    CQ_EXPECT_EQ(i[1], f[0]);
  }
  // Strings and several columns: the row's values decide.
  const std::vector<int> s = Parts({Str({"ab", "c", "ab", std::nullopt}), I64({1, 1, 1, std::nullopt})}, 4, 7);
  CQ_EXPECT_EQ(s[0], s[2]);
}

CQ_TEST(rows_of_a_part_are_those_partition_rows_gives_it) {
  Rng rng(3);
  I64s k;
  for (int i = 0; i < 10000; ++i) k.push_back(rng.Below(30) == 0 ? std::optional<int64_t>() : rng.Below(500));
  const std::vector<Column> keys = {I64(k)};
  const std::vector<int> part = Parts(keys, static_cast<int64_t>(k.size()), 3, true);
  for (int p = 0; p < 3; ++p) {
    std::vector<int64_t> want;
    for (size_t i = 0; i < k.size(); ++i)
      if (part[i] == p) want.push_back(static_cast<int64_t>(i));
    CQ_EXPECT_EQ(RowsOfPart(keys, static_cast<int64_t>(k.size()), 3, p, true), want);
  }
}

CQ_TEST(parts_of_rows_are_the_parts_partition_rows_gives) {
  // Any run of rows [at, at + n), across the blocks the hashing works in.
  Rng rng(5);
  I64s k;
  Strs s;
  for (int i = 0; i < 9000; ++i) {
    k.push_back(rng.Below(40) == 0 ? std::optional<int64_t>() : rng.Below(700));
    s.push_back(rng.Below(40) == 0 ? std::optional<std::string>() : std::to_string(1000 + rng.Below(90)));
  }
  for (const std::vector<Column>& keys : {std::vector<Column>{I64(k)}, std::vector<Column>{Str(s)}})
    for (int parts : {1, 2, 3, 7}) {
      const std::vector<int> want = Parts(keys, 9000, parts, true);
      for (auto [at, n] : {std::pair<int64_t, int64_t>{0, 9000}, {1, 4097}, {4095, 4905}, {8999, 1}}) {
        std::vector<uint16_t> got(static_cast<size_t>(n));
        PartsOfRows(keys, at, n, parts, true, got.data());
        for (int64_t i = 0; i < n; ++i) CQ_EXPECT_EQ(static_cast<int>(got[i]), want[at + i]);
      }
    }
}

TimedChunk Chunk(const I64s& ts, const I64s& steps, const Strs& v) {
  return {{I64(ts), I64(steps), Str(v)}, static_cast<int64_t>(ts.size())};
}

CQ_TEST(merge_by_time_is_a_stable_merge_of_the_parts) {
  // Part 0 and part 1 share times 2 and (5, 1); part 2 is empty; chunks of 3 rows out.
  const std::vector<std::vector<TimedChunk>> parts = {
      {Chunk({1, 2}, {0, 0}, {"a", "b"}), Chunk({5, 5}, {0, 1}, {"c", "d"})},
      {Chunk({2, 2, 5}, {0, 0, 1}, {"e", "f", "g"}), Chunk({}, {}, {}), Chunk({9}, {0}, {"h"})},
      {},
  };
  const int time[] = {0, 1};
  const std::vector<TimedChunk> out = MergeByTime(parts, time, 3);
  Strs got;
  I64s ts;
  for (const TimedChunk& c : out) {
    CQ_EXPECT(c.length <= 3);
    for (auto v : ReadStr(c.columns[2])) got.push_back(v);
    for (auto t : ReadI64(c.columns[0])) ts.push_back(t);
  }
  CQ_EXPECT_EQ(got, (Strs{"a", "b", "e", "f", "c", "d", "g", "h"}));
  CQ_EXPECT_EQ(ts, (I64s{1, 2, 2, 2, 5, 5, 5, 9}));
  // By ts alone, (5, 0) and (5, 1) tie: part 0's two rows first.
  const int ts_only[] = {0};
  got.clear();
  for (const TimedChunk& c : MergeByTime(parts, ts_only, 100))
    for (auto v : ReadStr(c.columns[2])) got.push_back(v);
  CQ_EXPECT_EQ(got, (Strs{"a", "b", "e", "f", "c", "d", "g", "h"}));
  CQ_EXPECT(MergeByTime({{}, {}}, ts_only, 10).empty());
}

CQ_TEST(merge_by_time_on_workers_writes_what_one_thread_writes) {
  // Three parts of random times with many ties (enough rows for the order to be found in
  // segments), merged by 1 and 3 threads.
  Rng rng(13);
  std::vector<std::vector<TimedChunk>> parts(3);
  int64_t label = 0;
  for (auto& part : parts) {
    int64_t t = 0;
    for (int c = 0; c < 4; ++c) {
      I64s ts, steps;
      Strs v;
      for (int64_t i = 0, n = rng.Below(3000); i < n; ++i) {
        t += rng.Below(3);
        ts.push_back(t);
        steps.push_back(0);
        v.push_back(std::to_string(label++));
      }
      part.push_back(Chunk(ts, steps, v));
    }
  }
  const int time[] = {0};
  auto read = [](const std::vector<TimedChunk>& out, int64_t chunk_rows = 500) {
    Strs all;
    for (const TimedChunk& c : out) {
      CQ_EXPECT(c.length <= chunk_rows);
      for (auto v : ReadStr(c.columns[2])) all.push_back(v);
    }
    return all;
  };
  Workers w(3);
  const Strs one = read(MergeByTime(parts, time, 500));
  CQ_EXPECT_EQ(static_cast<int64_t>(one.size()), label);
  CQ_EXPECT(label > 8000);
  CQ_EXPECT_EQ(read(MergeByTime(parts, time, 500, &w, 3)), one);
  CQ_EXPECT_EQ(read(MergeByTime(parts, time, 100000, &w, 2), 100000), one);
  // Every row in order of time, ties in part order (labels were given part by part).
  I64s ts;
  for (const TimedChunk& c : MergeByTime(parts, time, 500, &w, 3))
    for (auto t : ReadI64(c.columns[0])) ts.push_back(t);
  CQ_EXPECT(std::is_sorted(ts.begin(), ts.end()));
}

CQ_TEST(a_number_key_without_nulls_has_the_hash_of_a_row) {
  // The one-column fast path gives the parts the general path (HashRows) gives: a NULL in the
  // column takes the general path for its block.
  Rng rng(11);
  I64s k, with_null;
  for (int i = 0; i < 5000; ++i) k.push_back(rng.Below(1 << 20) - (1 << 19));
  with_null = k;
  with_null[4999] = std::nullopt;
  for (bool as_double : {false, true}) {
    const std::vector<int> fast = Parts({I64(k)}, 5000, 4, as_double);
    const std::vector<int> general = Parts({I64(with_null)}, 5000, 4, as_double);
    for (int i = 0; i < 4999; ++i) CQ_EXPECT_EQ(fast[i], general[i]);
  }
}

CQ_TEST(one_number_goes_where_its_row_goes) {
  const std::vector<int> ints = Parts({I64({7, -3, 1LL << 40})}, 3, 5, true);
  CQ_EXPECT_EQ(PartOfNumber(7.0, 5), ints[0]);
  CQ_EXPECT_EQ(PartOfNumber(-3.0, 5), ints[1]);
  CQ_EXPECT_EQ(PartOfNumber(static_cast<double>(1LL << 40), 5), ints[2]);
  const std::vector<int> floats = Parts({F64({2.5, -0.0})}, 2, 5);
  CQ_EXPECT_EQ(PartOfNumber(2.5, 5), floats[0]);
  CQ_EXPECT_EQ(PartOfNumber(0.0, 5), floats[1]);
}

CQ_TEST(no_key_columns_put_every_row_in_part_zero) {
  const std::vector<int> part = Parts({}, 3, 4);
  CQ_EXPECT_EQ(part, (std::vector<int>{0, 0, 0}));
}

}  // namespace
}  // namespace cq::test
