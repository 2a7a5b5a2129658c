// txn/resource_store.h: versions pinned while updates commit, atomic commits across resources,
// changes that do not fit leave the store as it was, locks that block and time out, naming the
// holders.
#include <atomic>
#include <chrono>
#include <thread>

#include "batch/row_hash.h"
#include "tests/test_util.h"
#include "txn/resource_store.h"

namespace cq::test {
namespace {

using namespace std::chrono_literals;
using txn::ChangeKind;
using txn::ResourceChange;
using txn::ResourceStore;

txn::ResourceSpec XSpec(const std::string& name = "x") {
  return {name, {{"id", TypeId::kInt64}, {"v", TypeId::kUtf8}}, {0}};
}

ResourceChange Upsert(const std::string& r, const I64s& ids, const Strs& vs, ChangeKind kind = ChangeKind::kUpsert) {
  ResourceChange c{r, kind, {}, static_cast<int64_t>(ids.size())};
  c.columns.push_back(I64(ids));
  c.columns.push_back(Str(vs));
  return c;
}

ResourceChange Delete(const std::string& r, const I64s& ids) {
  ResourceChange c{r, ChangeKind::kDelete, {}, static_cast<int64_t>(ids.size())};
  c.columns.push_back(I64(ids));
  return c;
}

std::optional<std::string> ValueOf(const txn::ResourceVersion& v, int64_t id) {
  std::string key;
  AppendKey(I64({id}), 0, &key);
  const int64_t row = v.Find(key);
  if (row < 0) return std::nullopt;
  return ReadStr(v.columns[1])[row];
}

CQ_TEST(resource_store_versions_stay_pinned_while_commits_publish_new_ones) {
  ResourceStore s;
  s.Define(XSpec());
  s.Commit({Upsert("x", {1, 2}, {"a", "b"}, ChangeKind::kReplace)}, 1s, "load");
  auto v1 = s.Current("x");
  s.Commit({Upsert("x", {2, 3}, {"B", "c"}), Delete("x", {1})}, 1s, "t");
  auto v2 = s.Current("x");
  CQ_EXPECT(v1->version == 1 && v2->version == 2);
  CQ_EXPECT(ValueOf(*v1, 1) == "a" && ValueOf(*v1, 2) == "b" && !ValueOf(*v1, 3));
  CQ_EXPECT(!ValueOf(*v2, 1) && ValueOf(*v2, 2) == "B" && ValueOf(*v2, 3) == "c");
  CQ_EXPECT(v2->length == 2);
  CQ_EXPECT(s.UpdateLog().size() == 2 && s.UpdateLog()[1].upserted == 2 && s.UpdateLog()[1].deleted == 1);
}

CQ_TEST(resource_store_a_change_that_does_not_fit_applies_nothing_anywhere) {
  ResourceStore s;
  s.Define(XSpec("x"));
  s.Define(XSpec("y"));
  s.Commit({Upsert("x", {1}, {"a"}), Upsert("y", {1}, {"a"})}, 1s, "load");
  const auto bad = [&](std::vector<ResourceChange> cs, const std::string& says) {
    auto e = CQ_CATCH(s.Commit(cs, 1s, "t"));
    CQ_EXPECT(e && e->kind() == ErrorKind::kInput);
    CQ_EXPECT(e && std::string(e->what()).find(says) != std::string::npos);
  };
  bad({Upsert("x", {2}, {"b"}), Delete("y", {7})}, "delete of a key it does not hold");
  bad({Upsert("x", {2, 2}, {"b", "c"})}, "two rows with one key");
  bad({Upsert("x", {std::nullopt}, {"b"})}, "a NULL in the key");
  ResourceChange wrong{"x", ChangeKind::kUpsert, {}, 1};
  wrong.columns.push_back(Str({"1"}));
  wrong.columns.push_back(Str({"b"}));
  bad({wrong}, "rows must have columns (id BIGINT, v VARCHAR)");
  bad({Upsert("nope", {1}, {"a"})}, "no resource 'nope'");
  CQ_EXPECT(s.version() == 1);
  CQ_EXPECT(s.Current("x")->length == 1 && s.Current("y")->length == 1);
  // The locks of a failed commit are released: the next one goes through at once.
  CQ_EXPECT(s.Commit({Upsert("x", {2}, {"b"})}, 0ns, "t") == 2);
}

CQ_TEST(resource_store_a_writer_waits_for_readers_and_times_out_naming_them) {
  ResourceStore s;
  s.Define(XSpec());
  CQ_EXPECT(s.LockShared("x", "q1", 1s));
  CQ_EXPECT(s.LockShared("x", "q2", 1s));
  auto e = CQ_CATCH(s.Commit({Upsert("x", {1}, {"a"})}, 20ms, "w"));
  CQ_EXPECT(e && e->kind() == ErrorKind::kLockTimeout);
  CQ_EXPECT(e && std::string(e->what()) == "resource 'x' stayed locked past the timeout by query 'q1', 'q2'");
  std::atomic<bool> committed{false};
  std::thread writer([&] {
    s.Commit({Upsert("x", {1}, {"a"})}, 5s, "w");
    committed = true;
  });
  s.UnlockShared("x", "q1");
  std::this_thread::sleep_for(30ms);
  CQ_EXPECT(!committed);  // q2 still holds it
  s.UnlockShared("x", "q2");
  writer.join();
  CQ_EXPECT(committed && s.Current("x")->length == 1);
  CQ_EXPECT(s.Holders("x").empty());
}

CQ_TEST(resource_store_a_waiting_writer_goes_before_a_thread_that_holds_no_lock) {
  ResourceStore s;
  s.Define(XSpec());
  CQ_EXPECT(s.LockShared("x", "q", 1s));
  std::thread writer([&] { s.Commit({Upsert("x", {1}, {"a"})}, 5s, "w"); });
  // Until the writer waits for q: a thread holding no lock is then refused at once.
  std::thread([&] {
    while (s.LockShared("x", "probe", 0ms)) {
      s.UnlockShared("x", "probe");
      std::this_thread::sleep_for(1ms);
    }
  }).join();
  // This thread holds x: another lock (q's next read) goes on, or it would wait on itself.
  CQ_EXPECT(s.LockShared("x", "q", 10ms));
  s.UnlockShared("x", "q");
  s.UnlockShared("x", "q");
  // Now it holds nothing: a new transaction's lock waits for the writer's commit.
  CQ_EXPECT(s.LockShared("x", "q", 5s));
  CQ_EXPECT(s.version() == 1);  // the writer's commit came first
  CQ_EXPECT(ValueOf(*s.Current("x"), 1) == "a");
  s.UnlockShared("x", "q");
  writer.join();
}

CQ_TEST(resource_store_a_stream_of_writers_lets_a_reader_in_after_one_commit) {
  ResourceStore s;
  s.Define(XSpec());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int k = 0; !stop; ++k) s.Commit({Upsert("x", {1}, {std::to_string(k)})}, 5s, "w");
  });
  for (int k = 0; k < 200; ++k) {
    const uint64_t before = s.version();
    CQ_ASSERT(s.LockShared("x", "q", 5s));
    const uint64_t at = s.Current("x")->version;
    s.UnlockShared("x", "q");
    // At most the commit under way when it asked, and the one writer it let go first.
    CQ_EXPECT(at <= before + 2);
  }
  stop = true;
  writer.join();
}

