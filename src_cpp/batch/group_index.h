#pragma once
// Dense group ids for the rows of key columns (GROUP BY), a batch at a time. Ids are 0, 1, 2, ...
// in order of first appearance and never change, so a caller keeps per-group state in flat arrays
// indexed by id and carries an id per row instead of the key.
//
// One flat open-addressing table (linear probing, at most half full). A single key of fixed width
// (int64, double, bool) is probed by its 8 bytes, without building anything per row; any other
// key (several columns, strings) by its encoding as AppendKey writes it, kept in one arena. A
// single int64 key over a small range (ids, categories) skips hashing altogether: its group sits
// at key - base in a flat array. Keys compare as grouping keys: NULL is one key, -0.0 = 0.0, NaN = NaN.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "batch/column.h"
#include "batch/row_hash.h"
#include "batch/value_store.h"

namespace cq {

class ByteWriter;
class ByteReader;

class GroupIndex {
 public:
  explicit GroupIndex(std::vector<TypeId> key_types);

  // gids[i] = the group of row i of `keys` (compact, `n` rows); unseen keys get new ids.
  void Map(std::span<const Column> keys, int64_t n, uint32_t* gids);
  // One key value held outside a column (a row of a loop): NULL unless `valid`; else its 8 bytes
  // `bits` (int64, a double's bits, a bool as 0/1) or its string `str`.
  struct KeyView {
    uint64_t bits = 0;
    std::string_view str;
    bool valid = false;
  };
  // The group of one row's keys, a KeyView per key column: the id Map gives the same keys (the two
  // may be mixed, a row form and a batch form sharing one index). Unseen keys get a new id.
  uint32_t MapOne(std::span<const KeyView> keys) {
    if (direct_ && keys[0].valid) {  // (direct_: one int64 key) the common key of loops: a load
      const uint64_t d = keys[0].bits - static_cast<uint64_t>(direct_base_);
      if (d < direct_groups_.size() && direct_groups_[d] != kEmpty) return direct_groups_[d];
    }
    return MapOneSlow(keys);
  }
  uint32_t size() const { return groups_; }
  // Key column k of the groups gids[0..n), as a compact column.
  Column GatherKeys(size_t k, const uint32_t* gids, int64_t n) const;
  // Key column k's value of group g.
  const ValueStore& keys(size_t k) const { return stores_[k]; }

  // Engine snapshots: the keys and the table as they are (group ids must not change).
  void Snapshot(ByteWriter& w) const;
  void Restore(ByteReader& r);

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  void MapFixed(const Column& key, int64_t n, uint32_t* gids);
  // A single int64 key whose values span at most kDirectMax: the group is looked up at
  // key - base in a flat array, no hashing. False when the batch leaves that range (the keys
  // then move to the hash table).
  bool MapDirect(const Column& key, int64_t n, uint32_t* gids);
  void MapEncoded(std::span<const Column> keys, int64_t n, uint32_t* gids);
  uint32_t NewGroup(std::span<const Column> keys, int64_t row);
  uint32_t MapOneSlow(std::span<const KeyView> keys);
  // The group of a fixed-width key's bits (KeyBits), kEmpty when there is none.
  uint32_t FindFixed(uint64_t k) const {
    uint64_t pos = MixHash(k) & mask_;
    while (slots_[pos].group != kEmpty && slots_[pos].key != k) pos = (pos + 1) & mask_;
    return slots_[pos].group;
  }
  // The group whose key encoding (AppendKey's) is scratch_, with hash h; kEmpty when none.
  uint32_t FindEncoded(uint64_t h) const;
  // Adds an entry, rehashing first when the table would be more than half full.
  void Insert(uint64_t key, uint32_t group);
  void Reserve();

  std::vector<TypeId> types_;
  bool fixed_;  // one key of fixed width: probed by value
  uint32_t groups_ = 0;
  uint32_t null_group_ = kEmpty;    // fixed: the group of the NULL key
  std::vector<ValueStore> stores_;  // the keys, a column at a time, by group id
  // The table: fixed, the key's bits; otherwise the hash of the key's encoding.
  struct Slot {
    uint64_t key = 0;
    uint32_t group = kEmpty;
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  uint32_t entries_ = 0;
  static constexpr uint64_t kDirectMax = 1 << 16;
  bool direct_ = false;
  std::vector<uint32_t> direct_groups_;
  int64_t direct_base_ = 0;
  // Encoded keys: group g's encoding is encoded_[encoded_at_[g], encoded_at_[g + 1]).
  std::string encoded_;
  std::vector<uint64_t> encoded_at_{0};
  std::string scratch_;
};

}  // namespace cq
