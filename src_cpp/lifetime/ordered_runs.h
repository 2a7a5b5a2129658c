#pragma once
// Rows that come as runs — batches, each sorted by time — interleaved in any order, handed out
// merged in time order once a time is reached. A UNION ALL forwards each input as it comes, so what
// it emits is sorted per input but not overall, while a join or a row window must see each input
// in time order; a loop's entry queue (DTS executor) gets rows from several producers likewise.
//
// An end fixed for a row still held is written into the row, which then leaves with a known end
// (its holder is never seen downstream); ends of rows already out are handed back, to be passed on
// after the rows they are about. Between runs, equal times keep arrival order.
#include <map>
#include <unordered_map>
#include <memory>
#include <utility>
#include <vector>

#include "batch/batch.h"
#include "engine/snapshot.h"

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

  // Engine snapshots: the held runs, the heap and the pending holders, as they are.
  void Snapshot(SnapshotWriter& w) const;
  void Restore(SnapshotReader& r, const Schema& expect);

 private:
  struct Run {
    Batch batch;  // compact
    int64_t offset = 0;
    bool own_ends = false;  // holders/other copied, so that ends can be written into them
  };
  void PushHead(uint64_t id);
  void ForgetPending(const Batch& b, int64_t from, int64_t to);
  // `rows` of `runs` (BatchRow::batch indexes `runs`) as one compact batch.
  Batch Gather(const std::vector<Run*>& runs, const std::vector<BatchRow>& rows) const;

  // Runs come and go at every instant of a loop: their map nodes are kept for reuse instead of
  // being allocated and freed each time.
  Run& NewRun(uint64_t id);
  void DropRun(uint64_t id);

  std::map<uint64_t, Run> runs_;
  std::vector<std::map<uint64_t, Run>::node_type> spare_;
  uint64_t next_run_ = 0;
  // A min-heap of (time of the run's next row, run id): the id breaks ties in arrival order.
  std::vector<std::pair<Time, uint64_t>> heap_;
  std::unordered_map<HolderId, std::pair<uint64_t, int64_t>> held_pending_;  // holder -> (run, row)
  // Release's working lists, kept so that a loop's instants do not allocate them each time.
  std::vector<uint64_t> live_;
  std::vector<Run*> picked_;
  std::vector<int64_t> first_;
  std::vector<BatchRow> rows_;
};

}  // namespace cq
