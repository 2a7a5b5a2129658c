#pragma once
// Who evaluates next in the scheduled executor (paper 002 §5, executors/scheduled/): a policy over
// operator ids and what their input queues hold, no rows, no operator state. The executor asks
// NextTurn for the operator whose turn it is, then, before every evaluation of that turn (one row
// taken from an input queue, §5.1), asks BeforeEvaluation who makes it. Round robin hands the turn
// on after `batch` evaluations. §6's gatekeeper constraint is asked at both questions (Gate):
// a gatekeeper of a redo area (an operator whose input carries a redo queue: rows enter the area
// only through it) does not evaluate while another operator of its area can; when none can, the
// area's gatekeeper whose next row is earliest evaluates, whichever gatekeeper's turn it is.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cq::sched {

// The executor's queues, as a policy sees them.
class Queues {
 public:
  virtual ~Queues() = default;
  // Whether operator `id` can evaluate now (it has an item it may take: not stalled, §2.3). May
  // pass progress on (the executor's waves), so it is not const.
  virtual bool Ready(int id) = 0;
  // The time (tick, step) of the row operator `id` takes next; asked only of a ready operator.
  virtual std::pair<int64_t, int64_t> NextRow(int id) = 0;
  // The earliest time the next row of operator `id`, not ready, can have: what its inputs have
  // delivered so far (a gatekeeper whose stream has not yet brought its next row).
  virtual std::pair<int64_t, int64_t> NextRowBound(int id) = 0;
};

// A redo area (paper 002 §3.4): its operators, and which of them are its gatekeepers (§6).
struct RedoArea {
  std::vector<int> members;  // gatekeepers included
  std::vector<int> gatekeepers;
};

struct Options {
  std::string policy = "round_robin";
  int64_t batch = 1;  // evaluations an operator gets per turn
  // §6's constraint on the gatekeepers of the redo areas (SetAreas); without areas it has
  // nothing to act on.
  bool gatekeeper = true;
};

class Scheduler {
 public:
  explicit Scheduler(Options options) : options_(std::move(options)) {}
  virtual ~Scheduler() = default;
  const Options& options() const { return options_; }
  // The operators, in the order turns go round (the executor's topological order); called
  // whenever operators are added or removed.
  virtual void SetOperators(const std::vector<int>& ids) = 0;
  // The operator whose turn it is, or -1 if none is ready.
  virtual int NextTurn(Queues& q) = 0;
  // Before each evaluation of `turn`'s turn, `done` evaluations into it: the operator that makes
  // the next one, or -1 to end the turn.
  virtual int BeforeEvaluation(int turn, int64_t done, Queues& q) = 0;
  // The redo areas of the plan (none: no constraint to keep); called whenever they change.
  void SetAreas(std::vector<RedoArea> areas);

 protected:
  // §6 for operator `id` about to evaluate: `id` itself if it is no gatekeeper (or the constraint
  // is off); -1 if it is one and another operator of its area can evaluate, or a gatekeeper not
  // ready yet may still bring an earlier row; else the area's ready gatekeeper whose next row is
  // earliest (the first in the area's order on a tie).
  int Gate(int id, Queues& q) const;

  Options options_;
  std::vector<RedoArea> areas_;
  std::map<int, size_t> gatekeeper_of_;  // gatekeeper id -> its area in areas_
};

// kInput naming the option, the accepted values and what was found.
void CheckOptions(const Options& options);
std::unique_ptr<Scheduler> MakeScheduler(const Options& options);

}  // namespace cq::sched
