#pragma once
// Values of one column type kept one at a time — 8 bytes each (int64, double bits, bool as 0/1) or
// utf8 bytes in one arena — and turned into compact columns: all of them in order (Take, which
// hands the 8-byte values over without a copy), or some of them by index (Gather). For operators
// that make their output a value at a time (aggregate results) or keep values by a dense id
// (group keys).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batch/column.h"

namespace cq {

class ByteWriter;
class ByteReader;

class ValueStore {
 public:
  explicit ValueStore(TypeId type) : type_(type) {}

  TypeId type() const { return type_; }
  int64_t size() const { return size_; }
  void Reserve(int64_t n) { bits_.Reserve(n); }

  // Row `row` of `c` (of this store's type, or kNull).
  void Append(const Column& c, int64_t row);
  // int64, double (its bits) or bool (0/1). Always inlined: it is an aggregate's per-result store,
  // and GCC stopped inlining it once the aggregate had more callers.
  [[gnu::always_inline]] void AppendBits(uint64_t bits, bool valid) {
    AppendValid(valid);
    bits_.Append(valid ? bits : 0);
  }
  void AppendString(std::string_view s, bool valid);

  // Value i, one at a time (a row of a loop reads a group's key): whether it is valid, its 8 bytes
  // (int64, double bits, bool as 0/1), or its string.
  bool IsValid(int64_t i) const { return nulls_ == 0 || valid_[static_cast<size_t>(i)]; }
  uint64_t Bits(int64_t i) const { return bits_[i]; }
  std::string_view String(int64_t i) const {
    const int64_t from = i == 0 ? 0 : ends_[static_cast<size_t>(i - 1)];
    return {chars_.data() + from, static_cast<size_t>(ends_[static_cast<size_t>(i)] - from)};
  }

  // Values idx[0..n), in that order, as a compact column.
  Column Gather(const uint32_t* idx, int64_t n) const;
  // Every value, in order; the store is empty afterwards.
  Column Take();

  // Engine snapshots: the values kept so far (the store's type comes from the plan).
  void Snapshot(ByteWriter& w) const;
  void Restore(ByteReader& r);

 private:
  // Pieces of a column of values idx[0..n) (idx == nullptr: all values, in order).
  Column Header(int64_t n) const;
  void FillValidity(Column& out, const uint32_t* idx) const;
  void FillValues(Column& out, const uint32_t* idx) const;

  void AppendValid(bool valid) {
    if (valid && nulls_ == 0) {  // no NULL so far: nothing is kept per value
      ++size_;
      return;
    }
    AppendValidSlow(valid);
  }
  [[gnu::noinline]] void AppendValidSlow(bool valid) {
    if (!valid && nulls_ == 0) valid_.assign(static_cast<size_t>(size_), 1);
    valid_.push_back(valid);
    nulls_ += !valid;
    ++size_;
  }

  TypeId type_;
  int64_t size_ = 0;
  BufferBuilder<uint64_t> bits_;
  std::vector<uint8_t> valid_;  // one a value, from the first NULL on (all valid until then)
  int64_t nulls_ = 0;
  std::vector<int64_t> ends_;  // utf8: where each value's bytes end in chars_
  std::string chars_;
};

}  // namespace cq
