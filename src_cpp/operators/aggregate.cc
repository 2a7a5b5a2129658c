#include "operators/aggregate.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/batch_rows.h"

namespace cq {

namespace {

// "k0", "a1", ...: an output column's name when the plan gives none.
std::string DefaultName(char prefix, size_t i) {
  std::string name(1, prefix);
  name += std::to_string(i);
  return name;
}

double BitsDouble(uint64_t b) {
  double x;
  std::memcpy(&x, &b, 8);
  return x;
}

}  // namespace

Aggregate::Aggregate(std::vector<std::unique_ptr<Expression>> keys, std::vector<Spec> aggs, Schema output, Input input,
                     ExpirationPolicy policy, HolderTable* holders, Emits emits, int64_t rows_per_group, bool negative)
    : keys_(std::move(keys)), output_(std::move(output)), input_(input), emits_(emits),
      negative_(negative || input == Input::kNegative), holders_(holders), index_([&] {
        std::vector<TypeId> types;
        for (const auto& k : keys_) types.push_back(k->type());
        return types;
      }()) {
  shared_output_ = std::make_shared<const Schema>(output_);
  Schema derived;
  int args = 0;
  for (Spec& s : aggs) {
    Agg a;
    a.fn = s.fn == "count_star" ? Fn::kCountStar
           : s.fn == "count"    ? Fn::kCount
           : s.fn == "sum"      ? Fn::kSum
           : s.fn == "avg"      ? Fn::kAvg
           : s.fn == "min"      ? Fn::kMin
                                : Fn::kMax;
    CQ_CHECK(a.fn != Fn::kMax || s.fn == "max", "unknown aggregate function '" + s.fn + "'");
    a.distinct = s.distinct;
    a.type = s.type;
    a.arg_type = s.arg ? s.arg->type() : TypeId::kNull;
    if (a.fn == Fn::kCountStar) {
      a.op = Op::kRows;
    } else if (a.arg_type == TypeId::kNull) {
      a.op = Op::kNothing;  // an untyped NULL: nothing to count or add
    } else if (a.distinct || a.fn == Fn::kMin || a.fn == Fn::kMax) {
      a.op = Op::kMultiset;
      a.set = static_cast<int>(sets_per_group_++);
    } else if (a.fn == Fn::kCount) {
      a.op = Op::kCountValid;
    } else {
      a.op = a.arg_type == TypeId::kInt64 ? Op::kInt : Op::kDouble;
    }
    if (s.arg) {
      a.arg = args++;
      derived.push_back({"arg", a.arg_type});
    }
    a.expr = std::move(s.arg);
    has_strings_ |= a.type == TypeId::kUtf8;
    out_values_.emplace_back(a.type);
    aggs_.push_back(std::move(a));
  }
  derived.push_back({"group", TypeId::kInt64});
  derived_schema_ = std::make_shared<const Schema>(std::move(derived));
  na_ = aggs_.size();
  now_.resize(na_);
  now_str_.resize(na_);
  instants_.emplace(*derived_schema_, input_ == Input::kNegative, policy, /*track_alive=*/false, /*starts_only=*/false);
  nargs_ = static_cast<size_t>(args);
  rows_ = rows_per_group;
  CQ_CHECK((input_ == Input::kRows) == (rows_ > 0), "an aggregate over its groups' last rows needs their number");
  for (const Agg& a : aggs_)
    CQ_CHECK(input_ != Input::kRows || a.arg_type != TypeId::kUtf8,
             "an aggregate over its groups' last rows keeps 8-byte arguments only");
}

Aggregate::~Aggregate() {
  // The holder ids of its results still open go back to the table: whoever reads them goes too
  // (a query dropped with its consumers, a redo area reset and rebuilt, paper 002 §3.4).
  if (holders_ == nullptr) return;
  for (const Group& g : groups_)
    if (g.open && g.holder != kNoHolder) holders_->Release(&g.holder, 1);
}

std::string Aggregate::Explain() const {
  std::string s = "Aggregate";
  switch (input_) {
    case Input::kConstant: s += " (constant-duration input: FIFO)"; break;
    case Input::kNegative: s += " (negative tuples)"; break;
    case Input::kGeneral: break;
    case Input::kRows: s += " (each group's last " + std::to_string(rows_) + " rows: a ring per group)"; break;
  }
  if (emits_ == Emits::kInserted) s += " fused with ISTREAM";
  if (emits_ == Emits::kDeleted) s += " fused with DSTREAM";
  return s;
}

void Aggregate::Grow(uint32_t groups) {
  if (groups <= groups_.size()) return;
  const size_t na = na_;
  groups_.resize(groups);
  touched_.resize(groups);  // a group is in it once at most
  accs_.resize(groups * na);
  sets_.resize(groups * sets_per_group_);
  current_.resize(groups * na);
  if (has_strings_) current_str_.resize(groups * na);
  if (input_ == Input::kRows) rings_.resize(groups);
}

void Aggregate::Push(int, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  EnterBatch();
  Batch storage;  // only when `in` has a selection to apply
  const Batch& b = in.CompactInto(storage);
  const int64_t n = b.length;
  Columns keys, args;
  for (const auto& k : keys_) keys.push_back(k->Evaluate(b));
  for (const Agg& a : aggs_)
    if (a.expr) args.push_back(a.expr->Evaluate(b));
  Buffer groups = Buffer::Allocate(n * 4);
  index_.Map(keys, n, groups.as<uint32_t>());
  Grow(index_.size());

  if (UsesInstants()) {
    // The tracker keeps what the groups need of each row: its arguments and group, with its
    // lifetime.
    Batch d;
    d.kind = BatchKind::kLifetime;
    d.schema = derived_schema_;
    d.length = n;
    d.columns = std::move(args);
    Column g;
    g.type = TypeId::kInt64;
    g.length = n;
    g.values = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) g.values.as<int64_t>()[i] = groups.as<const uint32_t>()[i];
    d.columns.push_back(std::move(g));
    d.sync = b.sync;
    d.other = b.other;
    d.constant_duration = b.constant_duration;
    d.holders = b.holders;
    instants_->batch().Push(d);
    return;
  }
  if (input_ == Input::kConstant) {
    CQ_CHECK(b.constant_duration && b.holders.empty() && (!duration_ || *duration_ == *b.constant_duration),
             "the aggregate's input was planned with lifetimes of one duration");
    duration_ = b.constant_duration;
    if (duration_->IsZero()) return;  // ghosts ⟨v, t, t⟩ are never in R(t)
  }
  Chunk c;
  c.sync = b.sync;
  c.args = std::move(args);
  for (const Column& a : c.args) c.views.push_back(ArgView::Of(a));
  c.groups = std::move(groups);
  c.length = n;
  c.base = retained_;
  retained_ += n;
  if (input_ == Input::kNegative) {
    // A positive tuple's end is open; a negative tuple's `other` holds the start it ends.
    c.signs = Buffer::Allocate(n);
    int8_t* s = c.signs.as<int8_t>();
    for (int64_t i = 0; i < n; ++i) s[i] = b.EndAt(i).IsInfinite() ? 1 : -1;
  }
  // Rows come in time order per port (operator.h; a UNION ALL merges its inputs to keep it).
  CQ_CHECK(!(b.sync.At(0) < max_sync_), "an aggregate's input went back in time");
  max_sync_ = b.sync.At(n - 1);
  stepped_chunks_ += c.sync.has_steps();
  chunks_.push_back(std::move(c));
}

