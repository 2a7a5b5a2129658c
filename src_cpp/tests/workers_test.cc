// base/workers.h: tasks run at once on kept threads, task k always on the same thread, errors
// after every task has run.
#include <atomic>
#include <stdexcept>
#include <thread>

#include "base/workers.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

CQ_TEST(workers_run_every_task_once_at_once_and_on_the_same_thread_each_round) {
  Workers w(3);
  std::thread::id first[3], again[3];
  std::atomic<int> arrived{0};
  w.Run(3, [&](int k) {
    first[k] = std::this_thread::get_id();
    // Every task waits for the others: they can only all arrive if they run at once.
    arrived.fetch_add(1);
    while (arrived.load() < 3) std::this_thread::yield();
  });
  CQ_EXPECT(first[0] == std::this_thread::get_id());
  CQ_EXPECT(first[1] != first[2] && first[1] != first[0]);
  for (int round = 0; round < 50; ++round) {
    w.Run(3, [&](int k) { again[k] = std::this_thread::get_id(); });
    for (int k = 0; k < 3; ++k) CQ_EXPECT(again[k] == first[k]);
  }
  int ran = 0;
  w.Run(1, [&](int k) { ran += 1 + k; });  // fewer tasks than threads: the caller's alone
  CQ_EXPECT_EQ(ran, 1);
}

CQ_TEST(workers_rethrow_the_first_tasks_error_after_all_ran) {
  Workers w(3);
  std::atomic<int> done{0};
  try {
    w.Run(3, [&](int k) {
      done.fetch_add(1);
      if (k > 0) throw std::runtime_error("task " + std::to_string(k));
    });
    CQ_EXPECT(false);
  } catch (const std::runtime_error& e) {
    CQ_EXPECT_EQ(std::string(e.what()), std::string("task 1"));
  }
  CQ_EXPECT_EQ(done.load(), 3);
  // The workers go on after an error, and a later round's errors are its own.
  int sum = 0;
  std::atomic<int> part{0};
  w.Run(3, [&](int k) { part.fetch_add(k); });
  sum = part.load();
  CQ_EXPECT_EQ(sum, 3);
  bool threw = false;
  try {
    w.Run(4, [](int) {});
  } catch (const std::logic_error&) {
    threw = true;
  }
  CQ_EXPECT(threw);
}

}  // namespace
}  // namespace cq::test
