// The scheduled executor (paper 002 §5) driven by hand over probe operators, and its round-robin
// policy alone: turns go round the operators in order, skipping those that cannot evaluate; a
// turn is up to `batch` evaluations, each one row taken from an input queue (§5.1); the counts of
// evaluations per operator on small plans worked out by hand.
#include <map>
#include <set>

#include "base/json.h"
#include "executors/scheduled/scheduled_executor.h"
#include "schedulers/round_robin.h"
#include "tests/probe_ops.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

// A scheduled executor over probes, and their log.
struct Rig {
  HolderTable holders;
  ScheduledExecutor ex;
  std::vector<std::string> log;
  Rig(int64_t batch, const std::vector<ProbeSpec>& probes) : ex({"round_robin", batch, true}, &holders) {
    ex.Add(Probes(probes, &log));
  }
};

// Queues as a test sets them: which operators can evaluate (and the tick of their next row), and
// who was asked.
class FakeQueues final : public sched::Queues {
 public:
  std::set<int> ready;
  std::map<int, int64_t> next;
  std::vector<int> asked;
  bool Ready(int id) override {
    asked.push_back(id);
    return ready.count(id) > 0;
  }
  std::pair<int64_t, int64_t> NextRow(int id) override { return {next[id], 0}; }
  // Of an operator not ready: the earliest tick its next row can have (none set: no row to come).
  std::map<int, int64_t> bound;
  std::pair<int64_t, int64_t> NextRowBound(int id) override {
    const auto found = bound.find(id);
    return {found == bound.end() ? INT64_MAX : found->second, 0};
  }
};

// Probes with the plan keys of a redo area: `area` for each operator in one, `gatekeepers` among them.
Ops InArea(Ops ops, const std::set<int>& area, const std::set<int>& gatekeepers) {
  for (auto& [spec, op] : ops)
    if (area.count(spec.id))
      spec.params = json::Parse(std::string(R"({"redo_area": 0, "gatekeeper": )") +
                                (gatekeepers.count(spec.id) ? "true" : "false") + "}");
  return ops;
}

}  // namespace

CQ_TEST(RoundRobinGoesRoundSkippingOperatorsThatCannotEvaluate) {
  sched::RoundRobin rr({"round_robin", 3, true});
  rr.SetOperators({10, 20, 30});
  FakeQueues q;
  q.ready = {10, 20, 30};
  CQ_EXPECT_EQ(rr.NextTurn(q), 10);
  CQ_EXPECT_EQ(rr.NextTurn(q), 20);
  CQ_EXPECT_EQ(rr.NextTurn(q), 30);
  CQ_EXPECT_EQ(rr.NextTurn(q), 10);
  // 20 has nothing: the turn goes on to 30, then round to 10 (20 asked each time).
  q.ready = {10, 30};
  q.asked.clear();
  CQ_EXPECT_EQ(rr.NextTurn(q), 30);
  CQ_EXPECT_EQ(rr.NextTurn(q), 10);
  CQ_EXPECT_EQ(q.asked, (std::vector<int>{20, 30, 10}));
  // Nobody ready: every operator asked once, no turn.
  q.ready.clear();
  q.asked.clear();
  CQ_EXPECT_EQ(rr.NextTurn(q), -1);
  CQ_EXPECT_EQ(q.asked.size(), size_t{3});
  // New operators: the one due next (20) keeps its turn.
  q.ready = {10, 15, 20, 30};
  rr.SetOperators({10, 15, 20, 30});
  CQ_EXPECT_EQ(rr.NextTurn(q), 20);
  // It is removed: the round starts again from the first.
  rr.SetOperators({10, 15});
  CQ_EXPECT_EQ(rr.NextTurn(q), 10);
}

CQ_TEST(RoundRobinGivesBatchEvaluationsPerTurn) {
  for (int64_t batch : {1, 3, 7}) {
    sched::RoundRobin rr({"round_robin", batch, false});
    rr.SetOperators({1});
    FakeQueues q;
    for (int64_t done = 0; done < batch; ++done) CQ_EXPECT_EQ(rr.BeforeEvaluation(1, done, q), 1);
    CQ_EXPECT_EQ(rr.BeforeEvaluation(1, batch, q), -1);
  }
}