CQ_TEST(resource_store_concurrent_writers_and_readers_see_whole_commits) {
  // Each commit rewrites both resources with one value: a reader pinning both under its locks
  // must see one commit's value in both.
  ResourceStore s;
  s.Define(XSpec("x"));
  s.Define(XSpec("y"));
  s.Commit({Upsert("x", {1}, {"0"}), Upsert("y", {1}, {"0"})}, 1s, "load");
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (int k = 0; k < 200; ++k) {
        const std::string v = std::to_string(w * 1000 + k);
        s.Commit({Upsert("x", {1}, {v}), Upsert("y", {1}, {v})}, 10s, "w");
      }
    });
  int mismatches = 0, reads = 0;
  while (reads < 2000) {
    if (!s.LockShared("x", "q", 1s)) continue;
    if (!s.LockShared("y", "q", 1s)) {
      s.UnlockShared("x", "q");
      continue;
    }
    mismatches += ValueOf(*s.Current("x"), 1) != ValueOf(*s.Current("y"), 1);
    s.UnlockShared("y", "q");
    s.UnlockShared("x", "q");
    ++reads;
  }
  for (auto& t : writers) t.join();
  CQ_EXPECT(mismatches == 0);
  CQ_EXPECT(s.version() == 401);
}

CQ_TEST(resource_store_defining_again_must_agree) {
  ResourceStore s;
  s.Define(XSpec());
  s.Define(XSpec());  // the same: nothing changes
  txn::ResourceSpec other{"x", {{"id", TypeId::kInt64}}, {0}};
  auto e = CQ_CATCH(s.Define(other));
  CQ_EXPECT(e && std::string(e->what()).find("is defined with columns (id BIGINT, v VARCHAR)") != std::string::npos);
  auto no_key = CQ_CATCH(s.Define(txn::ResourceSpec{"z", {{"id", TypeId::kInt64}}, {}}));
  CQ_EXPECT(no_key && no_key->kind() == ErrorKind::kInput);
  // A key naming a column twice (the crash fuzzer's KEY (b, b): a delete then met two b's).
  auto twice = CQ_CATCH(s.Define(txn::ResourceSpec{"w", {{"id", TypeId::kInt64}}, {0, 0}}));
  CQ_EXPECT(twice && std::string(twice->what()).find("key column 'id' twice") != std::string::npos);
  CQ_EXPECT(!s.Has("w"));
}

