#pragma once
// Who evaluates next in the scheduled executor (paper 002 §5, executors/scheduled/): a policy over
// operator ids and what their input queues hold, no rows, no operator state. The executor asks
// NextTurn for the operator whose turn it is, then, before every evaluation of that turn (one row
// taken from an input queue, §5.1), asks BeforeEvaluation who makes it. Round robin hands the turn
// on after `batch` evaluations. §6's gatekeeper constraint fits the second question: before each
// evaluation of a batch it may hand the evaluation to the gatekeeper whose next row is earliest
// (not built: it needs the gatekeepers of a planned resource).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cq::sched {

// The executor's queues, as a policy sees them.
class Queues {
 public:
  virtual ~Queues() = default;
  // Whether operator `id` can evaluate now (it has an item it may take: not stalled, §2.3). May
  // pass progress on (the executor's waves), so it is not const.
  virtual bool Ready(int id) = 0;
};

struct Options {
  std::string policy = "round_robin";
  int64_t batch = 1;  // evaluations an operator gets per turn
  // §6's constraint on gatekeepers. Gatekeepers come with resources (issue 32 items 3-5), which
  // are not planned yet: until then there are none and the constraint has nothing to act on.
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

 protected:
  Options options_;
};

// kInput naming the option, the accepted values and what was found.
void CheckOptions(const Options& options);
std::unique_ptr<Scheduler> MakeScheduler(const Options& options);

}  // namespace cq::sched
