#pragma once
// ISTREAM(R): at every instant t, emits ⟨v, t⟩ for each v in R(t) − R(t⁻) (SEMANTICS.md §4.3) — the
// tuples that start at t, minus (as a bag) the tuples that end at t. So a value that expires and
// starts again at the same instant emits nothing, and a ghost (start = end) never emits.
//
// Two strategies, chosen by the planner from the input edge's lifetime property (ARCHITECTURE.md
// §3.4):
//  * constant duration d ([Range T], [Now], [Range Unbounded]): ends come in start order, so the
//    retained batches themselves are the expiration FIFO and a cursor marks the first row not yet
//    expired — no per-row bookkeeping at all; each instant is decided as soon as it is seen,
//    since no end at it can still be unknown. With d = ∞ nothing is kept.
//  * anything else (known ends of any length, pending ends): a RelationTracker decides each
//    instant once it is complete.
#include <memory>
#include <optional>

#include "base/ring.h"
#include "batch/row_equal.h"
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"

namespace cq {

class IStream final : public Operator {
 public:
  // `constant`: the input's lifetimes all have one duration known at plan time.
  // `tracker`: the general strategy (null for the constant-duration one).
  // `negative`, `policy`: the lifetime method and expiration policy, for the row form.
  IStream(const Schema& input, bool constant, std::unique_ptr<InstantTracker> tracker = nullptr, bool negative = false,
          ExpirationPolicy policy = ExpirationPolicy::kLazy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  // Rows kept because their end is still ahead (for tests).
  int64_t retained_rows() const;

 private:
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
  bool negative_;
  ExpirationPolicy policy_;
  std::optional<Duration> duration_;  // constant: set by the first batch
  // constant: the first retained row not yet expired: retained_.front(), logical row `cursor_`.
  int64_t cursor_ = 0;
  std::unique_ptr<InstantTracker> tracker_;  // general
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

}  // namespace cq
