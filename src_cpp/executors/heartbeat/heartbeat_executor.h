#pragma once
// The heartbeat method (paper 000 §2.3, SEMANTICS.md §5 executor="heartbeat"): the baseline DTS is
// measured against, over the queues, waves and end fixes of executors/queued/.
//
// Scheduling follows §4.2: a stack of operators. The operator on top runs up to `max_run`
// consecutive executions while it has a consumable item; if they produced output (data, end
// fixes or heartbeats), its consumers are stacked on top of it (the first consumer on top) and
// control moves to them. An operator with nothing consumable left is popped; one that hit
// `max_run` stays under its consumers and resumes when they are done.
#include <cstdint>
#include <vector>

#include "executors/queued/queued_executor.h"

namespace cq {

class HeartbeatExecutor final : public QueuedExecutor {
 public:
  HeartbeatExecutor(int64_t max_run, HolderTable* holders);

 private:
  void Drain() override;
  void Wake(int node) override { stack_.push_back(node); }
  void Renumbered(const std::vector<int>& moved) override;

  int64_t max_run_;
  std::vector<int> stack_;  // node indices
};

}  // namespace cq
