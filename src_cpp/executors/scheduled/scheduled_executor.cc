#include "executors/scheduled/scheduled_executor.h"

namespace cq {

ScheduledExecutor::ScheduledExecutor(const sched::Options& options, HolderTable* holders)
    : QueuedExecutor("scheduled", true, holders), scheduler_(sched::MakeScheduler(options)) {}

void ScheduledExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  QueuedExecutor::Add(std::move(ops));
  scheduler_->SetOperators(order_);
}

void ScheduledExecutor::Remove(const std::vector<int>& ids) {
  QueuedExecutor::Remove(ids);
  scheduler_->SetOperators(order_);
}

bool ScheduledExecutor::Ready(int id) {
  const int node = index_.at(id);
  // The wave reaches an operator when it is asked: an operator added since the last call computes
  // its progress here too.
  Refresh(node);
  bool stalled = false;
  const bool ready = Consumable(nodes_[node], &stalled).port >= 0;
  if (stalled) ++stats_.stalls;
  return ready;
}

void ScheduledExecutor::Drain() {
  try {
    for (;;) {
      const int turn = scheduler_->NextTurn(*this);
      if (turn < 0) {
        // Nobody could evaluate, but asking passed waves on: their heartbeats may have made an
        // operator already asked ready. Done once a round feeds nobody.
        const bool fed = !fed_.empty();
        fed_.clear();
        ++turn_;
        if (fed) continue;
        return;
      }
      ++turns_;
      ++stats_.switches;
      for (int64_t done = 0;;) {
        const int who = scheduler_->BeforeEvaluation(turn, done, *this);
        if (who < 0) break;
        const int node = index_.at(who);
        bool stalled = false;
        const Pick pick = Consumable(nodes_[node], &stalled);
        if (pick.port < 0) break;
        if (Execute(node, pick)) ++done;
      }
      fed_.clear();
      ++turn_;
    }
  } catch (...) {
    fed_.clear();
    ++turn_;
    throw;
  }
}

}  // namespace cq
