#include "batch/snapshot.h"

#include "batch/bitmap.h"

namespace cq {

namespace {
// How a buffer is written: absent, its bytes, or the number of one written before.
enum BufTag : uint8_t { kAbsent = 0, kBytes = 1, kShared = 2 };
}  // namespace

std::string ShowValue(const Time& t) {
  return "(tick " + std::to_string(t.tick) + ", step " + std::to_string(t.step) + ")";
}

void SnapshotReader::CheckHolders(const Buffer& holders, int64_t n, bool none_ok, const char* what) {
  if (holders.empty()) return;
  const HolderId* h = holders.as<HolderId>();
  for (int64_t i = 0; i < n; ++i)
    if (!(h[i] < holder_capacity_ || (none_ok && h[i] == kNoHolder)))
      Corrupt(std::string(what) + ": expected ids below " + std::to_string(holder_capacity_) + ", found " +
              std::to_string(h[i]) + " at row " + std::to_string(i));
}

void SnapshotWriter::Buf(const Buffer& b) {
  if (b.empty()) {
    Pod(kAbsent);
    return;
  }
  auto [it, fresh] = buffers_.try_emplace(BufKey{b.data, b.size}, buffers_.size());
  if (!fresh) {
    Pod(kShared);
    U64(it->second);
    return;
  }
  written_.push_back(b);
  Pod(kBytes);
  U64(static_cast<uint64_t>(b.size));
  Bytes(b.data, static_cast<size_t>(b.size));
}

Buffer SnapshotReader::Buf() {
  switch (Pod<uint8_t>()) {
    case kAbsent: return {};
    case kBytes: {
      const size_t n = Count(1);
      // Allocate pads and zeroes past the size, as every buffer of the engine is (bitmap loops
      // read whole words).
      Buffer b = Buffer::Allocate(static_cast<int64_t>(n));
      Bytes(b.data, n);
      buffers_.push_back(b);
      return b;
    }
    case kShared: {
      const uint64_t k = U64();
      Check(k < buffers_.size(), "a shared buffer refers to one not written before it");
      return buffers_[k];
    }
    default: Corrupt("unknown buffer tag");
  }
}

void SnapshotWriter::Col(const Column& c) {
  Pod(c.type);
  I64(c.length);
  I64(c.null_count);
  Buf(c.validity);
  Buf(c.values);
  Buf(c.offsets);
}

Column SnapshotReader::Col() {
  Column c;
  c.type = Enum(TypeId::kUtf8, "a column's type");
  c.length = I64();
  c.null_count = I64();
  c.validity = Buf();
  c.values = Buf();
  c.offsets = Buf();
  const int64_t n = c.length;
  Check(n >= 0 && c.null_count >= 0 && c.null_count <= n, "a column's length or null count is out of range");
  Check(c.validity.empty() || Covers(c.validity, n, 0), "a validity bitmap is shorter than its column");
  // The null count is exact (kernels size their work by it, and Arrow trusts it on export).
  const int64_t nulls = c.type == TypeId::kNull ? n : c.validity.empty() ? 0 : n - bitmap::CountSet(c.validity.data, n);
  if (c.null_count != nulls)
    Corrupt("a column's null count: expected " + std::to_string(nulls) + " (its validity bitmap's), found " +
            std::to_string(c.null_count));
  if (n == 0) return c;
  switch (c.type) {
    case TypeId::kNull: break;
    case TypeId::kBool: Check(Covers(c.values, n, 0), "a bool column's bits are short"); break;
    case TypeId::kInt64:
    case TypeId::kFloat64: Check(Covers(c.values, n, 8), "a column's values are short"); break;
    case TypeId::kUtf8: {
      Check(n < INT64_MAX && Covers(c.offsets, n + 1, 4), "a utf8 column's offsets are short");
      const int32_t* o = c.offs();
      bool ok = o[0] >= 0;
      for (int64_t i = 0; i < n; ++i) ok &= o[i + 1] >= o[i];
      Check(ok && (o[n] == 0 || (!c.values.empty() && o[n] <= c.values.size)),
            "a utf8 column's offsets are out of order or past its bytes");
      break;
    }
  }
  return c;
}

void SnapshotWriter::Cols(std::span<const Column> cols) {
  U64(cols.size());
  for (const Column& c : cols) Col(c);
}

std::vector<Column> SnapshotReader::Cols() {
  std::vector<Column> cols(Count(1));
  for (Column& c : cols) c = Col();
  return cols;
}

void SnapshotWriter::TimeCol(const TimeColumn& t) {
  Buf(t.ticks);
  Buf(t.steps);
}

TimeColumn SnapshotReader::TimeCol() {
  TimeColumn t;
  t.ticks = Buf();
  t.steps = Buf();
  return t;
}

// A time column of n rows: its buffers as long as that, and every time valid (ValidTime).
void SnapshotReader::CheckTimes(const TimeColumn& t, int64_t n, const char* what) {
  if (t.empty() && t.steps.empty()) return;
  if (!(Covers(t.ticks, n, 8) && (t.steps.empty() || Covers(t.steps, n, 8))))
    Corrupt(std::string(what) + ": expected " + std::to_string(n) + " rows, found fewer");
  for (int64_t i = 0; i < n; ++i)
    if (!ValidTime(t.At(i)))
      Corrupt(std::string(what) + ": row " + std::to_string(i) + " is not a time: " + Show(t.At(i)));
}

void SnapshotWriter::SchemaRef(const std::shared_ptr<const Schema>& s) {
  if (!s) {
    Pod(kAbsent);
    return;
  }
  auto [it, fresh] = schemas_.try_emplace(s.get(), schemas_.size());
  if (!fresh) {
    Pod(kShared);
    U64(it->second);
    return;
  }
  written_schemas_.push_back(s);
  Pod(kBytes);
  U64(s->size());
  for (const Field& f : *s) {
    Str(f.name);
    Pod(f.type);
  }
}

std::shared_ptr<const Schema> SnapshotReader::SchemaRef() {
  switch (Pod<uint8_t>()) {
    case kAbsent: return nullptr;
    case kBytes: {
      auto s = std::make_shared<Schema>(Count(9));
      for (Field& f : *s) {
        f.name = Str();
        f.type = Enum(TypeId::kUtf8, "a field's type");
      }
      schemas_.push_back(s);
      return s;
    }
    case kShared: {
      const uint64_t k = U64();
      Check(k < schemas_.size(), "a schema refers to one not written before it");
      return schemas_[k];
    }
    default: Corrupt("unknown schema tag");
  }
}

void SnapshotWriter::WriteBatch(const Batch& b) {
  Pod(b.kind);
  SchemaRef(b.schema);
  I64(b.length);
  Cols(b.columns);
  TimeCol(b.sync);
  TimeCol(b.other);
  OptDur(b.constant_duration);
  Buf(b.holders);
  Bool(b.has_selection);
  Buf(b.selection);
  I64(b.selection_count);
}

Batch SnapshotReader::ReadBatch(const Schema* expect) {
  Batch b;
  b.kind = Enum(BatchKind::kLifetime, "a batch's kind");
  b.schema = SchemaRef();
  b.length = I64();
  b.columns = Cols();
  b.sync = TimeCol();
  b.other = TimeCol();
  b.constant_duration = OptDur();
  b.holders = Buf();
  b.has_selection = Bool();
  b.selection = Buf();
  b.selection_count = I64();
  const int64_t n = b.length;
  Check(n >= 0, "a batch's length is negative");
  if (expect) {
    bool same = b.schema && b.columns.size() == expect->size();
    for (size_t c = 0; same && c < expect->size(); ++c) same = b.columns[c].type == (*expect)[c].type;
    Check(same, "a batch's columns are not of the types the plan gives");
  }
  Check(!b.schema || b.columns.size() == b.schema->size(), "a batch has other columns than its schema");
  for (size_t c = 0; c < b.columns.size(); ++c)
    Check(b.columns[c].length >= n &&
              (!b.schema || b.columns[c].type == (*b.schema)[c].type || b.columns[c].type == TypeId::kNull),
          "a batch's column is shorter than the batch or of another type than its schema says");
  Check(Covers(b.sync.ticks, n, 8), "a batch's timestamps are short");
  CheckTimes(b.sync, n, "a batch's timestamps");
  CheckTimes(b.other, n, "a batch's end times");
  Check(b.holders.empty() || Covers(b.holders, n, 4), "a batch's holder ids are short");
  CheckHolders(b.holders, n, true, "a batch's holder ids");
  if (b.has_selection) {
    Check(b.selection_count >= 0 && b.selection_count <= n && Covers(b.selection, b.selection_count, 4),
          "a batch's selection is out of range");
    const uint32_t* s = b.sel();
    bool ok = true;
    for (int64_t k = 0; k < b.selection_count; ++k)
      ok &= s[k] < static_cast<uint64_t>(n) && (k == 0 || s[k] > s[k - 1]);
    Check(ok, "a batch's selection names rows it does not have, or not in order");
  }
  // A lifetime batch has its ends: a constant duration, or a column of them (under the Negative
  // Tuple method a negative's is the start it ends, so no order between the two is checked).
  if (b.kind == BatchKind::kLifetime)
    Check(b.constant_duration || Covers(b.other.ticks, n, 8), "a lifetime batch has no end times");
  // Rows are in time order (stream order; a relation's changes as they happened).
  for (int64_t k = 1, rows = b.num_rows(); k < rows; ++k)
    if (b.StartAt(b.Physical(k)) < b.StartAt(b.Physical(k - 1)))
      Corrupt("a batch's timestamps: expected in time order, found " + Show(b.StartAt(b.Physical(k))) + " after " +
              Show(b.StartAt(b.Physical(k - 1))));
  return b;
}

void SnapshotWriter::WriteEnds(const EndBatch& e) {
  I64(e.length);
  Buf(e.holders);
  TimeCol(e.ends);
}

EndBatch SnapshotReader::ReadEnds() {
  EndBatch e;
  e.length = I64();
  e.holders = Buf();
  e.ends = TimeCol();
  Check(Covers(e.holders, e.length, 4) && Covers(e.ends.ticks, e.length, 8), "an end batch is short");
  CheckTimes(e.ends, e.length, "an end batch's times");
  CheckHolders(e.holders, e.length, false, "an end batch's holder ids");
  return e;
}

}  // namespace cq
