#include "operators/aggregate_functions.h"

#include "batch/snapshot.h"

namespace cq::aggfn {

void ApplyMultiset(Multiset& set, Acc& acc, TypeId type, const Arg& v, int64_t sign, bool distinct) {
  // Copies of the value before and after; DISTINCT aggregates count and sum the values whose
  // copies go from 0 to 1 or back.
  int64_t after = 0;
  auto update = [&](auto& map, auto key) {
    auto [it, added] = map.try_emplace(std::move(key), 0);
    after = it->second += sign;
    if (after == 0) map.erase(it);
  };
  switch (type) {
    case TypeId::kInt64:
    case TypeId::kBool: update(set.ints, v.i); break;
    case TypeId::kFloat64: update(set.doubles, v.d == 0 ? 0.0 : v.d); break;
    case TypeId::kUtf8:
      if (auto it = set.strings.find(v.s); it != set.strings.end()) {
        after = it->second += sign;
        if (after == 0) set.strings.erase(it);
      } else {
        set.strings.emplace(std::string(v.s), sign);
        after = sign;
      }
      break;
    case TypeId::kNull: return;
  }
  if (!distinct || !(after == 0 || (after == 1 && sign > 0))) return;
  const int64_t d = after == 0 ? -1 : 1;  // a distinct value left or came
  acc.count += d;
  if (type == TypeId::kInt64) acc.isum += static_cast<__int128>(d) * v.i;
  if (type == TypeId::kFloat64) acc.dsum = acc.count == 0 ? 0 : acc.dsum + static_cast<double>(d) * v.d;
}

Result Extreme(bool min, TypeId type, const Multiset& set, std::string* s) {
  Result v;
  switch (type) {
    case TypeId::kInt64:
    case TypeId::kBool:
      if (set.ints.empty()) return v;
      v.bits = static_cast<uint64_t>(min ? set.ints.begin()->first : set.ints.rbegin()->first);
      break;
    case TypeId::kFloat64: {
      if (set.doubles.empty()) return v;
      const double x = min ? set.doubles.begin()->first : set.doubles.rbegin()->first;
      std::memcpy(&v.bits, &x, 8);
      break;
    }
    case TypeId::kUtf8:
      if (set.strings.empty()) return v;
      *s = min ? set.strings.begin()->first : set.strings.rbegin()->first;
      break;
    case TypeId::kNull: return v;
  }
  v.valid = true;
  return v;
}

namespace {
// Copies and counts stay far from int64's ends: a restored one is at most this.
constexpr int64_t kMaxCount = int64_t{1} << 62;
}  // namespace

void SnapshotSets(SnapshotWriter& w, const std::vector<Multiset>& sets) {
  for (const Multiset& m : sets) {
    w.U64(m.ints.size());
    for (const auto& [v, n] : m.ints) {
      w.I64(v);
      w.I64(n);
    }
    w.U64(m.doubles.size());
    for (const auto& [v, n] : m.doubles) {
      w.Pod(v);
      w.I64(n);
    }
    w.U64(m.strings.size());
    for (const auto& [v, n] : m.strings) {
      w.Str(v);
      w.I64(n);
    }
  }
}

// Into `sets`, sized by the caller: each value once, with a positive number of copies (a value
// whose copies reach 0 leaves its set).
void RestoreSets(SnapshotReader& r, std::vector<Multiset>& sets) {
  auto read = [&r](auto& map, auto read_value) {
    for (size_t n = r.Count(16, "a multiset's values"); n > 0; --n) {
      auto v = read_value();
      const int64_t copies = r.I64In(1, kMaxCount, "a value's copies in a multiset");
      CQ_SNAPSHOT_CHECK(map.emplace(std::move(v), copies).second, "a multiset holds a value twice");
    }
  };
  for (Multiset& m : sets) {
    read(m.ints, [&r] { return r.I64(); });
    read(m.doubles, [&r] { return r.Pod<double>(); });
    read(m.strings, [&r] { return r.Str(); });
  }
}

bool Restorable(const Acc& acc) {
  constexpr __int128 kMaxSum = static_cast<__int128>(1) << 126;
  return acc.count >= 0 && acc.count <= kMaxCount && acc.isum < kMaxSum && acc.isum > -kMaxSum;
}

}  // namespace cq::aggfn
