#include "tests/test_util.h"

#include <cstring>

#include "kernels/registry.h"

namespace cq::test {

namespace {

// Validity for `v`, or an empty buffer when nothing is null.
template <typename T>
Buffer Validity(const std::vector<std::optional<T>>& v, int64_t* null_count) {
  *null_count = 0;
  for (const auto& x : v) *null_count += !x.has_value();
  if (*null_count == 0) return {};
  const int64_t n = static_cast<int64_t>(v.size());
  Buffer b = Buffer::AllocateZeroed(bitmap::Bytes(n));
  for (int64_t i = 0; i < n; ++i)
    if (v[i]) bitmap::Set(b.data, i);
  return b;
}

template <typename T>
Column Fixed(TypeId type, const std::vector<std::optional<T>>& v) {
  Column c;
  c.type = type;
  c.length = static_cast<int64_t>(v.size());
  c.validity = Validity(v, &c.null_count);
  c.values = Buffer::Allocate(c.length * 8);
  T* p = c.values.as<T>();
  // Null slots get a value that would show if a kernel read them as data.
  for (int64_t i = 0; i < c.length; ++i) p[i] = v[i] ? *v[i] : T(77);
  return c;
}

template <typename T, typename Get>
std::vector<std::optional<T>> Read(const Column& c, Get get) {
  std::vector<std::optional<T>> out;
  out.reserve(c.length);
  for (int64_t i = 0; i < c.length; ++i) {
    if (c.type == TypeId::kNull || !c.IsValid(i)) out.push_back(std::nullopt);
    else out.push_back(get(i));
  }
  return out;
}

}  // namespace

Column I64(const I64s& v) { return Fixed(TypeId::kInt64, v); }
Column F64(const F64s& v) { return Fixed(TypeId::kFloat64, v); }

Column Str(const Strs& v) {
  Column c;
  c.type = TypeId::kUtf8;
  c.length = static_cast<int64_t>(v.size());
  c.validity = Validity(v, &c.null_count);
  int64_t total = 0;
  for (const auto& s : v) total += s ? static_cast<int64_t>(s->size()) : 0;
  c.offsets = Buffer::Allocate((c.length + 1) * 4);
  c.values = Buffer::Allocate(total);
  int32_t* o = c.offsets.as<int32_t>();
  int32_t pos = 0;
  for (int64_t i = 0; i < c.length; ++i) {
    o[i] = pos;
    if (v[i]) {
      std::memcpy(c.values.data + pos, v[i]->data(), v[i]->size());
      pos += static_cast<int32_t>(v[i]->size());
    }
  }
  o[c.length] = pos;
  return c;
}

Column Bool(const Bools& v) {
  Column c;
  c.type = TypeId::kBool;
  c.length = static_cast<int64_t>(v.size());
  c.validity = Validity(v, &c.null_count);
  c.values = Buffer::AllocateZeroed(bitmap::Bytes(c.length));
  // Null slots are TRUE underneath, for the same reason as in Fixed().
  for (int64_t i = 0; i < c.length; ++i)
    if (v[i].value_or(true)) bitmap::Set(c.values.data, i);
  return c;
}

I64s ReadI64(const Column& c) {
  return Read<int64_t>(c, [&](int64_t i) { return c.i64()[i]; });
}
F64s ReadF64(const Column& c) {
  return Read<double>(c, [&](int64_t i) { return c.f64()[i]; });
}
Strs ReadStr(const Column& c) {
  return Read<std::string>(c, [&](int64_t i) { return std::string(c.StrAt(i)); });
}
Bools ReadBool(const Column& c) {
  return Read<bool>(c, [&](int64_t i) { return c.BoolAt(i); });
}

int64_t CountNulls(const Column& c) {
  if (c.type == TypeId::kNull) return c.length;
  int64_t n = 0;
  for (int64_t i = 0; i < c.length; ++i) n += !c.IsValid(i);
  return n;
}

Datum Col(const Column& c) {
  Datum d;
  d.column = &c;
  return d;
}

namespace {
Datum ScalarOf(TypeId type, bool valid) {
  Datum d;
  d.scalar.type = type;
  d.scalar.valid = valid;
  return d;
}
}  // namespace

Datum ScalarI64(std::optional<int64_t> v) {
  Datum d = ScalarOf(TypeId::kInt64, v.has_value());
  d.scalar.i64 = v.value_or(77);
  return d;
}
Datum ScalarF64(std::optional<double> v) {
  Datum d = ScalarOf(TypeId::kFloat64, v.has_value());
  d.scalar.f64 = v.value_or(77);
  return d;
}
Datum ScalarStr(std::optional<std::string> v) {
  Datum d = ScalarOf(TypeId::kUtf8, v.has_value());
  d.scalar.str = v.value_or("garbage");
  return d;
}
Datum ScalarBool(std::optional<bool> v) {
  Datum d = ScalarOf(TypeId::kBool, v.has_value());
  d.scalar.b = v.value_or(true);
  return d;
}

Column Call(const std::string& fn, const std::vector<Datum>& args, int64_t n) {
  std::vector<TypeId> types;
  for (const Datum& d : args) types.push_back(d.type());
  const Kernel* k = KernelRegistry::Global().Find(fn, types);
  if (!k) {
    std::string sig = fn + "(";
    for (size_t i = 0; i < types.size(); ++i) sig += (i ? ", " : "") + std::string(TypeName(types[i]));
    Fail(__FILE__, __LINE__, "no kernel " + sig + ")");
    throw AssertionAbort{};
  }
  Column out = k->fn(args, n);
  // Every kernel result must be a well-formed column of the kernel's type and the batch's length.
  CQ_EXPECT_EQ(out.type, k->result);
  CQ_EXPECT_EQ(out.length, n);
  CQ_EXPECT_EQ(out.null_count, CountNulls(out));
  return out;
}

ImportedBatch MakeBatch(const std::vector<std::string>& names, const std::vector<Column>& columns, int64_t length) {
  ArrowSchema schema;
  ArrowArray array;
  ExportStruct(names, columns, length, &schema, &array);
  ImportedBatch b = ImportStruct(&schema, &array);
  schema.release(&schema);
  return b;
}

}  // namespace cq::test
