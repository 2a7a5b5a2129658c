#include "rows/row.h"

#include <new>

#include "batch/row_hash.h"

namespace cq {

void AppendKeyValue(TypeId type, const Value& v, std::string* out) {
  const bool valid = type != TypeId::kNull && v.valid;
  AppendKeyOf(type, valid, static_cast<uint64_t>(v.i),
              valid && type == TypeId::kUtf8 ? v.s->view() : std::string_view(), out);
}

RowLayout::RowLayout(const Schema& schema) {
  for (size_t c = 0; c < schema.size(); ++c) {
    types_.push_back(schema[c].type);
    if (schema[c].type == TypeId::kUtf8) strings_.push_back(static_cast<uint32_t>(c));
  }
  one_int_ = types_.size() == 1 && types_[0] == TypeId::kInt64;
}

bool ValueEqual(TypeId type, const Value& a, const Value& b) {
  if (!a.valid || !b.valid) return a.valid == b.valid;
  switch (type) {
    case TypeId::kInt64:
    case TypeId::kBool: return a.i == b.i;
    case TypeId::kFloat64: return a.d == b.d || (a.d != a.d && b.d != b.d);
    case TypeId::kUtf8: return a.s->view() == b.s->view();
    case TypeId::kNull: return true;
  }
  return true;
}

uint64_t ValueHash(TypeId type, const Value& v) {
  if (!v.valid || type == TypeId::kNull) return kNullHash;
  switch (type) {
    case TypeId::kInt64: return MixHash(static_cast<uint64_t>(v.i));
    case TypeId::kBool: return MixHash(v.i ? 1 : 2);
    case TypeId::kFloat64: return MixHash(KeyBitsOf(v.d));
    case TypeId::kUtf8: return HashBytes(v.s->view());
    case TypeId::kNull: break;
  }
  return 0;
}

uint64_t RowLayout::HashAny(const Value* v) const {
  uint64_t h = kHashSeed;
  for (size_t c = 0; c < types_.size(); ++c) h = MixHash(h * 31 + ValueHash(types_[c], v[c]));
  return h;
}

bool RowLayout::EqualOn(const std::vector<int>& cols, const Value* a, const Value* b) const {
  for (int c : cols)
    if (!ValueEqual(types_[c], a[c], b[c])) return false;
  return true;
}

uint64_t RowLayout::HashOn(const std::vector<int>& cols, const Value* v) const {
  uint64_t h = kHashSeed;
  for (int c : cols) h = MixHash(h * 31 + ValueHash(types_[c], v[c]));
  return h;
}

uint32_t RowStore::AddSlow(const Value* values) {
  const size_t w = layout_.width();
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(live_.size());
    live_.push_back(0);
  }
  Value* dst = Place(slot);
  if (w) std::memcpy(static_cast<void*>(dst), values, w * sizeof(Value));
  layout_.Retain(dst);
  live_[slot] = 1;
  ++live_count_;
  return slot;
}

Value* RowStore::Place(uint32_t slot) {
  const size_t w = layout_.width();
  while ((slot >> kChunkBits) >= chunks_.size()) chunks_.emplace_back(new Value[(kChunkMask + 1) * (w ? w : 1)]);
  return const_cast<Value*>(Get(slot));
}

void RowStore::Clear() {
  if (layout_.has_strings())
    for (uint32_t s = 0; s < live_.size(); ++s)
      if (live_[s]) layout_.Release(Get(s));
  chunks_.clear();
  free_.clear();
  live_.clear();
  live_count_ = 0;
}

}  // namespace cq