void Aggregate::PushEnds(int, const EndBatch& ends, Emitter&) {
  EnterBatch();
  if (UsesInstants()) instants_->batch().PushEnds(ends);
}

void Aggregate::EnterBatch() {
  if (!instants_->in_rows() && !general_) return;  // (the common case: one test)
  InstantTracker& t = instants_->batch();          // (rows the row form kept move into batches)
  general_ = input_ != Input::kGeneral && t.retained_rows() > 0;
}

void Aggregate::ChunksToRows() {
  // The rows between the cursors have started and wait for their ends (kConstant: d after their
  // starts, in order); those from the next start on wait for their instants.
  RowTracker& t = instants_->rows();
  const Duration d = duration_.value_or(Duration::Infinite());
  ValueBuffer values(nargs_ + 1);
  auto each = [&](Cursor& c, const Cursor* stop, auto&& f) {
    Load(c);
    while (Valid(c) && (!stop || c.Before(*stop))) {
      for (size_t k = 0; k < nargs_; ++k) values[k] = ColumnReader{&c.args[k]}.At(c.row);
      values[nargs_] = Value::Int(c.groups[c.row]);
      Row r;
      r.values = values.data();
      r.sync = c.At();
      f(r, c.signs ? c.signs[c.row] : 1);
      for (size_t k = 0; k < nargs_; ++k)
        if (c.args[k].type == TypeId::kUtf8 && values[k].valid) ReleaseString(values[k].s);
      Step(c);
    }
  };
  if (input_ == Input::kConstant) {
    Cursor e = next_end_, s = next_start_;
    Load(s);
    each(e, &s, [&](Row& r, int) {
      r.other = r.sync + d;
      t.Adopt(r);
    });
  }
  Cursor s = next_start_;
  each(s, nullptr, [&](Row& r, int sign) {
    r.other = input_ == Input::kConstant ? r.sync + d : sign > 0 ? Time::Infinity() : r.sync;
    t.Push(r);
  });
  chunks_.clear();
  stepped_chunks_ = 0;
  next_start_ = Cursor{};
  next_end_ = Cursor{};
  Load(next_start_);
  Load(next_end_);
}

// ---- accumulators ----------------------------------------------------------------------------
// The helpers that run once per row or per result are forced inline: GCC's heuristics leave them
// out of line in the instant loop, and the calls cost a tenth of the grouped-AVG benchmark.

template <size_t kNa, typename Args, int kOp>
[[gnu::always_inline]] inline void Aggregate::ApplyRow(const Args& args, uint32_t g, int64_t sign) {
  const size_t na = kNa ? kNa : na_;
  Group& gr = groups_[g];
  if (!gr.touched) {
    gr.touched = true;
    touched_[touched_count_++] = g;
  }
  gr.rows += sign;
  Acc* acc = accs_.data() + g * na;
  for (size_t a = 0; a < na; ++a) {
    const Agg& agg = aggs_[a];
    switch (kOp == kAnyOp ? agg.op : static_cast<Op>(kOp)) {
      case Op::kRows: acc[a].count += sign; break;
      case Op::kNothing: break;
      case Op::kCountValid:
        if (args.Valid(agg.arg)) acc[a].count += sign;
        break;
      case Op::kInt:
        if (args.Valid(agg.arg)) aggfn::AddInt(acc[a], args.I64(agg.arg), sign);
        break;
      case Op::kDouble:
        if (args.Valid(agg.arg)) aggfn::AddDouble(acc[a], args.F64(agg.arg), sign);
        break;
      case Op::kMultiset:
        if (args.Present(agg.arg)) ApplyMultiset(a, args.Multiset(agg.arg, agg.arg_type), g, sign);
        break;
    }
  }
}

aggfn::Arg Aggregate::ColumnArgs::Multiset(int a, TypeId type) const {
  const Column& c = columns[a];
  aggfn::Arg v;
  switch (type) {
    case TypeId::kInt64: v.i = c.i64()[row]; break;
    case TypeId::kBool: v.i = c.BoolAt(row); break;
    case TypeId::kFloat64: v.d = c.f64()[row]; break;
    case TypeId::kUtf8: v.s = c.StrAt(row); break;
    case TypeId::kNull: break;
  }
  return v;
}

