#pragma once
// Errors the core reports. User errors carry a kind that the binding maps to the matching cq_py
// exception (one function, in cq_core/_core.cpp); kInternal is a bug in cq, never the user's fault.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cq {

// kRunaway: a loop did not settle within max_loop_steps ε steps of one tick.
// kSnapshot: bytes given to Engine::Restore are not a snapshot of this engine (damaged, truncated,
// another format version, or taken of other plans or options).
// kLockTimeout: a transaction waited longer than its timeout for a resource's lock (txn/).
enum class ErrorKind : uint8_t { kInput, kSemantic, kRunaway, kInternal, kSnapshot, kLockTimeout };

class CqError : public std::runtime_error {
 public:
  CqError(ErrorKind kind, const std::string& message, std::string stream = "", int64_t row = -1)
      : std::runtime_error(message), kind_(kind), stream_(std::move(stream)), row_(row) {}
  ErrorKind kind() const { return kind_; }
  const std::string& stream() const { return stream_; }
  int64_t row() const { return row_; }

 private:
  ErrorKind kind_;
  std::string stream_;
  int64_t row_;
};

// A broken invariant inside cq (not a user error).
#define CQ_CHECK(cond, msg)                                                                                      \
  do {                                                                                                           \
    if (!(cond))                                                                                                 \
      throw ::cq::CqError(::cq::ErrorKind::kInternal, std::string("internal error: ") + (msg) + " [" #cond "]"); \
  } while (0)

}  // namespace cq
