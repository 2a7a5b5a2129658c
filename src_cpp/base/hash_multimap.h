#pragma once
// A multimap from 64-bit hashes (of row values, of join keys) to row references, flat: one array
// of 16-byte slots (for an 8-byte reference) probed linearly, at most half full, no node per
// entry. For the operators that find earlier rows by value: the negative method pairs a negative
// tuple with its positive, a hash join probes the other side's rows. Entries with one hash sit in
// one probe run, so visiting them is a scan of adjacent slots; removal shifts the run back (no
// tombstones), so runs stay as short as the live entries make them, however many come and go.
// Callers compare the rows themselves: equal hashes do not mean equal values. Hashes must be well
// mixed (MixHash): the low bits pick the slot.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/serializer.h"

namespace cq {

template <typename Ref>
class HashMultimap {
 public:
  HashMultimap() { clear(); }

  size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  void clear() {
    slots_.assign(16, Slot{kEmpty, Ref{}});
    mask_ = 15;
    live_ = 0;
  }

  void Insert(uint64_t hash, const Ref& ref) {
    if ((live_ + 1) * 2 > slots_.size()) Grow();
    const uint64_t key = Key(hash);
    size_t pos = key & mask_;
    while (slots_[pos].key != kEmpty) pos = (pos + 1) & mask_;
    slots_[pos] = {key, ref};
    ++live_;
  }

  // f(ref) for every entry with this hash.
  template <typename F>
  void ForEachWith(uint64_t hash, F&& f) const {
    const uint64_t key = Key(hash);
    for (size_t pos = key & mask_; slots_[pos].key != kEmpty; pos = (pos + 1) & mask_)
      if (slots_[pos].key == key) f(slots_[pos].ref);
  }

  // Removes the first entry with this hash for which match(ref) holds, and returns its ref in
  // *out; false when there is none.
  template <typename Match>
  bool Take(uint64_t hash, Match&& match, Ref* out) {
    const uint64_t key = Key(hash);
    for (size_t pos = key & mask_; slots_[pos].key != kEmpty; pos = (pos + 1) & mask_) {
      if (slots_[pos].key != key || !match(slots_[pos].ref)) continue;
      *out = slots_[pos].ref;
      EraseAt(pos);
      return true;
    }
    return false;
  }

  // f(ref) for every entry, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key != kEmpty) f(s.ref);
  }

  // Engine snapshots: the slots as they are (probe runs depend on the insertion history, so the
  // table is not rebuilt). `valid(ref)` checks a restored reference.
  void Snapshot(ByteWriter& w) const { w.PodVec(slots_); }
  // The same, each reference written as map(ref) (an owner that compacts what refs point into).
  template <typename Map>
  void Snapshot(ByteWriter& w, Map&& map) const {
    std::vector<Slot> out = slots_;
    for (Slot& s : out)
      if (s.key != kEmpty) s.ref = map(s.ref);
    w.PodVec(out);
  }
  template <typename Valid>
  void Restore(ByteReader& r, Valid&& valid) {
    r.PodVec(slots_);
    const size_t n = slots_.size();
    CQ_SNAPSHOT_CHECK(n >= 16 && (n & (n - 1)) == 0, "a hash table's size is not a power of two");
    mask_ = n - 1;
    live_ = 0;
    bool ok = true;
    for (const Slot& s : slots_)
      if (s.key != kEmpty) {
        ++live_;
        ok = ok && valid(s.ref);
      }
    CQ_SNAPSHOT_CHECK(ok && live_ * 2 <= n, "a hash table refers to rows it does not hold");
  }
  // The same, where each entry's hash follows from what it refers to (hash_of(ref), called once
  // `valid` holds): every entry must sit under its hash, in the probe run of its home slot, or a
  // lookup for its row would not find it.
  template <typename Valid, typename HashOf>
  void Restore(ByteReader& r, Valid&& valid, HashOf&& hash_of) {
    Restore(r, valid);
    for (size_t pos = 0; pos < slots_.size(); ++pos) {
      const Slot& s = slots_[pos];
      if (s.key == kEmpty) continue;
      CQ_SNAPSHOT_CHECK(s.key == Key(hash_of(s.ref)), "a hash table holds an entry under another hash than its row's");
      for (size_t at = s.key & mask_; at != pos; at = (at + 1) & mask_)
        CQ_SNAPSHOT_CHECK(slots_[at].key != kEmpty, "a hash table holds an entry out of its probe run");
    }
  }

 private:
  // One hash value marks a free slot; a hash that happens to be it is stored as another value (a
  // collision like any other).
  static constexpr uint64_t kEmpty = 0;
  static uint64_t Key(uint64_t hash) { return hash != kEmpty ? hash : 1; }
  struct Slot {
    uint64_t key;
    Ref ref;
  };

  // Backward-shift deletion: entries after the hole move into it when the hole lies between
  // their home slot and where they are, so every entry stays reachable from its home slot.
  void EraseAt(size_t hole) {
    for (size_t j = (hole + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
      const size_t home = slots_[j].key & mask_;
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (!movable) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole].key = kEmpty;
    --live_;
  }

  // Entries move in probe-run order, from a free slot on (a run may wrap around the end), so
  // the entries of one hash keep their insertion order: ForEachWith visits a join key's rows in
  // the order they came, whatever the table's history (a replay rebuilding a join emits the
  // rows of an instant in the same order, which a [Rows n] window counts in).
  void Grow() {
    std::vector<Slot> old(slots_.size() * 2, Slot{kEmpty, Ref{}});
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    const size_t n = old.size();
    size_t first = 0;
    while (old[first].key != kEmpty) ++first;  // (at most half full: there is one)
    for (size_t k = 1; k <= n; ++k) {
      const Slot& s = old[(first + k) & (n - 1)];
      if (s.key == kEmpty) continue;
      size_t pos = s.key & mask_;
      while (slots_[pos].key != kEmpty) pos = (pos + 1) & mask_;
      slots_[pos] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t live_ = 0;
};

}  // namespace cq
