#include "batch/column.h"

#include <charconv>
#include <cstring>
#include <stdexcept>

#include "base/few_on_stack.h"

namespace cq {

namespace {

Buffer GatherValidity(const Column& col, const uint32_t* idx, int64_t n, int64_t* null_count) {
  *null_count = 0;
  if (!col.has_nulls()) return {};
  Buffer v = Buffer::AllocateZeroed(bitmap::Bytes(n));
  int64_t valid = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (bitmap::Get(col.validity.data, idx[k])) {
      bitmap::Set(v.data, k);
      ++valid;
    }
  }
  *null_count = n - valid;
  if (*null_count == 0) return {};
  return v;
}

}  // namespace

Column Column::Nulls(TypeId type, int64_t length) {
  Column c;
  c.type = type;
  c.length = length;
  c.null_count = length;
  c.validity = Buffer::AllocateZeroed(bitmap::Bytes(length));
  switch (type) {
    case TypeId::kNull: break;
    case TypeId::kBool: c.values = Buffer::AllocateZeroed(bitmap::Bytes(length)); break;
    case TypeId::kInt64:
    case TypeId::kFloat64: c.values = Buffer::AllocateZeroed(length * 8); break;
    case TypeId::kUtf8:
      c.offsets = Buffer::AllocateZeroed((length + 1) * 4);
      c.values = Buffer::Allocate(0);
      break;
  }
  if (type == TypeId::kNull) c.validity = {};  // Arrow's null type has no buffers at all
  return c;
}

Column Gather(const Column& col, const uint32_t* idx, int64_t n) {
  Column out;
  out.type = col.type;
  out.length = n;
  if (col.type == TypeId::kNull) {
    out.null_count = n;
    return out;
  }
  out.validity = GatherValidity(col, idx, n, &out.null_count);
  switch (col.type) {
    case TypeId::kInt64:
    case TypeId::kFloat64: {
      out.values = Buffer::Allocate(n * 8);
      const int64_t* src = col.values.as<const int64_t>();
      int64_t* dst = out.values.as<int64_t>();
      for (int64_t k = 0; k < n; ++k) dst[k] = src[idx[k]];
      break;
    }
    case TypeId::kBool: {
      out.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
      for (int64_t k = 0; k < n; ++k)
        if (bitmap::Get(col.values.data, idx[k])) bitmap::Set(out.values.data, k);
      break;
    }
    case TypeId::kUtf8: FillStrings(out, n, [&](int64_t k) { return col.StrAt(idx[k]); }); break;
    case TypeId::kNull: break;
  }
  return out;
}

Column SliceColumn(const Column& col, int64_t offset, int64_t n) {
  Column out;
  out.type = col.type;
  out.length = n;
  if (col.type == TypeId::kNull) {
    out.null_count = n;
    return out;
  }
  auto slice_bits = [&](const Buffer& b) -> Buffer {
    if (b.empty()) return {};
    if (offset % 8 == 0) return Buffer::Slice(b, offset / 8, bitmap::Bytes(n));
    Buffer nb = Buffer::Allocate(bitmap::Bytes(n));
    bitmap::CopyBits(b.data, offset, n, nb.data);
    return nb;
  };
  out.validity = slice_bits(col.validity);
  out.null_count = out.validity.empty() ? 0 : n - bitmap::CountSet(out.validity.data, n);
  if (out.null_count == 0) out.validity = {};
  switch (col.type) {
    case TypeId::kInt64:
    case TypeId::kFloat64: out.values = Buffer::Slice(col.values, offset * 8, n * 8); break;
    case TypeId::kBool: out.values = slice_bits(col.values); break;
    case TypeId::kUtf8:
      out.offsets = Buffer::Slice(col.offsets, offset * 4, (n + 1) * 4);
      out.values = col.values;
      break;
    case TypeId::kNull: break;
  }
  return out;
}

