// The Arrow C Data Interface bridge: export then import must give back the same values and nulls
// without copying, the imported array must be released exactly once (when its last column view
// goes), and a sliced array (a non-zero offset, at struct and column level) must read right.
#include <cstring>

#include "arrow/bridge.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

// Wraps an exported array's release callback to count the calls; the import moves the struct, so
// the counter (not the struct) is what tells how many times the producer was asked to release.
struct ReleaseCounter {
  static inline int calls = 0;
  static inline void (*original)(ArrowArray*) = nullptr;
  static void Release(ArrowArray* a) {
    ++calls;
    original(a);
  }
  static void Wrap(ArrowArray* a) {
    calls = 0;
    original = a->release;
    a->release = &Release;
  }
};

// An exported batch whose schema is released with the fixture.
struct Exported {
  ArrowSchema schema{};
  ArrowArray array{};
  Exported(const std::vector<std::string>& names, const std::vector<Column>& cols, int64_t length) {
    ExportStruct(names, cols, length, &schema, &array);
    ReleaseCounter::Wrap(&array);
  }
  ~Exported() {
    if (array.release) array.release(&array);
    if (schema.release) schema.release(&schema);
  }
};

const I64s kI = {1, N, 3, 4, N, 6, 7, 8, 9, 10, N, 12, 13, 14, 15, 16, 17, 18, 19, 20};
const F64s kF = {0.5,  1.5,  2.5,  N,    4.5,  5.5,  6.5,  7.5,  N,    9.5,
                 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5};
const Strs kS = {"a", "bb", N,   "", "\xc3\xa9t\xc3\xa9", "f", "g", N, "i", "j", "k", "l", "m", "n", "o", "p",
                 "q", "r",  "s", "t"};
const Bools kB = {true, false, true,  N,    false, true, true, false, false, true,
                  N,    true,  false, true, false, true, true, N,     false, true};

std::vector<Column> Columns() { return {I64(kI), F64(kF), Str(kS), Bool(kB)}; }
const std::vector<std::string> kNames = {"i", "f", "s", "b"};

template <typename T>
std::vector<T> Sub(const std::vector<T>& v, int64_t offset, int64_t n) {
  return std::vector<T>(v.begin() + offset, v.begin() + offset + n);
}

CQ_TEST(export_then_import_round_trips_values_nulls_and_names_without_copy) {
  std::vector<Column> cols = Columns();
  Exported e(kNames, cols, 20);
  CQ_EXPECT_EQ(std::string(e.schema.format), "+s");
  CQ_EXPECT_EQ(e.schema.n_children, 4);
  CQ_EXPECT_EQ(std::string(e.schema.children[2]->format), "u");
  CQ_EXPECT_EQ(std::string(e.schema.children[2]->name), "s");
  CQ_EXPECT_EQ(e.array.children[0]->null_count, 3);
  {
    ImportedBatch b = ImportStruct(&e.schema, &e.array);
    CQ_EXPECT(e.array.release == nullptr);  // moved into the import
    CQ_EXPECT_EQ(b.length, 20);
    CQ_EXPECT_EQ(b.names, kNames);
    CQ_ASSERT(b.columns.size() == 4);
    CQ_EXPECT_EQ(ReadI64(b.columns[0]), kI);
    CQ_EXPECT_EQ(ReadF64(b.columns[1]), kF);
    CQ_EXPECT_EQ(ReadStr(b.columns[2]), kS);
    CQ_EXPECT_EQ(ReadBool(b.columns[3]), kB);
    for (const Column& c : b.columns) CQ_EXPECT_EQ(c.null_count, CountNulls(c));
    // Zero-copy: the imported columns view the exporter's buffers.
    CQ_EXPECT(b.columns[0].values.data == cols[0].values.data);
    CQ_EXPECT(b.columns[2].values.data == cols[2].values.data);
    CQ_EXPECT(b.columns[3].validity.data == cols[3].validity.data);
    CQ_EXPECT_EQ(ReleaseCounter::calls, 0);
  }
  CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
}

CQ_TEST(imported_array_is_released_once_when_its_last_column_goes) {
  std::vector<Column> cols = Columns();
  Exported e(kNames, cols, 20);
  Column kept;
  {
    ImportedBatch b = ImportStruct(&e.schema, &e.array);
    kept = b.columns[2];
    ImportedBatch copy = b;  // copies share the one owner
  }
  CQ_EXPECT_EQ(ReleaseCounter::calls, 0);  // `kept` still reads the producer's memory
  CQ_EXPECT_EQ(ReadStr(kept), kS);
  kept = Column{};
  CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  // The exporter's own columns outlive the consumer's release.
  CQ_EXPECT_EQ(ReadStr(cols[2]), kS);
}

