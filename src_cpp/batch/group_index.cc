#include "batch/group_index.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>

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

}  // namespace

GroupIndex::GroupIndex(std::vector<TypeId> key_types) : types_(std::move(key_types)) {
  fixed_ = types_.size() == 1 && FixedWidth(types_[0]);
  for (TypeId t : types_) stores_.emplace_back(t);
  slot_key_.assign(16, 0);
  slot_group_.assign(16, kEmpty);
  mask_ = 15;
}

void GroupIndex::Reserve() {
  if ((static_cast<uint64_t>(entries_) + 1) * 2 <= slot_group_.size()) return;
  std::vector<uint64_t> keys(slot_key_.size() * 2, 0);
  std::vector<uint32_t> groups(slot_group_.size() * 2, kEmpty);
  const uint64_t mask = keys.size() - 1;
  for (size_t s = 0; s < slot_group_.size(); ++s) {
    if (slot_group_[s] == kEmpty) continue;
    uint64_t pos = MixHash(slot_key_[s]) & mask;
    while (groups[pos] != kEmpty) pos = (pos + 1) & mask;
    keys[pos] = slot_key_[s];
    groups[pos] = slot_group_[s];
  }
  slot_key_ = std::move(keys);
  slot_group_ = std::move(groups);
  mask_ = mask;
}

uint32_t GroupIndex::NewGroup(const std::vector<Column>& keys, int64_t row) {
  if (groups_ == kEmpty - 1) throw std::length_error("more than 4 billion groups");
  for (size_t k = 0; k < keys.size(); ++k) stores_[k].Append(keys[k], row);
  return groups_++;
}

void GroupIndex::Map(const std::vector<Column>& keys, int64_t n, uint32_t* gids) {
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
  const std::vector<Column> one{key};
  const bool nulls = key.has_nulls();
  // Runs of one key are common (a burst from one source, a sorted input): the last lookup is
  // remembered.
  uint64_t last_key = 0;
  uint32_t last_group = kEmpty;
  for (int64_t i = 0; i < n; ++i) {
    if (nulls && !key.IsValid(i)) {
      if (null_group_ == kEmpty) null_group_ = NewGroup(one, i);
      gids[i] = null_group_;
      continue;
    }
    const uint64_t k = KeyBits(key, i);
    if (k == last_key && last_group != kEmpty) {
      gids[i] = last_group;
      continue;
    }
    uint64_t pos = MixHash(k) & mask_;
    uint32_t g;
    while ((g = slot_group_[pos]) != kEmpty && slot_key_[pos] != k) pos = (pos + 1) & mask_;
    if (g == kEmpty) {
      Reserve();
      pos = MixHash(k) & mask_;
      while (slot_group_[pos] != kEmpty) pos = (pos + 1) & mask_;
      g = NewGroup(one, i);
      slot_key_[pos] = k;
      slot_group_[pos] = g;
      ++entries_;
    }
    gids[i] = last_group = g;
    last_key = k;
  }
}

void GroupIndex::MapEncoded(const std::vector<Column>& keys, int64_t n, uint32_t* gids) {
  for (int64_t i = 0; i < n; ++i) {
    scratch_.clear();
    for (const Column& c : keys) AppendKey(c, i, &scratch_);
    const uint64_t h = std::hash<std::string_view>{}(scratch_);
    uint64_t pos = MixHash(h) & mask_;
    uint32_t g;
    for (;;) {
      g = slot_group_[pos];
      if (g == kEmpty) break;
      if (slot_key_[pos] == h) {
        const uint64_t at = encoded_at_[g], len = encoded_at_[g + 1] - at;
        if (len == scratch_.size() && std::memcmp(encoded_.data() + at, scratch_.data(), len) == 0) break;
      }
      pos = (pos + 1) & mask_;
    }
    if (g == kEmpty) {
      Reserve();
      pos = MixHash(h) & mask_;
      while (slot_group_[pos] != kEmpty) pos = (pos + 1) & mask_;
      g = NewGroup(keys, i);
      encoded_ += scratch_;
      encoded_at_.push_back(encoded_.size());
      slot_key_[pos] = h;
      slot_group_[pos] = g;
      ++entries_;
    }
    gids[i] = g;
  }
}

Column GroupIndex::GatherKeys(size_t k, const uint32_t* gids, int64_t n) const { return stores_[k].Gather(gids, n); }

}  // namespace cq
