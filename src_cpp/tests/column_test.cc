// Columns and bitmaps: Gather (where a selection becomes data), SliceColumn (bit offsets that are
// not byte-aligned must be shifted), Concat, and the bitmap helpers underneath them.
#include <cmath>
#include <cstring>

#include "batch/batch.h"
#include "batch/row_equal.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

template <typename T>
std::vector<T> Sub(const std::vector<T>& v, int64_t offset, int64_t n) {
  return std::vector<T>(v.begin() + offset, v.begin() + offset + n);
}

template <typename T>
std::vector<T> Pick(const std::vector<T>& v, const std::vector<uint32_t>& idx) {
  std::vector<T> out;
  for (uint32_t i : idx) out.push_back(v[i]);
  return out;
}

CQ_TEST(gather_every_type_with_nulls) {
  const I64s iv = {10, N, 30, 40, N, 60, 70, 80, 90, 100};
  const F64s fv = {0.5, 1.5, N, 3.5, 4.5, N, 6.5, 7.5, 8.5, 9.5};
  const Strs sv = {"a", "", N, "dd", "\xc3\xa9", "ff", N, "hhh", "i", "jj"};
  const Bools bv = {true, false, N, true, true, N, false, false, true, N};
  Column i = I64(iv), f = F64(fv), s = Str(sv), b = Bool(bv);
  const std::vector<uint32_t> idx = {9, 0, 0, 2, 4, 6, 1, 5, 3};
  auto check = [&](const Column& out, int64_t nulls) {
    CQ_EXPECT_EQ(out.length, static_cast<int64_t>(idx.size()));
    CQ_EXPECT_EQ(out.null_count, nulls);
    CQ_EXPECT_EQ(CountNulls(out), nulls);
  };
  Column gi = Gather(i, idx.data(), 9), gf = Gather(f, idx.data(), 9), gs = Gather(s, idx.data(), 9),
         gb = Gather(b, idx.data(), 9);
  CQ_EXPECT_EQ(ReadI64(gi), Pick(iv, idx));
  CQ_EXPECT_EQ(ReadF64(gf), Pick(fv, idx));
  CQ_EXPECT_EQ(ReadStr(gs), Pick(sv, idx));
  CQ_EXPECT_EQ(ReadBool(gb), Pick(bv, idx));
  check(gi, 2);
  check(gf, 2);
  check(gs, 2);
  check(gb, 3);
  // Rows without a null gather to a column without validity.
  const std::vector<uint32_t> clean = {0, 2, 3};
  Column g = Gather(i, clean.data(), 3);
  CQ_EXPECT_EQ(ReadI64(g), (I64s{10, 30, 40}));
  CQ_EXPECT_EQ(g.null_count, 0);
  CQ_EXPECT(g.validity.empty());
  // The null type and the empty gather.
  Column gn = Gather(Column::Nulls(TypeId::kNull, 10), idx.data(), 9);
  CQ_EXPECT_EQ(gn.type, TypeId::kNull);
  CQ_EXPECT_EQ(gn.null_count, 9);
  CQ_EXPECT_EQ(Gather(s, idx.data(), 0).length, 0);
}

CQ_TEST(slice_column_at_bit_offsets_not_multiple_of_8) {
  const int64_t n = 130;
  Rng rng(5);
  Bools bv;
  I64s iv;
  Strs sv;
  for (int64_t k = 0; k < n; ++k) {
    bv.push_back(rng.Below(5) == 0 ? std::optional<bool>() : rng.Below(2) == 1);
    iv.push_back(rng.Below(7) == 0 ? std::optional<int64_t>() : k);
    sv.push_back(rng.Below(6) == 0 ? std::optional<std::string>()
                                   : std::string(static_cast<size_t>(k % 4), 'a' + k % 26));
  }
  Column b = Bool(bv), i = I64(iv), s = Str(sv);
  for (int64_t offset : {0, 1, 3, 7, 8, 13, 63, 64, 67, 125, 129}) {
    for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{5}, n - offset}) {
      if (offset + len > n) continue;
      const std::string tag = "offset " + std::to_string(offset) + " length " + std::to_string(len) + ": ";
      Column sb = SliceColumn(b, offset, len), si = SliceColumn(i, offset, len), ss = SliceColumn(s, offset, len);
      CQ_EXPECT_EQ(tag + Show(ReadBool(sb)), tag + Show(Sub(bv, offset, len)));
      CQ_EXPECT_EQ(tag + Show(ReadI64(si)), tag + Show(Sub(iv, offset, len)));
      CQ_EXPECT_EQ(tag + Show(ReadStr(ss)), tag + Show(Sub(sv, offset, len)));
      for (const Column* c : {&sb, &si, &ss}) {
        CQ_EXPECT_EQ(c->length, len);
        CQ_EXPECT_EQ(tag + std::to_string(c->null_count), tag + std::to_string(CountNulls(*c)));
        if (c->null_count == 0) CQ_EXPECT(c->validity.empty());
      }
      // Fixed-width values and utf8 are views; bitmaps too when the offset is byte-aligned.
      CQ_EXPECT(si.values.data == i.values.data + offset * 8);
      CQ_EXPECT(ss.values.data == s.values.data);
      if (offset % 8 == 0) CQ_EXPECT(sb.values.data == b.values.data + offset / 8);
    }
  }
  // A slice of a slice.
  Column twice = SliceColumn(SliceColumn(b, 3, 100), 5, 50);
  CQ_EXPECT_EQ(ReadBool(twice), Sub(bv, 8, 50));
}

