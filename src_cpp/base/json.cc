#include "base/json.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "base/errors.h"

namespace cq::json {

namespace {

[[noreturn]] void Fail(const std::string& what) { throw CqError(ErrorKind::kInternal, "malformed plan JSON: " + what); }

// Objects and arrays are read (and freed) recursively, so their nesting is bounded: a million '['
// must be an error, not a stack overflow. The planner's plans nest far less (it caps expressions
// at 100 levels, some 200 here).
constexpr int kMaxDepth = 1000;

class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}

  Value Document() {
    Value v = Any();
    Ws();
    if (i_ != t_.size()) Fail("trailing characters at offset " + std::to_string(i_));
    return v;
  }

 private:
  void Ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  char Peek() {
    Ws();
    if (i_ >= t_.size()) Fail("unexpected end");
    return t_[i_];
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  bool Literal(std::string_view word) {
    if (t_.substr(i_, word.size()) == word) {
      i_ += word.size();
      return true;
    }
    return false;
  }

  Value Any() {
    char c = Peek();
    Value v;
    if ((c == '{' || c == '[') && ++depth_ > kMaxDepth) {
      Fail("nested deeper than " + std::to_string(kMaxDepth) + " levels at offset " + std::to_string(i_));
    }
    if (c == '{') {
      auto obj = std::make_shared<Object>();
      ++i_;
      if (Peek() == '}') {
        ++i_;
      } else {
        for (;;) {
          std::string key = String();
          Expect(':');
          (*obj)[key] = Any();
          if (Peek() == ',') {
            ++i_;
            continue;
          }
          Expect('}');
          break;
        }
      }
      v.v = obj;
      --depth_;
    } else if (c == '[') {
      auto arr = std::make_shared<Array>();
      ++i_;
      if (Peek() == ']') {
        ++i_;
      } else {
        for (;;) {
          arr->push_back(Any());
          if (Peek() == ',') {
            ++i_;
            continue;
          }
          Expect(']');
          break;
        }
      }
      v.v = arr;
      --depth_;
    } else if (c == '"') {
      v.v = String();
    } else if (Literal("true")) {
      v.v = true;
    } else if (Literal("false")) {
      v.v = false;
    } else if (Literal("null")) {
      v.v = nullptr;
    } else if (Literal("NaN")) {
      v.v = std::numeric_limits<double>::quiet_NaN();
    } else if (Literal("Infinity")) {
      v.v = std::numeric_limits<double>::infinity();
    } else if (Literal("-Infinity")) {
      v.v = -std::numeric_limits<double>::infinity();
    } else {
      v = Number();
    }
    return v;
  }

  Value Number() {
    size_t start = i_;
    bool is_float = false;
    if (i_ < t_.size() && (t_[i_] == '-' || t_[i_] == '+')) ++i_;
    while (i_ < t_.size()) {
      char c = t_[i_];
      if (c >= '0' && c <= '9') {
        ++i_;
        continue;
      }
      if (c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
        is_float = true;
        ++i_;
        continue;
      }
      break;
    }
    std::string s(t_.substr(start, i_ - start));
    if (s.empty()) Fail("unexpected character at offset " + std::to_string(start));
    char* end = nullptr;
    Value v;
    errno = 0;
    if (is_float) {
      v.v = std::strtod(s.c_str(), &end);
    } else {
      v.v = static_cast<int64_t>(std::strtoll(s.c_str(), &end, 10));
      if (errno == ERANGE) Fail("integer out of int64 range: " + s);
    }
    if (end != s.c_str() + s.size()) Fail("bad number '" + s + "'");
    return v;
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t Hex4() {
    if (i_ + 4 > t_.size()) Fail("short \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = t_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= h - '0';
      else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
      else Fail("bad \\u escape");
    }
    return cp;
  }

  std::string String() {
    Expect('"');
    std::string out;
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= t_.size()) Fail("unterminated escape");
      char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = Hex4();
          if (cp >= 0xDC00 && cp < 0xE000) Fail("unpaired low surrogate");
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!(i_ + 1 < t_.size() && t_[i_] == '\\' && t_[i_ + 1] == 'u')) Fail("unpaired high surrogate");
            i_ += 2;
            uint32_t lo = Hex4();
            if (lo < 0xDC00 || lo >= 0xE000) Fail("high surrogate not followed by a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default: Fail("bad escape");
      }
    }
    if (i_ >= t_.size()) Fail("unterminated string");
    ++i_;
    return out;
  }

  std::string_view t_;
  size_t i_ = 0;
  int depth_ = 0;  // objects and arrays open around the value being read
};

}  // namespace

const Object& Value::object() const {
  if (!is_object()) Fail("object expected");
  return *std::get<std::shared_ptr<Object>>(v);
}
const Array& Value::array() const {
  if (!is_array()) Fail("array expected");
  return *std::get<std::shared_ptr<Array>>(v);
}
const std::string& Value::str() const {
  if (!is_string()) Fail("string expected");
  return std::get<std::string>(v);
}
int64_t Value::integer() const {
  if (!is_int()) Fail("integer expected");
  return std::get<int64_t>(v);
}
double Value::number() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v));
  if (!std::holds_alternative<double>(v)) Fail("number expected");
  return std::get<double>(v);
}
bool Value::boolean() const {
  if (!std::holds_alternative<bool>(v)) Fail("boolean expected");
  return std::get<bool>(v);
}
const Value& Value::operator[](std::string_view key) const {
  const Value* f = find(key);
  if (!f) Fail("missing key '" + std::string(key) + "'");
  return *f;
}
const Value* Value::find(std::string_view key) const {
  const Object& o = object();
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

Value Parse(std::string_view text) { return Reader(text).Document(); }

}  // namespace cq::json
