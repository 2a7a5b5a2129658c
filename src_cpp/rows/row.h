#pragma once
// The row format of loop regions (rows/ROWS.md). Inside a strongly connected part of the graph the
// DTS executor runs instant by instant, and an instant carries a row or two: there a batch's
// machinery (columns, buffers, selection, reference counts) costs far more than the row's work,
// so operators exchange single rows instead, as the paper's tuple-at-a-time engine did.
//
// A Row is a view: its values belong to whoever emits it and stay valid for the call that hands it
// on (emission is synchronous and depth-first). An operator that keeps a row copies its values
// into a RowStore.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "batch/row_hash.h"
#include "batch/types.h"
#include "kernels/value.h"
#include "lifetime/expiration_holder.h"
#include "time/time.h"

namespace cq {

class SnapshotWriter;
class SnapshotReader;

// A row on an edge, with the same time fields as a batch row (batch/batch.h):
//   stream row          sync = its timestamp
//   relation row        sync = start, other = end (Time::Infinity(): never), or holder = the
//                       expiration holder through which the end is fixed later
//   negative tuple      sync = the end, other = the start it ends (negative method)
struct Row {
  const Value* values = nullptr;
  Time sync;
  Time other = Time::Infinity();
  HolderId holder = kNoHolder;

  bool pending() const { return holder != kNoHolder; }
};

// What a schema means to rows: the column types, and which columns hold strings (the only values
// that need more than a copy of their 16 bytes).
class RowLayout {
 public:
  RowLayout() = default;
  explicit RowLayout(const Schema& schema);
  size_t width() const { return types_.size(); }
  const std::vector<TypeId>& types() const { return types_; }
  bool has_strings() const { return !strings_.empty(); }
  bool one_int() const { return one_int_; }  // a single int64 column

  void Retain(const Value* v) const {
    for (uint32_t c : strings_)
      if (v[c].valid) RetainString(v[c].s);
  }
  void Release(const Value* v) const {
    for (uint32_t c : strings_)
      if (v[c].valid) ReleaseString(v[c].s);
  }
  // Equal as set operations and ISTREAM's bag difference see values (batch/row_equal.h): NULL
  // equals NULL, NaN equals NaN, -0.0 equals 0.0.
  bool Equal(const Value* a, const Value* b) const {
    if (strings_.empty()) {
      // Identical bits and flags are equal values (the rows a bag difference cancels mostly are);
      // what differs is compared by type below (NULLs, -0.0 and 0.0, NaNs).
      size_t c = 0;
      const size_t n = types_.size();
      while (c < n && a[c].i == b[c].i && a[c].valid == b[c].valid) ++c;
      if (c == n) return true;
    }
    for (size_t c = 0; c < types_.size(); ++c) {
      const Value &x = a[c], &y = b[c];
      if (x.valid != y.valid) return false;
      if (!x.valid) continue;
      switch (types_[c]) {
        case TypeId::kFloat64:
          if (!(x.d == y.d || (x.d != x.d && y.d != y.d))) return false;
          break;
        case TypeId::kUtf8:
          if (x.s->view() != y.s->view()) return false;
          break;
        case TypeId::kNull: break;
        default:
          if (x.i != y.i) return false;
      }
    }
    return true;
  }
  // A hash consistent with Equal (and with batch/row_hash.h's key bits). A lone integer key (a
  // partition's or a group's, looked up for every row) is hashed inline, to the same value.
  uint64_t Hash(const Value* v) const {
    if (one_int_ && v[0].valid) return MixHash(kHashSeed * 31 + MixHash(static_cast<uint64_t>(v[0].i)));
    return HashAny(v);
  }
  // Some of the columns only (grouping and partition keys).
  bool EqualOn(const std::vector<int>& cols, const Value* a, const Value* b) const;
  uint64_t HashOn(const std::vector<int>& cols, const Value* v) const;

 private:
  static constexpr uint64_t kHashSeed = kRowHashSeed;
  uint64_t HashAny(const Value* v) const;