CQ_TEST(GatekeeperWaitsWhileItsAreaCanEvaluateThenTheEarliestGoes) {
  // Area {1, 2, 3}, gatekeepers 1 and 2 (paper 002 §6).
  sched::RoundRobin rr({"round_robin", 4, true});
  rr.SetOperators({0, 1, 2, 3});
  rr.SetAreas({{{1, 2, 3}, {1, 2}}});
  FakeQueues q;
  q.ready = {1, 2, 3};
  q.next = {{1, 7}, {2, 5}};
  // 3 can evaluate: neither gatekeeper may, the turn goes to 3.
  CQ_EXPECT_EQ(rr.NextTurn(q), 3);
  CQ_EXPECT_EQ(rr.BeforeEvaluation(3, 0, q), 3);
  // 3 is done: it is 1's turn in the round, but 2's next row (5) is earlier than 1's (7).
  q.ready = {1, 2};
  CQ_EXPECT_EQ(rr.NextTurn(q), 2);
  CQ_EXPECT_EQ(rr.BeforeEvaluation(2, 0, q), 2);
  // Its row made 3 ready: before the batch's next evaluation the turn ends.
  q.ready = {1, 2, 3};
  CQ_EXPECT_EQ(rr.BeforeEvaluation(2, 1, q), -1);
  // 0 is in no area: never held back.
  q.ready = {0, 3};
  CQ_EXPECT_EQ(rr.BeforeEvaluation(0, 1, q), 0);
  // 2 has no row yet, but its stream has delivered only up to tick 6: it may still bring a row
  // earlier than 1's (7), so 1 waits; once 2's stream is past 7, 1 goes.
  q.ready = {1};
  q.bound = {{2, 6}};
  CQ_EXPECT_EQ(rr.NextTurn(q), -1);
  q.bound = {{2, 8}};
  CQ_EXPECT_EQ(rr.NextTurn(q), 1);
  q.bound.clear();
  // The constraint off: the round and the batch alone decide.
  sched::RoundRobin off({"round_robin", 4, false});
  off.SetOperators({0, 1, 2, 3});
  off.SetAreas({{{1, 2, 3}, {1, 2}}});
  q.ready = {1, 2, 3};
  CQ_EXPECT_EQ(off.NextTurn(q), 1);
  CQ_EXPECT_EQ(off.BeforeEvaluation(1, 3, q), 1);
}

CQ_TEST(ScheduledGatekeeperLetsOneRowInAtATime) {
  // s -> g -> a -> b, g the gatekeeper of area {g, a, b}, five rows at once, batch 5. Without the
  // constraint g takes all five in its turn; with it g takes one, then a and b carry it through
  // before g takes the next (§6: what enters the area is only what its commit needs).
  auto run = [](bool gatekeeper) {
    HolderTable holders;
    std::vector<std::string> log;
    ScheduledExecutor ex({"round_robin", 5, gatekeeper}, &holders);
    ex.Add(InArea(Probes({{0, {}, "s"}, {1, {0}, "g"}, {2, {1}, "a"}, {3, {2}, "b"}}, &log), {1, 2, 3}, {1}));
    ex.Push(0, Rows({1, 2, 3, 4, 5}));
    for (int id : {0, 1, 2, 3}) CQ_EXPECT_EQ(ex.evaluations(id), 5);
    return Of(log, "g:").size() == 5 ? std::vector<std::string>(log.begin() + 5, log.end()) : log;
  };
  CQ_EXPECT_EQ(run(false),
               (std::vector<std::string>{"g:0@1", "g:0@2", "g:0@3", "g:0@4", "g:0@5", "a:0@1", "a:0@2", "a:0@3",
                                         "a:0@4", "a:0@5", "b:0@1", "b:0@2", "b:0@3", "b:0@4", "b:0@5"}));
  CQ_EXPECT_EQ(run(true),
               (std::vector<std::string>{"g:0@1", "a:0@1", "b:0@1", "g:0@2", "a:0@2", "b:0@2", "g:0@3", "a:0@3",
                                         "b:0@3", "g:0@4", "a:0@4", "b:0@4", "g:0@5", "a:0@5", "b:0@5"}));
}

CQ_TEST(SchedulerOptionsAreChecked) {
  auto e = CQ_CATCH(sched::MakeScheduler({"fifo", 1, true}));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(e->kind() == ErrorKind::kInput);
  CQ_EXPECT_EQ(std::string(e->what()), "scheduler='fifo': expected 'round_robin'");
  e = CQ_CATCH(sched::MakeScheduler({"round_robin", 0, true}));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT_EQ(std::string(e->what()), "batch must be at least 1; found 0");
}

