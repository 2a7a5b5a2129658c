#include "batch/value_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "base/serializer.h"

namespace cq {

void ValueStore::Append(const Column& c, int64_t row) {
  const bool ok = c.type != TypeId::kNull && c.IsValid(row);
  switch (type_) {
    case TypeId::kInt64:
    case TypeId::kFloat64: AppendBits(ok ? c.values.as<const uint64_t>()[row] : 0, ok); break;
    case TypeId::kBool: AppendBits(ok && c.BoolAt(row), ok); break;
    case TypeId::kUtf8: AppendString(ok ? c.StrAt(row) : std::string_view(), ok); break;
    case TypeId::kNull: AppendBits(0, false); break;
  }
}

void ValueStore::AppendString(std::string_view s, bool valid) {
  AppendValid(valid);
  if (valid) chars_.append(s);
  ends_.push_back(static_cast<int64_t>(chars_.size()));
}

Column ValueStore::Gather(const uint32_t* idx, int64_t n) const {
  Column out = Header(n);
  if (type_ == TypeId::kNull) return out;
  FillValidity(out, idx);
  FillValues(out, idx);
  return out;
}

Column ValueStore::Take() {
  Column out = Header(size());
  if (type_ != TypeId::kNull) {
    FillValidity(out, nullptr);
    if (type_ == TypeId::kInt64 || type_ == TypeId::kFloat64) out.values = bits_.Finish();  // already in place
    else FillValues(out, nullptr);
  }
  bits_.Finish();
  size_ = 0;
  valid_.clear();
  nulls_ = 0;
  ends_.clear();
  chars_.clear();
  return out;
}

Column ValueStore::Header(int64_t n) const {
  Column out;
  out.type = type_;
  out.length = n;
  if (type_ == TypeId::kNull) out.null_count = n;
  return out;
}

void ValueStore::FillValidity(Column& out, const uint32_t* idx) const {
  const int64_t n = out.length;
  auto at = [idx](int64_t k) -> int64_t { return idx ? idx[k] : k; };
  if (nulls_ == 0) return;
  int64_t nulls = 0;
  for (int64_t k = 0; k < n; ++k) nulls += !valid_[at(k)];
  if (nulls == 0) return;
  out.null_count = nulls;
  out.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
  for (int64_t k = 0; k < n; ++k)
    if (valid_[at(k)]) bitmap::Set(out.validity.data, k);
}

void ValueStore::FillValues(Column& out, const uint32_t* idx) const {
  const int64_t n = out.length;
  auto at = [idx](int64_t k) -> int64_t { return idx ? idx[k] : k; };
  switch (type_) {
    case TypeId::kInt64:
    case TypeId::kFloat64: {
      out.values = Buffer::Allocate(n * 8);
      uint64_t* v = out.values.as<uint64_t>();
      for (int64_t k = 0; k < n; ++k) v[k] = bits_[at(k)];
      break;
    }
    case TypeId::kBool:
      out.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
      for (int64_t k = 0; k < n; ++k)
        if (bits_[at(k)]) bitmap::Set(out.values.data, k);
      break;
    case TypeId::kUtf8: FillStrings(out, n, [&](int64_t k) { return String(at(k)); }); break;
    case TypeId::kNull: break;
  }
}

void ValueStore::Snapshot(ByteWriter& w) const {
  w.I64(size_);
  w.PodVec(bits_.data(), static_cast<size_t>(bits_.size()));
  w.PodVec(valid_);
  w.I64(nulls_);
  w.PodVec(ends_);
  w.Str(chars_);
}

void ValueStore::Restore(ByteReader& r) {
  size_ = r.I64();
  const std::vector<uint64_t> bits = r.PodVec<uint64_t>();
  bits_.Assign(bits.data(), static_cast<int64_t>(bits.size()));
  r.PodVec(valid_);
  nulls_ = r.I64();
  r.PodVec(ends_);
  chars_ = r.Str();
  bool ok =
      size_ >= 0 && nulls_ >= 0 && nulls_ <= size_ && (valid_.empty() || static_cast<int64_t>(valid_.size()) == size_);
  // The null count is the flags' (readers skip the flags when it is 0, and read them when not).
  int64_t nulls = 0;
  for (uint8_t v : valid_) nulls += v == 0, ok &= v <= 1;
  ok &= nulls == nulls_;
  if (type_ == TypeId::kUtf8) {
    ok &= static_cast<int64_t>(ends_.size()) == size_ && std::is_sorted(ends_.begin(), ends_.end()) &&
          (ends_.empty() || (ends_.front() >= 0 && static_cast<uint64_t>(ends_.back()) <= chars_.size()));
  } else {
    ok &= bits_.size() == size_;
  }
  CQ_SNAPSHOT_CHECK(ok, "a value store is inconsistent");
}
}  // namespace cq
