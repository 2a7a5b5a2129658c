#pragma once
// The binary form of engine snapshots (Engine::Snapshot/Restore): how operators, trackers and
// executors write their state and read it back. Little-endian PODs, length-prefixed vectors and
// strings, columns as their raw buffers. A buffer several batches share (an input batch kept by a
// window, an ISTREAM and a sink at once) is written once and shared again after a restore, so a
// snapshot is as large as the state in memory, not as the number of references to it.
//
// Reading never trusts the bytes: the checksum in the header is public (anyone can sign damaged
// bytes again), so every restored field is checked before the engine runs on it — lengths and
// counts against the bytes left, ids against what they index, times against their order, columns
// against their types and lengths — and a failed check throws CqError(kSnapshot) saying what was
// expected, what was found and in which section (an operator's state, the executor's, the holder
// table): a damaged snapshot is an error, never a crash, a hang or an engine in a state its code
// cannot be in. The checked reads below (Count, Below, Holder, TimeValue, PodVec with a predicate,
// In/Section for where) are the one way to read; an owner adds the checks only it can make (that
// its references point into what it keeps) with CQ_SNAPSHOT_CHECK or Expect.
//
// Writing is deterministic: the same state gives the same bytes. Structs are written field by
// field (their padding, which holds whatever memory held before, never reaches the bytes); a bool
// field is one byte, read back only as 0 or 1.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/errors.h"
#include "batch/batch.h"

