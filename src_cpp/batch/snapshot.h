#pragma once
// Engine snapshots of what operators, trackers and executors keep: SnapshotWriter and
// SnapshotReader add to the byte layer (base/serializer.h) logical times and durations, expiration
// holder ids, and the batch format: columns as their raw buffers, batches, end batches. A buffer
// several batches share (an input batch kept by a window, an ISTREAM and a sink at once) is written
// once and shared again after a restore, so a snapshot is as large as the state in memory, not as
// the number of references to it. Every restored time, id, column and batch is checked as
// base/serializer.h says.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/serializer.h"
#include "batch/batch.h"
#include "time/time.h"

namespace cq {

// How a time reads in a snapshot error (ByteReader::Show).
std::string ShowValue(const Time& t);

class SnapshotWriter : public ByteWriter {
 public:
  void Times(const std::vector<Time>& v) { PodVec(v); }
  void Dur(const Duration& d) {
    I64(d.ticks);
    I64(d.steps);
    Bool(d.infinite);
  }
  void OptDur(const std::optional<Duration>& d) {
    Bool(d.has_value());
    if (d) Dur(*d);
  }

  // Columnar data. Buffers and schemas are written once per snapshot and referred to after that.
  void Buf(const Buffer& b);
  void Col(const Column& c);
  void Cols(std::span<const Column> cols);
  void TimeCol(const TimeColumn& t);
  void SchemaRef(const std::shared_ptr<const Schema>& s);
  void WriteBatch(const Batch& b);
  void WriteEnds(const EndBatch& e);

  // The progress of the operator being written, as its executor keeps it (MinusInfinity when not
  // told): every instant below it is complete and handed over.
  void set_progress(Time t) { progress_ = t; }
  Time progress() const { return progress_; }

 private:
  Time progress_ = Time::MinusInfinity();
  // Key: the buffer's first byte and size (buffers are immutable while a snapshot is taken).
  struct BufKey {
    const uint8_t* data;
    int64_t size;
    bool operator==(const BufKey&) const = default;
  };
  struct BufKeyHash {
    size_t operator()(const BufKey& k) const {
      return std::hash<const void*>()(k.data) ^ (static_cast<size_t>(k.size) * 0x9E3779B97F4A7C15ull);
    }
  };
  std::unordered_map<BufKey, uint64_t, BufKeyHash> buffers_;
  std::unordered_map<const Schema*, uint64_t> schemas_;
  // Every buffer and schema written, held until the writer goes: operators may write temporaries
  // (a compacted copy), and a freed temporary's address could come back for another buffer and
  // be taken for the first.
  std::vector<Buffer> written_;
  std::vector<std::shared_ptr<const Schema>> written_schemas_;
};

class SnapshotReader : public ByteReader {
 public:
  using ByteReader::ByteReader;

  // Logical times (time/time.h): a step is not negative and leaves room for the steps a run adds
  // (Time + Duration adds steps unchecked). Every time restored goes through these.
  static bool ValidTime(const Time& t) { return t.step >= 0 && t.step <= kMaxStep; }
  static constexpr int64_t kMaxStep = int64_t{1} << 62;
  Time TimeValue(const char* what = "a time") {
    const Time t = Pod<Time>();
    if (!ValidTime(t)) Corrupt(std::string(what) + ": expected a time, found " + Show(t));
    return t;
  }
  // Times, each valid and, with `ordered`, none before the one before it.
  void Times(std::vector<Time>& v, bool ordered = false, const char* what = "times") {
    PodVec(v, what);
    for (size_t i = 0; i < v.size(); ++i) {
      if (!ValidTime(v[i]))
        Corrupt(std::string(what) + ": item " + std::to_string(i) + " is not a time: " + Show(v[i]));
      if (ordered && i > 0 && v[i] < v[i - 1])
        Corrupt(std::string(what) + ": expected in time order, found " + Show(v[i]) + " after " + Show(v[i - 1]));
    }
  }
  Duration Dur() {
    Duration d;
    d.ticks = I64In(0, INT64_MAX, "a duration's ticks");
    d.steps = I64In(0, kMaxStep, "a duration's steps");
    d.infinite = Bool();
    return d;
  }
  std::optional<Duration> OptDur() {
    if (!Bool()) return std::nullopt;
    return Dur();
  }