aggfn::Arg Aggregate::RingArgs::Multiset(int a, TypeId type) const {
  aggfn::Arg v;
  if (type == TypeId::kFloat64) v.d = std::bit_cast<double>(values[a]);
  else v.i = values[a];
  return v;
}

aggfn::Arg Aggregate::ValueArgs::Multiset(int a, TypeId type) const {
  const Value& x = values[a];
  aggfn::Arg v;
  if (type == TypeId::kUtf8) v.s = x.s->view();
  else if (type == TypeId::kFloat64) v.d = x.d;
  else v.i = x.i;
  return v;
}

void Aggregate::ApplyMultiset(size_t a, const aggfn::Arg& v, uint32_t g, int64_t sign) {
  const Agg& agg = aggs_[a];
  aggfn::ApplyMultiset(sets_[g * sets_per_group_ + agg.set], accs_[g * na_ + a], agg.arg_type, v, sign, agg.distinct);
}

template <size_t kNa>
[[gnu::always_inline]] inline Aggregate::Result Aggregate::Compute(uint32_t g, size_t a, std::string* s) const {
  const size_t na = kNa ? kNa : na_;
  const Agg& agg = aggs_[a];
  const Acc& acc = accs_[g * na + a];
  if (agg.fn != Fn::kMin && agg.fn != Fn::kMax) return aggfn::Compute(agg.fn, agg.type, agg.arg_type, acc);
  return aggfn::Extreme(agg.fn == Fn::kMin, agg.arg_type, sets_[g * sets_per_group_ + agg.set], s);
}

// ---- results ---------------------------------------------------------------------------------
// (With RowOut a result goes out at once, and a loop may bring a row back into the aggregate while
// it does: a push may add groups, so nothing here holds a reference into the per-group vectors
// across Open or Close.)

template <size_t kNa, typename Out>
[[gnu::always_inline]] inline void Aggregate::EndInstant(Time t, Out& out) {
  const size_t na = kNa ? kNa : na_;
  for (size_t k = 0; k < touched_count_; ++k) {
    const uint32_t g = touched_[k];
    Group& gr = groups_[g];
    gr.touched = false;
    if (gr.rows == 0) {
      if (gr.open) Close<kNa>(g, t, out);
      continue;
    }
    bool same = gr.open;
    const Result* cur = current_.data() + g * na;
    for (size_t a = 0; a < na; ++a) {
      now_[a] = Compute<kNa>(g, a, &now_str_[a]);
      if (!same) continue;
      const Result& x = now_[a];
      const Result& y = cur[a];
      if (x.valid != y.valid) {
        same = false;
      } else if (x.valid) {
        switch (aggs_[a].type) {
          case TypeId::kFloat64: {
            const double p = BitsDouble(x.bits), q = BitsDouble(y.bits);
            same = p == q || (p != p && q != q);
            break;
          }
          case TypeId::kUtf8: same = now_str_[a] == current_str_[g * na + a]; break;
          default: same = x.bits == y.bits;
        }
      }
    }
    if (same) continue;  // the value did not change: the result tuple lives on
    if (gr.open) Close<kNa>(g, t, out);
    Open<kNa>(g, t, out);
  }
  touched_count_ = 0;
}

template <size_t kNa, typename Out>
[[gnu::always_inline]] inline void Aggregate::Open(uint32_t g, Time t, Out& out) {
  const size_t na = kNa ? kNa : na_;
  Group& gr = groups_[g];
  gr.open = true;
  gr.started = t;
  Result* cur = current_.data() + g * na;
  for (size_t a = 0; a < na; ++a) cur[a] = now_[a];  // (a loop: std::copy calls memmove)
  if (has_strings_)
    for (size_t a = 0; a < na; ++a) current_str_[g * na + a] = now_str_[a];
  if constexpr (std::is_same_v<Out, BatchOut>) {
    if (emits_ != Emits::kRelation) {
      // (Nothing at ∞: tuples that end there never end, and an instant there is none.)
      if (emits_ == Emits::kInserted && !t.IsInfinite()) AppendRow<kNa, false>(g, t, t, now_.data(), now_str_.data());
      return;
    }
    if (!negative_) {
      gr.out_row = out_group_.size();
      if (!gr.listed) {
        gr.listed = true;
        opened_.push_back(g);
      }
    }
    AppendRow<kNa>(g, t, Time::Infinity(), now_.data(), now_str_.data());
  } else {
    out.Opened(g, t);
  }
}

template <size_t kNa, typename Out>
[[gnu::always_inline]] inline void Aggregate::Close(uint32_t g, Time t, Out& out) {
  Group& gr = groups_[g];
  gr.open = false;
  if constexpr (std::is_same_v<Out, BatchOut>) {
    if (emits_ != Emits::kRelation) {
      if (emits_ == Emits::kDeleted && !t.IsInfinite()) {
        const size_t na = kNa ? kNa : na_;
        AppendRow<kNa, false>(g, t, t, current_.data() + g * na,
                              has_strings_ ? current_str_.data() + g * na : now_str_.data());
      }
      return;
    }
    if (negative_) {
      const size_t na = kNa ? kNa : na_;
      AppendRow<kNa>(g, t, gr.started, current_.data() + g * na,
                     has_strings_ ? current_str_.data() + g * na : now_str_.data());
    } else if (gr.out_row >= 0) {
      // Started in this call: it goes out with its end, without a holder.
      out_end_.Set(gr.out_row, t);
      gr.out_row = -1;
    } else {
      fixed_ids_.push_back(gr.holder);
      fixed_at_.push_back(t);
      gr.holder = kNoHolder;
    }
  } else {
    out.Closed(g, t);
  }
}

