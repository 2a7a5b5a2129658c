// The join's row form (rows/ROWS.md): a thin driver over its one state (operators/hash_join_state.h)
// kept in the row store — a RowStore slot per row — whose results go out a row at a time.
//
// Rows are joined once progress has passed them, as in the batch form. (At the instant the region
// runs, RowEmitter::now(), a row could go at once: every row below it is out on both inputs. But
// an end due at that instant may not be: the row would meet a tuple that ends at its start, a
// ghost result the batch form does not make, for no gain, since the executor advances this join
// at that instant anyway.)
//
// Re-entrancy: rows are joined only by AdvanceTo. A row that comes back through a loop while this
// join emits waits in its queue, and the loop draining the queues takes it in turn, so the index
// never changes while an emission is under way (probes emit straight from it) and no result of a
// pair goes out before the results of earlier rows. What can come back during an emission is an
// input's end: it changes only the rows' ends and the open results, which are read afresh for
// each pair. Slots let go of are freed when no emission of this join is under way.
#include <cstring>

#include "operators/hash_join.h"
#include "rows/row_expression.h"
#include "rows/row_operator.h"

namespace cq {

class HashJoin::Rows final : public RowOperator {
 public:
  explicit Rows(HashJoin* j) : j_(j) {
    if (j->residual_) residual_ = RowExpression::From(*j->residual_);
    joined_.resize(j->schema_.size());
  }
  void Push(int port, const Row& row, RowEmitter& out) override;
  void PushEnd(int port, HolderId id, Time end, RowEmitter& out) override;
  void AdvanceTo(Time progress, RowEmitter& out) override;
  Time next_firing(int64_t tick) const override { return j_->next_firing(tick); }
  bool advances_when_due() const override { return true; }
  // The state is the operator's: it writes it, whichever form holds it.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

  // JoinCore's sink: the pair being emitted is built in joined_ (left's columns, then right's).
  void Begin(int side, uint32_t x) {
    const JoinRowStore& s = core_->store(side);
    std::memcpy(static_cast<void*>(joined_.data() + (side == 0 ? 0 : j_->spec_.input[0].size())), s.values(x),
                s.width() * sizeof(Value));
  }
  void Pair(int side, uint32_t x, uint32_t y, const JoinMeta&, const JoinMeta&);

 private:
  // Per depth of nesting: an end coming back through a loop fixes results while others are still
  // being emitted.
  struct Scratch {
    std::vector<JoinOpenResults::Link> links;
    std::vector<JoinOpenResults::Fixed> fixed;
  };
  // Counts the nesting of calls; the outermost frees the slots let go of, once nothing of this
  // join is on its way downstream.
  struct Depth {
    Rows& r;
    explicit Depth(Rows& rows) : r(rows) {
      if (++r.depth_ > r.scratch_.size()) r.scratch_.push_back(std::make_unique<Scratch>());
    }
    ~Depth() {
      if (--r.depth_ == 0) {
        r.core_->store(0).Collect();
        r.core_->store(1).Collect();
      }
    }
    Scratch& scratch() const { return *r.scratch_[r.depth_ - 1]; }
  };
  // The state, in the row store (at the outermost call: the batch form may have run in between).
  RowCore& core() {
    if (depth_ == 0) core_ = &j_->row_core();
    return *core_;
  }
  void EmitFixed(const std::vector<JoinOpenResults::Fixed>& fixed, RowEmitter& out) {
    for (const JoinOpenResults::Fixed& f : fixed) {
      out.EmitEnd(f.id, f.end);
      j_->spec_.holders->Release(&f.id, 1);  // every consumer has seen it
    }
  }

  HashJoin* j_;
  RowCore* core_ = nullptr;
  RowEmitter* out_ = nullptr;
  std::unique_ptr<RowExpression> residual_;
  std::vector<Value> joined_;
  size_t depth_ = 0;
  std::vector<std::unique_ptr<Scratch>> scratch_;
};

void HashJoin::Rows::Push(int port, const Row& row, RowEmitter&) {
  if (!j_->spec_.negative && !row.pending() && !(row.sync < row.other)) return;  // a ghost joins nothing
  RowCore& c = core();
  const uint32_t x = c.store(port).Add(row);
  if (x != JoinRowStore::kNone) c.Waits(port, x);
}

void HashJoin::Rows::Pair(int side, uint32_t x, uint32_t y, const JoinMeta&, const JoinMeta&) {
  const JoinRowStore& o = core_->store(1 - side);
  std::memcpy(static_cast<void*>(joined_.data() + (side == 0 ? j_->spec_.input[0].size() : 0)), o.values(y),
              o.width() * sizeof(Value));
  if (residual_ && !residual_->IsTrue(joined_.data())) return;
  // Copies, read afresh for each pair: an end coming back through a loop may have fixed either.
  const JoinMeta xm = core_->store(side).meta(x), ym = o.meta(y);
  Row r;
  r.values = joined_.data();
  bool open;
  if (!core_->PairTimes(xm, ym, &r.sync, &r.other, &open)) return;
  if (j_->shared()) joined_.back() = Value::Int(j_->SliceOf(r.sync, r.other));
  if (open) r.holder = core_->results().Open(side == 0 ? xm : ym, side == 0 ? ym : xm, j_->spec_.holders);
  out_->Emit(r);
}

void HashJoin::Rows::PushEnd(int port, HolderId id, Time end, RowEmitter& out) {
  if (j_->spec_.negative) return;
  RowCore& c = core();
  if (!c.InputEnd(port, id, end)) return;  // a row that joins nothing
  Depth depth(*this);
  // Its open results: fixed now where the other end is known, else once progress reaches `end`.
  Scratch& sc = depth.scratch();
  sc.fixed.clear();
  c.results().InputEnd(port, id, end, c.progress(), sc.links, sc.fixed);
  c.results().Resolve(c.progress(), sc.fixed);
  EmitFixed(sc.fixed, out);
}

void HashJoin::Rows::AdvanceTo(Time progress, RowEmitter& out) {
  RowCore& c = core();
  Depth depth(*this);
  c.set_progress(progress);
  RowEmitter* outer = out_;
  out_ = &out;
  c.Drain(progress, false, *this);
  out_ = outer;
  if (j_->spec_.negative) return;
  c.Expire(0, progress);
  c.Expire(1, progress);
  // Ends are fixed only when one is below `progress` (those equal to it wait for the next
  // advance): otherwise this call does nothing the executor could miss (advances_when_due).
  if (!(c.results().next_end() < progress) && !progress.IsInfinite()) return;
  Scratch& sc = depth.scratch();
  sc.fixed.clear();
  c.results().Resolve(progress, sc.fixed);
  EmitFixed(sc.fixed, out);
}

std::unique_ptr<RowOperator> HashJoin::ToRows() {
  row_core();
  return std::make_unique<Rows>(this);
}

}  // namespace cq
