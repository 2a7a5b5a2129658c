#pragma once
// The delay operator (paper 000 §3.1): `<Now>` moves each stream tuple one ε-step later, `<d>` d
// ticks later (SEMANTICS.md §2: ⟨v, t⟩ becomes ⟨v, t + d⟩). Defined on streams only. The executors
// read delay() to cut loops (DTS); its output lies in the future of its input.
//
// A tick delay's output runs ahead of the engine's progress: a query registered while the engine
// runs, at progress p, reads the delayed stream's rows from p on (SEMANTICS.md §4.5), some of which
// went out before it was registered. So the delay keeps what it emitted at or after the engine's
// least progress (OperatorContext::least), and hands it to such a query (Backlog). A `<Now>` delay
// keeps nothing: its rows stay in the tick of their input, below the progress a registration sees.
#include <deque>
#include <memory>

#include "operators/operator.h"
#include "rows/batch_rows.h"

namespace cq {

class DelayOperator final : public Operator {
 public:
  // `least`: the engine's least progress (null: nothing is kept).
  DelayOperator(Duration d, const Schema& input, const Time* least = nullptr);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override { Prune(); }
  std::vector<Batch> Backlog(Time p) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Duration delay() const override { return delay_; }
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "Delay " + delay_.ToString(); }
  // The rows kept for later registrations (the row form's too: it keeps them here).
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  // The row form's emitted row, kept like a batch of the batch form.
  void Keep(const Row& row);

 private:
  bool keeps() const { return least_ && delay_.ticks > 0; }
  void Keep(Batch batch);
  // Moves the rows gathered from the row form into kept_.
  void Gather() const;
  // Lets go of kept batches that lie wholly below the least progress.
  void Prune();

  Duration delay_;
  std::shared_ptr<const Schema> schema_;
  const Time* least_;
  mutable std::deque<Batch> kept_;  // emitted, in time order; the last rows of each at or after least
  mutable RowBatchBuilder gathering_;
};

}  // namespace cq
