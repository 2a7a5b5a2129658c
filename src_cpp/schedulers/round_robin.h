#pragma once
// Round robin, batch scheduling (paper 002 §5.1.1; the scheduler of §7): turns go round the operators in a fixed order,
// skipping those that cannot evaluate; each turn is up to `batch` evaluations.
#include <vector>

#include "schedulers/scheduler.h"

namespace cq::sched {

class RoundRobin final : public Scheduler {
 public:
  explicit RoundRobin(Options options) : Scheduler(std::move(options)) {}
  void SetOperators(const std::vector<int>& ids) override;
  int NextTurn(Queues& q) override;
  int BeforeEvaluation(int turn, int64_t done, Queues& q) override;

 private:
  std::vector<int> ids_;
  size_t next_ = 0;  // index into ids_ of the first operator asked at the next turn
};

}  // namespace cq::sched
