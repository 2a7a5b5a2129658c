#pragma once
// The time windows ([Now], [Range T], [Range Unbounded], [Range T Slide S]) under the Negative
// Tuple method (paper 003 §2): each tuple goes out as a positive tuple at its start, with an open
// end, and the window keeps it until time reaches its end, when it sends the same values again as
// a negative tuple (`sync` = the end, `other` = the start it ends). Twice the tuples of the direct
// method, and a copy for every negative: the cost the paper measures. Positives and negatives
// leave in time order (negatives first within an instant), as operators that merge inputs need.
//
// One state, two drivers (rows/ROWS.md): the tuples kept until their negatives are out, in start
// order (their ends are monotone too), and two cursors — the next positive and the next negative
// to send. The batch form (Push, AdvanceTo) keeps them in their input batches, which it gathers
// from without copying a tuple it kept; the row form (ToRows, for loop regions) keeps them a row
// each. Which layout holds them is the last form's: a form that finds the tuples in the other's
// layout takes them over first (a loop that joins later turns the window into its row form at
// any time, and back). Snapshots write the batch form's layout, whichever holds the tuples.
#include <memory>
#include <vector>

#include "base/ring.h"
#include "operators/operator.h"
#include "rows/row.h"

namespace cq {

class NegativeTimeWindow final : public Operator {
 public:
  // kind: "now" | "range" | "unbounded" | "slide"
  NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input);
  ~NegativeTimeWindow() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return "Window " + name_ + " (negative tuples)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  enum class Kind : uint8_t { kNow, kRange, kUnbounded, kSlide };
  // The lifetime a tuple at `t` gets.
  void Lifetime(Time t, Time* start, Time* end) const;

  // ---- the batch form's layout
  // Every positive with start <= through and negative with end <= through not sent yet, merged.
  void EmitThrough(Time through, Emitter& out);
  bool BatchesHold() const { return !kept_.empty(); }
  Time BatchesNextFiring() const;
  // The row layout's tuples, as one batch of the batch layout (empty when it holds none).
  Batch BatchOfRows(BatchRow* positive) const;
  void TakeFromRows();  // the row layout's tuples into the batch layout
  static void WriteBatches(SnapshotWriter& w, uint32_t front, const Ring<Batch>& kept, BatchRow positive,
                           BatchRow negative);

  Ring<Batch> kept_;    // sync = start, other = end; starts and ends are both monotone
  uint32_t front_ = 0;  // number of kept_.front()
  BatchRow next_positive_{0, 0}, next_negative_{0, 0};

  // ---- the row form's layout: each tuple's values in a RowStore, its start and end in a FIFO
  struct Kept {
    Time start, end;
    uint32_t slot;
    uint32_t unused = 0;  // (no padding)
  };
  bool RowsHold() const { return neg_ < RowsEnd(); }
  uint64_t RowsEnd() const { return base_ + rows_.size(); }
  const Kept& At(uint64_t k) const { return rows_[k - base_]; }
  void TakeFromBatches();  // the batch layout's tuples into the row layout
  void ClearRows();

  RowStore store_;
  std::vector<Kept> rows_;  // rows_[0] is the base_-th tuple ever kept
  uint64_t base_ = 0;
  uint64_t freed_ = 0;          // tuples before it are freed (and may be dropped from rows_)
  uint64_t pos_ = 0, neg_ = 0;  // the next positive and the next negative to send
  int depth_ = 0;               // emissions of the row form under way

  std::string name_;
  Kind kind_;
  int64_t range_, slide_;
  std::shared_ptr<const Schema> schema_;
};

}  // namespace cq
