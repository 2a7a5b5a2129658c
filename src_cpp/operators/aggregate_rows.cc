// The aggregate's row form (rows/ROWS.md): GROUP BY and its functions over the rows of a loop.
// The same semantics as the batch form (aggregate.h, with the functions of aggregate_functions.h):
// at every instant the SQL aggregate of R(t) per group; a group whose value changed ends its
// result tuple at t (its expiration holder's end is fixed; under the negative method the old
// value leaves as a negative tuple) and starts a new one.
//
// Each row's group is found when it arrives (a hash of its key values); the tracker keeps what the
// groups need of the row — its arguments and group — until its end has been seen.
#include <algorithm>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/aggregate.h"
#include "rows/row_expression.h"
#include "rows/row_tracker.h"

namespace cq {

class Aggregate::Rows final : public RowOperator {
 public:
  explicit Rows(const Aggregate& a);
  void Push(int, const Row& row, RowEmitter&) override;
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override { tracker_->PushEnd(id, end); }
  void AdvanceTo(Time progress, RowEmitter& out) override;
  Time next_firing(int64_t) const override { return tracker_->next_instant(); }
  bool advances_when_due() const override { return true; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  struct RowAgg {
    Fn fn;
    Op op;
    bool distinct;
    TypeId type, arg_type;
    int arg;  // index among the stored arguments, -1 for COUNT(*)
    int set;  // multiset, -1 when none
  };
  struct Group {
    int64_t rows = 0;
    Time started;
    HolderId holder = kNoHolder;
    bool open = false;
    bool touched = false;
  };
  uint32_t GroupOf(const ::cq::Value* keys);
  uint32_t FindOrAddGroup(const ::cq::Value* keys);
  void Apply(const ::cq::Value* stored, int64_t sign);
  void EndInstant(Time t, RowEmitter& out);
  // Emits group g's tuple: its keys and the values `v` (strings `s`), over [sync, other) or with
  // a holder.
  void EmitResult(uint32_t g, const Value* v, const std::string* s, Time sync, Time other, HolderId holder,
                  RowEmitter& out);
  void Grow(uint32_t groups);

  std::vector<std::unique_ptr<RowExpression>> keys_, args_;
  std::vector<RowAgg> aggs_;
  size_t na_;
  size_t sets_per_group_ = 0;
  bool negative_;
  HolderTable* holders_;
  std::vector<TypeId> out_types_;

  // Groups: key values by group id (a store slot per group, in order), found by hash.
  std::shared_ptr<const Schema> key_schema_;
  RowStore keys_store_;
  HashMultimap<uint32_t> by_hash_;
  DirectIntKeys direct_;  // in front of by_hash_
  std::vector<int> key_cols_;  // 0 .. keys - 1
  std::vector<Group> groups_;
  std::vector<Acc> accs_;
  std::vector<Multiset> sets_;
  std::vector<Value> current_;  // the open result's values
  std::vector<std::string> current_str_;
  std::vector<uint32_t> touched_;

  std::unique_ptr<RowTracker> tracker_;  // stored rows: the arguments, then the group id
  size_t stored_width_;
  std::vector<Value> now_;
  std::vector<std::string> now_str_;
  int depth_ = 0;
};

Aggregate::Rows::Rows(const Aggregate& a)
    : na_(a.aggs_.size()), negative_(a.input_ == Input::kNegative), holders_(a.holders_) {
  Schema key_schema, stored;
  for (const auto& k : a.keys_) {
    keys_.push_back(RowExpression::From(*k));
    key_schema.push_back({"k", k->type()});
  }
  for (const Agg& g : a.aggs_) {
    RowAgg r{g.fn, g.op, g.distinct, g.type, g.arg_type, -1, -1};
    if (g.expr) {
      r.arg = static_cast<int>(args_.size());
      args_.push_back(RowExpression::From(*g.expr));
      stored.push_back({"arg", g.arg_type});
    }
    if (g.op == Op::kMultiset) r.set = static_cast<int>(sets_per_group_++);
    aggs_.push_back(r);
  }
  stored.push_back({"group", TypeId::kInt64});
  stored_width_ = stored.size();
  for (const Field& f : a.output_) out_types_.push_back(f.type);
  key_schema_ = std::make_shared<const Schema>(key_schema);
  keys_store_ = RowStore(RowLayout(key_schema));
  direct_ = DirectIntKeys(keys_store_.layout());
  for (size_t k = 0; k < keys_.size(); ++k) key_cols_.push_back(static_cast<int>(k));
  tracker_ = MakeRowTracker(negative_, a.policy_, false, stored);
  now_.resize(na_);
  now_str_.resize(na_);
}

void Aggregate::Rows::Grow(uint32_t groups) {
  groups_.resize(groups);
  accs_.resize(groups * na_);
  sets_.resize(groups * sets_per_group_);
  current_.resize(groups * na_);
  current_str_.resize(groups * na_);
}

uint32_t Aggregate::Rows::GroupOf(const ::cq::Value* keys) {
  return direct_.FindOr(keys[0], [&] { return FindOrAddGroup(keys); });
}

uint32_t Aggregate::Rows::FindOrAddGroup(const ::cq::Value* keys) {
  const RowLayout& l = keys_store_.layout();
  const uint64_t h = l.Hash(keys);
  uint32_t found = 0xFFFFFFFFu;
  by_hash_.ForEachWith(h, [&](uint32_t g) {
    if (found == 0xFFFFFFFFu && l.Equal(keys_store_.Get(g), keys)) found = g;
  });
  if (found != 0xFFFFFFFFu) return found;
  const uint32_t g = keys_store_.Add(keys);  // slots are handed out in order: slot = group id
  by_hash_.Insert(h, g);
  Grow(g + 1);
  return g;
}

void Aggregate::Rows::Push(int, const Row& row, RowEmitter&) {
  // Keys and arguments are mostly bare columns: those are read in place (borrowed), the others
  // evaluated (owned, released below).
  ValueBuffer keys(keys_.size()), stored(stored_width_);
  for (size_t k = 0; k < keys_.size(); ++k)
    keys[k] = keys_[k]->is_column() ? row.values[keys_[k]->column_index()] : keys_[k]->Evaluate(row.values);
  const uint32_t g = GroupOf(keys.data());
  for (size_t k = 0; k < keys_.size(); ++k)
    if (!keys_[k]->is_column() && keys_[k]->type() == TypeId::kUtf8 && keys[k].valid) ReleaseString(keys[k].s);
  for (size_t k = 0; k < args_.size(); ++k)
    stored[k] = args_[k]->is_column() ? row.values[args_[k]->column_index()] : args_[k]->Evaluate(row.values);
  stored[args_.size()] = ::cq::Value::Int(g);
  Row r = row;
  r.values = stored.data();
  tracker_->Push(r);
  for (size_t k = 0; k < args_.size(); ++k)
    if (!args_[k]->is_column() && args_[k]->type() == TypeId::kUtf8 && stored[k].valid) ReleaseString(stored[k].s);
}

void Aggregate::Rows::Apply(const ::cq::Value* stored, int64_t sign) {
  const uint32_t g = static_cast<uint32_t>(stored[args_.size()].i);
  Group& gr = groups_[g];
  if (!gr.touched) {
    gr.touched = true;
    touched_.push_back(g);
  }
  gr.rows += sign;
  Acc* acc = accs_.data() + g * na_;
  for (size_t a = 0; a < na_; ++a) {
    const RowAgg& agg = aggs_[a];
    const ::cq::Value* v = agg.arg >= 0 ? &stored[agg.arg] : nullptr;
    switch (agg.op) {
      case Op::kRows: acc[a].count += sign; break;
      case Op::kNothing: break;
      case Op::kCountValid:
        if (v->valid) acc[a].count += sign;
        break;
      case Op::kInt:
        if (v->valid) aggfn::AddInt(acc[a], v->i, sign);
        break;
      case Op::kDouble:
        if (v->valid) aggfn::AddDouble(acc[a], v->d, sign);
        break;
      case Op::kMultiset: {
        if (!v->valid) break;
        aggfn::Arg x;
        x.i = v->i;
        x.d = v->d;
        if (agg.arg_type == TypeId::kUtf8) x.s = v->s->view();
        aggfn::ApplyMultiset(sets_[g * sets_per_group_ + agg.set], acc[a], agg.arg_type, x, sign, agg.distinct);
        break;
      }
    }
  }
}

void Aggregate::Rows::EmitResult(uint32_t g, const Value* v, const std::string* s, Time sync, Time other,
                                 HolderId holder, RowEmitter& out) {
  const size_t nk = keys_.size();
  ValueBuffer row(nk + na_);
  const ::cq::Value* keys = keys_store_.Get(g);
  for (size_t k = 0; k < nk; ++k) row[k] = keys[k];
  for (size_t a = 0; a < na_; ++a) {
    ::cq::Value& x = row[nk + a];
    x.valid = v[a].valid;
    if (aggs_[a].type == TypeId::kUtf8) x.s = v[a].valid ? NewString(s[a]) : nullptr;
    else x.i = static_cast<int64_t>(v[a].bits);
  }
  Row r;
  r.values = row.data();
  r.sync = sync;
  r.other = other;
  r.holder = holder;
  out.Emit(r);
  for (size_t a = 0; a < na_; ++a)
    if (aggs_[a].type == TypeId::kUtf8 && row[nk + a].valid) ReleaseString(row[nk + a].s);
}

void Aggregate::Rows::EndInstant(Time t, RowEmitter& out) {
  // The list is taken out: an emission may come back into this aggregate through a loop.
  std::vector<uint32_t> touched;
  touched.swap(touched_);
  for (uint32_t g : touched) {
    Group& gr = groups_[g];
    gr.touched = false;
    bool same = gr.open && gr.rows != 0;
    if (gr.rows != 0) {
      for (size_t a = 0; a < na_; ++a) {
        const RowAgg& agg = aggs_[a];
        const Acc& acc = accs_[g * na_ + a];
        now_[a] = agg.fn == Fn::kMin || agg.fn == Fn::kMax
                      ? aggfn::Extreme(agg.fn == Fn::kMin, agg.arg_type, sets_[g * sets_per_group_ + agg.set], &now_str_[a])
                      : aggfn::Compute(agg.fn, agg.type, agg.arg_type, acc);
        if (!same) continue;
        const Value& x = now_[a];
        const Value& y = current_[g * na_ + a];
        if (x.valid != y.valid) {
          same = false;
        } else if (x.valid) {
          if (agg.type == TypeId::kFloat64) {
            double p, q;
            std::memcpy(&p, &x.bits, 8);
            std::memcpy(&q, &y.bits, 8);
            same = p == q || (p != p && q != q);
          } else if (agg.type == TypeId::kUtf8) {
            same = now_str_[a] == current_str_[g * na_ + a];
          } else {
            same = x.bits == y.bits;
          }
        }
      }
    }
    if (same) continue;  // the value did not change: the result tuple lives on
    // (groups_ is indexed afresh after each emission: a row coming back through a loop may add a
    // group, and the vector move.)
    const bool open = gr.open, rows = gr.rows != 0;
    if (open) {
      // The old result ends at t.
      Group& old = groups_[g];
      old.open = false;
      if (negative_) {
        EmitResult(g, current_.data() + g * na_, current_str_.data() + g * na_, t, old.started, kNoHolder, out);
      } else {
        const HolderId h = old.holder;
        old.holder = kNoHolder;
        out.EmitEnd(h, t);
        holders_->ReleaseOne(h);
      }
    }
    if (!rows) continue;
    HolderId h = kNoHolder;
    if (!negative_) h = holders_->AllocateOne();
    Group& now = groups_[g];
    now.open = true;
    now.started = t;
    now.holder = h;
    for (size_t a = 0; a < na_; ++a) {
      current_[g * na_ + a] = now_[a];
      if (aggs_[a].type == TypeId::kUtf8) current_str_[g * na_ + a] = now_str_[a];
    }
    EmitResult(g, current_.data() + g * na_, current_str_.data() + g * na_, t, Time::Infinity(), h, out);
  }
  touched.clear();
  if (touched_.empty()) touched_.swap(touched);  // keep the capacity
}

void Aggregate::Rows::AdvanceTo(Time progress, RowEmitter& out) {
  if (depth_ == 0) tracker_->Collect();
  ++depth_;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth_};
  tracker_->AdvanceTo(progress, [&](Time t, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
    // Starts first: under the negative method a ghost's positive and negative are both at t, and
    // a multiset must see the copy come before it goes.
    for (uint32_t s : starts) Apply(tracker_->values(s), +1);
    for (uint32_t s : ends) Apply(tracker_->values(s), -1);
    EndInstant(t, out);
  });
  if (progress.IsInfinite() && !negative_) {
    // Close: the current results never end.
    for (Group& gr : groups_) {
      if (!gr.open) continue;
      gr.open = false;
      const HolderId h = gr.holder;
      gr.holder = kNoHolder;
      out.EmitEnd(h, Time::Infinity());
      holders_->ReleaseOne(h);
    }
  }
}

std::unique_ptr<RowOperator> Aggregate::ToRows() { return std::make_unique<Rows>(*this); }

// ---- snapshots -------------------------------------------------------------------------------

void Aggregate::Rows::Snapshot(SnapshotWriter& w) const {
  CQ_CHECK(touched_.empty(), "an aggregate snapshot inside an instant");
  keys_store_.Snapshot(w, key_schema_);
  w.PodVec(groups_);
  w.PodVec(accs_);
  w.PodVec(current_);
  for (const std::string& s : current_str_) w.Str(s);
  aggfn::SnapshotSets(w, sets_);
  tracker_->Snapshot(w);
}

void Aggregate::Rows::Restore(SnapshotReader& r) {
  keys_store_.Restore(r, *key_schema_);
  r.PodVec(groups_);
  const size_t n = groups_.size();
  bool ok = keys_store_.size() == n;
  for (uint32_t g = 0; g < n; ++g) ok &= keys_store_.live(g);
  CQ_SNAPSHOT_CHECK(ok, "an aggregate's groups are inconsistent");
  r.PodVec(accs_);
  r.PodVec(current_);
  ok = accs_.size() == n * na_ && current_.size() == n * na_;
  CQ_SNAPSHOT_CHECK(ok, "an aggregate's groups are inconsistent");
  current_str_.resize(n * na_);
  for (std::string& s : current_str_) s = r.Str();
  sets_.assign(n * sets_per_group_, Multiset{});
  aggfn::RestoreSets(r, sets_);
  bool flags = true;
  for (const aggfn::Acc& a : accs_) flags &= aggfn::Restorable(a);
  for (const Group& g : groups_)
    flags &= ValidBool(g.open) && ValidBool(g.touched) && !g.touched && g.rows >= 0 &&
             SnapshotReader::ValidTime(g.started) && (g.holder == kNoHolder || r.ValidHolder(g.holder));
  for (const Value& v : current_) flags &= ValidBool(v.valid);
  CQ_SNAPSHOT_CHECK(flags, "an aggregate's groups or accumulators are out of range");
  by_hash_.clear();
  direct_.clear();
  for (uint32_t g = 0; g < n; ++g) by_hash_.Insert(keys_store_.layout().Hash(keys_store_.Get(g)), g);
  touched_.clear();
  tracker_->Restore(r);
  // The tracked rows carry their group id last: it indexes the groups.
  ok = true;
  tracker_->ForEachKept([&](const ::cq::Value* v) {
    ok &= v[args_.size()].valid && v[args_.size()].i >= 0 && static_cast<uint64_t>(v[args_.size()].i) < n;
  });
  CQ_SNAPSHOT_CHECK(ok, "an aggregate's tracked rows name groups it does not have");
}

}  // namespace cq