template <size_t kNa, bool kEnd>
[[gnu::always_inline]] inline void Aggregate::AppendRow(uint32_t g, Time sync, Time other, const Result* values,
                                                        const std::string* strs) {
  const size_t na = kNa ? kNa : na_;
  out_group_.Append(g);
  out_start_.Append(sync);
  if constexpr (kEnd) out_end_.Append(other);
  for (size_t a = 0; a < na; ++a) {
    if (aggs_[a].type == TypeId::kUtf8) out_values_[a].AppendString(strs[a], values[a].valid);
    else out_values_[a].AppendBits(values[a].bits, values[a].valid);
  }
}

// ---- instants --------------------------------------------------------------------------------

void Aggregate::Load(Cursor& c) const {
  while (c.chunk < chunks_.size() && c.row >= chunks_[c.chunk].length) {
    ++c.chunk;
    c.row = 0;
  }
  if (c.chunk == chunks_.size()) {
    c.base = retained_;
    return;
  }
  const Chunk& ch = chunks_[c.chunk];
  c.base = ch.base;
  c.length = ch.length;
  c.ticks = ch.sync.tick_data();
  c.steps = ch.sync.has_steps() ? ch.sync.step_data() : nullptr;
  c.groups = ch.groups.as<const uint32_t>();
  c.signs = ch.signs.as<const int8_t>();
  c.args = ch.args.data();
  c.views = ch.views.data();
}

template <typename Out>
void Aggregate::RunOrdered(Time progress, Out& out) {
  const bool steps = (duration_ && duration_->steps != 0) || stepped_chunks_ > 0;
  // One aggregate of the commonest kinds (COUNT(*), an integer or double SUM / AVG) gets a loop of
  // its own, with its Op fixed at compile time.
  const Op op = na_ == 1 ? aggs_[0].op : Op::kMultiset;
  constexpr int kRows = static_cast<int>(Op::kRows), kInt = static_cast<int>(Op::kInt),
                kDouble = static_cast<int>(Op::kDouble);
  if (input_ == Input::kRows) {
    if (steps) RunRows<Time, 0, kAnyOp>(progress, out);
    else if (op == Op::kInt) RunRows<int64_t, 1, kInt>(progress, out);
    else if (op == Op::kDouble) RunRows<int64_t, 1, kDouble>(progress, out);
    else if (na_ == 1) RunRows<int64_t, 1, kAnyOp>(progress, out);
    else RunRows<int64_t, 0, kAnyOp>(progress, out);
  } else if (steps) {
    RunInstants<Time, 0, kAnyOp>(progress, out);
  } else if (op == Op::kRows) {
    RunInstants<int64_t, 1, kRows>(progress, out);
  } else if (op == Op::kInt) {
    RunInstants<int64_t, 1, kInt>(progress, out);
  } else if (op == Op::kDouble) {
    RunInstants<int64_t, 1, kDouble>(progress, out);
  } else if (na_ == 1) {
    RunInstants<int64_t, 1, kAnyOp>(progress, out);
  } else {
    RunInstants<int64_t, 0, kAnyOp>(progress, out);
  }
  // Chunks both cursors have left behind are done.
  const size_t done = std::min(next_start_.chunk, next_end_.chunk);
  if (done > 0) {
    for (size_t k = 0; k < done; ++k) stepped_chunks_ -= chunks_[k].sync.has_steps();
    chunks_.erase(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(done));
    next_start_.chunk -= done;
    next_end_.chunk -= done;
  }
}

template <typename T, size_t kNa, int kOp, typename Out>
void Aggregate::RunInstants(Time progress, Out& out) {
  // T is Time, or int64_t ticks when no time in play has an ε-step: one compare instead of two
  // on every row.
  constexpr bool kTicks = std::is_same_v<T, int64_t>;
  const bool ends = input_ == Input::kConstant;
  const Duration d = duration_.value_or(Duration::Infinite());
  auto at = [](const Cursor& c) -> T {
    if constexpr (kTicks) return c.ticks[c.row];
    else return c.At();
  };
  auto end_of = [&](T start) -> T {  // start + d, saturating at infinity
    if constexpr (kTicks) {
      int64_t r;
      return d.infinite || __builtin_add_overflow(start, d.ticks, &r) ? Time::kInfTick : r;
    } else {
      return start + d;
    }
  };
  T inf, limit;  // instants below `limit` are complete
  if constexpr (kTicks) {
    inf = Time::kInfTick;
    limit = progress.step > 0 ? progress.tick + 1 : progress.tick;
  } else {
    inf = Time::Infinity();
    limit = progress;
  }
  // The cursors are copied in and out, so that the compiler keeps them in registers while the
  // accumulators are written. (Nothing pushed while results go out — rows a loop brings back to
  // the row form — reaches the chunks.)
  Cursor s = next_start_, e = next_end_;
  Load(s);
  Load(e);
  for (;;) {
    const T ts = Valid(s) ? at(s) : inf;
    T te = inf;
    if (ends && e.Before(s)) {
      te = end_of(at(e));
      if (te == inf) e = s;  // ends are in start order: none of these rows ends
    }
    const T t = std::min(ts, te);
    if (!(t < limit)) break;
    if (te == t) {
      do {
        ApplyRow<kNa, ColumnArgs, kOp>(ColumnArgs{e.views, e.args, e.row}, e.groups[e.row], -1);
        Step(e);
      } while (e.Before(s) && end_of(at(e)) == t);
    }
    if (ts == t) {
      do {
        ApplyRow<kNa, ColumnArgs, kOp>(ColumnArgs{s.views, s.args, s.row}, s.groups[s.row],
                                       s.signs ? s.signs[s.row] : 1);
        Step(s);
      } while (Valid(s) && at(s) == t);
    }
    Time instant;
    if constexpr (kTicks) instant = Time{t, 0};
    else instant = t;
    EndInstant<kNa>(instant, out);
  }
  if (!ends) e = s;
  next_start_ = s;
  next_end_ = e;
}

