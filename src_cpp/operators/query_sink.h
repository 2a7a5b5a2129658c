#pragma once
// The output of a registered query: turns what reaches it into the rows users see (SEMANTICS.md §6)
// and queues them until the engine drains them (fetch / subscribe).
//   stream-valued query:   user columns + ts            (+ ts_step with expose_steps)
//   relation-valued query: user columns + start + end    (+ start_step, end_step); end is NULL for
//                          a tuple that never ends (still alive at close).
// A relation row is final when its end is: rows that arrive with a pending holder wait here (the
// undetermined set of paper 003 §4.1, indexed by holder id) until their end is fixed.
#include <deque>

#include "base/hash_multimap.h"
#include "base/ring.h"
#include "batch/row_equal.h"
#include "batch/row_hash.h"

#include "operators/operator.h"
#include "rows/row.h"

namespace cq {

struct OutputChunk {
  Columns columns;
  int64_t length = 0;
};

class QuerySink final : public Operator {
 public:
  QuerySink(std::string query, BatchKind kind, const Schema& input, bool expose_steps, bool negative);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  bool is_output() const override { return true; }
  const Schema& output_schema() const override { return output_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  const std::string& query() const { return query_; }
  std::vector<OutputChunk> Drain();
  // What is queued now, and back to it: a call into the engine that fails half way leaves the
  // queries' results as they were before it. Marking changes nothing (it comes before every push:
  // the rows being gathered stay there, to become one chunk with those that follow).
  struct Position {
    size_t chunks;
    int64_t small_rows;
    int64_t queued_rows;
  };
  Position Mark() const { return {queue_.size(), small_rows_, queued_rows_}; }
  void Rollback(Position mark);
  int64_t queued_rows() const { return queued_rows_; }
  // Relation rows waiting for their end (direct method), in whichever layout holds them.
  int64_t waiting_rows() const {
    return batches_.waiting + static_cast<int64_t>(store_.size() - held_positives_.size());
  }

 private:
  template <bool kRelation, bool kSteps>
  class Rows;
  // Rows of `b` (compact) with their ends, as an output chunk.
  void Output(const Batch& b, const uint32_t* rows, int64_t n, const TimeColumn* ends);
  // The Negative Tuple method: a relation row is final when its negative tuple arrives.
  void PushNegative(const Batch& b);
  void Append(OutputChunk chunk);
  void FlushSmall();

  std::string query_;
  BatchKind kind_;
  Schema input_;
  Schema output_;
  bool expose_steps_;
  std::deque<OutputChunk> queue_;
  int64_t queued_rows_ = 0;
  // Loops run instant by instant and hand over a row or two at a time: such rows are copied into
  // growing columns, which become one chunk, so that users get batches of useful size.
  static constexpr int64_t kSmallChunk = 4096;
  struct ColumnBuilder {
    TypeId type;
    std::vector<int64_t> i64;  // int64, and bool as 0/1
    std::vector<double> f64;
    std::string bytes;
    std::vector<int32_t> offsets{0};
    std::vector<uint8_t> valid;
    int64_t nulls = 0;
    void Add(const Column& c, int64_t row);
    void AddInt(int64_t v, bool is_valid);
    void AddValue(const Value& v);
    void Truncate(int64_t n);  // keeps the first n values
    Column Finish();
  };
  std::vector<ColumnBuilder> small_;  // one per output column
  int64_t small_rows_ = 0;

  // ---- what waits here between calls: one state for both forms (rows/ROWS.md) ----------------
  // Relation rows waiting for their end: by holder id (direct), or as positives waiting for their
  // negative, by hash of values and start (the Negative Tuple method). The batch form keeps them
  // in the batches they came in (a producer's batch is kept whole for its few open rows, none
  // copied until it goes out), the row form a row each in a RowStore (a loop's instant brings a
  // row or two). Only one layout holds rows at a time, the last form's: a form that finds rows in
  // the other's layout takes them over first, so either form may be asked for at any time, and
  // back, and no row is lost or goes out twice. Snapshots write the batch layout, whichever holds
  // the rows; a restored state is in it.

  // The batch layout: kept batches, numbered in arrival order, and where their waiting rows are.
  struct Retained {
    uint32_t seq;
    Batch batch;
    int64_t live;  // its rows still waiting
  };
  struct Slot {
    uint32_t seq = 0;
    uint32_t row = kEmpty;
    static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  };
  struct Positive {
    uint32_t seq = 0, row = 0;
  };
  struct Batches {
    Ring<Retained> retained;
    std::vector<Slot> slots;           // direct: by holder id
    HashMultimap<Positive> positives;  // negative: by PositiveKey
    uint32_t next_seq = 0;
    int64_t waiting = 0;  // (direct) rows in slots
    bool holds() const { return !retained.empty(); }
    Retained& at(uint32_t seq) { return retained[seq - retained.front().seq]; }
  };
  // The row layout: a kept row's values in store_, with its start.
  struct Held {
    uint32_t slot;
    Time start;
  };
  static constexpr Held kNotHeld{0xFFFFFFFFu, {}};
  bool RowsHold() const { return store_.size() != 0; }
  // A row's key under the negative method: the hash of its values (alike in either form,
  // batch/row_hash.h) combined with its start: positives and negatives pair on both.
  static uint64_t PositiveKey(uint64_t values_hash, Time start) {
    return MixHash(values_hash ^ MixHash(static_cast<uint64_t>(start.tick) * 31 + static_cast<uint64_t>(start.step)));
  }
  // The rows of `b` (compact) into `k` as the negative method has them: a positive waits (in b,
  // by PositiveKey), a negative takes its positive out. Returns the negatives' rows. (The one
  // place rows become positives of the batch layout, as they come and as they move over.)
  std::vector<uint32_t> Pair(Batches& k, const Batch& b) const;
  // The row layout's rows as a batch layout (one batch; numbered after batches_'s last).
  Batches BatchesOfRows() const;
  void TakeFromRows();     // the row layout's rows into the batch layout
  void TakeFromBatches();  // the batch layout's rows into the row layout
  void ClearRows();
  static void WriteBatches(SnapshotWriter& w, const Batches& b);

  bool negative_;
  RowEqual equal_;
  std::shared_ptr<const Schema> schema_;  // input_, for batches made of kept rows
  Batches batches_;
  RowStore store_;
  std::vector<Held> held_;             // direct: by holder id
  HashMultimap<Held> held_positives_;  // negative: by PositiveKey
};

}  // namespace cq
