#include "batch/row_hash.h"

#include <string_view>

namespace cq {

void AppendKeyOf(TypeId type, bool valid, uint64_t bits, std::string_view s, std::string* out) {
  if (type == TypeId::kNull || !valid) {
    out->push_back('\0');
    return;
  }
  out->push_back('\1');
  switch (type) {
    case TypeId::kInt64: out->append(reinterpret_cast<const char*>(&bits), 8); break;
    case TypeId::kFloat64: {
      double d;
      std::memcpy(&d, &bits, 8);
      const uint64_t v = KeyBitsOf(d);
      out->append(reinterpret_cast<const char*>(&v), 8);
      break;
    }
    case TypeId::kBool: out->push_back(bits ? '\1' : '\0'); break;
    case TypeId::kUtf8: {
      const uint32_t len = static_cast<uint32_t>(s.size());
      out->append(reinterpret_cast<const char*>(&len), 4);
      out->append(s);
      break;
    }
    case TypeId::kNull: break;
  }
}

void AppendKey(const Column& c, int64_t row, std::string* out) {
  const bool valid = c.type != TypeId::kNull && c.IsValid(row);
  uint64_t bits = 0;
  std::string_view s;
  if (valid) {
    switch (c.type) {
      case TypeId::kInt64:
      case TypeId::kFloat64: bits = c.values.as<const uint64_t>()[row]; break;
      case TypeId::kBool: bits = c.BoolAt(row); break;
      case TypeId::kUtf8: s = c.StrAt(row); break;
      case TypeId::kNull: break;
    }
  }
  AppendKeyOf(c.type, valid, bits, s, out);
}

void HashRows(std::span<const Column> columns, int64_t n, uint64_t* hashes) {
  for (int64_t i = 0; i < n; ++i) hashes[i] = kRowHashSeed;
  for (const Column& c : columns) {
    // A column at a time, its type decided once: the loops below are free of per-row switches.
    auto mix = [&](auto value_hash) {
      if (c.type == TypeId::kNull || c.has_nulls()) {
        for (int64_t i = 0; i < n; ++i) {
          const uint64_t v = c.type == TypeId::kNull || !c.IsValid(i) ? kNullHash : value_hash(i);
          hashes[i] = MixHash(hashes[i] * 31 + v);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) hashes[i] = MixHash(hashes[i] * 31 + value_hash(i));
      }
    };
    switch (c.type) {
      case TypeId::kInt64: mix([&](int64_t i) { return MixHash(static_cast<uint64_t>(c.i64()[i])); }); break;
      case TypeId::kFloat64: mix([&](int64_t i) { return MixHash(KeyBitsOf(c.f64()[i])); }); break;
      case TypeId::kBool: mix([&](int64_t i) { return MixHash(c.BoolAt(i) ? 1 : 2); }); break;
      case TypeId::kUtf8: mix([&](int64_t i) { return HashBytes(c.StrAt(i)); }); break;
      case TypeId::kNull: mix([](int64_t) { return kNullHash; }); break;
    }
  }
}

}  // namespace cq
