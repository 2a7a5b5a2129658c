#include "schedulers/round_robin.h"

#include <algorithm>

#include "base/errors.h"
#include "schedulers/scheduler.h"

namespace cq::sched {

void CheckOptions(const Options& options) {
  if (options.policy != "round_robin")
    throw CqError(ErrorKind::kInput, "scheduler='" + options.policy + "': expected 'round_robin'");
  if (options.batch < 1)
    throw CqError(ErrorKind::kInput, "batch must be at least 1; found " + std::to_string(options.batch));
}

std::unique_ptr<Scheduler> MakeScheduler(const Options& options) {
  CheckOptions(options);
  return std::make_unique<RoundRobin>(options);
}

void RoundRobin::SetOperators(const std::vector<int>& ids) {
  // The turn stays with the operator that was to be asked next, if it is still there.
  const int at = next_ < ids_.size() ? ids_[next_] : -1;
  ids_ = ids;
  auto found = std::find(ids_.begin(), ids_.end(), at);
  next_ = found == ids_.end() ? 0 : static_cast<size_t>(found - ids_.begin());
}

int RoundRobin::NextTurn(Queues& q) {
  for (size_t k = 0; k < ids_.size(); ++k) {
    const size_t i = (next_ + k) % ids_.size();
    if (q.Ready(ids_[i])) {
      next_ = (i + 1) % ids_.size();
      return ids_[i];
    }
  }
  return -1;
}

int RoundRobin::BeforeEvaluation(int turn, int64_t done, Queues&) { return done < options_.batch ? turn : -1; }

}  // namespace cq::sched
