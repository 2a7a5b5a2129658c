#include "executors/heartbeat/heartbeat_executor.h"

#include "base/errors.h"

namespace cq {

HeartbeatExecutor::HeartbeatExecutor(int64_t max_run, HolderTable* holders)
    : QueuedExecutor("heartbeat", false, holders), max_run_(max_run) {
  snapshots_ = true;
  CQ_CHECK(max_run_ >= 1, "max_run must be at least 1");
}

void HeartbeatExecutor::Renumbered(const std::vector<int>& moved) {
  std::erase_if(stack_, [&](int i) { return moved[i] < 0; });
  for (int& i : stack_) i = moved[i];
}

void HeartbeatExecutor::Drain() {
  try {
    for (;;) {
      while (!stack_.empty()) {
        const int node = stack_.back();
        Refresh(node);
        int runs = 0;
        bool stalled = false;
        for (Pick pick; runs < max_run_ && (pick = Consumable(nodes_[node], &stalled)).port >= 0; ++runs)
          Execute(node, pick);
        if (stalled && runs == 0) ++stats_.stalls;
        // Hit max_run with more to do: it stays, under its consumers, and resumes after them.
        if (runs < max_run_ || Consumable(nodes_[node], &stalled).port < 0) stack_.pop_back();
        if (!fed_.empty()) ++stats_.switches;
        for (auto it = fed_.rbegin(); it != fed_.rend(); ++it)
          if (stack_.empty() || stack_.back() != *it) stack_.push_back(*it);
        fed_.clear();
        ++turn_;
      }
      // Nothing stacked. Operators added since the last call have not computed their progress
      // yet; anything else runnable would be a scheduling bug, and is run all the same.
      bool again = false;
      for (int id : order_) {
        const int node = index_.at(id);
        Refresh(node);
        bool stalled = false;
        if (!fed_.empty() || Consumable(nodes_[node], &stalled).port >= 0) {
          stack_.push_back(node);
          again = true;
          break;
        }
      }
      if (!again) return;
    }
  } catch (...) {
    stack_.clear();
    fed_.clear();
    ++turn_;
    throw;
  }
}

}  // namespace cq