CQ_TEST(resource_store_undefine_takes_back_only_an_untouched_definition) {
  ResourceStore s;
  s.Define(XSpec());
  CQ_EXPECT(s.Undefine("x") && !s.Has("x"));
  CQ_EXPECT(!s.Undefine("x"));
  s.Define(XSpec());
  s.Commit({Upsert("x", {1}, {"a"})}, std::chrono::seconds(1), "w");
  CQ_EXPECT(!s.Undefine("x") && s.Has("x"));  // (committed to: rows, a version)
  s.DefineModel("m");
  CQ_EXPECT(!s.Undefine("m") && s.Has("m"));
  s.Define(txn::ResourceSpec{"y", {{"id", TypeId::kInt64}}, {0}});
  CQ_EXPECT(s.LockShared("y", "q", std::chrono::seconds(1)));
  CQ_EXPECT(!s.Undefine("y"));  // (a reader holds it)
  s.UnlockShared("y", "q");
}

CQ_TEST(resource_store_a_model_is_a_lock_and_versions_swapped_under_an_exclusive_lock) {
  ResourceStore s;
  s.DefineModel("m");
  s.DefineModel("m");  // again: nothing changes
  CQ_EXPECT(s.LockShared("m", "q1", 1s));
  auto e = CQ_CATCH(s.BeginExclusive({"m"}, 10ms));
  CQ_EXPECT(e && e->kind() == ErrorKind::kLockTimeout);
  s.UnlockShared("m", "q1");
  s.BeginExclusive({"m"}, 1s);
  CQ_EXPECT(!s.LockShared("m", "q2", 10ms));  // a reader waits while the model is swapped
  CQ_EXPECT(s.EndExclusive({"m"}, "set", true) == 1);
  CQ_EXPECT(s.Current("m")->version == 1);
  CQ_EXPECT(s.LockShared("m", "q2", 10ms));
  s.UnlockShared("m", "q2");
  auto rows = CQ_CATCH(s.Commit({Upsert("m", {1}, {"a"})}, 1s, "w"));
  CQ_EXPECT(rows && std::string(rows->what()).find("is a model") != std::string::npos);
  auto clash = CQ_CATCH(s.Define(XSpec("m")));
  CQ_EXPECT(clash && std::string(clash->what()).find("is a model of the store") != std::string::npos);
}

}  // namespace
}  // namespace cq::test
