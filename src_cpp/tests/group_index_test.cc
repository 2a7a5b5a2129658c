// GroupIndex (dense group ids: the direct-indexed table for small int64 ranges, its growth in both
// directions and its hand-over to hashing, fixed-width and encoded keys, NULL/-0.0/NaN as grouping
// keys, keys gathered back out), ValueStore and HashMultimap (removal, reuse of removed slots,
// rebuilds), each checked against a std::map / std::multimap model.
#include <bit>
#include <cmath>
#include <deque>
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

CQ_TEST(group_index_small_int_range) { CheckInt64Groups({{3, 1, 3, N, 2, 1, N}, {2, 2, 9}, {}}); }

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

// One key value as MapOne takes it (a row of a loop holds its keys one at a time).
GroupIndex::KeyView View(TypeId type, const Column& c, int64_t i) {
  GroupIndex::KeyView v;
  v.valid = c.type != TypeId::kNull && c.IsValid(i);
  if (!v.valid) return v;
  if (type == TypeId::kUtf8) v.str = c.StrAt(i);
  else if (type == TypeId::kBool) v.bits = c.BoolAt(i);
  else v.bits = c.values.as<const uint64_t>()[i];
  return v;
}

// Rows mapped one at a time (MapOne) and a batch at a time (Map), in random turns, into one index
// get the ids a second index that maps everything a batch at a time gives; the keys gather back.
void CheckMapOneAgreesWithMap(const std::vector<TypeId>& types, const std::vector<std::vector<Column>>& batches,
                              uint64_t seed) {
  GroupIndex mixed(types), batched(types);
  Rng rng(seed);
  for (const std::vector<Column>& keys : batches) {
    const int64_t n = types.empty() ? 3 : keys[0].length;
    std::vector<uint32_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    batched.Map(keys, n, want.data());
    for (int64_t i = 0; i < n;) {
      const int64_t run = std::min<int64_t>(n - i, 1 + rng.Below(4));
      if (rng.Below(2) == 0) {
        std::vector<Column> slice;
        for (const Column& c : keys) slice.push_back(SliceColumn(c, i, run));
        mixed.Map(slice, run, got.data() + i);
      } else {
        for (int64_t k = i; k < i + run; ++k) {
          std::vector<GroupIndex::KeyView> views;
          for (size_t c = 0; c < types.size(); ++c) views.push_back(View(types[c], keys[c], k));
          got[static_cast<size_t>(k)] = mixed.MapOne(views);
        }
      }
      i += run;
    }
    CQ_EXPECT_EQ(got, want);
    CQ_EXPECT_EQ(mixed.size(), batched.size());
    for (size_t c = 0; c < types.size(); ++c) {
      const Column a = mixed.GatherKeys(c, got.data(), n), b = batched.GatherKeys(c, want.data(), n);
      switch (types[c]) {
        case TypeId::kUtf8: CQ_EXPECT_EQ(ReadStr(a), ReadStr(b)); break;
        case TypeId::kBool: CQ_EXPECT_EQ(ReadBool(a), ReadBool(b)); break;
        default: CQ_EXPECT_EQ(ReadI64(a), ReadI64(b));  // (a double's bits)
      }
    }
  }
}

CQ_TEST(group_index_one_row_at_a_time_gives_the_batch_ids) {
  const double nan = std::nan("");
  // One int64 key: the direct table, its growth, and its hand-over to hashing (70000).
  CheckMapOneAgreesWithMap({TypeId::kInt64},
                           {{I64({3, 1, 3, N, 2})}, {I64({-5, 300, 2, N, 3})}, {I64({70000, 1, -5, 70000})}}, 1);
  CheckMapOneAgreesWithMap({TypeId::kFloat64}, {{F64({0.0, -0.0, nan, N, 1.5})}, {F64({1.5, nan, 0.0, 2.25, N})}}, 2);
  CheckMapOneAgreesWithMap({TypeId::kBool}, {{Bool({true, N, false})}, {Bool({false, true, N, true})}}, 3);
  CheckMapOneAgreesWithMap({TypeId::kUtf8, TypeId::kInt64, TypeId::kBool},
                           {{Str({"x", "", N, "x"}), I64({1, 1, 1, 2}), Bool({true, N, true, true})},
                            {Str({"", "x", "xy", N}), I64({1, 2, N, 1}), Bool({N, true, false, true})}},
                           4);
  CheckMapOneAgreesWithMap({}, {{}, {}}, 5);
  Rng rng(9);
  std::vector<std::vector<Column>> many;
  for (int b = 0; b < 6; ++b) {
    I64s keys;
    for (int k = 0; k < 100; ++k)
      keys.push_back(rng.Below(10) == 0 ? std::nullopt : std::optional<int64_t>(rng.Below(400) * (b + 1) - 300));
    many.push_back({I64(keys)});
  }
  for (uint64_t seed = 0; seed < 5; ++seed) CheckMapOneAgreesWithMap({TypeId::kInt64}, many, seed);
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

CQ_TEST(hash_multimap_visits_a_hash_in_insertion_order) {
  // A join key's rows come out of ForEachWith in the order they were inserted, whatever the
  // removals and rebuilds in between: a replay rebuilding a join from scratch must emit an
  // instant's pairs in the order the long-lived join did. Hashes whose home is the table's last
  // slot (all low bits set) make probe runs wrap around its end, which a rebuild once split.
  Rng rng(5);
  for (int round = 0; round < 20; ++round) {
    HashMultimap<uint64_t> map;
    std::map<uint64_t, std::deque<uint64_t>> model;
    const uint64_t hashes[] = {0xFF, 0xFFFF, 0x7, 0xF0F, 0x123456789ULL, 0x3F};
    for (uint64_t step = 0; step < 3000; ++step) {
      const uint64_t h = hashes[rng.Below(6)];
      if (rng.Below(4) != 0 || model[h].empty()) {
        map.Insert(h, step);
        model[h].push_back(step);
      } else {
        uint64_t got = 0;
        CQ_ASSERT(map.Take(h, [](uint64_t) { return true; }, &got));
        CQ_EXPECT_EQ(got, model[h].front());  // (the first of the run: the oldest)
        model[h].pop_front();
      }
      if (step % 97 == 0 || step == 2999) {
        for (const auto& [hash, rows] : model) {
          std::vector<uint64_t> seen;
          map.ForEachWith(hash, [&](uint64_t r) { seen.push_back(r); });
          CQ_ASSERT(seen == std::vector<uint64_t>(rows.begin(), rows.end()));
        }
      }
    }
  }
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
