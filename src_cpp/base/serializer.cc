#include "base/serializer.h"

#include <cstring>
#include <string>
#include <vector>

namespace cq {

namespace {
// The sections being read (ByteReader::In), outermost first. Per thread: a restore runs on one
// thread, and several engines may restore at once on others.
thread_local std::vector<std::string> g_where;
}  // namespace

ByteReader::Where::Where(std::string what) { g_where.push_back(std::move(what)); }
ByteReader::Where::~Where() { g_where.pop_back(); }

void ByteReader::Corrupt(const std::string& what) {
  std::string where;
  for (const std::string& w : g_where) where += "in " + w + ": ";
  throw CqError(ErrorKind::kSnapshot, "not a valid cq snapshot: " + where + what);
}

void ByteReader::Truncated(size_t n) const {
  Corrupt("it ends in the middle (truncated): " + std::to_string(n) + " more bytes expected, " +
          std::to_string(left()) + " left");
}

std::string Printable(std::string_view s, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

// A 64-bit checksum of the payload: four lanes of multiply-xorshift steps over 8-byte words.
// Every step is a bijection of the lane for a given word and injective in the word, so a change
// to any one word always changes the result; it runs at memory speed.
uint64_t SnapshotChecksum(const char* p, size_t n) {
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t lane[4] = {0x9E3779B97F4A7C15ull ^ n, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  auto step = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 32);
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    for (int k = 0; k < 4; ++k) lane[k] = step(lane[k], w[k]);
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    lane[0] = step(lane[0], w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    lane[1] = step(lane[1], w ^ (uint64_t{1} << 63));
  }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k) h = step(h, lane[k]);
  return h;
}

}  // namespace cq