CQ_TEST(import_sliced_struct_and_columns) {
  // Struct offset 3 plus a column offset (0..2): offsets 3, 4 and 5 are not byte-aligned, so the
  // bitmaps are shifted; offset 8 is, so they are views.
  for (int64_t struct_offset : {3, 8}) {
    std::vector<Column> cols = Columns();
    Exported e(kNames, cols, 20);
    const int64_t length = 10;
    e.array.offset = struct_offset;
    e.array.length = length;
    const int64_t child_offset[] = {2, 0, 1, 2};
    for (int c = 0; c < 4; ++c) e.array.children[c]->offset = child_offset[c];
    {
      ImportedBatch b = ImportStruct(&e.schema, &e.array);
      CQ_EXPECT_EQ(b.length, length);
      const std::string tag = "struct offset " + std::to_string(struct_offset) + ": ";
      CQ_EXPECT_EQ(tag + Show(ReadI64(b.columns[0])), tag + Show(Sub(kI, struct_offset + 2, length)));
      CQ_EXPECT_EQ(tag + Show(ReadF64(b.columns[1])), tag + Show(Sub(kF, struct_offset + 0, length)));
      CQ_EXPECT_EQ(tag + Show(ReadStr(b.columns[2])), tag + Show(Sub(kS, struct_offset + 1, length)));
      CQ_EXPECT_EQ(tag + Show(ReadBool(b.columns[3])), tag + Show(Sub(kB, struct_offset + 2, length)));
      for (const Column& c : b.columns) {
        CQ_EXPECT_EQ(c.length, length);
        CQ_EXPECT_EQ(tag + std::to_string(c.null_count), tag + std::to_string(CountNulls(c)));
      }
    }
    CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  }
}

CQ_TEST(null_type_columns_and_unknown_null_counts) {
  Column nulls = Column::Nulls(TypeId::kNull, 4);
  Column ints = I64({1, N, 3, 4});
  Exported e({"n", "i"}, {nulls, ints}, 4);
  CQ_EXPECT_EQ(std::string(e.schema.children[0]->format), "n");
  CQ_EXPECT_EQ(e.array.children[0]->n_buffers, 0);
  CQ_EXPECT_EQ(e.array.children[0]->null_count, 4);
  // Producers may leave the null count unknown (-1); the import counts it from the bitmap.
  e.array.children[1]->null_count = -1;
  ImportedBatch b = ImportStruct(&e.schema, &e.array);
  CQ_EXPECT_EQ(b.columns[0].type, TypeId::kNull);
  CQ_EXPECT_EQ(b.columns[0].null_count, 4);
  CQ_EXPECT_EQ(b.columns[1].null_count, 1);
  CQ_EXPECT_EQ(ReadI64(b.columns[1]), (I64s{1, N, 3, 4}));
}

CQ_TEST(import_errors_leave_the_array_released_exactly_once) {
  std::vector<Column> cols = Columns();
  {
    // Not a struct: rejected before the import takes the array; the caller still owns it.
    Exported e(kNames, cols, 20);
    auto err = CQ_CATCH(ImportStruct(e.schema.children[0], &e.array));
    CQ_EXPECT(err && err->kind() == ErrorKind::kInput);
    CQ_EXPECT(e.array.release != nullptr);
  }
  CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  {
    // An unsupported column type (int32): the error names the column and its format, and the
    // import, which had taken the array, released it.
    Exported e(kNames, cols, 20);
    e.schema.children[1]->format = "i";
    auto err = CQ_CATCH(ImportStruct(&e.schema, &e.array));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT_EQ(err->kind(), ErrorKind::kInput);
    const std::string msg = err->what();
    CQ_EXPECT(msg.find("'f'") != std::string::npos);
    CQ_EXPECT(msg.find("'i'") != std::string::npos);
    CQ_EXPECT(e.array.release == nullptr);
    CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  }
  CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  {
    // Null rows at struct level are not supported.
    Exported e(kNames, cols, 20);
    e.array.null_count = 1;
    CQ_EXPECT_THROWS(ImportStruct(&e.schema, &e.array), CqError);
    CQ_EXPECT(e.array.release == nullptr);
    CQ_EXPECT_EQ(ReleaseCounter::calls, 1);
  }
  {
    // A released array.
    ArrowArray released{};
    Exported e(kNames, cols, 20);
    CQ_EXPECT_THROWS(ImportStruct(&e.schema, &released), CqError);
  }
}

}  // namespace
}  // namespace cq::test