Column GatherMulti(const std::vector<const Column*>& srcs, const uint32_t* which, const uint32_t* rows, int64_t n) {
  Column out;
  out.type = srcs.empty() ? TypeId::kNull : srcs[0]->type;
  out.length = n;
  if (out.type == TypeId::kNull) {
    out.null_count = n;
    return out;
  }
  bool nulls = false;
  for (const Column* c : srcs) nulls |= c->has_nulls();
  if (nulls) {
    out.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
    int64_t valid = 0;
    for (int64_t k = 0; k < n; ++k)
      if (srcs[which[k]]->IsValid(rows[k])) {
        bitmap::Set(out.validity.data, k);
        ++valid;
      }
    out.null_count = n - valid;
    if (out.null_count == 0) out.validity = {};
  }
  switch (out.type) {
    case TypeId::kInt64:
    case TypeId::kFloat64: {
      out.values = Buffer::Allocate(n * 8);
      int64_t* dst = out.values.as<int64_t>();
      // The sources' value arrays, read once: the per-row loop then has one load less per row.
      FewOnStack<const int64_t*, 8> base(srcs.size());
      for (size_t s = 0; s < srcs.size(); ++s) base[s] = srcs[s]->values.as<const int64_t>();
      if (srcs.size() == 1) {
        const int64_t* b = base[0];
        for (int64_t k = 0; k < n; ++k) dst[k] = b[rows[k]];
      } else {
        for (int64_t k = 0; k < n; ++k) dst[k] = base[which[k]][rows[k]];
      }
      break;
    }
    case TypeId::kBool:
      out.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
      for (int64_t k = 0; k < n; ++k)
        if (srcs[which[k]]->BoolAt(rows[k])) bitmap::Set(out.values.data, k);
      break;
    case TypeId::kUtf8: FillStrings(out, n, [&](int64_t k) { return srcs[which[k]]->StrAt(rows[k]); }); break;
    case TypeId::kNull: break;
  }
  return out;
}

namespace {
template <size_t W>
void GatherWideOf(const int64_t* const* base, const uint32_t* which, const uint32_t* rows, int64_t n,
                  int64_t* const* dst) {
  int64_t* d[W];
  for (size_t c = 0; c < W; ++c) d[c] = dst[c];
  for (int64_t k = 0; k < n; ++k) {
    const int64_t* const* b = base + static_cast<size_t>(which[k]) * W;
    const uint32_t i = rows[k];
    for (size_t c = 0; c < W; ++c) d[c][k] = b[c][i];
  }
}

// dst[c][k] = base[which[k] * width + c][rows[k]] for c < width, k < n.
void GatherWide(const int64_t* const* base, size_t width, const uint32_t* which, const uint32_t* rows, int64_t n,
                int64_t* const* dst) {
  switch (width) {
    case 1: return GatherWideOf<1>(base, which, rows, n, dst);
    case 2: return GatherWideOf<2>(base, which, rows, n, dst);
    case 3: return GatherWideOf<3>(base, which, rows, n, dst);
    case 4: return GatherWideOf<4>(base, which, rows, n, dst);
    default:
      for (int64_t k = 0; k < n; ++k)
        for (size_t c = 0; c < width; ++c) dst[c][k] = base[static_cast<size_t>(which[k]) * width + c][rows[k]];
  }
}

bool GathersWide(const Column& c) { return (c.type == TypeId::kInt64 || c.type == TypeId::kFloat64) && !c.has_nulls(); }
}  // namespace

void GatherColumns(const Column* const* sources, size_t nsrc, size_t width, const uint32_t* which, const uint32_t* rows,
                   int64_t n, Column* out, const int64_t* const* extra, int64_t* extra_dst) {
  bool wide = true;
  for (size_t s = 0; s < nsrc; ++s)
    for (size_t c = 0; c < width; ++c) wide &= GathersWide(sources[s][c]);
  if (wide) {
    const size_t w = width + (extra ? 1 : 0);
    FewOnStack<const int64_t*, 16> base(nsrc * w);
    for (size_t s = 0; s < nsrc; ++s) {
      for (size_t c = 0; c < width; ++c) base[s * w + c] = sources[s][c].values.as<const int64_t>();
      if (extra) base[s * w + width] = extra[s];
    }
    FewOnStack<int64_t*, 8> dst(w);
    for (size_t c = 0; c < width; ++c) {
      out[c].type = sources[0][c].type;
      out[c].length = n;
      out[c].values = Buffer::Allocate(n * 8);
      dst[c] = out[c].values.as<int64_t>();
    }
    if (extra) dst[width] = extra_dst;
    GatherWide(base.data(), w, which, rows, n, dst.data());
    return;
  }
  std::vector<const Column*> srcs(nsrc);
  for (size_t c = 0; c < width; ++c) {
    for (size_t s = 0; s < nsrc; ++s) srcs[s] = &sources[s][c];
    out[c] = GatherMulti(srcs, which, rows, n);
  }
  if (extra)
    for (int64_t k = 0; k < n; ++k) extra_dst[k] = extra[which[k]][rows[k]];
}

