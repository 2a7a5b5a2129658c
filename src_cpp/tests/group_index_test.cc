// GroupIndex (dense group ids: the direct-indexed table for small int64 ranges, its growth in both
// directions and its hand-over to hashing, fixed-width and encoded keys, NULL/-0.0/NaN as grouping
// keys, keys gathered back out), ValueStore and HashMultimap (removal, reuse of removed slots,
// rebuilds), each checked against a std::map / std::multimap model.
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "base/hash_multimap.h"
#include "batch/group_index.h"
#include "batch/row_hash.h"
#include "batch/value_store.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

// Maps `batches` of one int64 key column batch by batch and checks the ids against a model: equal
// keys share an id, ids are dense in order of first appearance, and the keys gather back.
void CheckInt64Groups(const std::vector<I64s>& batches) {
  GroupIndex index({TypeId::kInt64});
  std::map<std::optional<int64_t>, uint32_t> model;
  for (const I64s& keys : batches) {
    std::vector<uint32_t> gids(keys.size());
    index.Map(std::vector<Column>{I64(keys)}, static_cast<int64_t>(keys.size()), gids.data());
    for (size_t i = 0; i < keys.size(); ++i) {
      auto [it, fresh] = model.try_emplace(keys[i], static_cast<uint32_t>(model.size()));
      CQ_EXPECT_EQ(gids[i], it->second);
    }
    CQ_EXPECT_EQ(index.size(), model.size());
    CQ_EXPECT_EQ(ReadI64(index.GatherKeys(0, gids.data(), static_cast<int64_t>(gids.size()))), keys);
  }
}

CQ_TEST(group_index_small_int_range) {
  CheckInt64Groups({{3, 1, 3, N, 2, 1, N}, {2, 2, 9}, {}});
}

CQ_TEST(group_index_direct_table_grows_both_ways) {
  // Upward past the first table, downward below its base, and far past both ends later.
  I64s up, down;
  for (int64_t k = 0; k < 300; ++k) up.push_back(k * 7);
  for (int64_t k = 0; k < 300; ++k) down.push_back(-k * 11);
  CheckInt64Groups({{5, 6}, up, down, {40000, -20000, 5}});
  // Tables at the ends of int64 stay inside it.
  CheckInt64Groups({{INT64_MAX - 3, INT64_MAX}, {INT64_MAX - 100, INT64_MAX - 1}, {INT64_MAX - 5000}});
  CheckInt64Groups({{INT64_MIN + 2, INT64_MIN}, {INT64_MIN + 1000}, {INT64_MIN + 30, INT64_MIN + 9000}});
}

CQ_TEST(group_index_leaves_the_direct_table_for_hashing) {
  // A span past the direct table's limit, within one batch and across batches, and extremes.
  CheckInt64Groups({{0, 1, 2}, {70000, 1, N}, {2, 70000, -5}});
  CheckInt64Groups({{0, 100000}, {1, 0}});
  CheckInt64Groups({{INT64_MIN, INT64_MAX, 0}, {INT64_MAX, 0, N, INT64_MIN}});
  Rng rng(7);
  std::vector<I64s> batches(20);
  for (I64s& b : batches)
    for (int k = 0; k < 200; ++k) b.push_back(static_cast<int64_t>(rng.Next() % 5000) * 97 - 200000);
  CheckInt64Groups(batches);
}

CQ_TEST(group_index_doubles_group_as_sql_keys) {
  const double nan = std::nan(""), other_nan = -std::nan("1");
  GroupIndex index({TypeId::kFloat64});
  const F64s keys = {0.0, -0.0, nan, other_nan, N, 1.5, N, 0.0};
  std::vector<uint32_t> g(keys.size());
  index.Map(std::vector<Column>{F64(keys)}, static_cast<int64_t>(keys.size()), g.data());
  CQ_EXPECT_EQ(g[0], g[1]);  // -0.0 = 0.0
  CQ_EXPECT_EQ(g[2], g[3]);  // NaN = NaN
  CQ_EXPECT_EQ(g[4], g[6]);  // NULL is one key
  CQ_EXPECT(g[0] != g[2] && g[0] != g[4] && g[2] != g[4] && g[5] != g[0]);
  CQ_EXPECT_EQ(index.size(), 4u);
}