CQ_TEST(ScheduledTurnsOfBatchRowsAlongAChain) {
  // s -> a -> b, five rows at ticks 1..5 pushed at once. Each turn is `batch` rows of one
  // operator, round s, a, b: batch 2 gives s two rows, a the two, b the two, then s the next two.
  auto run = [](int64_t batch) {
    Rig rig(batch, {{0, {}, "s"}, {1, {0}, "a"}, {2, {1}, "b"}});
    rig.ex.Push(0, Rows({1, 2, 3, 4, 5}));
    for (int id : {0, 1, 2}) CQ_EXPECT_EQ(rig.ex.evaluations(id), 5);
    return std::make_pair(rig.log, rig.ex.turns());
  };
  const auto [log1, turns1] = run(1);
  CQ_EXPECT_EQ(log1, (std::vector<std::string>{"s:0@1", "a:0@1", "b:0@1", "s:0@2", "a:0@2", "b:0@2", "s:0@3", "a:0@3",
                                               "b:0@3", "s:0@4", "a:0@4", "b:0@4", "s:0@5", "a:0@5", "b:0@5"}));
  CQ_EXPECT_EQ(turns1, 15);
  const auto [log2, turns2] = run(2);
  CQ_EXPECT_EQ(log2, (std::vector<std::string>{"s:0@1", "s:0@2", "a:0@1", "a:0@2", "b:0@1", "b:0@2", "s:0@3", "s:0@4",
                                               "a:0@3", "a:0@4", "b:0@3", "b:0@4", "s:0@5", "a:0@5", "b:0@5"}));
  CQ_EXPECT_EQ(turns2, 9);  // ceil(5 / 2) turns each
  const auto [log7, turns7] = run(7);
  CQ_EXPECT_EQ(log7, (std::vector<std::string>{"s:0@1", "s:0@2", "s:0@3", "s:0@4", "s:0@5", "a:0@1", "a:0@2", "a:0@3",
                                               "a:0@4", "a:0@5", "b:0@1", "b:0@2", "b:0@3", "b:0@4", "b:0@5"}));
  CQ_EXPECT_EQ(turns7, 3);
}

CQ_TEST(ScheduledEvaluationTakesOneRowEvenAtOneTimestamp) {
  // The heartbeat executor hands rows of one timestamp over together ("s:0@1,1"); here each row is
  // an evaluation of its own.
  Rig rig(1, {{0, {}, "s"}});
  rig.ex.Push(0, Rows({1, 1, 2, 4, 4, 4}));
  CQ_EXPECT_EQ(rig.log, (std::vector<std::string>{"s:0@1", "s:0@1", "s:0@2", "s:0@4", "s:0@4", "s:0@4"}));
  CQ_EXPECT_EQ(rig.ex.evaluations(0), 6);
}

CQ_TEST(ScheduledCountsEvaluationsOfAFanInByHand) {
  // a, b -> j -> k, batch 3. a gets rows at 1, 2, 3, 4: a's turn takes 1..3, j stalls (b has
  // delivered nothing, §2.3), a's next turn takes 4. b gets rows at 2 and 5: b's turn takes both;
  // j's turn takes a@1, a@2 (first at equal times: port order) and b@2, k's the three; j's next
  // turn a@3 and a@4, then stalls on b@5 (a has delivered only up to 4). After the close j takes
  // b@5 and the heartbeats. Evaluations: a 4, b 2, j 6, k 6.
  Rig rig(3, {{0, {}, "a"}, {1, {}, "b"}, {2, {0, 1}, "j"}, {3, {2}, "k"}});
  rig.ex.Push(0, Rows({1, 2, 3, 4}));
  CQ_EXPECT_EQ(rig.log, (std::vector<std::string>{"a:0@1", "a:0@2", "a:0@3", "a:0@4"}));
  CQ_EXPECT_EQ(rig.ex.turns(), 2);
  rig.ex.Push(1, Rows({2, 5}));
  CQ_EXPECT_EQ(Of(rig.log, "j:"), (std::vector<std::string>{"j:0@1", "j:0@2", "j:1@2", "j:0@3", "j:0@4"}));
  CQ_EXPECT_EQ(rig.ex.evaluations(2), 5);
  CQ_EXPECT_EQ(rig.ex.evaluations(3), 5);
  CQ_EXPECT_EQ(rig.ex.turns(), 2 + 5);  // b; j, k; j, k
  rig.ex.AdvanceTo({{0, Time::Infinity()}, {1, Time::Infinity()}});
  CQ_EXPECT_EQ(Of(rig.log, "j:"),
               (std::vector<std::string>{"j:0@1", "j:0@2", "j:1@2", "j:0@3", "j:0@4", "j:1@5", "j:advance@inf"}));
  const std::vector<int64_t> want = {4, 2, 6, 6};
  for (int id = 0; id < 4; ++id) CQ_EXPECT_EQ(rig.ex.evaluations(id), want[id]);
  CQ_EXPECT_EQ(rig.ex.queued(2) + rig.ex.queued(3), 0);
}

CQ_TEST(ScheduledRefusesACycleNamingItself) {
  Rig rig(1, {});
  auto e = CQ_CATCH(rig.ex.Add(Probes({{0, {}, "s"}, {1, {0, 2}, "u"}, {2, {1}, "d"}}, &rig.log)));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("executor='scheduled' cannot run recursive queries") != std::string::npos);
  CQ_EXPECT(rig.ex.order().empty());
}

}  // namespace cq::test