  // Expiration holder ids (lifetime/expiration_holder.h) index flat arrays by id: a restored id must
  // be one the restored holder table handed out. The engine sets the bound once the table is read.
  void set_holder_capacity(uint64_t n) { holder_capacity_ = n; }
  uint64_t holder_capacity() const { return holder_capacity_; }
  bool ValidHolder(uint32_t id) const { return id < holder_capacity_; }
  uint32_t Holder(const char* what = "an expiration holder id") { return Below<uint32_t>(holder_capacity_, what); }
  // The progress of the operator being read, as its executor restored it: the times an operator
  // has reached (the latest input it saw, the instant it is in) are not past it, or the inputs
  // that come next would go back in time for it. Infinity until an executor says (unit tests).
  void set_progress(Time t) { progress_ = t; }
  Time progress() const { return progress_; }
  // A time reached: valid, and not past progress().
  Time TimeReached(const char* what) {
    const Time t = TimeValue(what);
    if (progress_ < t)
      Corrupt(std::string(what) + ": expected a time not past the operator's progress " + Show(progress_) + ", found " +
              Show(t));
    return t;
  }
  // A time still to come (an instant not complete yet, a row waiting for its time): not before
  // progress(), or it would come out behind what went out already.
  void CheckToCome(Time t, const char* what) const {
    if (t < progress_ && !progress_.IsInfinite())
      Corrupt(std::string(what) + ": expected a time not before the operator's progress " + Show(progress_) +
              ", found " + Show(t));
  }
  // Every id of a holder column (kNoHolder allowed with `none_ok`).
  void CheckHolders(const Buffer& holders, int64_t n, bool none_ok, const char* what);

  Buffer Buf();
  Column Col();
  std::vector<Column> Cols();
  TimeColumn TimeCol();
  std::shared_ptr<const Schema> SchemaRef();
  // A batch, checked: columns as its schema says, every buffer as long as its rows need, valid
  // times and holder ids. With `expect`, the batch's columns must have its types: operators read
  // columns by the types their plan gives, so a restored batch must not bring other ones.
  Batch ReadBatch(const Schema* expect = nullptr);
  // The same, of the kind the plan gives (a lifetime batch has ends to read, a stream's none).
  Batch ReadBatch(const Schema& expect, BatchKind kind) {
    Batch b = ReadBatch(&expect);
    if (b.kind != kind)
      Corrupt(std::string("a batch's kind: expected ") + (kind == BatchKind::kStream ? "stream" : "lifetime") +
              " rows, found " + (b.kind == BatchKind::kStream ? "stream" : "lifetime") + " rows");
    return b;
  }
  EndBatch ReadEnds();

 private:
  void CheckTimes(const TimeColumn& t, int64_t n, const char* what);
  Time progress_ = Time::Infinity();
  uint64_t holder_capacity_ = kNoHolder;  // (unbounded until the engine says: an operator's unit tests)
  std::vector<Buffer> buffers_;
  std::vector<std::shared_ptr<const Schema>> schemas_;
};

// Whether `b` holds n items of `width` bytes, or n bits (width 0), for a restored n of any size
// (no multiplication that could overflow).
inline bool Covers(const Buffer& b, int64_t n, int64_t width) {
  if (n < 0) return false;
  if (n == 0) return true;
  if (b.empty() || b.size < 0) return false;
  return width == 0 ? b.size >= n / 8 + (n % 8 != 0) : b.size / width >= n;
}

// Batches an operator keeps, numbered consecutively by `seq` (its rows are referred to by number),
// each with the count of its rows still referenced when the item has one (`live`). Trackers, row
// windows and ISTREAM keep such runs; they are written and checked in one way.
template <typename Items>
void WriteNumberedBatches(SnapshotWriter& w, const Items& items) {
  w.U64(items.size());
  for (const auto& k : items) {
    w.U64(k.seq);
    w.WriteBatch(k.batch);
    if constexpr (requires { k.live; }) w.I64(k.live);
  }
}

// Reads what WriteNumberedBatches wrote into `items` (cleared first): batches of the columns and
// kind `expect` and `kind` give, numbers consecutive and below `next_seq`; with `compact`, batches without a
// selection (owners that keep compact copies refer to rows by physical index). `what` names the
// run in errors.
template <typename Items>
void ReadNumberedBatches(SnapshotReader& r, const Schema& expect, BatchKind kind, uint64_t next_seq, bool compact,
                         Items& items, const char* what) {
  using Item = typename Items::value_type;
  items.clear();
  for (size_t n = r.Count(1, what); n > 0; --n) {
    Item k{};
    const uint64_t seq = r.U64();
    k.batch = r.ReadBatch(expect, kind);
    bool ok = k.batch.schema && !(compact && k.batch.has_selection) && seq < next_seq &&
              (items.empty() || seq == static_cast<uint64_t>(items.back().seq) + 1);
    if constexpr (requires { k.live; }) {
      k.live = r.I64();
      ok &= k.live >= 0;
    }
    if (!ok) SnapshotReader::Corrupt(std::string(what) + " are out of sequence");
    k.seq = static_cast<decltype(k.seq)>(seq);
    items.push_back(std::move(k));
  }
}

}  // namespace cq