CQ_TEST(group_index_several_keys_and_strings) {
  GroupIndex index({TypeId::kUtf8, TypeId::kInt64, TypeId::kBool});
  const Strs s = {"x", "x", "", N, "x", "", N, "xy"};
  const I64s i = {1, 1, 1, 1, 2, 1, 1, N};
  const Bools b = {true, true, true, true, true, false, true, N};
  std::vector<uint32_t> g(s.size());
  index.Map(std::vector<Column>{Str(s), I64(i), Bool(b)}, static_cast<int64_t>(s.size()), g.data());
  CQ_EXPECT_EQ(g, (std::vector<uint32_t>{0, 0, 1, 2, 3, 4, 2, 5}));
  // NULL is not "" (the key encoding tells them apart), and the keys gather back.
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5};
  CQ_EXPECT_EQ(ReadStr(index.GatherKeys(0, all.data(), 6)), (Strs{"x", "", N, "x", "", "xy"}));
  CQ_EXPECT_EQ(ReadI64(index.GatherKeys(1, all.data(), 6)), (I64s{1, 1, 1, 2, 1, N}));
  CQ_EXPECT_EQ(ReadBool(index.GatherKeys(2, all.data(), 6)), (Bools{true, true, true, true, false, N}));
  // Many keys: the table rehashes and keeps every id.
  GroupIndex big({TypeId::kUtf8});
  Strs many;
  for (int k = 0; k < 5000; ++k) many.push_back(std::to_string(k % 1700));
  std::vector<uint32_t> gm(many.size());
  big.Map(std::vector<Column>{Str(many)}, static_cast<int64_t>(many.size()), gm.data());
  for (size_t k = 0; k < many.size(); ++k) CQ_EXPECT_EQ(gm[k], static_cast<uint32_t>(k % 1700));
}

CQ_TEST(group_index_without_keys) {
  GroupIndex index({});
  std::vector<uint32_t> g(3, 7);
  index.Map(std::vector<Column>{}, 0, g.data());
  CQ_EXPECT_EQ(index.size(), 0u);  // no row, no group
  index.Map(std::vector<Column>{}, 3, g.data());
  CQ_EXPECT_EQ(g, (std::vector<uint32_t>{0, 0, 0}));
  CQ_EXPECT_EQ(index.size(), 1u);
}

CQ_TEST(value_store_take_and_gather) {
  ValueStore s(TypeId::kUtf8);
  s.AppendString("ab", true);
  s.AppendString("", false);
  s.AppendString("", true);
  s.AppendString("cde", true);
  const std::vector<uint32_t> idx = {3, 1, 0, 0};
  CQ_EXPECT_EQ(ReadStr(s.Gather(idx.data(), 4)), (Strs{"cde", N, "ab", "ab"}));
  CQ_EXPECT_EQ(ReadStr(s.Take()), (Strs{"ab", N, "", "cde"}));
  CQ_EXPECT_EQ(s.size(), 0);
  ValueStore d(TypeId::kFloat64);
  for (int k = 0; k < 1000; ++k) d.AppendBits(std::bit_cast<uint64_t>(k * 0.5), k != 500);
  Column c = d.Take();
  CQ_EXPECT_EQ(c.null_count, 1);
  CQ_EXPECT_EQ(CountNulls(c), 1);
  CQ_EXPECT_EQ(c.f64()[999], 499.5);
  ValueStore b(TypeId::kBool);
  b.AppendBits(1, true);
  b.AppendBits(0, true);
  CQ_EXPECT_EQ(ReadBool(b.Take()), (Bools{true, false}));
  CQ_EXPECT(b.Take().length == 0);
}

CQ_TEST(hash_multimap_against_a_model) {
  // Few distinct hashes (long probe runs of equal hashes), inserts and removals interleaved so that
  // removed slots are reused and the table is rebuilt many times.
  HashMultimap<uint64_t> map;
  std::multiset<std::pair<uint64_t, uint64_t>> model;
  Rng rng(11);
  auto hash_of = [](uint64_t h) { return MixHash(h); };
  for (uint64_t step = 0; step < 20000; ++step) {
    const uint64_t h = hash_of(rng.Below(40));
    if (rng.Below(3) != 0 || model.empty()) {
      map.Insert(h, step);
      model.insert({h, step});
    } else {
      uint64_t got = 0;
      const bool found = map.Take(h, [](uint64_t) { return true; }, &got);
      auto it = model.lower_bound({h, 0});
      CQ_EXPECT_EQ(found, it != model.end() && it->first == h);
      if (found) CQ_EXPECT(model.erase({h, got}) == 1);
    }
    CQ_ASSERT(map.size() == model.size());
  }
  std::multiset<uint64_t> seen, expected;
  map.ForEach([&](uint64_t r) { seen.insert(r); });
  for (const auto& [h, r] : model) expected.insert(r);
  CQ_EXPECT(seen == expected);
  // Every entry of one hash, and a conditional take.
  const uint64_t h = hash_of(3);
  int64_t with = 0, expected_with = 0;
  map.ForEachWith(h, [&](uint64_t) { ++with; });
  for (const auto& [mh, r] : model) expected_with += mh == h;
  CQ_EXPECT_EQ(with, expected_with);
  uint64_t none = 0;
  CQ_EXPECT(!map.Take(h, [](uint64_t) { return false; }, &none));
  map.clear();
  CQ_EXPECT(map.empty());
}

}  // namespace
}  // namespace cq::test
