#include "base/workers.h"

#include <stdexcept>

namespace cq {

Workers::Workers(int n) : errors_(static_cast<size_t>(n < 1 ? 1 : n)) {
  for (int k = 1; k < n; ++k) threads_.emplace_back([this, k] { Loop(k); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Workers::Loop(int k) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || round_ != seen; });
      if (stop_) return;
      seen = round_;
      if (k >= active_) continue;
      task = task_;
    }
    std::exception_ptr error;
    try {
      (*task)(k);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    errors_[static_cast<size_t>(k)] = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

void Workers::Run(int n, const std::function<void(int)>& task) {
  if (n > static_cast<int>(threads_.size()) + 1) throw std::logic_error("Workers::Run: more tasks than threads");
  if (n > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    active_ = n;
    pending_ = n - 1;
    ++round_;
  }
  if (n > 1) start_.notify_all();
  std::exception_ptr first;
  try {
    task(0);
  } catch (...) {
    first = std::current_exception();
  }
  if (n > 1) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    task_ = nullptr;
    for (int k = 1; k < n && !first; ++k) first = errors_[static_cast<size_t>(k)];
    for (int k = 1; k < n; ++k) errors_[static_cast<size_t>(k)] = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace cq