Column Concat(const Column* const* cols, int64_t count) {
  if (count == 1) return *cols[0];
  Column out;
  out.type = cols[0]->type;
  int64_t n = 0, nulls = 0;
  for (int64_t c = 0; c < count; ++c) {
    n += cols[c]->length;
    nulls += cols[c]->null_count;
  }
  out.length = n;
  out.null_count = nulls;
  if (out.type == TypeId::kNull) return out;
  if (nulls) {
    out.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
    int64_t pos = 0;
    for (int64_t c = 0; c < count; ++c) {
      const Column& col = *cols[c];
      for (int64_t i = 0; i < col.length; ++i)
        if (col.IsValid(i)) bitmap::Set(out.validity.data, pos + i);
      pos += col.length;
    }
  }
  switch (out.type) {
    case TypeId::kInt64:
    case TypeId::kFloat64: {
      out.values = Buffer::Allocate(n * 8);
      int64_t pos = 0;
      for (int64_t c = 0; c < count; ++c) {
        std::memcpy(out.values.data + pos * 8, cols[c]->values.data, static_cast<size_t>(cols[c]->length * 8));
        pos += cols[c]->length;
      }
      break;
    }
    case TypeId::kBool: {
      out.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
      int64_t pos = 0;
      for (int64_t c = 0; c < count; ++c) {
        for (int64_t i = 0; i < cols[c]->length; ++i)
          if (cols[c]->BoolAt(i)) bitmap::Set(out.values.data, pos + i);
        pos += cols[c]->length;
      }
      break;
    }
    case TypeId::kUtf8: {
      int64_t total = 0;
      for (int64_t c = 0; c < count; ++c) total += cols[c]->offs()[cols[c]->length] - cols[c]->offs()[0];
      if (total > INT32_MAX) throw std::length_error("utf8 column exceeds 2 GiB in one batch");
      out.offsets = Buffer::Allocate((n + 1) * 4);
      out.values = Buffer::Allocate(total);
      int32_t* dof = out.offsets.as<int32_t>();
      int64_t pos = 0;
      int32_t bytes = 0;
      for (int64_t c = 0; c < count; ++c) {
        const Column& col = *cols[c];
        const int32_t* so = col.offs();
        int32_t len = so[col.length] - so[0];
        std::memcpy(out.values.data + bytes, col.values.data + so[0], static_cast<size_t>(len));
        for (int64_t i = 0; i < col.length; ++i) dof[pos + i] = bytes + (so[i] - so[0]);
        pos += col.length;
        bytes += len;
      }
      dof[n] = bytes;
      break;
    }
    case TypeId::kNull: break;
  }
  return out;
}

std::string ValueToString(const Column& c, int64_t i) {
  if (c.type == TypeId::kNull || !c.IsValid(i)) return "NULL";
  switch (c.type) {
    case TypeId::kInt64: return std::to_string(c.i64()[i]);
    case TypeId::kFloat64: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, c.f64()[i]);  // shortest round-trip form
      return std::string(buf, r.ptr);
    }
    case TypeId::kBool: return c.BoolAt(i) ? "true" : "false";
    case TypeId::kUtf8: {
      std::string s = "'";
      for (char ch : c.StrAt(i)) s += ch == '\'' ? std::string("''") : std::string(1, ch);
      return s + "'";
    }
    case TypeId::kNull: break;
  }
  return "NULL";
}

}  // namespace cq