CQ_TEST(concat_every_type_across_byte_boundaries) {
  Rng rng(6);
  for (int64_t len3 : {0, 1, 130}) {
    const std::vector<int64_t> lens = {3, 13, len3};
    std::vector<Column> is, bs, ss;
    I64s iv_all;
    Bools bv_all;
    Strs sv_all;
    for (size_t p = 0; p < lens.size(); ++p) {
      I64s iv;
      Bools bv;
      Strs sv;
      for (int64_t k = 0; k < lens[p]; ++k) {
        // The first part has no null at all.
        const bool null = p > 0 && rng.Below(4) == 0;
        iv.push_back(null ? std::optional<int64_t>() : rng.Below(1000));
        bv.push_back(null ? std::optional<bool>() : rng.Below(2) == 1);
        sv.push_back(null ? std::optional<std::string>() : std::string(static_cast<size_t>(rng.Below(4)), 'x'));
      }
      iv_all.insert(iv_all.end(), iv.begin(), iv.end());
      bv_all.insert(bv_all.end(), bv.begin(), bv.end());
      sv_all.insert(sv_all.end(), sv.begin(), sv.end());
      is.push_back(I64(iv));
      bs.push_back(Bool(bv));
      // A utf8 part whose offsets do not start at 0: a slice of a longer column.
      Strs padded = sv;
      padded.insert(padded.begin(), std::optional<std::string>("prefix"));
      ss.push_back(SliceColumn(Str(padded), 1, lens[p]));
    }
    auto concat = [](const std::vector<Column>& parts) {
      std::vector<const Column*> ptrs;
      for (const Column& c : parts) ptrs.push_back(&c);
      return Concat(ptrs.data(), static_cast<int64_t>(ptrs.size()));
    };
    const std::string tag = "last part " + std::to_string(len3) + ": ";
    Column ci = concat(is), cb = concat(bs), cs = concat(ss);
    CQ_EXPECT_EQ(tag + Show(ReadI64(ci)), tag + Show(iv_all));
    CQ_EXPECT_EQ(tag + Show(ReadBool(cb)), tag + Show(bv_all));
    CQ_EXPECT_EQ(tag + Show(ReadStr(cs)), tag + Show(sv_all));
    for (const Column* c : {&ci, &cb, &cs}) CQ_EXPECT_EQ(c->null_count, CountNulls(*c));
  }
  // All-null parts of the null type.
  Column n1 = Column::Nulls(TypeId::kNull, 2), n2 = Column::Nulls(TypeId::kNull, 3);
  const Column* parts[] = {&n1, &n2};
  Column cn = Concat(parts, 2);
  CQ_EXPECT_EQ(cn.type, TypeId::kNull);
  CQ_EXPECT_EQ(cn.length, 5);
  CQ_EXPECT_EQ(cn.null_count, 5);
}

CQ_TEST(bitmap_count_set_and_copy_bits) {
  const int64_t n = 200;
  Rng rng(7);
  Buffer bits = Buffer::AllocateZeroed(bitmap::Bytes(n));
  std::vector<bool> ref(n);
  for (int64_t k = 0; k < n; ++k) {
    ref[k] = rng.Below(3) == 0;
    bitmap::SetTo(bits.data, k, ref[k]);
  }
  auto count = [&](int64_t from, int64_t len) {
    int64_t c = 0;
    for (int64_t k = from; k < from + len; ++k) c += ref[k];
    return c;
  };
  for (int64_t len : {0, 1, 7, 8, 63, 64, 65, 130, 200}) CQ_EXPECT_EQ(bitmap::CountSet(bits.data, len), count(0, len));
  // Bits past `n` are not counted, even when set.
  Buffer ones = Buffer::Allocate(bitmap::Bytes(130));
  std::memset(ones.data, 0xFF, static_cast<size_t>(bitmap::Bytes(130)));
  CQ_EXPECT_EQ(bitmap::CountSet(ones.data, 130), 130);
  CQ_EXPECT_EQ(bitmap::CountSet(ones.data, 67), 67);

  for (int64_t offset : {0, 1, 5, 8, 16, 61, 64, 69}) {
    for (int64_t len : {1, 9, 64, 130}) {
      if (offset + len > n) continue;
      Buffer dst = Buffer::Allocate(bitmap::Bytes(len));
      bitmap::CopyBits(bits.data, offset, len, dst.data);
      bool same = true;
      for (int64_t k = 0; k < len; ++k) same &= bitmap::Get(dst.data, k) == ref[offset + k];
      CQ_EXPECT_EQ("offset " + std::to_string(offset) + " length " + std::to_string(len) + (same ? " ok" : " differs"),
                   "offset " + std::to_string(offset) + " length " + std::to_string(len) + " ok");
      CQ_EXPECT_EQ(bitmap::CountSet(dst.data, len), count(offset, len));
    }
  }
}

