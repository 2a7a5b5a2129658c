#pragma once
// ISTREAM(R): at every instant t, emits ⟨v, t⟩ for each v in R(t) − R(t⁻) (SPEC §4) — the tuples
// that start at t, minus (as a bag) the tuples that end at t. So a value that expires and starts
// again at the same instant emits nothing, and a ghost (start = end) never emits.
//
// State: the rows whose end lies in the future, kept by reference to their batch (no copy) with
// their end time. When every input lifetime has the same constant duration (the planner's
// [Range T] / [Now] edges), ends arrive in order and a FIFO suffices (STYLE §4); otherwise a binary
// heap orders them. Rows that never end are not kept: they can cancel nothing.
#include <deque>
#include <optional>

#include "batch/row_equal.h"
#include "operators/operator.h"

namespace cq {

class IStream final : public Operator {
 public:
  explicit IStream(const Schema& input);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;

  // State size, for tests and explain: rows whose end is still ahead.
  int64_t pending_rows() const { return static_cast<int64_t>(fifo_.size() + heap_.size()); }

 private:
  struct Entry {
    Time end;
    uint64_t seq;
    uint32_t row;
  };
  struct Retained {
    uint64_t seq;
    Batch batch;
    int64_t live;
  };

  void BeginInstant(Time t);
  void Release(const Entry& e);
  void AddEntry(const Entry& e, const Batch& batch);
  bool PopBefore(Time t, Entry* e);  // the earliest entry if it ends before t
  bool PopAt(Time t, Entry* e);      // the earliest entry if it ends exactly at t
  Retained& Find(uint64_t seq);
  void Trim();

  Schema schema_;
  RowEqual equal_;
  std::deque<Retained> retained_;
  std::deque<Entry> fifo_;
  std::vector<Entry> heap_;
  bool fifo_mode_ = true;
  std::optional<Duration> fifo_duration_;
  uint64_t next_seq_ = 0;
  Time current_ = Time::MinusInfinity();
  std::vector<Entry> ending_now_;  // D(current_) as a bag
  std::vector<bool> consumed_;     // which of ending_now_ already cancelled a start
};

}  // namespace cq
