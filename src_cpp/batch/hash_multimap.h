#pragma once
// A multimap from 64-bit hashes (of row values, of join keys) to row references, flat: one array
// of 16-byte slots (for an 8-byte reference) probed linearly, at most half full counting removed
// slots, no node per entry. For the operators that find earlier rows by value: the negative method
// pairs a negative tuple with its positive, a hash join probes the other side's rows. Entries with
// one hash sit in one probe run, so visiting them is a scan of adjacent slots. Callers compare the
// rows themselves: equal hashes do not mean equal values. Hashes must be well mixed (MixHash).
#include <cstddef>
#include <cstdint>
#include <vector>

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
    live_ = removed_ = 0;
  }

  void Insert(uint64_t hash, const Ref& ref) {
    if ((live_ + removed_ + 1) * 2 > slots_.size()) Rebuild(live_ * 4 + 2 > slots_.size() ? slots_.size() * 2 : slots_.size());
    const uint64_t key = Key(hash);
    size_t pos = key & mask_;
    while (slots_[pos].key > kRemoved) pos = (pos + 1) & mask_;
    removed_ -= slots_[pos].key == kRemoved;
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
      Slot& s = slots_[pos];
      if (s.key != key || !match(s.ref)) continue;
      *out = s.ref;
      s.key = kRemoved;
      --live_;
      ++removed_;
      return true;
    }
    return false;
  }

  // Removes every entry for which drop(ref) holds.
  template <typename Drop>
  void RemoveIf(Drop&& drop) {
    for (Slot& s : slots_)
      if (s.key > kRemoved && drop(s.ref)) {
        s.key = kRemoved;
        --live_;
        ++removed_;
      }
  }

  // f(ref) for every entry, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key > kRemoved) f(s.ref);
  }

 private:
  // Two hash values mark free slots; a hash that happens to be one of them is stored as another
  // value (a collision like any other).
  static constexpr uint64_t kEmpty = 0, kRemoved = 1;
  static uint64_t Key(uint64_t hash) { return hash > kRemoved ? hash : hash + 2; }
  struct Slot {
    uint64_t key;
    Ref ref;
  };

  // Rebuilt with `n` slots (a power of two), without the removed ones.
  void Rebuild(size_t n) {
    std::vector<Slot> old(n, Slot{kEmpty, Ref{}});
    old.swap(slots_);
    mask_ = n - 1;
    removed_ = 0;
    for (const Slot& s : old) {
      if (s.key <= kRemoved) continue;
      size_t pos = s.key & mask_;
      while (slots_[pos].key != kEmpty) pos = (pos + 1) & mask_;
      slots_[pos] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t live_ = 0;
  size_t removed_ = 0;
};

}  // namespace cq
