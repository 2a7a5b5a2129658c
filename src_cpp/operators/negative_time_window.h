#pragma once
// The time windows ([Now], [Range T], [Range Unbounded], [Range T Slide S]) under the Negative
// Tuple method (paper 003 §2): each tuple goes out as a positive tuple at its start, with an open
// end, and the window keeps it until time reaches its end, when it sends the same values again as
// a negative tuple (`sync` = the end, `other` = the start it ends). Twice the tuples of the direct
// method, and a copy for every negative: the cost the paper measures. Positives and negatives
// leave in time order (negatives first within an instant), as operators that merge inputs need.
// The row form (ToRows, for loop regions) keeps its own rows and sends the same sequence.

#include "base/ring.h"
#include "operators/operator.h"

namespace cq {

class NegativeTimeWindow final : public Operator {
 public:
  // kind: "now" | "range" | "unbounded" | "slide"
  NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  std::unique_ptr<RowOperator> ToRows() override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return "Window " + kind_ + " (negative tuples)"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  // Every positive with start <= through and negative with end <= through not sent yet, merged.
  void EmitThrough(Time through, Emitter& out);

  std::string kind_;
  int64_t range_, slide_;
  Schema schema_;
  Ring<Batch> kept_;  // sync = start, other = end; starts and ends are both monotone
  uint32_t front_ = 0;      // number of kept_.front()
  BatchRow next_positive_{0, 0}, next_negative_{0, 0};
};

}  // namespace cq
