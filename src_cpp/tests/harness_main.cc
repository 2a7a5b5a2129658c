// The runner of the core's unit tests.
//
//   cq_core_tests                  runs every case
//   cq_core_tests NAME...          runs the named cases (ctest runs each case this way)
//   cq_core_tests --list           prints the names, one a line
//   cq_core_tests --expect-count N fails unless exactly N cases are compiled in: CMake registers
//                                  the cases it finds in the sources, and this check tells when
//                                  that scan and the binary disagree
//
// The last line printed is "N passed, M failed"; the exit status is non-zero on any failure.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>

#include "tests/harness.h"

namespace cq::test {

namespace {
int g_failures_in_case = 0;
}  // namespace

std::vector<TestCase>& Registry() {
  // A function-local static: registrars run during static initialization, in any order.
  static std::vector<TestCase> cases;
  return cases;
}

void Fail(const char* file, int line, const std::string& what) {
  ++g_failures_in_case;
  std::fprintf(stdout, "%s:%d: failure\n  %s\n", file, line, what.c_str());
  std::fflush(stdout);
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

// Runs one case; true when it passed.
bool Run(const TestCase& t) {
  std::printf("[ RUN      ] %s\n", t.name.c_str());
  std::fflush(stdout);
  g_failures_in_case = 0;
  try {
    t.fn();
  } catch (const AssertionAbort&) {
    // already recorded
  } catch (const std::exception& e) {
    Fail(t.file, t.line, std::string("uncaught exception: ") + e.what());
  } catch (...) {
    Fail(t.file, t.line, "uncaught non-std exception");
  }
  const bool ok = g_failures_in_case == 0;
  std::printf("[ %s ] %s\n", ok ? "      OK" : "  FAILED", t.name.c_str());
  std::fflush(stdout);
  return ok;
}

}  // namespace
}  // namespace cq::test

int main(int argc, char** argv) {
  using cq::test::Registry;
  using cq::test::TestCase;

  std::map<std::string, const TestCase*> by_name;
  for (const TestCase& t : Registry()) {
    if (!by_name.emplace(t.name, &t).second) {
      std::printf("test case '%s' is defined twice (%s:%d)\n", t.name.c_str(), t.file, t.line);
      return 2;
    }
  }

  std::vector<const TestCase*> selected;
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      for (const TestCase& t : Registry()) std::printf("%s\n", t.name.c_str());
      return 0;
    }
    if (arg == "--expect-count" && i + 1 < argc) {
      const long want = std::strtol(argv[++i], nullptr, 10);
      if (static_cast<long>(Registry().size()) != want) {
        std::printf(
            "%zu test cases are compiled in, but CMake registered %ld: is a CQ_TEST not at "
            "the start of its line?\n",
            Registry().size(), want);
        return 1;
      }
      std::printf("%zu test cases registered\n", Registry().size());
      continue;
    }
    auto it = by_name.find(arg);
    if (it == by_name.end()) {
      std::printf("unknown test case '%s' (--list shows them)\n", arg.c_str());
      return 2;
    }
    if (seen.insert(arg).second) selected.push_back(it->second);
  }
  if (argc > 1 && selected.empty()) return 0;  // only --expect-count
  if (selected.empty())
    for (const TestCase& t : Registry()) selected.push_back(&t);

  int passed = 0, failed = 0;
  std::vector<std::string> failures;
  for (const TestCase* t : selected) {
    if (cq::test::Run(*t)) {
      ++passed;
    } else {
      ++failed;
      failures.push_back(t->name);
    }
  }
  for (const std::string& f : failures) std::printf("FAILED: %s\n", f.c_str());
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
