// The heartbeat executor driven by hand over probe operators that log what reaches them: the stall
// of a binary operator (paper 000 §2.3), the stack scheduler's max_run (§4.2), the refusal of
// cycles, and the holder pins that keep an id from being reused while its end is queued.
#include "executors/heartbeat/heartbeat_executor.h"
#include "tests/probe_ops.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

// A heartbeat executor over probes, and their log.
struct Rig {
  HolderTable holders;
  HeartbeatExecutor ex;
  std::vector<std::string> log;
  Rig(int64_t max_run, const std::vector<ProbeSpec>& probes) : ex(max_run, &holders) { ex.Add(Probes(probes, &log)); }
};

}  // namespace

CQ_TEST(HeartbeatBinaryOperatorStallsOnAnEmptyInputUntilAHeartbeat) {
  Rig rig(20, {{0, {}, "a"}, {1, {}, "b"}, {2, {0, 1}, "j"}});
  HeartbeatExecutor& ex = rig.ex;
  const std::vector<std::string>& log = rig.log;

  // Input b has sent nothing, not even a heartbeat: j takes nothing, a's rows wait in its queue.
  ex.Push(0, Rows({1, 2, 3}));
  CQ_EXPECT_EQ(Of(log, "a:"), (std::vector<std::string>{"a:0@1", "a:0@2", "a:0@3"}));
  CQ_EXPECT(Of(log, "j:").empty());
  CQ_EXPECT_EQ(ex.queued(2), 3);
  CQ_EXPECT(ex.stats().stalls > 0);

  // b's heartbeat 2 lets j take what lies at or below 2; the row at 3 waits for b again.
  ex.AdvanceTo({{0, Time{3, 0}}, {1, Time{2, 0}}});
  CQ_EXPECT_EQ(Of(log, "j:"), (std::vector<std::string>{"j:0@1", "j:advance@2", "j:0@2"}));
  CQ_EXPECT_EQ(ex.queued(2), 2);  // the row at 3 and a's heartbeat 3 behind it

  // A row of b at 5: j merges by time, takes a's row at 3, and stalls on b's row at 5.
  ex.Push(1, Rows({5}));
  CQ_EXPECT_EQ(std::string(Of(log, "j:").back()), "j:0@3");
  ex.AdvanceTo({{0, Time{3, 0}}, {1, Time{5, 0}}});
  CQ_EXPECT_EQ(std::string(Of(log, "j:").back()), "j:advance@3");
  CQ_EXPECT_EQ(ex.queued(2), 2);  // b's row at 5 and its heartbeat

  // Close: everything drains.
  ex.AdvanceTo({{0, Time::Infinity()}, {1, Time::Infinity()}});
  CQ_EXPECT_EQ(Of(log, "j:"), (std::vector<std::string>{"j:0@1", "j:advance@2", "j:0@2", "j:0@3", "j:advance@3",
                                                        "j:1@5", "j:advance@inf"}));
  CQ_EXPECT_EQ(ex.queued(2), 0);
}

CQ_TEST(HeartbeatSourceBatchesAreCutPerTimestamp) {
  Rig rig(20, {{0, {}, "s"}});
  rig.ex.Push(0, Rows({1, 1, 2, 4, 4, 4}));
  CQ_EXPECT_EQ(rig.log, (std::vector<std::string>{"s:0@1,1", "s:0@2", "s:0@4,4,4"}));
}

CQ_TEST(HeartbeatMaxRunBoundsConsecutiveExecutionsOfOneOperator) {
  // A chain s -> a -> b: an operator runs up to max_run executions, then control moves to its
  // consumers (stacked above it), and comes back to it when they have nothing left.
  auto run = [](int64_t max_run) {
    Rig rig(max_run, {{0, {}, "s"}, {1, {0}, "a"}, {2, {1}, "b"}});
    rig.ex.Push(0, Rows({1, 2, 3, 4, 5}));
    return rig.log;
  };
  CQ_EXPECT_EQ(run(1), (std::vector<std::string>{"s:0@1", "a:0@1", "b:0@1", "s:0@2", "a:0@2", "b:0@2", "s:0@3", "a:0@3",
                                                 "b:0@3", "s:0@4", "a:0@4", "b:0@4", "s:0@5", "a:0@5", "b:0@5"}));
  CQ_EXPECT_EQ(run(2), (std::vector<std::string>{"s:0@1", "s:0@2", "a:0@1", "a:0@2", "b:0@1", "b:0@2", "s:0@3", "s:0@4",
                                                 "a:0@3", "a:0@4", "b:0@3", "b:0@4", "s:0@5", "a:0@5", "b:0@5"}));
  CQ_EXPECT_EQ(run(100),
               (std::vector<std::string>{"s:0@1", "s:0@2", "s:0@3", "s:0@4", "s:0@5", "a:0@1", "a:0@2", "a:0@3",
                                         "a:0@4", "a:0@5", "b:0@1", "b:0@2", "b:0@3", "b:0@4", "b:0@5"}));
}

CQ_TEST(HeartbeatRefusesACycleAndAddsNothing) {
  Rig rig(20, {});
  HeartbeatExecutor& ex = rig.ex;
  auto e = CQ_CATCH(ex.Add(Probes({{0, {}, "s"}, {1, {0, 2}, "u"}, {2, {1}, "d"}}, &rig.log)));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(e->kind() == ErrorKind::kSemantic);
  const std::string what = e->what();
  CQ_EXPECT(what.find("executor='heartbeat' cannot run recursive queries") != std::string::npos);
  CQ_EXPECT(what.find("#1 → #2 → #1") != std::string::npos);
  CQ_EXPECT(what.find("use executor='dts'") != std::string::npos);
  CQ_EXPECT(ex.op(0) == nullptr);
  CQ_EXPECT(ex.order().empty());

  // The executor is as it was: a plan without the cycle runs.
  ex.Add(Probes({{0, {}, "s"}, {1, {0}, "a"}}, &rig.log));
  ex.Push(0, Rows({7}));
  CQ_EXPECT_EQ(rig.log, (std::vector<std::string>{"s:0@7", "a:0@7"}));
}

CQ_TEST(HolderIdsPinnedByAQueuedEndAreNotReusedUntilUnpinned) {
  HolderTable holders;
  HolderId a, b, c;
  holders.Allocate(1, &a);
  holders.Pin(&a, 1);
  holders.Pin(&a, 1);  // its end waits in two queues
  holders.Release(&a, 1);
  holders.Allocate(1, &b);
  CQ_EXPECT(b != a);
  holders.Unpin(&a, 1);
  holders.Allocate(1, &c);
  CQ_EXPECT(c != a && c != b);
  holders.Unpin(&a, 1);  // the last queue took it: reusable
  holders.Allocate(1, &c);
  CQ_EXPECT_EQ(c, a);
}

}  // namespace cq::test