namespace cq {

static_assert(std::endian::native == std::endian::little,
              "snapshots store PODs as they are in memory: little-endian hosts only");

namespace snapshot_detail {

// Field-by-field access to an aggregate struct (the entries operators keep in flat vectors): its
// number of fields is the largest n for which it can be brace-initialized from n braced values of
// any type (braced, so that an array member takes one), and a structured binding of that many
// names reaches them.
struct AnyField {
  template <typename U>
  operator U() const;  // (never defined: unevaluated contexts only)
};
template <typename T, size_t... I>
constexpr bool InitializableFrom(std::index_sequence<I...>) {
  return requires { T{{(static_cast<void>(I), AnyField{})}...}; };
}
template <typename T, size_t N = 0>
constexpr size_t FieldCount() {
  if constexpr (N > 8) return N;  // (beyond what ForEachField binds: static_assert below)
  else if constexpr (InitializableFrom<T>(std::make_index_sequence<N + 1>{})) return FieldCount<T, N + 1>();
  else return N;
}

template <typename T, typename F>
constexpr void ForEachField(T& v, F&& f) {
  constexpr size_t n = FieldCount<std::remove_const_t<T>>();
  static_assert(n >= 1 && n <= 8, "snapshot structs have 1 to 8 fields");
  if constexpr (n == 1) { auto& [a] = v; f(a); }
  else if constexpr (n == 2) { auto& [a, b] = v; f(a); f(b); }
  else if constexpr (n == 3) { auto& [a, b, c] = v; f(a); f(b); f(c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = v; f(a); f(b); f(c); f(d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = v; f(a); f(b); f(c); f(d); f(e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, g] = v; f(a); f(b); f(c); f(d); f(e); f(g); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, g, h] = v; f(a); f(b); f(c); f(d); f(e); f(g); f(h); }
  else { auto& [a, b, c, d, e, g, h, i] = v; f(a); f(b); f(c); f(d); f(e); f(g); f(h); f(i); }
}

// How a trivially copyable type is written: its bytes as they are (Raw: scalars, and structs
// without padding or bools), or field by field (other aggregates). A bool is one byte either way.
template <typename T>
constexpr bool IsStruct() {
  return std::is_class_v<T> && std::is_aggregate_v<T>;
}
template <typename T>
constexpr bool Raw();
template <typename T>
constexpr bool AllFieldsRaw() {
  bool raw = true;
  T v{};
  ForEachField(v, [&](auto& f) { raw = raw && Raw<std::remove_cvref_t<decltype(f)>>(); });
  return raw;
}
template <typename T>
constexpr bool Raw() {
  static_assert(std::is_trivially_copyable_v<T>);
  if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (std::is_array_v<T>) return Raw<std::remove_extent_t<T>>();
  else if constexpr (!std::is_class_v<T>) return true;
  else if constexpr (!IsStruct<T>()) {
    static_assert(std::has_unique_object_representations_v<T>,
                  "a non-aggregate class with padding cannot be written deterministically");
    return true;
  } else return std::has_unique_object_representations_v<T> && AllFieldsRaw<T>();
}
// The bytes a value takes in a snapshot.
template <typename T>
constexpr size_t PackedSize() {
  if constexpr (Raw<T>()) return sizeof(T);
  else if constexpr (std::is_same_v<T, bool>) return 1;
  else if constexpr (std::is_array_v<T>) return std::extent_v<T> * PackedSize<std::remove_extent_t<T>>();
  else {
    size_t n = 0;
    T v{};
    ForEachField(v, [&](auto& f) { n += PackedSize<std::remove_cvref_t<decltype(f)>>(); });
    return n;
  }
}

}  // namespace snapshot_detail

class SnapshotWriter {
 public:
  void Bytes(const void* p, size_t n) {
    if (n) out_.append(static_cast<const char*>(p), n);  // (an empty vector's data() may be null)
  }
  // A value: scalars and structs without padding as their bytes, other structs field by field.
  template <typename T>
  void Pod(const T& v) {
    if constexpr (snapshot_detail::Raw<T>()) Bytes(&v, sizeof(T));
    else if constexpr (std::is_same_v<T, bool>) U8(v ? 1 : 0);
    else if constexpr (std::is_array_v<T>) for (const auto& x : v) Pod(x);
    else snapshot_detail::ForEachField(v, [this](const auto& f) { Pod(f); });
  }
  void U8(uint8_t v) { Bytes(&v, 1); }
  void U64(uint64_t v) { Pod(v); }
  void I64(int64_t v) { Pod(v); }
  void U32(uint32_t v) { Pod(v); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  void Str(std::string_view s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  template <typename T>
  void PodVec(const T* p, size_t n) {
    U64(n);
    if constexpr (snapshot_detail::Raw<T>()) {
      Bytes(p, n * sizeof(T));
    } else {
      out_.reserve(out_.size() + n * snapshot_detail::PackedSize<T>());
      for (size_t i = 0; i < n; ++i) Pod(p[i]);
    }
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

  // Throws CqError(kSnapshot) saying the snapshot is damaged, where (the sections being read, see
  // In) and what was wrong.
  [[noreturn]] static void Corrupt(const std::string& what);
  static void Check(bool ok, const char* what) {
    if (!ok) Corrupt(what);
  }
  // Checks that `found` is `expected`, naming both when it is not.
  template <typename A, typename B>
  static void Expect(const A& found, const B& expected, const char* what) {
    if (!(found == expected)) Corrupt(std::string(what) + ": expected " + Show(expected) + ", found " + Show(found));
  }

  // Names the part of the snapshot read until the guard goes (nested): errors say where they are.
  class Where {
   public:
    explicit Where(std::string what);
    ~Where();
    Where(const Where&) = delete;
    Where& operator=(const Where&) = delete;
  };
  [[nodiscard]] static Where In(std::string what) { return Where(std::move(what)); }

  size_t left() const { return static_cast<size_t>(end_ - p_); }
  void Bytes(void* out, size_t n) {
    if (n > left()) Truncated(n);
    if (n) std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* Skip(size_t n) {
    if (n > left()) Truncated(n);
    const char* at = p_;
    p_ += n;
    return at;
  }
  // A value as SnapshotWriter::Pod wrote it; a bool (alone or in a struct) must be 0 or 1.
  template <typename T>
  T Pod() {
    T v{};
    Read(v);
    return v;
  }
  uint8_t U8() { return Pod<uint8_t>(); }
  uint64_t U64() { return Pod<uint64_t>(); }
  int64_t I64() { return Pod<int64_t>(); }
  uint32_t U32() { return Pod<uint32_t>(); }
  bool Bool() {
    const uint8_t b = U8();
    if (b > 1) Corrupt("a flag: expected 0 or 1, found " + std::to_string(b));
    return b != 0;
  }
  // An unsigned integer below `bound` (an index, an id, an enum's value): `what` names it.
  template <typename T = uint64_t>
  T Below(uint64_t bound, const char* what) {
    static_assert(std::is_unsigned_v<T>);
    const T v = Pod<T>();
    if (v >= bound) Corrupt(std::string(what) + ": expected below " + std::to_string(bound) + ", found " + std::to_string(v));
    return v;
  }
  // A signed integer in [lo, hi].
  int64_t I64In(int64_t lo, int64_t hi, const char* what) {
    const int64_t v = I64();
    if (v < lo || v > hi)
      Corrupt(std::string(what) + ": expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " + std::to_string(v));
    return v;
  }
  // An enum whose values run from 0 to `last`.
  template <typename E>
  E Enum(E last, const char* what) {
    using U = std::make_unsigned_t<std::underlying_type_t<E>>;
    return static_cast<E>(Below<U>(static_cast<uint64_t>(last) + 1, what));
  }
  // A count of items of at least `min_bytes` each, checked against what is left, so that a
  // damaged count cannot make a reader allocate (or loop) without bound.
  size_t Count(size_t min_bytes, const char* what = "a length") {
    const uint64_t n = U64();
    if (min_bytes && n > left() / min_bytes)
      Corrupt(std::string(what) + " of " + std::to_string(n) + " items of " + std::to_string(min_bytes) +
              " bytes or more exceeds the " + std::to_string(left()) + " bytes left");
    return static_cast<size_t>(n);
  }
  std::string Str() {
    const size_t n = Count(1, "a string's length");
    std::string s(Skip(n), n);
    return s;
  }
  // A vector as SnapshotWriter::PodVec wrote it.
  template <typename T>
  void PodVec(std::vector<T>& v, const char* what = "a vector's length") {
    const size_t n = Count(snapshot_detail::PackedSize<T>(), what);
    if constexpr (snapshot_detail::Raw<T>()) {
      v.resize(n);
      Bytes(v.data(), n * sizeof(T));
    } else {
      v.assign(n, T{});
      for (T& x : v) Read(x);
    }
  }
  template <typename T>
  std::vector<T> PodVec() {
    std::vector<T> v;
    PodVec(v);
    return v;
  }
  // The same, every item checked by valid(item) (`what` names the items in the error).
  template <typename T, typename Valid>
  void PodVec(std::vector<T>& v, const char* what, Valid&& valid) {
    PodVec(v, what);
    for (size_t i = 0; i < v.size(); ++i)
      if (!valid(v[i])) Corrupt(std::string(what) + ": item " + std::to_string(i) + " of " + std::to_string(v.size()) + " is out of range");
  }

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
      if (!ValidTime(v[i])) Corrupt(std::string(what) + ": item " + std::to_string(i) + " is not a time: " + Show(v[i]));
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

  // A section written by SnapshotWriter::Begin/End, read by `read`, which must consume it exactly.
  // `what` names it in errors (In).
  template <typename F>
  void Section(const std::string& what, F&& read) {
    const size_t n = Count(1, "a section's length");
    const char* const end = p_ + n;
    const char* const saved_end = end_;
    auto in = In(what);
    end_ = end;  // reads past the section are truncation errors
    Guarded(read);
    if (p_ != end) Corrupt(std::to_string(end - p_) + " bytes are left over at its end");
    end_ = saved_end;
  }
  // Runs `read`, turning any other error it throws (an internal check, an allocation that fails)
  // into a snapshot error that says where: whatever goes wrong while restoring comes from the bytes.
  template <typename F>
  static void Guarded(F&& read) {
    try {
      read();
    } catch (const CqError& e) {
      if (e.kind() == ErrorKind::kSnapshot) throw;
      Corrupt(e.what());
    } catch (const std::exception& e) {
      Corrupt(e.what());
    }
  }

  static std::string Show(const Time& t);
  template <typename T>
  static std::string Show(const T& v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_enum_v<T>) return std::to_string(static_cast<int64_t>(v));
    else return std::to_string(v);
  }

 private:
  template <typename T>
  void Read(T& v) {
    if constexpr (snapshot_detail::Raw<T>()) {
      Bytes(&v, sizeof(T));
    } else if constexpr (std::is_same_v<T, bool>) {
      v = Bool();
    } else if constexpr (std::is_array_v<T>) {
      for (auto& x : v) Read(x);
    } else {
      snapshot_detail::ForEachField(v, [this](auto& f) { Read(f); });
    }
  }
  [[noreturn]] void Truncated(size_t n) const;
  void CheckTimes(const TimeColumn& t, int64_t n, const char* what);
  Time progress_ = Time::Infinity();
  uint64_t holder_capacity_ = kNoHolder;  // (unbounded until the engine says: an operator's unit tests)

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

// Text read from a snapshot, fit for an error message: bytes outside printable ASCII as \xNN (a
// damaged name must not make the message itself undecodable).
std::string Printable(std::string_view s, size_t max = 200);

// The entries of an unordered map in key order: a snapshot writes them so, so that the same state
// gives the same bytes however the map came to be (a restored one is filled in another order).
template <typename Map>
std::vector<const typename Map::value_type*> SortedEntries(const Map& m) {
  std::vector<const typename Map::value_type*> out;
  out.reserve(m.size());
  for (const auto& e : m) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return out;
}

// The Negative Tuple method's promise, checked on a restored tracker: replaying its instants in time
// order (positives join, then negatives leave), every negative finds a positive of its value among
// those alive or come before it — else the instant would fail when it comes. Values are compared by
// hash (equal values have equal hashes, so a sound state always passes). `alive` is the hashes
// alive now; `instants` visits each pending instant's positive and negative hashes in time order.
template <typename Instants>
bool NegativesFindPositives(std::vector<uint64_t> alive, Instants&& instants) {
  std::unordered_map<uint64_t, int64_t> count;
  for (uint64_t h : alive) ++count[h];
  bool ok = true;
  instants([&](const std::vector<uint64_t>& positives, const std::vector<uint64_t>& negatives) {
    for (uint64_t h : positives) ++count[h];
    for (uint64_t h : negatives) ok = ok && count[h]-- > 0;
  });
  return ok;
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
