// A minimal test harness for the C++ tests: TEST registration and CHECK macros, no dependencies.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace check {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

inline int& failures() {
  static int count = 0;
  return count;
}

struct Registrar {
  Registrar(const char* name, std::function<void()> body) { registry().push_back({name, body}); }
};

inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what.c_str());
  ++failures();
}

inline int run_all() {
  int failed_tests = 0;
  for (const TestCase& test : registry()) {
    const int before = failures();
    test.body();
    const bool ok = failures() == before;
    failed_tests += !ok;
    std::printf("[%s] %s\n", ok ? "  OK  " : "FAILED", test.name);
  }
  std::printf("%zu passed, %d failed\n", registry().size() - failed_tests, failed_tests);
  return failed_tests == 0 ? 0 : 1;
}

}  // namespace check

#define CHECK_CONCAT_INNER(a, b) a##b
#define CHECK_CONCAT(a, b) CHECK_CONCAT_INNER(a, b)
#define TEST(name)                                                              \
  static void name();                                                           \
  static check::Registrar CHECK_CONCAT(registrar_, name)(#name, &name);         \
  static void name()
#define CHECK(cond)                                 \
  do {                                              \
    if (!(cond)) check::fail(__FILE__, __LINE__, #cond); \
  } while (0)
#define CHECK_EQ(a, b)                                                                     \
  do {                                                                                     \
    const auto check_a = (a);                                                              \
    const auto check_b = (b);                                                              \
    if (!(check_a == check_b))                                                             \
      check::fail(__FILE__, __LINE__,                                                      \
                  std::string(#a " == " #b " (") + std::to_string(check_a) + " vs " +      \
                      std::to_string(check_b) + ")");                                      \
  } while (0)
#define TEST_MAIN() \
  int main() { return check::run_all(); }
