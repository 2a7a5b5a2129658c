// CAST between BIGINT, DOUBLE, VARCHAR and BOOLEAN, as Spark's non-ANSI (legacy) CAST does it —
// a value that does not convert is NULL, never an error:
//   DOUBLE -> BIGINT   truncates toward zero; NaN is 0, ±Inf and out-of-range values saturate
//                      (Java's (long) cast)
//   BIGINT -> DOUBLE   the nearest double
//   number -> BOOLEAN  non-zero is TRUE (NaN too); BOOLEAN -> number: 1 / 0
//   -> VARCHAR         decimal integers; "true" / "false"; doubles as Java's Double.toString
//                      (as JDK 19 and later print them: the shortest digits that read back, at
//                      least two; plain for 1e-3 <= |x| < 1e7: "1.0", "-0.5", "0.001", else
//                      "1.0E10", "1.5E-4"; "NaN", "Infinity", "-Infinity")
//   VARCHAR -> BIGINT  [+-]digits[.digits], the fraction dropped ("1.9" -> 1, ".5" -> 0); NULL on
//                      anything else and on overflow. Spark reads "." as 0; here it is NULL.
//   VARCHAR -> DOUBLE  Java's number syntax (1, -1.5, .5, 1e3, 1.5d, 0x1p3), or in any case nan,
//                      [+-]inf, [+-]infinity (Spark's additions); out of range is ±Inf or ±0
//   VARCHAR -> BOOLEAN any case: t true y yes 1 / f false n no 0
// Strings are trimmed first of ASCII control characters and spaces at both ends (Spark trims
// those for integers and booleans; Java's parseDouble trims all but DEL). The planner also inserts
// cast_float64(BIGINT) itself, to type mixed arithmetic and comparisons.
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace cq {
namespace {

// ---- one value ----------------------------------------------------------------------------------

int64_t Float64ToInt64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (d <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);  // truncates toward zero
}
double Int64ToFloat64(int64_t v) { return static_cast<double>(v); }
int64_t BoolToInt64(bool b) { return b ? 1 : 0; }
double BoolToFloat64(bool b) { return b ? 1.0 : 0.0; }
bool Int64ToBool(int64_t v) { return v != 0; }
bool Float64ToBool(double d) { return d != 0; }

void Int64ToText(int64_t v, std::string& out) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void BoolToText(bool b, std::string& out) { out += b ? "true" : "false"; }

void Float64ToText(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "NaN";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
    return;
  }
  if (d == 0) {
    out += std::signbit(d) ? "-0.0" : "0.0";
    return;
  }
  // The shortest digits that read back as d, from the scientific form [-]d[.ddd]e±XX.
  char buf[40];
  std::string digits;
  int exp = 0;
  auto scientific = [&](std::to_chars_result r) {
    const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
    const size_t e = sci.find('e'), lead = sci[0] == '-' ? 1 : 0;
    digits.assign(1, sci[lead]);
    if (sci[lead + 1] == '.') digits.append(sci.substr(lead + 2, e - lead - 2));
    std::string_view exp_text = sci.substr(e + 1);
    if (exp_text[0] == '+') exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
  };
  scientific(std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific));
  if (digits.size() == 1 && std::fabs(d) < std::numeric_limits<double>::min()) {
    // Java prints two digits at least (d.d), the pair nearest to d that still reads back as d:
    // that differs from "d.0" only for deep subnormals (4.9E-324, not 5.0E-324).
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific, 1);
    double back = 0;
    std::from_chars(buf, r.ptr, back);
    if (back == d) scientific(r);
  }
  if (std::signbit(d)) out += '-';
  if (exp < -3 || exp > 6) {  // d.dddE±n, at least one digit after the point
    out += digits[0];
    out += '.';
    out += digits.size() > 1 ? std::string_view(digits).substr(1) : "0";
    out += 'E';
    out += std::to_string(exp);
  } else if (exp >= 0) {  // ddd.ddd
    const size_t whole = static_cast<size_t>(exp) + 1;
    if (digits.size() < whole) digits.append(whole - digits.size(), '0');
    out.append(digits, 0, whole);
    out += '.';
    out += digits.size() > whole ? std::string_view(digits).substr(whole) : "0";
  } else {  // 0.000ddd
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  }
}

