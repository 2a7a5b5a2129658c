#include "executors/scheduled/scheduled_executor.h"

#include <cstdint>

#include "base/json.h"

namespace cq {

ScheduledExecutor::ScheduledExecutor(const sched::Options& options, HolderTable* holders)
    : QueuedExecutor("scheduled", true, holders), scheduler_(sched::MakeScheduler(options)) {}

void ScheduledExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  std::map<int, std::pair<int64_t, bool>> areas;
  for (const auto& [spec, op] : ops) {
    if (!spec.params.is_object()) continue;
    const json::Value* area = spec.params.find("redo_area");
    if (area == nullptr || area->is_null()) continue;
    const json::Value* gate = spec.params.find("gatekeeper");
    areas[spec.id] = {area->integer(), gate != nullptr && !gate->is_null() && gate->boolean()};
  }
  QueuedExecutor::Add(std::move(ops));
  area_of_.merge(areas);
  scheduler_->SetOperators(order_);
  SetAreas();
}

void ScheduledExecutor::Remove(const std::vector<int>& ids) {
  QueuedExecutor::Remove(ids);
  for (int id : ids) area_of_.erase(id);
  scheduler_->SetOperators(order_);
  SetAreas();
}

void ScheduledExecutor::SetAreas() {
  std::map<int64_t, sched::RedoArea> by_area;
  for (int id : order_) {  // (each area's members in execution order)
    const auto found = area_of_.find(id);
    if (found == area_of_.end()) continue;
    sched::RedoArea& a = by_area[found->second.first];
    a.members.push_back(id);
    if (found->second.second) a.gatekeepers.push_back(id);
  }
  std::vector<sched::RedoArea> areas;
  for (auto& [_, a] : by_area) areas.push_back(std::move(a));
  scheduler_->SetAreas(std::move(areas));
}

std::pair<int64_t, int64_t> ScheduledExecutor::NextRow(int id) {
  const Node& n = nodes_[index_.at(id)];
  bool stalled = false;
  const Pick pick = Consumable(n, &stalled);
  // (An end fix carries no row and is taken first: due now.)
  if (pick.port < 0 || pick.ends) return {INT64_MIN, INT64_MIN};
  const Time t = n.ports[pick.port].queue.front().time;
  return {t.tick, t.step};
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