void Aggregate::GrowRing(Ring& r) const {
  // Only while not full, so the ring's slots run from head to the end and on from 0: laid out
  // again from 0 in order, with room for twice as many (at most rows_).
  const uint64_t cap = r.values.size() / nargs_;
  const uint64_t bigger = std::min<uint64_t>(static_cast<uint64_t>(rows_), std::max<uint64_t>(4, 2 * cap));
  std::vector<int64_t> values(bigger * nargs_);
  std::vector<uint8_t> valid(bigger * nargs_);
  for (uint64_t k = 0; k < r.size; ++k) {
    const uint64_t from = (r.head + k) % cap;
    std::copy_n(r.values.data() + from * nargs_, nargs_, values.data() + k * nargs_);
    std::copy_n(r.valid.data() + from * nargs_, nargs_, valid.data() + k * nargs_);
  }
  r.values = std::move(values);
  r.valid = std::move(valid);
  r.head = 0;
}

template <typename T, size_t kNa, int kOp, typename Out>
void Aggregate::RunRows(Time progress, Out& out) {
  constexpr bool kTicks = std::is_same_v<T, int64_t>;
  auto at = [](const Cursor& c) -> T {
    if constexpr (kTicks) return c.ticks[c.row];
    else return c.At();
  };
  T limit;  // instants below it are complete
  if constexpr (kTicks) limit = progress.step > 0 ? progress.tick + 1 : progress.tick;
  else limit = progress;
  const size_t nargs = nargs_;
  const uint64_t n = static_cast<uint64_t>(rows_);
  Cursor s = next_start_;
  Load(s);
  while (Valid(s) && at(s) < limit) {
    const T t = at(s);
    do {
      // The group's newest row takes the slot after its last; a full ring's oldest leaves first
      // (at t, where the row arriving ends it: [Rows N] holds the last N).
      const uint32_t g = s.groups[s.row];
      Ring& r = rings_[g];
      uint64_t slot;
      if (r.size == n) {
        slot = r.head;
        ApplyRow<kNa, RingArgs, kOp>(RingArgs{r.values.data() + slot * nargs, r.valid.data() + slot * nargs}, g, -1);
        r.head = r.head + 1 == n ? 0 : r.head + 1;
      } else {
        if (nargs && r.size * nargs == r.values.size()) GrowRing(r);
        const uint64_t cap = nargs ? r.values.size() / nargs : n;
        slot = r.head + r.size < cap ? r.head + r.size : r.head + r.size - cap;
        ++r.size;
      }
      for (size_t a = 0; a < nargs; ++a) {
        const bool valid = s.views[a].IsValid(s.row);
        int64_t v = 0;
        if (valid)
          v = s.args[a].type == TypeId::kBool ? s.args[a].BoolAt(s.row) : s.views[a].I64(s.row);  // (a double's bits)
        r.valid[slot * nargs + a] = valid;
        r.values[slot * nargs + a] = v;
      }
      ApplyRow<kNa, ColumnArgs, kOp>(ColumnArgs{s.views, s.args, s.row}, g, +1);
      Step(s);
    } while (Valid(s) && at(s) == t);
    Time instant;
    if constexpr (kTicks) instant = Time{t, 0};
    else instant = t;
    EndInstant<kNa>(instant, out);
  }
  next_start_ = next_end_ = s;
}

template <size_t kNa, typename Out>
void Aggregate::RunChanges(const InstantTracker& tracker, Out& out) {
  // Instant by instant, as the tracker's visitor would have it. Starts and ends come from
  // different batches (ends from older ones), so each side keeps the columns of the batch it last
  // read.
  struct Side {
    uint32_t seq = 0xFFFFFFFFu;
    std::vector<ArgView> views;
    const Column* args = nullptr;
    const int64_t* groups = nullptr;
  };
  Side sides[2];
  for (Side& s : sides) s.views.resize(nargs_);
  // Inlined at each of its three calls: a call per row (GCC's choice otherwise) cost a tenth.
  auto apply = [&](Side& s, InstantTracker::RowRef r, int64_t sign) __attribute__((always_inline)) {
    if (r.seq != s.seq) {
      s.seq = r.seq;
      const Batch& b = tracker.batch(r.seq);
      for (size_t k = 0; k < s.views.size(); ++k) s.views[k] = ArgView::Of(b.columns[k]);
      s.args = b.columns.data();
      s.groups = b.columns.back().i64();
    }
    ApplyRow<kNa>(ColumnArgs{s.views.data(), s.args, r.row}, static_cast<uint32_t>(s.groups[r.row]), sign);
  };
  // Under the negative method a ghost's positive and negative are both at t, and an accumulator
  // must see it come before it goes: starts first. Under the direct method ghosts never come.
  const bool starts_first = input_ == Input::kNegative;
  const InstantTracker::Changes& c = changes_;
  const size_t ns = c.starts.size(), ne = c.ends.size();
  size_t i = 0, j = 0;
  while (i < ns || j < ne) {
    Time t = Time::Infinity();
    if (i < ns) t = c.start_at[i];
    if (j < ne) t = std::min(t, c.end_at[j]);
    if (starts_first)
      for (; i < ns && c.start_at[i] == t; ++i) apply(sides[1], c.starts[i], +1);
    for (; j < ne && c.end_at[j] == t; ++j) apply(sides[0], c.ends[j], -1);
    for (; i < ns && c.start_at[i] == t; ++i) apply(sides[1], c.starts[i], +1);
    EndInstant<kNa>(t, out);
  }
}

template <typename Out>
void Aggregate::AdvanceBatchInput(Time progress, Out& out) {
  if (UsesInstants()) {
    const InstantTracker& t = instants_->batch();
    instants_->batch().Collect(progress, changes_);
    if (na_ == 1) RunChanges<1>(t, out);
    else RunChanges<0>(t, out);
  } else {
    RunOrdered(progress, out);
  }
}