std::string_view Trim(std::string_view s) {
  auto space = [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7F; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

// The leading run of s whose characters satisfy `digit`, removed from s.
template <typename Pred>
std::string_view TakeWhile(std::string_view& s, Pred digit) {
  size_t k = 0;
  while (k < s.size() && digit(s[k])) ++k;
  std::string_view run = s.substr(0, k);
  s.remove_prefix(k);
  return run;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::optional<int64_t> TextToInt64(std::string_view s) {
  s = Trim(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  const std::string_view whole = TakeWhile(s, IsDigit);
  std::string_view fraction;
  if (!s.empty() && s[0] == '.') {
    s.remove_prefix(1);
    fraction = TakeWhile(s, IsDigit);
  }
  if (!s.empty() || (whole.empty() && fraction.empty())) return std::nullopt;
  // The magnitude, up to 2^63 for a negative number and 2^63 - 1 otherwise.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t m = 0;
  for (char c : whole) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (m > (limit - digit) / 10) return std::nullopt;
    m = m * 10 + digit;
  }
  return static_cast<int64_t>(negative ? 0 - m : m);  // two's complement: 2^63 is INT64_MIN
}

// Java's Double.parseDouble accepts [+-]NaN and [+-]Infinity as written; Spark's CAST adds nan,
// inf and infinity in any case, inf and infinity with a sign.
std::optional<double> SpecialFloat64(std::string_view s) {
  if (s == "NaN" || s == "+NaN" || s == "-NaN" || EqualsIgnoreCase(s, "nan"))
    return std::numeric_limits<double>::quiet_NaN();
  const bool negative = !s.empty() && s[0] == '-';
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity"))
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  return std::nullopt;
}

// A number out of double's range: infinite when its first significant digit stands left of the
// point (after the exponent), else zero. `whole` and `fraction` are the mantissa's digits, `exp`
// the exponent, in units of `digit_exp` (1 for decimal digits and a power of 10, 4 for hex digits
// and a power of 2).
bool Overflows(std::string_view whole, std::string_view fraction, int64_t exp, int digit_exp) {
  const size_t nz = whole.find_first_not_of('0');
  if (nz != std::string_view::npos) return static_cast<int64_t>(whole.size() - nz) * digit_exp + exp > 0;
  const size_t fz = fraction.find_first_not_of('0');
  return -static_cast<int64_t>(fz) * digit_exp + exp > 0;
}

std::optional<double> TextToFloat64(std::string_view s) {
  s = Trim(s);
  if (std::optional<double> special = SpecialFloat64(s)) return special;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // A Java float or double suffix (1.5d, 2f) changes nothing.
  if (!s.empty() && (s.back() == 'd' || s.back() == 'D' || s.back() == 'f' || s.back() == 'F')) s.remove_suffix(1);
  const bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) s.remove_prefix(2);
  const std::string_view number = s;
  auto digit = hex ? IsHexDigit : IsDigit;
  const std::string_view whole = TakeWhile(s, digit);
  std::string_view fraction;
  if (!s.empty() && s[0] == '.') {
    s.remove_prefix(1);
    fraction = TakeWhile(s, digit);
  }
  if (whole.empty() && fraction.empty()) return std::nullopt;
  // The exponent: e (power of 10), or p (power of 2) which a hex number must have.
  int64_t exp = 0;
  if (!s.empty() && (hex ? (s[0] == 'p' || s[0] == 'P') : (s[0] == 'e' || s[0] == 'E'))) {
    s.remove_prefix(1);
    bool exp_negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
      exp_negative = s[0] == '-';
      s.remove_prefix(1);
    }
    const std::string_view exp_digits = TakeWhile(s, IsDigit);
    if (exp_digits.empty()) return std::nullopt;
    for (char c : exp_digits) exp = std::min<int64_t>(exp * 10 + (c - '0'), int64_t{1} << 40);
    if (exp_negative) exp = -exp;
  } else if (hex) {
    return std::nullopt;
  }
  if (!s.empty()) return std::nullopt;
  double v = 0;
  const char* end = number.data() + number.size();
  const auto r = std::from_chars(number.data(), end, v, hex ? std::chars_format::hex : std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range) {
    v = Overflows(whole, fraction, exp, hex ? 4 : 1) ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (r.ec != std::errc() || r.ptr != end) {
    return std::nullopt;  // not expected after the checks above
  }
  return negative ? -v : v;
}

std::optional<bool> TextToBool(std::string_view s) {
  s = Trim(s);
  for (std::string_view t : {"t", "true", "y", "yes", "1"})
    if (EqualsIgnoreCase(s, t)) return true;
  for (std::string_view f : {"f", "false", "n", "no", "0"})
    if (EqualsIgnoreCase(s, f)) return false;
  return std::nullopt;
}

// ---- one row (kernels/row_form.h) --------------------------------------------------------------

// A one-value function as the definition row::Typed and row::Partial take.
template <typename In, typename Out, Out (*kFn)(In)>
struct Fn {
  static Out Apply(In v) { return kFn(v); }
};
template <typename In, void (*kFormat)(In, std::string&)>
struct FormatValue {
  static Value Apply(Value a) {
    thread_local std::string text;  // (kept: a row pays no allocation for the text, only its copy)
    text.clear();
    kFormat(row::Get<In>(a), text);
    return Value::String(text);
  }
};

// ---- whole columns ------------------------------------------------------------------------------

template <typename T>
T Read(const Column& c, int64_t i) {
  if constexpr (std::is_same_v<T, int64_t>) return c.i64()[i];
  else if constexpr (std::is_same_v<T, double>) return c.f64()[i];
  else if constexpr (std::is_same_v<T, bool>) return c.BoolAt(i);
  else return c.StrAt(i);
}

using kernel::kTypeOf;

// A cast that always succeeds between fixed-width types: every row is converted (a NULL row's
// value is ignored), and the result shares the input's validity.
template <typename In, typename Out, Out (*kConvert)(In)>
Column Total(std::span<const Datum> args, int64_t n) {
  const Column& in = *args[0].column;
  Column out;
  out.type = kTypeOf<Out>;
  out.length = n;
  out.validity = in.validity;
  out.null_count = in.null_count;
  if constexpr (std::is_same_v<Out, bool>) {
    out.values = Buffer::Allocate(bitmap::Bytes(n));
    kernel::FillBits(out.values.data, n, [&](int64_t i) { return kConvert(Read<In>(in, i)); });
  } else {
    out.values = Buffer::Allocate(n * 8);
    Out* o = out.values.as<Out>();
    for (int64_t i = 0; i < n; ++i) o[i] = kConvert(Read<In>(in, i));
  }
  return out;
}

// VARCHAR to a fixed-width type: a row that does not parse is NULL.
template <typename Out, std::optional<Out> (*kParse)(std::string_view)>
Column Parse(std::span<const Datum> args, int64_t n) {
  const Column& in = *args[0].column;
  Column out;
  out.type = kTypeOf<Out>;
  out.length = n;
  out.values = Buffer::AllocateZeroed(std::is_same_v<Out, bool> ? bitmap::Bytes(n) : n * 8);
  Buffer valid = Buffer::AllocateZeroed(bitmap::Bytes(n));
  int64_t good = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!in.IsValid(i)) continue;
    const std::optional<Out> v = kParse(in.StrAt(i));
    if (!v) continue;
    if constexpr (std::is_same_v<Out, bool>) bitmap::SetTo(out.values.data, i, *v);
    else out.values.as<Out>()[i] = *v;
    bitmap::Set(valid.data, i);
    ++good;
  }
  out.null_count = n - good;
  if (out.null_count) out.validity = valid;
  return out;
}

