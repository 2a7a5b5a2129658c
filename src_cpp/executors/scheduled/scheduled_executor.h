#pragma once
// The scheduled executor (paper 002 §5, SEMANTICS.md §5 executor="scheduled"): the queues, waves
// and end fixes of the heartbeat method (executors/queued/) with each data item one row, and who
// runs next decided by a policy of schedulers/ (round robin). One evaluation takes one row from an
// input queue (§5.1); an input's progress is its queue's head (the stall of §2.3 and the waves),
// so an operator's result is final without its taking a later row. A turn gives the operator up to
// `batch` evaluations; the end fixes and heartbeats it takes on the way are not evaluations (they
// carry no row) and are taken whenever due.
//
// Redo areas (paper 002 §3.4) come with the plan: an operator spec's "redo_area" (an integer
// naming its area) and "gatekeeper" (true: rows enter the area through it) keys; the policy keeps
// §6's constraint on them (schedulers/scheduler.h Gate).
//
// Transactions (paper 002 §3.5), under a strategy other than txn="none": the spec marked "commit"
// is its area's commit operator. What it emits for instant tau is held until tau is final at it
// (its progress passes tau; in an area every operator's progress is its queue heads, so this needs
// no later row taken), then the area's transaction manager commits: the held rows go downstream
// and a CommitRecord is logged. An optimistic transaction that fails its validation is aborted:
// its held rows are discarded (logged as an abort).
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "executors/queued/queued_executor.h"
#include "schedulers/scheduler.h"
#include "txn/transaction_manager.h"

namespace cq {

class ScheduledExecutor final : public QueuedExecutor, private sched::Queues {
 public:
  // `txn`: the engine's bindings, whose transaction managers the commit operators commit through
  // (null, or their strategy none: no transactions).
  ScheduledExecutor(const sched::Options& options, HolderTable* holders, txn::Bindings* txn = nullptr);
  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) override;
  void Remove(const std::vector<int>& ids) override;
  const sched::Scheduler& scheduler() const { return *scheduler_; }
  // Turns given so far (a turn: one operator's run of up to `batch` evaluations).
  int64_t turns() const { return turns_; }

 private:
  void Drain() override;
  void Wake(int) override {}  // every turn asks the operators in the policy's order
  bool Ready(int id) override;
  std::pair<int64_t, int64_t> NextRow(int id) override;
  // The areas from area_of_, to the policy.
  void SetAreas();
  bool Hold(int node, const Item& item) override;
  bool AdvancesAtHead(int node) const override;
  // A commit operator's instant may be final before the row it takes next is read for.
  void Advanced(int) override { Commits(); }
  // Commits every area whose commit operator's held instant (or last read) is final.
  void Commits();
  void Commit(int64_t area, int commit_node);
  txn::TransactionManagers* managers() const;

  txn::Bindings* txn_;
  std::map<int64_t, int> commit_of_;           // redo area -> its commit operator's id
  std::map<int64_t, std::vector<Item>> held_;  // redo area -> its commit operator's output held
  std::map<int, int64_t> counted_;             // operator id -> its evaluations at the last commit
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::map<int, std::pair<int64_t, bool>> area_of_;  // operator id -> (redo area, gatekeeper)
  int64_t turns_ = 0;
};

}  // namespace cq
