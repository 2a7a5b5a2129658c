#pragma once
// A minimal self-registering test framework for the core's unit tests (no gtest or Catch2 is
// available to the build, and the core must stay free of third-party dependencies).
//
//   CQ_TEST(name) { ... }              a test case; `name` is a C identifier, unique in the binary
//   CQ_EXPECT(cond)                    records a failure and goes on
//   CQ_EXPECT_EQ(a, b)                 the same, printing both values
//   CQ_EXPECT_THROWS(stmt, Type)       stmt must throw Type (wrap stmt in parentheses if it has
//                                      top-level commas, e.g. braces or template arguments)
//   CQ_ASSERT(cond)                    ends the test case on failure (when going on would crash)
//
// CQ_TEST must start its line: the CMake file finds the cases by scanning the sources for it, so
// that ctest runs (and names) each case on its own.
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace cq::test {

using TestFn = void (*)();

struct TestCase {
  std::string name;
  TestFn fn;
  const char* file;
  int line;
};

std::vector<TestCase>& Registry();

struct Registrar {
  Registrar(const char* name, TestFn fn, const char* file, int line) { Registry().push_back({name, fn, file, line}); }
};

// Records a failure of the running test case.
void Fail(const char* file, int line, const std::string& what);

// Thrown by CQ_ASSERT; the runner catches it and moves on to the next case.
struct AssertionAbort {};

// ---- printing values for failure messages --------------------------------------------------

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

std::string Quote(std::string_view s);

template <typename T>
std::string Show(const T& v) {
  if constexpr (std::is_same_v<T, std::nullopt_t>) {
    return "NULL";
  } else if constexpr (IsOptional<T>::value) {
    return v.has_value() ? Show(*v) : std::string("NULL");
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return Quote(std::string_view(v));
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<int64_t>(v));
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  } else if constexpr (requires { v.ToString(); }) {
    return v.ToString();
  } else if constexpr (requires {
                         v.begin();
                         v.end();
                       }) {
    std::string s = "[";
    bool first = true;
    for (const auto& x : v) {
      if (!first) s += ", ";
      first = false;
      s += Show(x);
    }
    return s + "]";
  } else if constexpr (requires(std::ostream& os) { os << v; }) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return "<unprintable>";
  }
}

// Integers of different signedness or width compare by value (so CQ_EXPECT_EQ(v.size(), 3)
// neither warns nor misleads); everything else uses its own ==.
template <typename A, typename B>
bool Equal(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                !std::is_same_v<B, bool>) {
    return std::cmp_equal(a, b);
  } else {
    return a == b;
  }
}

// CQ_EXPECT_EQ's body. A call, not references bound in the macro: temporaries in its arguments
// (`EndsOf(batch)[49]`, a reference into a vector returned by value) live until the end of the
// full expression, so through the comparison and the message.
template <typename A, typename B>
void ExpectEq(const A& a, const B& b, const char* text, const char* file, int line) {
  if (!Equal(a, b))
    Fail(file, line, std::string("expected ") + text + "\n    left:  " + Show(a) + "\n    right: " + Show(b));
}

}  // namespace cq::test

#define CQ_TEST_CONCAT_(a, b) a##b
#define CQ_TEST(name)                                                           \
  static void CQ_TEST_CONCAT_(cq_test_, name)();                                \
  static const ::cq::test::Registrar CQ_TEST_CONCAT_(cq_test_registrar_, name)( \
      #name, &CQ_TEST_CONCAT_(cq_test_, name), __FILE__, __LINE__);             \
  static void CQ_TEST_CONCAT_(cq_test_, name)()

#define CQ_EXPECT(cond)                                                   \
  do {                                                                    \
    if (!(cond)) ::cq::test::Fail(__FILE__, __LINE__, "expected " #cond); \
  } while (0)

#define CQ_ASSERT(cond)                                                 \
  do {                                                                  \
    if (!(cond)) {                                                      \
      ::cq::test::Fail(__FILE__, __LINE__, "assertion failed: " #cond); \
      throw ::cq::test::AssertionAbort{};                               \
    }                                                                   \
  } while (0)

#define CQ_EXPECT_EQ(a, b) ::cq::test::ExpectEq((a), (b), #a " == " #b, __FILE__, __LINE__)

#define CQ_EXPECT_THROWS(stmt, ExceptionType)                                                                   \
  do {                                                                                                          \
    bool cq_threw_ = false;                                                                                     \
    try {                                                                                                       \
      stmt;                                                                                                     \
    } catch (const ExceptionType&) {                                                                            \
      cq_threw_ = true;                                                                                         \
    } catch (const std::exception& cq_e_) {                                                                     \
      cq_threw_ = true;                                                                                         \
      ::cq::test::Fail(__FILE__, __LINE__,                                                                      \
                       "expected " #stmt " to throw " #ExceptionType                                            \
                       ", it threw another "                                                                    \
                       "exception: " +                                                                          \
                           std::string(cq_e_.what()));                                                          \
    } catch (...) {                                                                                             \
      cq_threw_ = true;                                                                                         \
      ::cq::test::Fail(__FILE__, __LINE__,                                                                      \
                       "expected " #stmt " to throw " #ExceptionType                                            \
                       ", it threw a non-std "                                                                  \
                       "exception");                                                                            \
    }                                                                                                           \
    if (!cq_threw_)                                                                                             \
      ::cq::test::Fail(__FILE__, __LINE__, "expected " #stmt " to throw " #ExceptionType ", it did not throw"); \
  } while (0)