template <size_t kNa, typename Out>
void Aggregate::AdvanceRowInput(Time progress, Out& out) {
  RowTracker& in = instants_->rows();
  const size_t group = nargs_;  // a kept row: its arguments, then its group id
  in.AdvanceTo(progress, [&](Time t, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
    // Starts first: under the negative method a ghost's positive and negative are both at t, and
    // an accumulator must see it come before it goes.
    for (uint32_t s : starts) {
      const Value* v = in.values(s);
      ApplyRow<kNa>(ValueArgs{v}, static_cast<uint32_t>(v[group].i), +1);
    }
    for (uint32_t s : ends) {
      const Value* v = in.values(s);
      ApplyRow<kNa>(ValueArgs{v}, static_cast<uint32_t>(v[group].i), -1);
    }
    EndInstant<kNa>(t, out);
  });
}

template <typename Out>
void Aggregate::Advance(Time progress, Out& out) {
  if constexpr (std::is_same_v<Out, RowOut>) {
    if (na_ == 1) AdvanceRowInput<1>(progress, out);
    else AdvanceRowInput<0>(progress, out);
  } else {
    AdvanceBatchInput(progress, out);
  }
  if (progress.IsInfinite() && !negative_) {
    // Close: the current results never end.
    for (uint32_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].open) Close<0>(g, Time::Infinity(), out);
  }
}

// The row form's (aggregate_rows.cc).
template void Aggregate::Advance<Aggregate::RowOut>(Time, RowOut&);

Time Aggregate::BatchNextInstant() const {
  // The next start not applied yet, and for constant durations the next end.
  Time t = Time::Infinity();
  if (next_start_.chunk < chunks_.size()) t = chunks_[next_start_.chunk].sync.At(next_start_.row);
  if (input_ == Input::kConstant && duration_ && !duration_->infinite && next_end_.chunk < chunks_.size())
    t = std::min(t, chunks_[next_end_.chunk].sync.At(next_end_.row) + *duration_);
  return t;
}

Time Aggregate::NextInstant() const {
  // (One of the two holds no row: its next instant is Infinity.)
  return std::min(BatchNextInstant(), instants_->next_instant());
}

Time Aggregate::next_firing(int64_t) const { return NextInstant(); }

void Aggregate::AdvanceTo(Time progress, Emitter& out) {
  const int64_t room = out_hint_ + out_hint_ / 4;
  out_group_.Reserve(room);
  out_start_.Reserve(room);
  if (emits_ == Emits::kRelation) out_end_.Reserve(room);
  for (ValueStore& v : out_values_) v.Reserve(room);
  EnterBatch();
  BatchOut sink;
  Advance(progress, sink);

  // Ends first (they belong to rows already out), then the new rows.
  if (!fixed_ids_.empty()) {
    EndBatch eb;
    eb.length = static_cast<int64_t>(fixed_ids_.size());
    eb.holders = Buffer::Allocate(eb.length * sizeof(HolderId));
    std::memcpy(eb.holders.data, fixed_ids_.data(), fixed_ids_.size() * sizeof(HolderId));
    eb.ends = MakeTimeColumn(fixed_at_);
    out.EmitEnds(eb);
    holders_->Release(fixed_ids_.data(), eb.length);
    fixed_ids_.clear();
    fixed_at_.clear();
  }
  const int64_t n = out_group_.size();
  out_hint_ = n;
  if (n == 0) return;
  Batch o;
  o.kind = output_kind();
  o.schema = shared_output_;
  o.length = n;
  if (!negative_ && emits_ == Emits::kRelation) {
    // Results still open leave with a holder, through which their end is fixed later.
    size_t pending = 0;
    for (uint32_t g : opened_) {
      groups_[g].listed = false;
      if (groups_[g].out_row >= 0) opened_[pending++] = g;
    }
    if (pending) {
      std::vector<HolderId> ids(pending);
      holders_->Allocate(static_cast<int64_t>(pending), ids.data());
      o.holders = Buffer::Allocate(n * sizeof(HolderId));
      HolderId* h = o.holders.as<HolderId>();
      std::fill(h, h + n, kNoHolder);
      for (size_t k = 0; k < pending; ++k) {
        Group& gr = groups_[opened_[k]];
        h[gr.out_row] = gr.holder = ids[k];
        gr.out_row = -1;
      }
    }
    opened_.clear();
  }
  for (size_t k = 0; k < keys_.size(); ++k) o.columns.push_back(index_.GatherKeys(k, out_group_.data(), n));
  for (ValueStore& v : out_values_) o.columns.push_back(v.Take());
  out_group_.Finish();
  o.sync = out_start_.Finish();
  o.other = out_end_.Finish();
  if (emits_ != Emits::kRelation) o.other = {};
  out.Emit(std::move(o));
}

