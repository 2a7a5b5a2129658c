#include "batch/group_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "base/serializer.h"
#include "batch/row_hash.h"

namespace cq {

namespace {

bool FixedWidth(TypeId t) { return t == TypeId::kInt64 || t == TypeId::kFloat64 || t == TypeId::kBool; }

// A fixed-width key's 8 bytes, equal exactly when the keys are equal as grouping keys.
inline uint64_t KeyBits(const Column& c, int64_t row) {
  switch (c.type) {
    case TypeId::kInt64: return static_cast<uint64_t>(c.i64()[row]);
    case TypeId::kFloat64: return KeyBitsOf(c.f64()[row]);
    case TypeId::kBool: return c.BoolAt(row) ? 1 : 0;
    default: return 0;
  }
}

// A one-row column holding `v`.
Column OneValue(TypeId type, const GroupIndex::KeyView& v) {
  ValueStore one(type);
  const bool valid = v.valid && type != TypeId::kNull;
  if (type == TypeId::kUtf8) one.AppendString(v.str, valid);
  else one.AppendBits(v.bits, valid);
  return one.Take();
}

}  // namespace

GroupIndex::GroupIndex(std::vector<TypeId> key_types) : types_(std::move(key_types)) {
  fixed_ = types_.size() == 1 && FixedWidth(types_[0]);
  direct_ = types_.size() == 1 && types_[0] == TypeId::kInt64;
  for (TypeId t : types_) stores_.emplace_back(t);
  slots_.resize(16);
  mask_ = 15;
}

void GroupIndex::Reserve() {
  if ((static_cast<uint64_t>(entries_) + 1) * 2 <= slots_.size()) return;
  std::vector<Slot> bigger(slots_.size() * 2);
  const uint64_t mask = bigger.size() - 1;
  for (const Slot& s : slots_) {
    if (s.group == kEmpty) continue;
    uint64_t pos = MixHash(s.key) & mask;
    while (bigger[pos].group != kEmpty) pos = (pos + 1) & mask;
    bigger[pos] = s;
  }
  slots_ = std::move(bigger);
  mask_ = mask;
}

void GroupIndex::Insert(uint64_t key, uint32_t group) {
  Reserve();
  uint64_t pos = MixHash(key) & mask_;
  while (slots_[pos].group != kEmpty) pos = (pos + 1) & mask_;
  slots_[pos] = {key, group};
  ++entries_;
}

uint32_t GroupIndex::NewGroup(std::span<const Column> keys, int64_t row) {
  if (groups_ == kEmpty - 1) throw std::length_error("more than 4 billion groups");
  for (size_t k = 0; k < keys.size(); ++k) stores_[k].Append(keys[k], row);
  return groups_++;
}

void GroupIndex::Map(std::span<const Column> keys, int64_t n, uint32_t* gids) {
  if (n == 0) return;
  if (keys.empty()) {  // no GROUP BY: one group
    if (groups_ == 0) NewGroup(keys, 0);
    std::fill(gids, gids + n, 0u);
    return;
  }
  if (fixed_) MapFixed(keys[0], n, gids);
  else MapEncoded(keys, n, gids);
}

void GroupIndex::MapFixed(const Column& key, int64_t n, uint32_t* gids) {
  if (direct_ && MapDirect(key, n, gids)) return;
  const std::span<const Column> one(&key, 1);
  const bool nulls = key.has_nulls();
  for (int64_t i = 0; i < n; ++i) {
    if (nulls && !key.IsValid(i)) {
      if (null_group_ == kEmpty) null_group_ = NewGroup(one, i);
      gids[i] = null_group_;
      continue;
    }
    const uint64_t k = KeyBits(key, i);
    uint32_t g = FindFixed(k);
    if (g == kEmpty) {
      g = NewGroup(one, i);
      Insert(k, g);
    }
    gids[i] = g;
  }
}

bool GroupIndex::MapDirect(const Column& key, int64_t n, uint32_t* gids) {
  const int64_t* v = key.i64();
  const bool nulls = key.has_nulls();
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  if (nulls) {
    for (int64_t i = 0; i < n; ++i)
      if (key.IsValid(i)) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
  }
  // Bounds in 128 bits: keys may sit anywhere in int64, up to its ends.
  using Wide = __int128;
  const Wide size = static_cast<Wide>(direct_groups_.size()), old_base = direct_base_;
  if (lo <= hi && (size == 0 || lo < old_base || hi >= old_base + size)) {
    // The table grows (at least doubling, so that a drifting range costs amortized O(1) a key),
    // with its slack on the side it had to grow; past kDirectMax slots, the keys move to the hash
    // table for good.
    Wide low = lo, high = hi;
    if (size) low = std::min(low, old_base), high = std::max(high, old_base + size - 1);
    const Wide span = high - low + 1;
    if (span > static_cast<Wide>(kDirectMax)) {
      direct_ = false;
      for (Wide d = 0; d < size; ++d)
        if (direct_groups_[d] != kEmpty) Insert(static_cast<uint64_t>(old_base + d), direct_groups_[d]);
      direct_groups_ = {};
      return false;
    }
    const Wide grown = std::max<Wide>(span, std::min<Wide>(std::max<Wide>(2 * size, 64), kDirectMax));
    Wide base = size && lo < old_base ? high - grown + 1 : low;
    base = std::clamp<Wide>(base, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max() - grown + 1);
    std::vector<uint32_t> table(static_cast<size_t>(grown), kEmpty);
    for (Wide d = 0; d < size; ++d) table[static_cast<size_t>(old_base + d - base)] = direct_groups_[d];
    direct_groups_ = std::move(table);
    direct_base_ = static_cast<int64_t>(base);
  }
  const std::span<const Column> one(&key, 1);
  for (int64_t i = 0; i < n; ++i) {
    if (nulls && !key.IsValid(i)) {
      if (null_group_ == kEmpty) null_group_ = NewGroup(one, i);
      gids[i] = null_group_;
      continue;
    }
    uint32_t& g = direct_groups_[v[i] - direct_base_];
    if (g == kEmpty) g = NewGroup(one, i);
    gids[i] = g;
  }
  return true;
}

void GroupIndex::MapEncoded(std::span<const Column> keys, int64_t n, uint32_t* gids) {
  for (int64_t i = 0; i < n; ++i) {
    scratch_.clear();
    for (const Column& c : keys) AppendKey(c, i, &scratch_);
    const uint64_t h = std::hash<std::string_view>{}(scratch_);
    uint32_t g = FindEncoded(h);
    if (g == kEmpty) {
      g = NewGroup(keys, i);
      encoded_ += scratch_;
      encoded_at_.push_back(encoded_.size());
      Insert(h, g);
    }
    gids[i] = g;
  }
}

uint32_t GroupIndex::FindEncoded(uint64_t h) const {
  for (uint64_t pos = MixHash(h) & mask_;; pos = (pos + 1) & mask_) {
    const uint32_t g = slots_[pos].group;
    if (g == kEmpty) return g;
    if (slots_[pos].key != h) continue;
    const uint64_t at = encoded_at_[g], len = encoded_at_[g + 1] - at;
    if (len == scratch_.size() && std::memcmp(encoded_.data() + at, scratch_.data(), len) == 0) return g;
  }
}

uint32_t GroupIndex::MapOneSlow(std::span<const KeyView> keys) {
  // Found here, a key costs what a batch's row costs; a new key (or, for a direct table, one outside
  // it, or NULL) goes through Map as a one-row batch, so that ids are given out and tables grow
  // one way only.
  if (keys.empty() && groups_ > 0) return 0;  // no GROUP BY: one group
  // (A direct table holds valid keys only: a NULL key is looked up as in a fixed-width table.)
  if (!keys.empty() && (!direct_ || !keys[0].valid)) {
    uint32_t g;
    if (fixed_) {
      const KeyView& k = keys[0];
      g = !k.valid ? null_group_
                   : FindFixed(types_[0] == TypeId::kBool      ? k.bits != 0
                               : types_[0] == TypeId::kFloat64 ? KeyBitsOf(std::bit_cast<double>(k.bits))
                                                               : k.bits);
    } else {
      scratch_.clear();
      for (size_t c = 0; c < keys.size(); ++c)
        AppendKeyOf(types_[c], keys[c].valid, keys[c].bits, keys[c].str, &scratch_);
      g = FindEncoded(std::hash<std::string_view>{}(scratch_));
    }
    if (g != kEmpty) return g;
  }
  std::vector<Column> columns;
  for (size_t c = 0; c < keys.size(); ++c) columns.push_back(OneValue(types_[c], keys[c]));
  uint32_t g;
  Map(columns, 1, &g);
  return g;
}

Column GroupIndex::GatherKeys(size_t k, const uint32_t* gids, int64_t n) const { return stores_[k].Gather(gids, n); }

void GroupIndex::Snapshot(ByteWriter& w) const {
  w.U32(groups_);
  w.U32(null_group_);
  for (const ValueStore& s : stores_) s.Snapshot(w);
  w.PodVec(slots_);
  w.U64(mask_);
  w.U32(entries_);
  w.Bool(direct_);
  w.PodVec(direct_groups_);
  w.I64(direct_base_);
  w.Str(encoded_);
  w.PodVec(encoded_at_);
}

void GroupIndex::Restore(ByteReader& r) {
  groups_ = r.U32();
  null_group_ = r.U32();
  for (ValueStore& s : stores_) s.Restore(r);
  r.PodVec(slots_);
  mask_ = r.U64();
  entries_ = r.U32();
  direct_ = r.Bool();
  r.PodVec(direct_groups_);
  direct_base_ = r.I64();
  encoded_ = r.Str();
  r.PodVec(encoded_at_);
  bool ok = !slots_.empty() && mask_ == slots_.size() - 1 && (slots_.size() & mask_) == 0 &&
            entries_ * uint64_t{2} <= slots_.size() && (null_group_ == kEmpty || null_group_ < groups_);
  for (const ValueStore& s : stores_) ok &= s.size() == groups_;
  // Probes stop at a free slot: the table holds as many entries as it says (at most half of it).
  uint64_t used = 0;
  for (const Slot& s : slots_) ok &= s.group == kEmpty || s.group < groups_, used += s.group != kEmpty;
  ok &= used == entries_;
  ok &= direct_groups_.size() <= kDirectMax && (direct_ || direct_groups_.empty());
  for (uint32_t g : direct_groups_) ok &= g == kEmpty || g < groups_;
  if (!fixed_) {
    ok &= !encoded_at_.empty() && encoded_at_.front() == 0 && std::is_sorted(encoded_at_.begin(), encoded_at_.end()) &&
          encoded_at_.back() == encoded_.size() && (stores_.empty() || encoded_at_.size() == groups_ + size_t{1});
  }
  CQ_SNAPSHOT_CHECK(ok, "a group index is inconsistent");
}
}  // namespace cq
