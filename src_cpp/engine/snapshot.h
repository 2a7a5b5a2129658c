#pragma once
// The binary form of engine snapshots (Engine::Snapshot/Restore): how operators, trackers and
// executors write their state and read it back. Little-endian PODs, length-prefixed vectors and
// strings, columns as their raw buffers. A buffer several batches share (an input batch kept by a
// window, an ISTREAM and a sink at once) is written once and shared again after a restore, so a
// snapshot is as large as the state in memory, not as the number of references to it.
//
// Reading never trusts the bytes: every length is checked against what is left, every column
// against its type and length, and a failed check throws CqError(kSnapshot) — a truncated or
// corrupted snapshot is an error, never a crash. (The engine adds a checksum over the whole
// payload, so that corruption inside values that no structural check could catch is found too.)
#include <span>
#include <bit>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "batch/batch.h"
#include "engine/errors.h"

namespace cq {

static_assert(std::endian::native == std::endian::little,
              "snapshots store PODs as they are in memory: little-endian hosts only");

class SnapshotWriter {
 public:
  void Bytes(const void* p, size_t n) {
    if (n) out_.append(static_cast<const char*>(p), n);  // (an empty vector's data() may be null)
  }
  template <typename T>
  void Pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Bytes(&v, sizeof(T));
  }
  void U64(uint64_t v) { Pod(v); }
  void I64(int64_t v) { Pod(v); }
  void U32(uint32_t v) { Pod(v); }
  void Bool(bool v) { Pod(static_cast<uint8_t>(v)); }
  void Str(std::string_view s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  template <typename T>
  void PodVec(const T* p, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    U64(n);
    Bytes(p, n * sizeof(T));
  }
  template <typename T>
  void PodVec(const std::vector<T>& v) {
    PodVec(v.data(), v.size());
  }
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

  // A length-prefixed section: Begin returns where its length goes, End fills it in. Readers skip
  // nothing, but the length lets them say which section is short or long.
  size_t Begin() {
    const size_t at = out_.size();
    U64(0);
    return at;
  }
  void End(size_t at) {
    const uint64_t n = out_.size() - at - sizeof(uint64_t);
    std::memcpy(out_.data() + at, &n, sizeof n);
  }

  std::string& bytes() { return out_; }

 private:
  std::string out_;
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

class SnapshotReader {
 public:
  SnapshotReader(const char* data, size_t size) : p_(data), end_(data + size) {}

  // Throws CqError(kSnapshot) saying the snapshot is damaged and what was being read.
  [[noreturn]] static void Corrupt(const std::string& what);
  static void Check(bool ok, const char* what) {
    if (!ok) Corrupt(what);
  }

  size_t left() const { return static_cast<size_t>(end_ - p_); }
  void Bytes(void* out, size_t n) {
    if (n > left()) Corrupt("it ends in the middle (truncated)");
    if (n) std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* Skip(size_t n) {
    if (n > left()) Corrupt("it ends in the middle (truncated)");
    const char* at = p_;
    p_ += n;
    return at;
  }
  template <typename T>
  T Pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    Bytes(&v, sizeof(T));
    return v;
  }
  uint64_t U64() { return Pod<uint64_t>(); }
  int64_t I64() { return Pod<int64_t>(); }
  uint32_t U32() { return Pod<uint32_t>(); }
  bool Bool() {
    const uint8_t b = Pod<uint8_t>();
    Check(b <= 1, "a flag is neither 0 nor 1");
    return b != 0;
  }
  // A count of items of at least `min_bytes` each, checked against what is left, so that a
  // damaged count cannot make a reader allocate without bound.
  size_t Count(size_t min_bytes) {
    const uint64_t n = U64();
    if (min_bytes && n > left() / min_bytes) Corrupt("a length exceeds what is left of it");
    return static_cast<size_t>(n);
  }
  std::string Str() {
    const size_t n = Count(1);
    std::string s(Skip(n), n);
    return s;
  }
  template <typename T>
  void PodVec(std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t n = Count(sizeof(T));
    v.resize(n);
    Bytes(v.data(), n * sizeof(T));
  }
  template <typename T>
  std::vector<T> PodVec() {
    std::vector<T> v;
    PodVec(v);
    return v;
  }
  void Times(std::vector<Time>& v) { PodVec(v); }
  Duration Dur() {
    Duration d;
    d.ticks = I64();
    d.steps = I64();
    d.infinite = Bool();
    return d;
  }
  std::optional<Duration> OptDur() {
    if (!Bool()) return std::nullopt;
    return Dur();
  }

  Buffer Buf();
  Column Col();
  std::vector<Column> Cols();
  TimeColumn TimeCol();
  std::shared_ptr<const Schema> SchemaRef();
  // A batch, checked: columns as its schema says, every buffer as long as its rows need. With
  // `expect`, the batch's columns must have its types: operators read columns by the types their
  // plan gives, so a restored batch must not bring other ones.
  Batch ReadBatch(const Schema* expect = nullptr);
  EndBatch ReadEnds();

  // A section written by SnapshotWriter::Begin/End, read by `read`, which must consume it exactly.
  template <typename F>
  void Section(const std::string& what, F&& read) {
    const size_t n = Count(1);
    const char* const end = p_ + n;
    const char* const saved_end = end_;
    end_ = end;  // reads past the section are truncation errors
    read();
    if (p_ != end) Corrupt(what + " has " + std::to_string(end - p_) + " bytes left over");
    end_ = saved_end;
  }

 private:
  void CheckTimes(const TimeColumn& t, int64_t n, const char* what);

  const char* p_;
  const char* end_;
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

// Whether a bool member of a struct read as raw bytes holds 0 or 1 (checked without loading it:
// loading any other byte as a bool is undefined).
inline bool ValidBool(const bool& b) {
  uint8_t v;
  std::memcpy(&v, &b, 1);
  return v <= 1;
}

// The checksum of a snapshot's payload (engine.cc): a change to any one 8-byte word changes it.
uint64_t SnapshotChecksum(const char* p, size_t n);

// Checks `ok` while reading a snapshot: state that restored bytes describe must be consistent
// before the engine runs on it.
#define CQ_SNAPSHOT_CHECK(cond, what) ::cq::SnapshotReader::Check((cond), (what))

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

// Reads what WriteNumberedBatches wrote into `items` (cleared first): batches of the columns
// `expect` gives, numbers consecutive and below `next_seq`; with `compact`, batches without a
// selection (owners that keep compact copies refer to rows by physical index). `what` names the
// run in errors.
template <typename Items>
void ReadNumberedBatches(SnapshotReader& r, const Schema& expect, uint64_t next_seq, bool compact,
                         Items& items, const char* what) {
  using Item = typename Items::value_type;
  items.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    Item k{};
    const uint64_t seq = r.U64();
    k.batch = r.ReadBatch(&expect);
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
