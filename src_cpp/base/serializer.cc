#include "base/serializer.h"

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

}  // namespace cq