// Any type to VARCHAR: never fails, so the result shares the input's validity.
template <typename In, void (*kFormat)(In, std::string&)>
Column Format(std::span<const Datum> args, int64_t n) {
  const Column& in = *args[0].column;
  Column out;
  out.type = TypeId::kUtf8;
  out.length = n;
  out.validity = in.validity;
  out.null_count = in.null_count;
  out.offsets = Buffer::Allocate((n + 1) * 4);
  int32_t* o = out.offsets.as<int32_t>();
  std::string bytes;
  bytes.reserve(static_cast<size_t>(n) * 8);
  for (int64_t i = 0; i < n; ++i) {
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw std::length_error("utf8 column exceeds 2 GiB in one batch");
    o[i] = static_cast<int32_t>(bytes.size());
    if (in.IsValid(i)) kFormat(Read<In>(in, i), bytes);
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw std::length_error("utf8 column exceeds 2 GiB in one batch");
  o[n] = static_cast<int32_t>(bytes.size());
  out.values = Buffer::Allocate(static_cast<int64_t>(bytes.size()));
  std::memcpy(out.values.data, bytes.data(), bytes.size());
  return out;
}

// Both forms of a cast from its one-value function.
template <typename In, typename Out, Out (*kConvert)(In)>
Kernel TotalKernel(const char* name, const char* doc) {
  return {name,
          {kTypeOf<In>},
          kTypeOf<Out>,
          NullHandling::kPropagate,
          doc,
          Total<In, Out, kConvert>,
          row::BindUnary<row::Typed<In, Fn<In, Out, kConvert>>>};
}
template <typename Out, std::optional<Out> (*kParse)(std::string_view)>
Kernel ParseKernel(const char* name, const char* doc) {
  return {name,
          {TypeId::kUtf8},
          kTypeOf<Out>,
          NullHandling::kPropagate,
          doc,
          Parse<Out, kParse>,
          row::BindStringUnary<row::Partial<Fn<std::string_view, std::optional<Out>, kParse>>>};
}
template <typename In, void (*kFormat)(In, std::string&)>
Kernel FormatKernel(const char* name, const char* doc) {
  return {name,
          {kTypeOf<In>},
          TypeId::kUtf8,
          NullHandling::kPropagate,
          doc,
          Format<In, kFormat>,
          row::BindUnary<FormatValue<In, kFormat>>};
}

}  // namespace

