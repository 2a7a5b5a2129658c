#pragma once
// A few threads kept to run one task per part at once (cq_py's Engine(threads=N): one engine per
// part of the input). Kept, not started per call: thread k always runs part k, so each engine's
// memory comes and goes through one thread's buffer pool (batch/buffer.cc), warm across pushes.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cq {

class Workers {
 public:
  // `n` tasks at most per Run: n - 1 threads besides the caller's.
  explicit Workers(int n);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // task(k) for every k in [0, n) at once, task(0) on the calling thread; returns when all have
  // returned, then rethrows the exception of the lowest k that threw (every task runs to its end
  // whatever the others do). n is at most the constructor's.
  void Run(int n, const std::function<void(int)>& task);

 private:
  void Loop(int k);

  std::mutex mu_;
  std::condition_variable start_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* task_ = nullptr;
  uint64_t round_ = 0;  // bumped by each Run: a thread runs each round once
  int active_ = 0;      // the round's tasks
  int pending_ = 0;     // its tasks not finished on the threads
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace cq