namespace {
std::unique_ptr<Operator> MakeAggregate(const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                        const OperatorContext& ctx, Aggregate::Emits emits) {
  const json::Value* rows = s.params.find("rows_per_group");
  const int64_t rows_per_group = rows ? rows->integer() : 0;
  CQ_CHECK(in.size() == 1 && in[0].kind == (rows ? BatchKind::kStream : BatchKind::kLifetime),
           rows ? "an aggregate over its groups' last rows reads one stream" : "an aggregate reads one relation");
  std::vector<std::unique_ptr<Expression>> keys;
  Schema output;
  for (const json::Value& k : s.params["keys"].array()) {
    keys.push_back(Expression::Compile(k, *in[0].schema));
    output.push_back({DefaultName('k', output.size()), keys.back()->type()});
  }
  std::vector<Aggregate::Spec> aggs;
  for (const json::Value& a : s.params["aggregates"].array()) {
    Aggregate::Spec spec;
    spec.fn = a["fn"].str();
    spec.distinct = a["distinct"].boolean();
    auto t = TypeFromName(a["type"].str());
    CQ_CHECK(t.has_value(), "unknown aggregate type");
    spec.type = *t;
    if (!a["arg"].is_null()) spec.arg = Expression::Compile(a["arg"], *in[0].schema);
    output.push_back({DefaultName('a', aggs.size()), spec.type});
    aggs.push_back(std::move(spec));
  }
  if (const json::Value* names = s.params.find("names"))
    for (size_t i = 0; i < output.size() && i < names->array().size(); ++i) output[i].name = names->array()[i].str();
  const Aggregate::Input input = rows                        ? Aggregate::Input::kRows
                                 : ctx.negative              ? Aggregate::Input::kNegative
                                 : PlannedConstant(s.params) ? Aggregate::Input::kConstant
                                                             : Aggregate::Input::kGeneral;
  return std::make_unique<Aggregate>(std::move(keys), std::move(aggs), std::move(output), input,
                                     PlannedPolicy(s.params), ctx.holders, emits, rows_per_group, ctx.negative);
}
}  // namespace

void RegisterAggregate(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  using E = Aggregate::Emits;
  const D relation{.name = "aggregate",
                   .description = "aggregates / GROUP BY",
                   .output = D::Output::kRelation,
                   .partition = D::Partition::kOnGroupKeys,
                   .columns = D::Columns::kGroupKeys,
                   .tracks_lifetimes = true};
  r.Register(relation, [](const OperatorSpec& s, const std::vector<OperatorInput>& in, const OperatorContext& ctx) {
    return MakeAggregate(s, in, ctx, E::kRelation);
  });
  // The fused forms (planned by cq_py/planner/fusion.py): the same operator, emitting a stream.
  D inserted = relation;
  inserted.name = "istream_aggregate";
  inserted.description = "ISTREAM of an aggregate / GROUP BY (fused)";
  inserted.output = D::Output::kStream;
  r.Register(inserted, [](const OperatorSpec& s, const std::vector<OperatorInput>& in, const OperatorContext& ctx) {
    return MakeAggregate(s, in, ctx, E::kInserted);
  });
  D deleted = inserted;
  deleted.name = "dstream_aggregate";
  deleted.description = "DSTREAM of an aggregate / GROUP BY (fused)";
  r.Register(deleted, [](const OperatorSpec& s, const std::vector<OperatorInput>& in, const OperatorContext& ctx) {
    return MakeAggregate(s, in, ctx, E::kDeleted);
  });
}

// ---- snapshots -------------------------------------------------------------------------------

// Between calls the output being built is empty (AdvanceTo hands it all out) and no group is
// touched, so the state is: the group index, each group's accumulators, multisets and open result
// (with its holder), and the instants not applied yet — the batch form's retained chunks and their
// cursors, or its tracker, and the row form's tracker when it has one. Both forms write and read
// this one state (the row form writes nothing of its own), whichever ran.
void Aggregate::Snapshot(SnapshotWriter& w) const {
  CQ_CHECK(touched_count_ == 0 && out_group_.empty() && fixed_ids_.empty() && opened_.empty(),
           "an aggregate snapshot inside an instant");
  index_.Snapshot(w);
  w.PodVec(groups_);
  w.PodVec(accs_);
  w.PodVec(current_);
  w.U64(current_str_.size());
  for (const std::string& s : current_str_) w.Str(s);
  w.U64(sets_.size());
  aggfn::SnapshotSets(w, sets_);
  w.OptDur(duration_);
  // Rows behind both cursors are never read again: the first chunk is written from the earlier
  // cursor on (a chunk is a whole input batch, kept until both cursors leave it).
  const Cursor& first = next_end_.Before(next_start_) ? next_end_ : next_start_;
  const int64_t skip = chunks_.empty() || first.chunk != 0 ? 0 : std::min<int64_t>(first.row, chunks_[0].length);
  w.U64(chunks_.size());
  for (size_t k = 0; k < chunks_.size(); ++k) {
    const Chunk& c = chunks_[k];
    const int64_t from = k == 0 ? skip : 0, n = c.length - from;
    w.TimeCol(from ? SliceTime(c.sync, from, n) : c.sync);
    w.U64(c.args.size());
    for (const Column& a : c.args) w.Col(from ? SliceColumn(a, from, n) : a);
    w.Buf(from ? Buffer::Slice(c.groups, from * 4, n * 4) : c.groups);
    w.Buf(from && !c.signs.empty() ? Buffer::Slice(c.signs, from, n) : c.signs);
    w.I64(n);
    w.I64(c.base + from);
  }
  for (const Cursor* c : {&next_start_, &next_end_}) {
    w.U64(c->chunk);
    w.I64(c->chunk == 0 ? c->row - skip : c->row);
  }
  w.Pod(max_sync_);
  w.I64(retained_);
  instants_->Snapshot(w);
  w.I64(out_hint_);
  if (input_ == Input::kRows) {
    // Each ring's rows, oldest first (its capacity and head are not state).
    w.U64(rings_.size());
    for (const Ring& r : rings_) {
      w.U64(r.size);
      const uint64_t cap = nargs_ ? r.values.size() / nargs_ : 1;
      for (uint64_t k = 0; k < r.size && nargs_; ++k) {
        const uint64_t slot = (r.head + k) % cap;
        for (size_t a = 0; a < nargs_; ++a) {
          w.I64(r.values[slot * nargs_ + a]);
          w.U8(r.valid[slot * nargs_ + a]);
        }
      }
    }
  }
}

