#pragma once
// Rows that come as runs — batches, each sorted by time — interleaved in any order, handed out
// merged in time order once a time is reached. A UNION ALL forwards each input as it comes, so what
// it emits is sorted per input but not overall, while a join or a row window must see each input
// in time order; a loop's entry queue (DTS executor) gets rows from several producers likewise.
//
// An end fixed for a row still held is written into the row, which then leaves with a known end
// (its holder is never seen downstream); ends of rows already out are handed back, to be passed on
// after the rows they are about. Between runs, equal times keep arrival order.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "base/scratch_list.h"
#include "batch/batch.h"
#include "batch/snapshot.h"

namespace cq {

class OrderedRuns {
 public:
  void Add(const Batch& batch);
  // The ends whose rows are not held here (their rows went out already): pass them on.
  EndBatch AddEnds(const EndBatch& ends);
  // Time of the earliest row held (Time::Infinity() when none).
  Time head() const { return heap_.empty() ? Time::Infinity() : heap_.front().first; }
  bool empty() const { return heap_.empty(); }
  // Every held row below `next`, merged in time order, as one compact batch (length 0 if none).
  // Zero-copy when the rows come from one run.
  Batch Release(Time next);

  // f(batch, row) for every held row below `next`, in the order Release would give them, without
  // gathering them into a batch: a loop region's entry hands its rows on one at a time
  // (rows/ROWS.md). f must not come back into this OrderedRuns.
  template <typename F>
  void ReleaseEach(Time next, F&& f);

  // Engine snapshots: the held runs, the heap and the pending holders, as they are. Restore reads
  // batches of `expect`'s columns and of `kind`.
  void Snapshot(SnapshotWriter& w) const;
  void Restore(SnapshotReader& r, const Schema& expect, BatchKind kind);

 private:
  struct Run {
    Batch batch;  // compact
    int64_t offset = 0;
    bool own_ends = false;  // holders/other copied, so that ends can be written into them
  };
  void PushHead(uint64_t id, const Run& r);  // (r = runs_.at(id), which every caller has at hand)
  void ForgetPending(const Batch& b, int64_t from, int64_t to);
  // Fills which_/rows_ with the rows of `runs` below `next` in time order (ties: the earlier run
  // first), moving each run's offset past them.
  void Merge(const std::vector<Run*>& runs, Time next);
  // Merge's two-way case: runs `chain0` and `chain1` (indices into `runs`, each chain's runs in
  // arrival order and one after another in time), rows up to `stop`, into w (run) and r (row).
  static void MergeChains(const std::vector<Run*>& runs, const int64_t* stop, const uint32_t* chain0, size_t n0,
                          const uint32_t* chain1, size_t n1, bool ticks, uint32_t* w, uint32_t* r);
  // Rows `rows[k]` of runs `which[k]` as one compact batch.
  Batch Gather(const std::vector<Run*>& runs, const uint32_t* which, const uint32_t* rows, int64_t n) const;

  // Runs come and go at every instant of a loop: their map nodes are kept for reuse instead of
  // being allocated and freed each time.
  Run& NewRun(uint64_t id);
  void DropRun(uint64_t id);

  std::map<uint64_t, Run> runs_;
  std::vector<std::map<uint64_t, Run>::node_type> spare_;
  uint64_t next_run_ = 0;
  // A min-heap of (time of the run's next row, run id): the id breaks ties in arrival order.
  std::vector<std::pair<Time, uint64_t>> heap_;
  // Rows held with a pending end, by holder id (ids are dense): their run and row.
  struct Where {
    uint64_t run;
    int64_t row;
  };
  static constexpr uint64_t kNoRun = ~uint64_t{0};
  std::vector<Where> held_pending_;
  size_t pending_count_ = 0;  // entries of held_pending_ in use
  void Forget(HolderId h) {
    if (h < held_pending_.size() && held_pending_[h].run != kNoRun) {
      held_pending_[h].run = kNoRun;
      --pending_count_;
    }
  }
  // Release's working lists, kept so that a loop's instants do not allocate them each time.
  std::vector<uint64_t> live_;
  std::vector<Run*> picked_;
  std::vector<int64_t> first_;
  ScratchList<uint32_t> which_, rows_;
  std::vector<std::pair<Time, uint32_t>> heads_;  // Merge's heap when many runs meet
};

template <typename F>
void OrderedRuns::ReleaseEach(Time next, F&& f) {
  while (!heap_.empty() && heap_.front().first < next) {
    uint64_t id;
    if (heap_.size() == 1) {  // a lone run (a loop's entry fed in order): no heap to reorder
      id = heap_.front().second;
    } else {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      id = heap_.back().second;
      if (heap_.front().first < next) {
        // Several runs hold rows below `next`: the batch path merges them.
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        const Batch b = Release(next);
        for (int64_t k = 0; k < b.length; ++k) f(b, k);
        return;
      }
    }
    heap_.pop_back();
    // One run: its rows in order, straight from its batch.
    Run& r = runs_.at(id);
    const int64_t from = r.offset;
    int64_t k = r.offset;
    for (; k < r.batch.length && r.batch.StartAt(k) < next; ++k) f(static_cast<const Batch&>(r.batch), k);
    r.offset = k;
    ForgetPending(r.batch, from, k);
    if (k == r.batch.length) DropRun(id);
    else PushHead(id, r);
  }
}

}  // namespace cq
