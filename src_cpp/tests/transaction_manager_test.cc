// txn/transaction_manager.h: one open transaction per redo area, begun at its first read; 2PL holds
// the shared lock from the first read to the commit, snapshot reads the versions pinned at the
// first read with the locks held only while pinning, optimistic aborts when a resource read has a
// later stamp at the commit than at the begin.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "batch/row_hash.h"
#include "tests/test_util.h"
#include "txn/resource_store.h"
#include "txn/transaction_manager.h"

namespace cq::test {
namespace {

using namespace std::chrono_literals;
using txn::Strategy;

txn::ResourceChange Upsert(const I64s& ids, const Strs& vs) {
  txn::ResourceChange c{"x", txn::ChangeKind::kUpsert, {}, static_cast<int64_t>(ids.size())};
  c.columns.push_back(I64(ids));
  c.columns.push_back(Str(vs));
  return c;
}

struct Fixture {
  txn::ResourceStore store;
  std::shared_ptr<txn::Resource> x;
  std::unique_ptr<txn::TransactionManager> m;

  explicit Fixture(Strategy s) {
    store.Define({"x", {{"id", TypeId::kInt64}, {"v", TypeId::kUtf8}}, {0}});
    store.Commit({Upsert({1, 2}, {"a", "b"})}, 1s, "load");
    x = std::make_shared<txn::StoreResource>(&store, "x");
    m = std::make_unique<txn::TransactionManager>(7, "q", txn::TxnOptions{s, 50ms});
    m->Add(x);
  }
  uint64_t Read(int64_t instant) { return m->Scan(*x, Time{instant, 0}).version; }
  bool Write() {
    try {
      store.Commit({Upsert({1}, {"z"})}, 20ms, "w");
      return true;
    } catch (const CqError& e) {
      CQ_EXPECT(e.kind() == ErrorKind::kLockTimeout);
      return false;
    }
  }
};

CQ_TEST(transaction_manager_2pl_holds_the_lock_from_the_first_read_to_the_commit) {
  Fixture f(Strategy::kTwoPhase);
  CQ_EXPECT(!f.m->open());
  CQ_EXPECT(f.Write());  // no transaction yet
  CQ_EXPECT_EQ(f.Read(1), uint64_t{2});
  CQ_EXPECT(f.m->open());
  CQ_EXPECT(f.store.Holders("x") == std::vector<std::string>{"q"});
  CQ_EXPECT(!f.Write());                 // blocked, then timed out naming q
  CQ_EXPECT_EQ(f.Read(2), uint64_t{2});  // the second read takes no second lock
  std::vector<std::pair<std::string, uint64_t>> versions;
  CQ_EXPECT(f.m->Commit(&versions));
  CQ_EXPECT(versions == (std::vector<std::pair<std::string, uint64_t>>{{"x", 2}}));
  CQ_EXPECT(!f.m->open());
  CQ_EXPECT(f.store.Holders("x").empty());
  CQ_EXPECT(f.Write());
}

CQ_TEST(transaction_manager_2pl_read_waits_for_a_writer_and_counts_the_wait) {
  Fixture f(Strategy::kTwoPhase);
  f.store.BeginExclusive({"x"}, 1s);
  std::thread writer([&] {
    std::this_thread::sleep_for(10ms);
    f.store.EndExclusive({"x"}, "w", true);
  });
  CQ_EXPECT_EQ(f.Read(1), uint64_t{2});  // the writer's version, after its commit
  writer.join();
  CQ_EXPECT_EQ(f.m->lock_waits(), int64_t{1});
  f.m->Abort();
  CQ_EXPECT(f.store.Holders("x").empty());
}

CQ_TEST(transaction_manager_snapshot_reads_the_pinned_version_and_blocks_no_writer) {
  Fixture f(Strategy::kSnapshot);
  CQ_EXPECT_EQ(f.Read(1), uint64_t{1});
  CQ_EXPECT(f.store.Holders("x").empty());  // released once pinned
  CQ_EXPECT(f.Write());
  CQ_EXPECT_EQ(f.Read(2), uint64_t{1});  // still the copy
  CQ_EXPECT(f.m->Commit(nullptr));
  CQ_EXPECT_EQ(f.Read(3), uint64_t{2});  // a new transaction pins the new version
}

CQ_TEST(transaction_manager_optimistic_aborts_when_a_read_resource_changed) {
  Fixture f(Strategy::kOptimistic);
  CQ_EXPECT_EQ(f.Read(1), uint64_t{1});
  CQ_EXPECT(f.m->Commit(nullptr));  // nothing changed
  CQ_EXPECT_EQ(f.Read(2), uint64_t{1});
  CQ_EXPECT(f.Write());  // not blocked
  std::vector<txn::TransactionManager::Read> reads;
  CQ_EXPECT(!f.m->Commit(nullptr, &reads));  // validation fails: aborted
  CQ_EXPECT(reads.size() == 1 && reads[0].version == 1 && reads[0].instant == (Time{2, 0}));
  CQ_EXPECT_EQ(f.Read(3), uint64_t{2});  // the redo reads the new version
  CQ_EXPECT(f.m->Commit(nullptr));
}

CQ_TEST(transaction_manager_optimistic_locks_after_aborts_in_a_row_and_commits) {
  Fixture f(Strategy::kOptimistic);
  for (int k = 0; k < txn::TransactionManager::kAbortsBeforeLocking; ++k) {
    f.Read(k);
    CQ_EXPECT(f.Write());
    CQ_EXPECT(!f.m->Commit(nullptr));  // a writer committed meanwhile: aborted
  }
  f.Read(10);  // this transaction locks x at its begin
  CQ_EXPECT(f.store.Holders("x") == std::vector<std::string>{"q"});
  CQ_EXPECT(!f.Write());  // the writer waits (and times out)
  CQ_EXPECT(f.m->Commit(nullptr));
  CQ_EXPECT(f.m->locked_after_aborts() == 1);
  f.Read(11);  // optimistic again: no lock
  CQ_EXPECT(f.Write());
  CQ_EXPECT(!f.m->Commit(nullptr));
}

CQ_TEST(transaction_manager_names_the_strategies) {
  CQ_EXPECT(txn::StrategyFromName("2pl") == Strategy::kTwoPhase);
  CQ_EXPECT(std::string(txn::StrategyName(Strategy::kSnapshot)) == "snapshot");
  auto e = CQ_CATCH(txn::StrategyFromName("serializable"));
  CQ_EXPECT(e &&
            std::string(e->what()) == "txn='serializable': expected one of 'none', '2pl', 'snapshot', 'optimistic'");
}

CQ_TEST(transaction_logs_keep_their_latest_records_and_count_all) {
  txn::ReadLog reads;
  const auto n = static_cast<int64_t>(txn::ReadLog::kLogLimit) + 5;
  for (int64_t k = 0; k < n; ++k) reads.Add({static_cast<int>(k % 2), "x", 0, Time{k, 0}, 1});
  const auto kept = reads.records();
  CQ_EXPECT(kept.size() == txn::ReadLog::kLogLimit);
  CQ_EXPECT(kept.front().instant.tick == 5 && kept.back().instant.tick == n - 1);
  CQ_EXPECT(reads.dropped() == 5);
  CQ_EXPECT(reads.reads().at(0) + reads.reads().at(1) == n);

  txn::TransactionManagers managers;
  for (int64_t k = 0; k < n; ++k) {
    txn::CommitRecord r;
    r.area = 7;
    r.instant = Time{k, 0};
    r.committed = k % 3 != 0;
    managers.Log(std::move(r));
  }
  CQ_EXPECT(managers.log().size() == txn::ReadLog::kLogLimit && managers.dropped() == 5);
  const auto [commits, aborts] = managers.outcomes().at(7);
  CQ_EXPECT(commits + aborts == n && aborts == (n + 2) / 3);
}

CQ_TEST(commit_log_columns_hold_every_record_and_entry_in_order) {
  txn::TransactionManagers managers;
  const auto log_columns_are_empty = [&] {
    const txn::CommitLogColumns c = managers.log_columns();
    return c.records.length == 0 && c.offsets.length == 1 && ReadI64(c.offsets.columns[0]) == I64s{0} &&
           ReadI64(c.offsets.columns[1]) == I64s{0} && c.evaluations.length == 0 && c.versions.length == 0;
  };
  CQ_EXPECT(log_columns_are_empty());
  // Records with no entry, one, and several (the middle one aborted).
  txn::CommitRecord a{"q", 3, Time{1, 0}, true, 10, 20, {}, {}};
  txn::CommitRecord b{"query two", 5, Time{2, 0}, false, 30, 40, {{4, 2}}, {{"x", 7}}};
  txn::CommitRecord c{"q", 3, Time{2, 0}, true, 50, 60, {{1, 1}, {2, 9}}, {{"x", 8}, {"resource y", 1}}};
  for (const auto* r : {&a, &b, &c}) managers.Log(*r);
  const txn::CommitLogColumns log = managers.log_columns();

  CQ_EXPECT(log.records.length == 3);
  CQ_EXPECT((log.records.names == std::vector<std::string>{"query", "area", "instant", "outcome", "begin", "end"}));
  const auto& r = log.records.columns;
  CQ_EXPECT((ReadStr(r[0]) == Strs{"q", "query two", "q"}));
  CQ_EXPECT((ReadI64(r[1]) == I64s{3, 5, 3}));
  CQ_EXPECT((ReadI64(r[2]) == I64s{1, 2, 2}));
  CQ_EXPECT((ReadStr(r[3]) == Strs{"commit", "abort", "commit"}));
  CQ_EXPECT((ReadI64(r[4]) == I64s{10, 30, 50}));
  CQ_EXPECT((ReadI64(r[5]) == I64s{20, 40, 60}));

  CQ_EXPECT(log.offsets.length == 4);
  CQ_EXPECT((ReadI64(log.offsets.columns[0]) == I64s{0, 0, 1, 3}));
  CQ_EXPECT((ReadI64(log.offsets.columns[1]) == I64s{0, 0, 1, 3}));
  CQ_EXPECT(log.evaluations.length == 3);
  CQ_EXPECT((ReadI64(log.evaluations.columns[0]) == I64s{4, 1, 2}));
  CQ_EXPECT((ReadI64(log.evaluations.columns[1]) == I64s{2, 1, 9}));
  CQ_EXPECT(log.versions.length == 3);
  CQ_EXPECT((ReadI64(log.versions.columns[0]) == I64s{1, 2, 2}));
  CQ_EXPECT((ReadStr(log.versions.columns[1]) == Strs{"x", "x", "resource y"}));
  CQ_EXPECT((ReadI64(log.versions.columns[2]) == I64s{7, 8, 1}));
}

}  // namespace
}  // namespace cq::test
