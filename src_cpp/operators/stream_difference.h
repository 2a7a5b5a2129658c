#pragma once
// ISTREAM(R) and DSTREAM(R) (SEMANTICS.md §4.3), one template on the direction of the difference. At every
// instant t, ISTREAM emits ⟨v, t⟩ for each v in R(t) − R(t⁻): the tuples that start at t, minus (as
// a bag) the tuples that end at t; DSTREAM emits R(t⁻) − R(t): the tuples that end at t, minus
// those that start at t. So a value that expires and starts again at one instant emits nothing,
// and a ghost (start = end) never emits. An instant is decided once it is complete (the input's
// progress is past it), which is also when a [Range T] expiration at t is known to have no
// matching start; close() completes every instant.
//
// One state (rows/instants.h) for both forms: the input rows whose instants have not come, fed and
// read by the batch form (Push, PushEnds, AdvanceTo) and by the row form (ToRows), which may be
// asked for at any time and left again. ISTREAM has a second strategy, chosen by the planner from
// the input edge's lifetime property (ARCHITECTURE.md §3.4):
//  * constant duration d ([Range T], [Now], [Range Unbounded]): ends come in start order, so the
//    retained batches themselves are the expiration FIFO and a cursor marks the first row not yet
//    expired — no per-row bookkeeping at all; each instant is decided as soon as it is seen,
//    since no end at it can still be unknown. With d = ∞ nothing is kept. The batch form's alone:
//    when the row form is asked for, the rows not yet expired move into the one state as started
//    tuples with their ends, and the batch form goes on over that state until it is empty.
//  * anything else (known ends of any length, pending ends): the one state decides each instant
//    once it is complete.
#include <memory>
#include <optional>

#include "base/ring.h"
#include "batch/row_equal.h"
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"
#include "rows/instants.h"

namespace cq {

// Which side of an instant's changes is reported, less the other (as bags).
enum class Difference : uint8_t {
  kStarts,  // ISTREAM: I(t) − D(t)
  kEnds,    // DSTREAM: D(t) − I(t)
};

template <Difference kSide>
class StreamDifference final : public Operator {
 public:
  static constexpr bool kIStream = kSide == Difference::kStarts;
  // `constant` (ISTREAM only): the input's lifetimes all have one duration known at plan time.
  // `negative`, `policy`: the lifetime method and the expiration policy.
  StreamDifference(const Schema& input, bool constant, bool negative = false,
                   ExpirationPolicy policy = ExpirationPolicy::kLazy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  // One section: the constant strategy's rows (ISTREAM), then the one state (rows/instants.h).
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  // Rows kept because their end is still ahead (for tests).
  int64_t retained_rows() const;

 private:
  class Rows;
  // The batch form is about to run: the one state in batch form, and (ISTREAM planned for
  // constant durations) whether it holds rows the constant strategy must leave to it.
  void EnterBatch();
  // The row form is about to run: the constant strategy's rows move into the one state. Inline,
  // since every row the row form is given asks it.
  void EnterRows() {
    if (constant_ && !retained_.empty()) [[unlikely]]
      MoveRetainedToRows();
  }
  void MoveRetainedToRows();
  bool UsesInstants() const { return !constant_ || general_; }
  // A row of a retained batch: the batch's sequence number and its physical row.
  struct RowRef {
    uint64_t seq;
    uint32_t row;
  };
  struct Retained {
    uint64_t seq;
    Batch batch;
  };

  const Batch& BatchOf(uint64_t seq) const;
  // Loads D(t), the rows ending exactly at t, into ending_now_.
  void BeginInstant(Time t);
  void ExpireConstant(Time t);
  // Columnar path for the commonest data of all: constant duration in whole ticks and strictly
  // increasing timestamps, so each instant has one start and at most one end. A merge pass finds
  // each row's expiring counterpart, a second pass compares values; no per-row branching on the
  // data's pattern. Returns false when the batch does not qualify; what it did by then (expiring
  // rows that ended before the batch's first instant) is what the per-row path does first anyway.
  bool PushDistinctTicks(const Batch& batch, std::vector<uint32_t>& keep, bool& dropped);
  // Constant, ticks only: moves the cursor past rows that started before `threshold`.
  void AdvanceCursorTicks(int64_t threshold);
  // The input rows as a stream batch, less the rows not in `keep` when `dropped`.
  static void EmitStream(const Batch& batch, const std::vector<uint32_t>& keep, bool dropped, Emitter& out);

  Schema schema_;
  RowEqual equal_;
  Ring<Retained> retained_;
  uint64_t next_seq_ = 0;

  bool constant_;
  bool general_ = false;              // constant, but the one state holds rows (the row form left them): used
  std::optional<Duration> duration_;  // constant: set by the first batch
  // constant: the first retained row not yet expired: retained_.front(), logical row `cursor_`.
  int64_t cursor_ = 0;
  Instants instants_;  // the one state (general)
  // AdvanceTo's lists (general), kept for their capacity.
  InstantTracker::Changes changes_;
  InstantTracker::List<InstantTracker::RowRef> rows_;
  InstantTracker::List<Time> times_;
  std::shared_ptr<const Schema> out_schema_;

  Time current_ = Time::MinusInfinity();
  std::vector<RowRef> ending_now_;  // D(current_) as a bag
  std::vector<uint8_t> consumed_;   // which of ending_now_ already cancelled a start

  // Scratch of PushDistinctTicks, kept to avoid reallocating per batch.
  std::vector<int64_t> h_ticks_;
  std::vector<const Columns*> h_cols_;
  std::vector<uint32_t> h_rows_;
  std::vector<uint64_t> h_seqs_;
  std::vector<int32_t> cand_, ks_, drops_;
};

using IStream = StreamDifference<Difference::kStarts>;
using DStream = StreamDifference<Difference::kEnds>;

}  // namespace cq
