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

void Scheduler::SetAreas(std::vector<RedoArea> areas) {
  areas_ = std::move(areas);
  gatekeeper_of_.clear();
  for (size_t a = 0; a < areas_.size(); ++a)
    for (int g : areas_[a].gatekeepers) gatekeeper_of_[g] = a;
}

int Scheduler::Gate(int id, Queues& q) const {
  if (!options_.gatekeeper) return id;
  const auto found = gatekeeper_of_.find(id);
  if (found == gatekeeper_of_.end()) return id;
  const RedoArea& area = areas_[found->second];
  for (int m : area.members)
    if (!gatekeeper_of_.count(m) && q.Ready(m)) return -1;
  int best = -1;
  std::pair<int64_t, int64_t> earliest;
  for (int g : area.gatekeepers) {
    if (!q.Ready(g)) continue;
    const auto t = q.NextRow(g);
    if (best < 0 || t < earliest) best = g, earliest = t;
  }
  // A gatekeeper whose stream has not brought its next row yet may bring an earlier one: taking
  // a later row now would run past the instant the area is about to commit.
  for (int g : area.gatekeepers)
    if (best >= 0 && !q.Ready(g) && q.NextRowBound(g) < earliest) return -1;
  return best;
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
    if (!q.Ready(ids_[i])) continue;
    const int who = Gate(ids_[i], q);
    if (who < 0) continue;
    next_ = (i + 1) % ids_.size();
    return who;
  }
  return -1;
}

int RoundRobin::BeforeEvaluation(int turn, int64_t done, Queues& q) {
  if (done >= options_.batch) return -1;
  // Checked before every evaluation of the batch: a gatekeeper's row may have made an operator
  // of its area ready, which then goes first (the turn ends).
  return gatekeeper_of_.empty() ? turn : Gate(turn, q);
}

}  // namespace cq::sched