  std::vector<TypeId> types_;
  std::vector<uint32_t> strings_;
  bool one_int_ = false;  // a single int64 column
};

bool ValueEqual(TypeId type, const Value& a, const Value& b);
// Appends v as the same key bytes batch/row_hash.h's AppendKey writes for it in a column, so that
// an operator keyed by those bytes reads the same keys in either form.
void AppendKeyValue(TypeId type, const Value& v, std::string* out);
uint64_t ValueHash(TypeId type, const Value& v);

// A flat array in front of an operator's own index of keys (a group's, a partition's), for the
// common key of loops: one small non-negative integer (an id). A row's key is found with a load
// instead of a hash, a probe and a comparison; keys it does not cover (other types, NULL, negative
// or large numbers, or not seen yet) go to the index, which stays the truth and fills this in.
class DirectIntKeys {
 public:
  static constexpr int64_t kMaxKey = 1 << 16;  // the array's bound: 256 KiB at most
  DirectIntKeys() = default;
  // For keys of `layout` (used only when it is a single int64 column).
  explicit DirectIntKeys(const RowLayout& layout) : on_(layout.one_int()) {}
  // The id of the key whose first value is `k`: from the array, or else from index() (which
  // finds or adds it), remembered when the array covers k.
  template <typename Index>
  uint32_t FindOr(const Value& k, Index&& index) {
    if (!on_) return index();
    const uint64_t i = static_cast<uint64_t>(k.i);
    if (k.valid && i < ids_.size() && ids_[i] != kNone) return ids_[i];
    const uint32_t id = index();
    if (k.valid && k.i >= 0 && k.i < kMaxKey) {
      if (i >= ids_.size()) ids_.resize(std::min<size_t>(std::max<size_t>(i + 1, ids_.size() * 2), kMaxKey), kNone);
      ids_[i] = id;
    }
    return id;
  }
  void clear() { ids_.clear(); }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  bool on_ = false;
  std::vector<uint32_t> ids_;
};

// Rows an operator keeps (waiting rows, alive tuples): values copied in, strings retained, one
// slot per row, slots reused. Slots live in fixed chunks that never move, so a kept row's values
// may be handed on (emitted) while more rows are added — a loop can come back into the operator
// during the emission.
class RowStore {
 public:
  RowStore() = default;
  explicit RowStore(const RowLayout& layout) : layout_(layout) {}
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;
  RowStore(RowStore&&) = default;
  RowStore& operator=(RowStore&&) = default;
  ~RowStore() { Clear(); }

  const RowLayout& layout() const { return layout_; }
  uint32_t Add(const Value* values) {
    if (free_.empty() || layout_.has_strings()) return AddSlow(values);
    // The common path: a slot to reuse, no string to retain.
    const uint32_t slot = free_.back();
    free_.pop_back();
    Value* dst = const_cast<Value*>(Get(slot));
    for (size_t c = 0, w = layout_.width(); c < w; ++c) dst[c] = values[c];  // (rows are narrow: no memcpy call)
    live_[slot] = 1;
    ++live_count_;
    return slot;
  }
  const Value* Get(uint32_t slot) const {
    return chunks_[slot >> kChunkBits].get() + (slot & kChunkMask) * layout_.width();
  }
  void Remove(uint32_t slot) {
    if (layout_.has_strings()) layout_.Release(Get(slot));
    live_[slot] = 0;
    --live_count_;
    free_.push_back(slot);
  }
  void Clear();
  size_t size() const { return live_count_; }
  bool live(uint32_t slot) const { return slot < live_.size() && live_[slot]; }
  // Engine snapshots: the slots in use and their rows (as one batch of `schema`), and the free
  // list, so that a restored store hands out the same slots.
  void Snapshot(SnapshotWriter& w, const std::shared_ptr<const Schema>& schema) const;
  void Restore(SnapshotReader& r, const Schema& schema);
  // Slots in use, in slot order.
  template <typename F>
  void ForEach(F&& f) const {
    for (uint32_t s = 0; s < live_.size(); ++s)
      if (live_[s]) f(s);
  }

 private:
  uint32_t AddSlow(const Value* values);
  Value* Place(uint32_t slot);  // the slot's values, its chunk made if needed
  static constexpr uint32_t kChunkBits = 8;
  static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
  RowLayout layout_;
  std::vector<std::unique_ptr<Value[]>> chunks_;
  std::vector<uint32_t> free_;
  std::vector<uint8_t> live_;
  size_t live_count_ = 0;
};

// A few values on the stack (most loop schemas are narrow), more on the heap.
class ValueBuffer {
 public:
  explicit ValueBuffer(size_t n) {
    if (n > kFew) {
      many_.reset(new Value[n]);
      data_ = many_.get();
    } else {
      data_ = few_;
    }
  }
  Value* data() { return data_; }
  Value& operator[](size_t i) { return data_[i]; }

 private:
  static constexpr size_t kFew = 8;
  Value few_[kFew];
  std::unique_ptr<Value[]> many_;
  Value* data_;
};

}  // namespace cq