void RegisterCastKernels(KernelRegistry& r) {
  r.Register(TotalKernel<double, int64_t, Float64ToInt64>(
      "cast_int64", "CAST(a AS BIGINT): truncates; NaN is 0, out of range saturates"));
  r.Register(
      ParseKernel<int64_t, TextToInt64>("cast_int64", "CAST(a AS BIGINT): [+-]digits[.digits] trimmed, else NULL"));
  r.Register(TotalKernel<bool, int64_t, BoolToInt64>("cast_int64", "CAST(a AS BIGINT): 1 or 0"));
  r.Register(TotalKernel<int64_t, double, Int64ToFloat64>("cast_float64", "CAST(a AS DOUBLE)"));
  r.Register(ParseKernel<double, TextToFloat64>("cast_float64",
                                                "CAST(a AS DOUBLE): a number, NaN or [+-]Infinity trimmed, else NULL"));
  r.Register(TotalKernel<bool, double, BoolToFloat64>("cast_float64", "CAST(a AS DOUBLE): 1.0 or 0.0"));
  r.Register(FormatKernel<int64_t, Int64ToText>("cast_utf8", "CAST(a AS VARCHAR)"));
  r.Register(FormatKernel<double, Float64ToText>("cast_utf8", "CAST(a AS VARCHAR): Java's Double.toString"));
  r.Register(FormatKernel<bool, BoolToText>("cast_utf8", "CAST(a AS VARCHAR): 'true' or 'false'"));
  r.Register(TotalKernel<int64_t, bool, Int64ToBool>("cast_bool", "CAST(a AS BOOLEAN): a <> 0"));
  r.Register(TotalKernel<double, bool, Float64ToBool>("cast_bool", "CAST(a AS BOOLEAN): a <> 0 (NaN is TRUE)"));
  r.Register(ParseKernel<bool, TextToBool>("cast_bool",
                                           "CAST(a AS BOOLEAN): t true y yes 1 / f false n no 0, any case, trimmed"));
}

}  // namespace cq