void Aggregate::Restore(SnapshotReader& r) {
  index_.Restore(r);
  r.PodVec(groups_);
  r.PodVec(accs_);
  r.PodVec(current_);
  current_str_.resize(r.Count(8));
  for (std::string& s : current_str_) s = r.Str();
  sets_.assign(r.Count(24, "an aggregate's multisets"), Multiset{});
  aggfn::RestoreSets(r, sets_);
  bool bools = true;
  for (const Group& g : groups_) bools &= ValidBool(g.open) && ValidBool(g.touched) && ValidBool(g.listed);
  for (const Result& v : current_) bools &= ValidBool(v.valid);
  CQ_SNAPSHOT_CHECK(bools, "a flag is neither 0 nor 1");
  const size_t groups = groups_.size();
  bool ok = groups == index_.size() && accs_.size() == groups * na_ && current_.size() == groups * na_ &&
            current_str_.size() == (has_strings_ ? groups * na_ : 0) && sets_.size() == groups * sets_per_group_;
  for (const aggfn::Acc& a : accs_) ok &= aggfn::Restorable(a);
  for (const Group& g : groups_)
    ok &= g.out_row == -1 && !g.touched && !g.listed && g.rows >= 0 && SnapshotReader::ValidTime(g.started) &&
          (g.holder == kNoHolder || r.ValidHolder(g.holder));
  CQ_SNAPSHOT_CHECK(ok, "an aggregate's groups are inconsistent");
  touched_.assign(groups, 0);
  touched_count_ = 0;
  duration_ = r.OptDur();
  chunks_.clear();
  stepped_chunks_ = 0;
  int64_t base = -1;
  for (size_t n = r.Count(1); n > 0; --n) {
    Chunk c;
    c.sync = r.TimeCol();
    c.args = r.Cols();
    c.groups = r.Buf();
    c.signs = r.Buf();
    c.length = r.I64();
    c.base = r.I64();
    ok = c.length > 0 && c.args.size() == nargs_ && Covers(c.sync.ticks, c.length, 8) &&
         (c.sync.steps.empty() || Covers(c.sync.steps, c.length, 8)) && Covers(c.groups, c.length, 4) &&
         (input_ == Input::kNegative ? Covers(c.signs, c.length, 1) : c.signs.empty()) && c.base > base;
    for (const Column& a : c.args) ok &= a.length >= c.length;
    for (int64_t i = 0; ok && i < c.length; ++i)
      ok &= SnapshotReader::ValidTime(c.sync.At(i)) && (i == 0 || !(c.sync.At(i) < c.sync.At(i - 1)));
    for (const Agg& a : aggs_)
      if (a.expr && ok) ok &= c.args[a.arg].type == a.arg_type;
    for (int64_t i = 0; ok && i < c.length; ++i) ok &= c.groups.as<const uint32_t>()[i] < groups;
    CQ_SNAPSHOT_CHECK(ok, "an aggregate's retained rows are inconsistent");
    base = c.base;
    for (const Column& a : c.args) c.views.push_back(ArgView::Of(a));
    stepped_chunks_ += c.sync.has_steps();
    chunks_.push_back(std::move(c));
  }
  for (Cursor* c : {&next_start_, &next_end_}) {
    *c = Cursor{};
    c->chunk = r.U64();
    c->row = r.I64();
    CQ_SNAPSHOT_CHECK(c->chunk <= chunks_.size() && c->row >= 0 &&
                          (c->chunk == chunks_.size() ? c->row == 0 : c->row <= chunks_[c->chunk].length),
                      "an aggregate's cursors are out of range");
  }
  // (Not bounded by the progress: a sliding window's tuples start at the next slide boundary.)
  max_sync_ = r.TimeValue("the latest input start an aggregate saw");
  retained_ = r.I64();
  CQ_SNAPSHOT_CHECK(chunks_.empty() || (chunks_.back().length <= retained_ &&
                                        chunks_.back().base <= retained_ - chunks_.back().length),
                    "an aggregate's retained rows are inconsistent");
  Load(next_start_);  // unpacks the cursors' chunks (pointers are not saved)
  Load(next_end_);
  instants_->Restore(r);
  // Rows the one state holds under a constant strategy came from the row form: the general
  // strategy runs until they are gone, as after a switch (EnterBatch).
  general_ = input_ != Input::kGeneral && instants_->kept_rows() > 0;
  CQ_SNAPSHOT_CHECK(chunks_.empty() || (input_ != Input::kGeneral && instants_->kept_rows() == 0),
                    "an aggregate keeps input rows in two places");
  // The tracked rows carry their group id last: it indexes the groups.
  bool in_groups = true;
  for (const Batch* b : instants_->batch().retained_batches()) {
    const int64_t* g = b->columns.back().i64();
    for (int64_t i = 0; i < b->length; ++i) in_groups &= g[i] >= 0 && static_cast<uint64_t>(g[i]) < groups;
  }
  CQ_SNAPSHOT_CHECK(in_groups, "an aggregate's tracked rows name groups it does not have");
  out_hint_ = r.I64();
  rings_.clear();
  if (input_ == Input::kRows) {
    CQ_SNAPSHOT_CHECK(r.Count(8, "an aggregate's rings") == groups,
                      "an aggregate's rings of last rows are inconsistent");
    rings_.resize(groups);
    for (size_t g = 0; g < groups; ++g) {
      Ring& ring = rings_[g];
      ring.size = nargs_ ? r.Count(9 * nargs_, "a ring's rows") : r.U64();
      CQ_SNAPSHOT_CHECK(ring.size <= static_cast<uint64_t>(rows_) && static_cast<int64_t>(ring.size) == groups_[g].rows,
                        "an aggregate's rings of last rows are inconsistent");
      if (!nargs_) continue;
      ring.values.resize(ring.size * nargs_);
      ring.valid.resize(ring.size * nargs_);
      for (uint64_t k = 0; k < ring.size * nargs_; ++k) {
        ring.values[k] = r.I64();
        ring.valid[k] = r.U8();
        CQ_SNAPSHOT_CHECK(ValidBool(ring.valid[k]), "a flag is neither 0 nor 1");
      }
    }
  }
}
}  // namespace cq