CQ_TEST(nulls_and_broadcast_columns) {
  for (TypeId t : {TypeId::kBool, TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kNull}) {
    Column c = Column::Nulls(t, 70);
    CQ_EXPECT_EQ(c.type, t);
    CQ_EXPECT_EQ(c.length, 70);
    CQ_EXPECT_EQ(c.null_count, 70);
    CQ_EXPECT_EQ(CountNulls(c), 70);
  }
  Scalar s;
  s.type = TypeId::kUtf8;
  s.valid = true;
  s.str = "ab";
  CQ_EXPECT_EQ(ReadStr(Broadcast(s, 3)), (Strs{"ab", "ab", "ab"}));
  s.type = TypeId::kBool;
  s.b = true;
  CQ_EXPECT_EQ(ReadBool(Broadcast(s, 70)), Bools(70, true));
  s.type = TypeId::kInt64;
  s.i64 = -4;
  CQ_EXPECT_EQ(ReadI64(Broadcast(s, 2)), (I64s{-4, -4}));
  s.valid = false;
  CQ_EXPECT_EQ(ReadI64(Broadcast(s, 2)), (I64s{N, N}));
  s.type = TypeId::kUtf8;
  s.valid = true;
  s.str = "";
  CQ_EXPECT_EQ(ReadStr(Broadcast(s, 2)), (Strs{"", ""}));
}

CQ_TEST(row_equal_treats_null_as_equal_to_null_and_nan_as_nan) {
  const Schema schema = {{"i", TypeId::kInt64}, {"f", TypeId::kFloat64}, {"s", TypeId::kUtf8}, {"b", TypeId::kBool}};
  const double nan = std::nan("");
  std::vector<Column> a = {I64({1, N, 1, 1, 1}), F64({nan, 0.0, -0.0, 1.0, 1.0}), Str({"x", N, "x", "x", "x"}),
                           Bool({true, N, true, true, false})};
  std::vector<Column> b = {I64({1, N, 1, 2, 1}), F64({nan, 0.0, 0.0, 1.0, 1.0}), Str({"x", N, "x", "x", "x"}),
                           Bool({true, N, true, true, true})};
  RowEqual eq(schema);
  CQ_EXPECT(eq(a, 0, b, 0));  // NaN = NaN for set operations
  CQ_EXPECT(eq(a, 1, b, 1));  // NULL = NULL
  CQ_EXPECT(eq(a, 2, b, 2));  // -0.0 = 0.0
  CQ_EXPECT(!eq(a, 3, b, 3));
  CQ_EXPECT(!eq(a, 4, b, 4));
  CQ_EXPECT(!eq(a, 0, b, 1));  // a value is not NULL
  CQ_EXPECT(!eq(a, 1, b, 0));
}

CQ_TEST(batch_compact_and_materialized_end) {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(Schema{{"a", TypeId::kInt64}});
  b.columns = {I64({1, 2, 3, 4})};
  b.length = 4;
  b.sync.ticks = I64({10, 11, 12, 13}).values;
  b.constant_duration = Duration::Ticks(5);
  b.has_selection = true;
  b.selection = Buffer::Allocate(8);
  b.selection.as<uint32_t>()[0] = 3;
  b.selection.as<uint32_t>()[1] = 1;
  b.selection_count = 2;
  Batch c = b.Compact();
  CQ_EXPECT(!c.has_selection);
  CQ_EXPECT_EQ(c.length, 2);
  CQ_EXPECT_EQ(ReadI64(c.columns[0]), (I64s{4, 2}));
  CQ_EXPECT_EQ(c.StartAt(0), (Time{13, 0}));
  CQ_EXPECT_EQ(c.EndAt(1), (Time{16, 0}));
  Batch m = c.WithMaterializedEnd();
  CQ_EXPECT(!m.constant_duration.has_value());
  CQ_EXPECT_EQ(m.EndAt(0), (Time{18, 0}));
  CQ_EXPECT_EQ(m.EndAt(1), (Time{16, 0}));
  // [Now]: the end is one ε-step later; unbounded: infinity.
  c.constant_duration = Duration::Epsilon();
  Batch now = c.WithMaterializedEnd();
  CQ_EXPECT(now.other.has_steps());
  CQ_EXPECT_EQ(now.EndAt(0), (Time{13, 1}));
  c.constant_duration = Duration::Infinite();
  CQ_EXPECT_EQ(c.WithMaterializedEnd().EndAt(1), Time::Infinity());
}

}  // namespace
}  // namespace cq::test
