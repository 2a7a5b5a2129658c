#pragma once
// The byte-level serializer of engine snapshots (Engine::Snapshot/Restore): ByteWriter writes
// little-endian PODs, length-prefixed vectors and strings, and length-prefixed sections; ByteReader
// reads them back, checked. What an engine's state is made of above bytes (logical times, holder
// ids, columns and batches, a buffer written once however many batches share it) is written by
// SnapshotWriter and read by SnapshotReader (batch/snapshot.h), which add those to these two.
//
// Reading never trusts the bytes: the checksum in the header is public (anyone can sign damaged
// bytes again), so every restored field is checked before the engine runs on it — lengths and
// counts against the bytes left, ids against what they index, times against their order, columns
// against their types and lengths — and a failed check throws CqError(kSnapshot) saying what was
// expected, what was found and in which section (an operator's state, the executor's, the holder
// table): a damaged snapshot is an error, never a crash, a hang or an engine in a state its code
// cannot be in. The checked reads (Count, Below, PodVec with a predicate, In/Section for where
// here; Holder, TimeValue, ReadBatch in batch/snapshot.h) are the one way to read; an owner adds
// the checks only it can make (that its references point into what it keeps) with
// CQ_SNAPSHOT_CHECK or Expect.
//
// Writing is deterministic: the same state gives the same bytes. Structs are written field by
// field (their padding, which holds whatever memory held before, never reaches the bytes); a bool
// field is one byte, read back only as 0 or 1.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/errors.h"

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
  if constexpr (n == 1) {
    auto& [a] = v;
    f(a);
  } else if constexpr (n == 2) {
    auto& [a, b] = v;
    f(a);
    f(b);
  } else if constexpr (n == 3) {
    auto& [a, b, c] = v;
    f(a);
    f(b);
    f(c);
  } else if constexpr (n == 4) {
    auto& [a, b, c, d] = v;
    f(a);
    f(b);
    f(c);
    f(d);
  } else if constexpr (n == 5) {
    auto& [a, b, c, d, e] = v;
    f(a);
    f(b);
    f(c);
    f(d);
    f(e);
  } else if constexpr (n == 6) {
    auto& [a, b, c, d, e, g] = v;
    f(a);
    f(b);
    f(c);
    f(d);
    f(e);
    f(g);
  } else if constexpr (n == 7) {
    auto& [a, b, c, d, e, g, h] = v;
    f(a);
    f(b);
    f(c);
    f(d);
    f(e);
    f(g);
    f(h);
  } else {
    auto& [a, b, c, d, e, g, h, i] = v;
    f(a);
    f(b);
    f(c);
    f(d);
    f(e);
    f(g);
    f(h);
    f(i);
  }
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

class ByteWriter {
 public:
  void Bytes(const void* p, size_t n) {
    if (n) out_.append(static_cast<const char*>(p), n);  // (an empty vector's data() may be null)
  }
  // A value: scalars and structs without padding as their bytes, other structs field by field.
  template <typename T>
  void Pod(const T& v) {
    if constexpr (snapshot_detail::Raw<T>()) Bytes(&v, sizeof(T));
    else if constexpr (std::is_same_v<T, bool>) U8(v ? 1 : 0);
    else if constexpr (std::is_array_v<T>)
      for (const auto& x : v) Pod(x);
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
};

class ByteReader {
 public:
  ByteReader(const char* data, size_t size) : p_(data), end_(data + size) {}

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
  // A value as ByteWriter::Pod wrote it; a bool (alone or in a struct) must be 0 or 1.
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
    if (v >= bound)
      Corrupt(std::string(what) + ": expected below " + std::to_string(bound) + ", found " + std::to_string(v));
    return v;
  }
  // A signed integer in [lo, hi].
  int64_t I64In(int64_t lo, int64_t hi, const char* what) {
    const int64_t v = I64();
    if (v < lo || v > hi)
      Corrupt(std::string(what) + ": expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " +
              std::to_string(v));
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
  // A vector as ByteWriter::PodVec wrote it.
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
      if (!valid(v[i]))
        Corrupt(std::string(what) + ": item " + std::to_string(i) + " of " + std::to_string(v.size()) +
                " is out of range");
  }

  // A section written by ByteWriter::Begin/End, read by `read`, which must consume it exactly.
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

  // How a value reads in an error: numbers, flags and enums here; a type of the engine by the
  // ShowValue(const T&) declared beside its reader (found by argument-dependent lookup).
  template <typename T>
  static std::string Show(const T& v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_enum_v<T>) return std::to_string(static_cast<int64_t>(v));
    else if constexpr (std::is_arithmetic_v<T>) return std::to_string(v);
    else return ShowValue(v);
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

  const char* p_;
  const char* end_;
};

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

// The checksum of a snapshot's payload (engine.cc): a change to any one 8-byte word changes it.
uint64_t SnapshotChecksum(const char* p, size_t n);

// Checks `ok` while reading a snapshot: state that restored bytes describe must be consistent
// before the engine runs on it.
#define CQ_SNAPSHOT_CHECK(cond, what) ::cq::ByteReader::Check((cond), (what))

}  // namespace cq
