#pragma once
// The time windows ([Now], [Range T], [Range Unbounded], [Range T Slide S]) under the Negative
// Tuple method (paper 003 §2): each tuple goes out as a positive tuple at its start, with an open
// end, and the window keeps it until time reaches its end, when it sends the same values again as
// a negative tuple (`sync` = the end, `other` = the start it ends). Twice the tuples of the direct
// method, and a copy for every negative: the cost the paper measures.
#include <deque>

#include "operators/operator.h"

namespace cq {

class NegativeTimeWindow final : public Operator {
 public:
  // kind: "now" | "range" | "unbounded" | "slide"
  NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return "Window " + kind_ + " (negative tuples)"; }

 private:
  void EmitNegatives(Time through, Emitter& out);  // every negative with end <= through

  struct Kept {
    Batch batch;  // compact; sync = start, other = end
  };
  std::string kind_;
  int64_t range_, slide_;
  Schema schema_;
  std::deque<Kept> kept_;  // in end order (ends are monotone for these windows)
  int64_t cursor_ = 0;     // first row of kept_.front() whose negative is not out yet
};

}  // namespace cq
