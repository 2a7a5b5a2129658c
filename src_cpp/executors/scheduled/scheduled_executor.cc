#include "executors/scheduled/scheduled_executor.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "base/json.h"

namespace cq {

ScheduledExecutor::ScheduledExecutor(const sched::Options& options, HolderTable* holders, txn::Bindings* txn)
    : QueuedExecutor("scheduled", true, holders), scheduler_(sched::MakeScheduler(options)), txn_(txn) {
  holds_ = managers() != nullptr;
}

txn::TransactionManagers* ScheduledExecutor::managers() const {
  if (!txn_ || !txn_->managers || txn_->managers->options().strategy == txn::Strategy::kNone) return nullptr;
  return txn_->managers.get();
}

bool ScheduledExecutor::Hold(int node, const Item& item) {
  const int id = nodes_[node].id;
  const auto found = area_of_.find(id);
  if (found == area_of_.end()) return false;
  const auto c = commit_of_.find(found->second.first);
  if (c == commit_of_.end() || c->second != id) return false;
  held_[c->first].push_back(item);
  return true;
}

bool ScheduledExecutor::AdvancesAtHead(int node) const { return area_of_.count(nodes_[node].id) != 0; }

void ScheduledExecutor::Commits() {
  if (!holds_) return;
  for (const auto& [area, id] : commit_of_) Commit(area, id);
}

void ScheduledExecutor::Commit(int64_t area, int commit_id) {
  const Node& c = nodes_[index_.at(commit_id)];
  std::vector<Item>& held = held_[area];
  size_t ready = 0;  // held items are in time order: a prefix is final
  while (ready < held.size() && held[ready].time < c.progress) ++ready;
  txn::TransactionManager* m = managers()->Find(area);
  const bool reads_final = m && m->open() && m->last_read() < c.progress;
  if (ready == 0 && !reads_final) return;
  txn::CommitRecord record;
  record.area = area;
  record.query = m ? m->holder() : "";
  record.instant = ready ? held[ready - 1].time : m->last_read();
  record.committed = m ? m->Commit(&record.versions) : true;
  for (int id : order_) {
    const auto found = area_of_.find(id);
    if (found == area_of_.end() || found->second.first != area) continue;
    const int64_t now = nodes_[index_.at(id)].evaluations;
    record.evaluations.emplace_back(id, now - counted_[id]);
    counted_[id] = now;
  }
  std::vector<Item> out(std::make_move_iterator(held.begin()),
                        std::make_move_iterator(held.begin() + static_cast<std::ptrdiff_t>(ready)));
  held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(ready));
  const int node = index_.at(commit_id);
  for (Item& it : out) {
    if (record.committed) Release(node, std::move(it));
    else if (it.kind == Item::Kind::kEnds) holders_->Unpin(it.ends.ids(), it.ends.length);
  }
  managers()->Log(std::move(record));
}
void ScheduledExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  std::map<int, std::pair<int64_t, bool>> areas;
  for (const auto& [spec, op] : ops) {
    if (!spec.params.is_object()) continue;
    const json::Value* area = spec.params.find("redo_area");
    if (area == nullptr || area->is_null()) continue;
    const json::Value* gate = spec.params.find("gatekeeper");
    areas[spec.id] = {area->integer(), gate != nullptr && !gate->is_null() && gate->boolean()};
    const json::Value* commit = spec.params.find("commit");
    if (commit != nullptr && !commit->is_null() && commit->boolean()) commit_of_[area->integer()] = spec.id;
  }
  QueuedExecutor::Add(std::move(ops));
  area_of_.merge(areas);
  scheduler_->SetOperators(order_);
  SetAreas();
}

void ScheduledExecutor::Remove(const std::vector<int>& ids) {
  QueuedExecutor::Remove(ids);
  for (int id : ids) area_of_.erase(id);
  for (auto it = commit_of_.begin(); it != commit_of_.end();) {
    if (std::find(ids.begin(), ids.end(), it->second) == ids.end()) {
      ++it;
      continue;
    }
    for (Item& item : held_[it->first])
      if (item.kind == Item::Kind::kEnds) holders_->Unpin(item.ends.ids(), item.ends.length);
    held_.erase(it->first);
    if (txn::TransactionManagers* m = managers()) m->Forget(it->first);
    it = commit_of_.erase(it);
  }
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
        Commits();
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
        Commits();
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
