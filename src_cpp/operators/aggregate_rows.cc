// The aggregate's row form (rows/ROWS.md): a driver over the aggregate's one state (aggregate.h).
// A row's group is found in the same group index the batch form uses, and the row — its arguments
// and group id — waits in the state's tracker (rows/instants.h) until its instants come; an instant's results go
// out at once: under the direct method a new result with an expiration holder and the end of the
// one it replaces through that holder, under the negative method a positive and a negative tuple.
#include "base/errors.h"
#include "operators/aggregate.h"
#include "rows/row_expression.h"

namespace cq {

void Aggregate::RowOut::Opened(uint32_t g, Time t) {
  Aggregate& a = *a_;
  if (a.emits_ != Emits::kRelation) {
    // (Nothing at ∞: tuples that end there never end, and an instant there is none.)
    if (a.emits_ == Emits::kInserted && !t.IsInfinite()) Emit(g, t, Time::Infinity(), kNoHolder);
    return;
  }
  HolderId h = kNoHolder;
  if (!a.negative_) a.groups_[g].holder = h = a.holders_->AllocateOne();
  Emit(g, t, Time::Infinity(), h);
}

void Aggregate::RowOut::Closed(uint32_t g, Time t) {
  Aggregate& a = *a_;
  if (a.emits_ != Emits::kRelation) {
    if (a.emits_ == Emits::kDeleted && !t.IsInfinite()) Emit(g, t, Time::Infinity(), kNoHolder);  // its old value
    return;
  }
  if (a.negative_) {
    Emit(g, t, a.groups_[g].started, kNoHolder);  // the old value leaves as a negative tuple
    return;
  }
  const HolderId h = a.groups_[g].holder;
  a.groups_[g].holder = kNoHolder;
  out_->EmitEnd(h, t);
  a.holders_->ReleaseOne(h);
}

void Aggregate::RowOut::Emit(uint32_t g, Time sync, Time other, HolderId holder) {
  const Aggregate& a = *a_;
  const size_t nk = a.keys_.size(), na = a.na_;
  ValueBuffer row(nk + na);
  for (size_t k = 0; k < nk; ++k) {
    const ValueStore& keys = a.index_.keys(k);
    Value& x = row[k];
    x.valid = keys.IsValid(g);
    if (keys.type() == TypeId::kUtf8) x.s = x.valid ? NewString(keys.String(g)) : nullptr;
    else x.i = x.valid ? static_cast<int64_t>(keys.Bits(g)) : 0;
  }
  for (size_t i = 0; i < na; ++i) {
    const Result& v = a.current_[g * na + i];
    Value& x = row[nk + i];
    x.valid = v.valid;
    if (a.aggs_[i].type == TypeId::kUtf8) x.s = v.valid ? NewString(a.current_str_[g * na + i]) : nullptr;
    else x.i = static_cast<int64_t>(v.bits);
  }
  Row r;
  r.values = row.data();
  r.sync = sync;
  r.other = other;
  r.holder = holder;
  out_->Emit(r);
  for (size_t c = 0; c < nk + na; ++c) {
    const TypeId type = c < nk ? a.index_.keys(c).type() : a.aggs_[c - nk].type;
    if (type == TypeId::kUtf8 && row[c].valid) ReleaseString(row[c].s);
  }
}

class Aggregate::Rows final : public RowOperator {
 public:
  explicit Rows(Aggregate* a) : a_(a), views_(a->keys_.size()) {
    for (const auto& k : a->keys_) keys_.push_back(RowExpression::From(*k));
    for (const Agg& g : a->aggs_)
      if (g.expr) args_.push_back(RowExpression::From(*g.expr));
  }
  void Push(int, const Row& row, RowEmitter&) override;
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override;
  void AdvanceTo(Time progress, RowEmitter& out) override;
  Time next_firing(int64_t) const override {
    return a_->chunks_.empty() ? a_->instants_->next_instant() : a_->NextInstant();  // (a call less, in loops)
  }
  bool advances_when_due() const override { return true; }
  // (Snapshot and Restore: nothing of its own. The state is the aggregate's, which writes it.)

 private:
  Aggregate* a_;
  std::vector<std::unique_ptr<RowExpression>> keys_, args_;
  std::vector<GroupIndex::KeyView> views_;  // a row's keys, for the group index
  int depth_ = 0;
};

void Aggregate::Rows::Push(int, const Row& row, RowEmitter&) {
  Aggregate& a = *a_;
  // Keys and arguments are mostly bare columns: those are read in place (borrowed), the others
  // evaluated (owned, released below).
  const size_t nk = keys_.size(), nargs = args_.size();
  ValueBuffer keys(nk), stored(nargs + 1);
  for (size_t k = 0; k < nk; ++k) {
    const RowExpression& e = *keys_[k];
    const Value v = keys[k] = e.is_column() ? row.values[e.column_index()] : e.Evaluate(row.values);
    views_[k] = {static_cast<uint64_t>(v.i), e.type() == TypeId::kUtf8 && v.valid ? v.s->view() : std::string_view(),
                 v.valid};
  }
  const uint32_t g = a.index_.MapOne(views_);
  if (a.index_.size() > a.groups_.size()) a.Grow(a.index_.size());
  for (size_t k = 0; k < nk; ++k)
    if (!keys_[k]->is_column() && keys_[k]->type() == TypeId::kUtf8 && keys[k].valid) ReleaseString(keys[k].s);
  for (size_t k = 0; k < nargs; ++k)
    stored[k] = args_[k]->is_column() ? row.values[args_[k]->column_index()] : args_[k]->Evaluate(row.values);
  stored[nargs] = Value::Int(g);
  Row r = row;
  r.values = stored.data();
  a.EnterRows();
  a.instants_->rows().Push(r);
  for (size_t k = 0; k < nargs; ++k)
    if (!args_[k]->is_column() && args_[k]->type() == TypeId::kUtf8 && stored[k].valid) ReleaseString(stored[k].s);
}

void Aggregate::Rows::PushEnd(int, HolderId id, Time end, RowEmitter&) {
  a_->EnterRows();
  a_->instants_->rows().PushEnd(id, end);
}

void Aggregate::Rows::AdvanceTo(Time progress, RowEmitter& out) {
  a_->EnterRows();
  // A kept row's slot is freed only when no emission of this operator is under way (ROWS.md).
  if (depth_ == 0) a_->instants_->rows().Collect();
  ++depth_;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth_};
  RowOut sink(a_, &out);
  a_->Advance(progress, sink);
}

std::unique_ptr<RowOperator> Aggregate::ToRows() {
  // kRows has no row form: planned outside loops only (cq_py/planner/fusion.py), it runs adapted
  // should a loop come to hold it.
  if (input_ == Input::kRows) return nullptr;
  return std::make_unique<Rows>(this);
}

}  // namespace cq
