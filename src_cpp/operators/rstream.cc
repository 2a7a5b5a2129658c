#include "operators/rstream.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/row_tracker.h"

namespace cq {

namespace {

// The first tick after `p` (P is below the end of time; a null P means none is known: nothing is
// beyond it).
int64_t After(int64_t p) { return p >= Time::kInfTick - 1 ? Time::kInfTick : p + 1; }

int64_t Furthest(const int64_t* furthest) { return furthest ? *furthest : Time::kInfTick - 1; }

// Values by their key bytes (AppendKey's): one id per distinct value of R.
class ValueIds {
 public:
  uint32_t Id(const std::string& key) {
    return ids_.try_emplace(key, static_cast<uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

// The ticks RSTREAM emits once every later change of R is known (close()): R(T) at every tick T
// from `from` on up to P, and beyond P while some value of R(T) later drops below its multiplicity
// at T — as a relation: an instant's starts and ends of one value cancel, so a tuple that ends
// where an equal one starts is no drop. Rows are handles H (a row reference, a slot) with the id of
// their value; rows of one value are interchangeable.
template <typename H>
class FinalTicks {
 public:
  // A row of R now.
  void Alive(H h, uint32_t id) { Add(h, id); }
  // A later change (+1 a start, -1 an end), in time order; at one instant, starts first.
  void Change(Time t, H h, uint32_t id, int delta) {
    changes_.push_back({t, h, id, delta});
    ids_ = std::max<size_t>(ids_, id + 1);
  }

  // emit(from, to, rows): R(T) is `rows` at every tick T of [from, to). `at_changes`: beyond P
  // also R at each instant it changes (a commit taking ISTREAM or DSTREAM from whole results
  // needs R there, SEMANTICS.md's rule for RSTREAM after close() notwithstanding).
  template <typename Emit>
  void Run(int64_t from, int64_t p, bool at_changes, Emit&& emit) {
    std::vector<size_t> begin;  // each instant's first change
    for (size_t k = 0; k < changes_.size(); ++k)
      if (k == 0 || changes_[k].t != changes_[k - 1].t) begin.push_back(k);
    const size_t m = begin.size();
    begin.push_back(changes_.size());
    // drops[i]: some value falls, at instant i or later, below its multiplicity before instant i.
    // Backwards, per value: low = min(0, the smallest sum of its net changes from the instant on).
    std::vector<uint8_t> drops(m + 1, 0);
    std::vector<int64_t> low(ids_, 0), net(ids_, 0);
    std::vector<uint32_t> touched;
    int64_t falling = 0;  // values whose low is negative
    for (size_t i = m; i-- > 0;) {
      for (size_t k = begin[i]; k < begin[i + 1]; ++k) {
        const Item& c = changes_[k];
        if (net[c.id] == 0) touched.push_back(c.id);
        net[c.id] += c.delta;
      }
      for (uint32_t id : touched) {
        const int64_t was = low[id];
        low[id] = std::min<int64_t>(0, net[id] + was);
        falling += (low[id] < 0) - (was < 0);
        net[id] = 0;
      }
      touched.clear();
      drops[i] = falling > 0;
    }
    int64_t tick = from;
    if (tick == Time::kMinTick) {
      if (m == 0) return;
      tick = changes_[0].t.tick;
    }
    const int64_t beyond = After(p);
    std::vector<H> rows;
    for (size_t i = 0;;) {
      for (; i < m && !(Time{tick, 0} < changes_[begin[i]].t); ++i)
        for (size_t k = begin[i]; k < begin[i + 1]; ++k) {
          const Item& c = changes_[k];
          if (c.delta > 0) Add(c.h, c.id);
          else Remove(c.id);
        }
      // Until the next change R stays as it is, and so does what lies ahead of it.
      const Time next = i < m ? changes_[begin[i]].t : Time::Infinity();
      const int64_t run_end = next.IsInfinite() ? Time::kInfTick : next.step > 0 ? next.tick + 1 : next.tick;
      if (size_ > 0) {
        rows.clear();
        for (const auto& r : rows_) rows.insert(rows.end(), r.begin(), r.end());
        const int64_t upto = std::min(run_end, beyond);
        if (tick < upto) emit(tick, upto, rows);
        const int64_t lo = std::max(tick, beyond);
        if (drops[i] && lo < run_end) emit(lo, run_end, rows);
        else if (at_changes && lo == tick && lo < run_end) emit(lo, lo + 1, rows);
      }
      if (i == m) return;
      tick = run_end;
    }
  }

 private:
  struct Item {
    Time t;
    H h;
    uint32_t id;
    int delta;
  };
  void Add(H h, uint32_t id) {
    if (id >= rows_.size()) rows_.resize(id + 1);
    ids_ = std::max<size_t>(ids_, rows_.size());
    rows_[id].push_back(h);
    ++size_;
  }
  void Remove(uint32_t id) {
    if (id >= rows_.size() || rows_[id].empty()) return;  // (an end always follows its start)
    rows_[id].pop_back();
    --size_;
  }

  std::vector<Item> changes_;
  std::vector<std::vector<H>> rows_;  // R by value
  size_t size_ = 0;
  size_t ids_ = 0;  // above every id seen
};

}  // namespace

RStream::RStream(const Schema& input, bool negative, ExpirationPolicy policy, const int64_t* furthest, bool at_changes)
    : schema_(std::make_shared<const Schema>(input)), instants_(input, negative, policy, /*track_alive=*/true, false),
      negative_(negative), at_changes_(at_changes), furthest_(furthest) {}

void RStream::Push(int, const Batch& batch, Emitter&) { instants_.batch().Push(batch); }

void RStream::PushEnds(int, const EndBatch& ends, Emitter&) { instants_.batch().PushEnds(ends); }

void RStream::EmitTicks(int64_t from, int64_t to, const std::vector<InstantTracker::RowRef>& alive, Emitter& out) {
  if (alive.empty() || from >= to) return;
  InstantTracker::List<InstantTracker::RowRef> rows;
  InstantTracker::List<Time> ts;
  for (int64_t tick = from; tick < to; ++tick) {
    for (const auto& r : alive) {
      rows.push_back(r);
      ts.push_back({tick, 0});
    }
    if (rows.size() >= 65536) {  // bound the batch, not the number of ticks
      out.Emit(instants_.batch().Gather(rows, ts, schema_));
      rows.clear();
      ts.clear();
    }
  }
  if (!rows.empty()) out.Emit(instants_.batch().Gather(rows, ts, schema_));
}

Time RStream::next_firing(int64_t) const {
  // (Asked only when it runs inside a loop through a BatchAdapter.) Every tick while R is
  // non-empty up to P, beyond it at R's next change.
  const Time change = instants_.next_instant();
  if (held_) return Time::Infinity();  // advanced at every instant of its loop anyway
  if (next_tick_ == Time::kMinTick || !instants_.any_alive() || next_tick_ > Furthest(furthest_)) return change;
  return std::min(change, Time{next_tick_, 0});
}

Time RStream::OutputProgress(Time progress) const { return held_ ? std::min(progress, Time{next_tick_, 0}) : progress; }

void RStream::AdvanceTo(Time progress, Emitter& out) {
  if (progress.IsInfinite()) return Finish(out);
  InstantTracker& tracker = instants_.batch();
  // Ticks T with (T, 0) < progress are complete: R(T) goes out at once up to P. A complete tick
  // beyond P is held, with the output progress, until P passes it or close() decides it.
  const int64_t limit = progress.step == 0 ? progress.tick : progress.tick + 1;
  const int64_t beyond = After(Furthest(furthest_));
  auto nothing = [](Time, const auto&, const auto&) {};
  held_ = false;
  for (;;) {
    if (next_tick_ == Time::kMinTick) {
      // Start at the first change, once it is complete (an earlier start may still arrive before).
      const Time first = tracker.next_instant();
      if (first.IsInfinite() || first.tick >= limit) return;
      next_tick_ = first.tick;
    }
    // R(T, 0): every instant up to (T, 0) processed. With no tick to emit yet the instants before
    // `progress` are processed all the same, so that a loop through this RSTREAM sees its next
    // firing time move on.
    tracker.AdvanceTo(std::min(progress, Time{next_tick_, 1}), nothing);
    if (next_tick_ >= limit) return;
    // Until the next change, every tick sees the same R: emit the run at once.
    const Time change = tracker.next_instant();
    const int64_t run_end =
        change.IsInfinite()
            ? limit
            : std::max(next_tick_ + 1, std::min(limit, change.step > 0 ? change.tick + 1 : change.tick));
    if (tracker.any_alive()) {
      const int64_t upto = std::min(run_end, beyond);
      if (next_tick_ < upto) EmitTicks(next_tick_, upto, tracker.alive(), out);
      next_tick_ = std::max(next_tick_, upto);
      if (next_tick_ < run_end) {
        held_ = true;
        return;
      }
    }
    next_tick_ = run_end;
  }
}

void RStream::Finish(Emitter& out) {
  held_ = false;
  if (next_tick_ == Time::kInfTick) return;
  InstantTracker& tracker = instants_.batch();
  FinalTicks<InstantTracker::RowRef> ticks;
  ValueIds ids;
  std::string key;
  auto id_of = [&](InstantTracker::RowRef r) {
    const Batch& b = tracker.batch(r.seq);
    key.clear();
    for (size_t c = 0; c < schema_->size(); ++c) AppendKey(b.columns[c], r.row, &key);
    return ids.Id(key);
  };
  const std::vector<InstantTracker::RowRef> alive = tracker.alive();
  for (const auto& r : alive) ticks.Alive(r, id_of(r));
  // Every later change (the rows stay readable until the next call into the tracker).
  InstantTracker::Changes c;
  tracker.Collect(Time::Infinity(), c);
  for (size_t i = 0, j = 0; i < c.starts.size() || j < c.ends.size();) {
    if (j == c.ends.size() || (i < c.starts.size() && !(c.end_at[j] < c.start_at[i]))) {
      ticks.Change(c.start_at[i], c.starts[i], id_of(c.starts[i]), 1);
      ++i;
    } else {
      ticks.Change(c.end_at[j], c.ends[j], id_of(c.ends[j]), -1);
      ++j;
    }
  }
  ticks.Run(next_tick_, Furthest(furthest_), at_changes_,
            [&](int64_t from, int64_t to, const std::vector<InstantTracker::RowRef>& rows) {
              EmitTicks(from, to, rows, out);
            });
  next_tick_ = Time::kInfTick;
}

namespace {
// A restored place in the ticks, checked against the operator's progress: AdvanceTo emits R at
// every complete tick while it is non-empty, and R's changes as they complete, so between calls
// neither a change still to come nor, while R is non-empty, the next tick is behind progress. A
// counter or change restored far behind would emit every tick in between at once. Ticks held
// beyond the engine's progress P, and the last instants of close(), wait by design.
void CheckTicks(const SnapshotReader& r, int64_t next_tick, Time next_change, bool alive, bool waiting) {
  const Time p = r.progress();
  if (waiting || p.IsInfinite() || p == Time::MinusInfinity()) return;  // (after close() nothing runs)
  const int64_t limit = p.step == 0 ? p.tick : p.tick + 1;
  if (!next_change.IsInfinite() && next_change.tick < limit - 1)
    SnapshotReader::Corrupt("RSTREAM's next change " + SnapshotReader::Show(next_change) + " is behind its progress " +
                            SnapshotReader::Show(p));
  if (alive && (next_tick == Time::kMinTick || next_tick < limit - 1))
    SnapshotReader::Corrupt("RSTREAM's next tick " + std::to_string(next_tick) + " is behind its progress " +
                            SnapshotReader::Show(p));
}

}  // namespace

// The row form: the same rule over the one state that keeps R(t) (RStream::AdvanceTo says why).
// Inside a loop close() runs its last instants one by one, before R's later changes are all in: a
// tick beyond P goes out at its instant when a drop is known by then (DropKnown), and otherwise
// waits until one is, or until the end of the close, where everything is known.
class RStream::Rows final : public RowOperator {
 public:
  explicit Rows(RStream* op) : op_(op) {}
  void Push(int, const Row& row, RowEmitter&) override { T().Push(row); }
  void PushEnd(int, HolderId id, Time end, RowEmitter&) override { T().PushEnd(id, end); }
  Time next_firing(int64_t) const override {
    if (op_->held_) return Time::Infinity();  // advanced at every instant of its loop anyway
    const Time change = op_->instants_.next_instant();
    if (op_->next_tick_ == Time::kMinTick || !op_->instants_.any_alive()) return change;
    if (op_->next_tick_ > Furthest(op_->furthest_) && !DropKnown()) return change;
    return std::min(change, Time{op_->next_tick_, 0});
  }
  void Closing(int64_t) override { op_->closing_ = true; }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (depth_ == 0) T().Collect();
    if (progress.IsInfinite()) return Finish(out);
    const int64_t limit = progress.step == 0 ? progress.tick : progress.tick + 1;
    const int64_t beyond = After(Furthest(op_->furthest_));
    auto nothing = [](Time, const std::vector<uint32_t>&, const std::vector<uint32_t>&) {};
    op_->held_ = false;
    for (;;) {
      if (op_->next_tick_ == Time::kMinTick) {
        const Time first = T().next_instant();
        if (first.IsInfinite() || first.tick >= limit) return;
        op_->next_tick_ = first.tick;
      }
      T().AdvanceTo(std::min(progress, Time{op_->next_tick_, 1}), nothing);
      if (op_->next_tick_ >= limit) return;
      const Time change = T().next_instant();
      const int64_t run_end =
          change.IsInfinite()
              ? limit
              : std::max(op_->next_tick_ + 1, std::min(limit, change.step > 0 ? change.tick + 1 : change.tick));
      if (T().any_alive()) {
        const int64_t upto = std::min(run_end, beyond);
        if (op_->next_tick_ < upto) EmitTicks(op_->next_tick_, upto, Alive(), out);
        op_->next_tick_ = std::max(op_->next_tick_, upto);
        if (op_->next_tick_ < run_end) {
          // Beyond P (a loop's region runs no instant beyond its inputs' progress before close(),
          // so this is the close, but for inputs delayed ahead of the engine's).
          if (DropKnown()) {
            if (op_->next_tick_ < progress.tick) Undecidable(progress);
            EmitTicks(op_->next_tick_, run_end, Alive(), out);
          } else if (op_->closing_) {
            op_->held_ = true;
            return;
          }
        }
      }
      op_->next_tick_ = run_end;
    }
  }
  // (Snapshot and Restore: nothing of its own. The state is the operator's, which writes it.)

 private:
  std::vector<uint32_t> Alive() const {
    std::vector<uint32_t> alive;
    T().Alive(alive);
    return alive;
  }
  void Key(uint32_t slot, std::string* key) const {
    const auto& types = T().layout().types();
    const Value* v = T().values(slot);
    key->clear();
    for (size_t c = 0; c < types.size(); ++c) AppendKeyValue(types[c], v[c], key);
  }
  // Whether a value of R now drops below its multiplicity at some later instant, by the changes
  // the tracker knows of (SEMANTICS.md §4, as a relation: an instant's starts of a value cancel its
  // ends). A tick held beyond P whose drop became known only at a later instant: its rows were due
  // at their tick, which the loop has run past (they feed the loop). Under the negative method an
  // end is known only when its negative tuple arrives, at the end itself, so this is where it
  // shows.
  [[noreturn]] void Undecidable(Time now) const {
    throw CqError(ErrorKind::kSemantic,
                  "RSTREAM on a recursive loop cannot decide tick " + std::to_string(op_->next_tick_) +
                      " after close(): whether its relation drops (and so whether the tick beyond the engine's "
                      "progress " +
                      std::to_string(Furthest(op_->furthest_)) + " goes out) is known only at " + now.ToString() +
                      ", when the loop has run past that tick" +
                      (op_->negative_ ? "; under lifetime='negative' an end is known only when its negative tuple "
                                        "arrives: lifetime='direct' (the default) knows it when the tuple starts"
                                      : "; advance() the inputs past the last tick the query needs before close()"));
  }
  bool DropKnown() const {
    struct Change {
      Time t;
      uint32_t slot;
      int delta;
    };
    std::vector<Change> changes;
    Time first_end = Time::Infinity(), first_start = Time::Infinity();
    T().ForEachKnownChange([&](Time t, uint32_t slot, int delta) {
      changes.push_back({t, slot, delta});
      (delta < 0 ? first_end : first_start) = std::min(delta < 0 ? first_end : first_start, t);
    });
    if (first_end.IsInfinite()) return false;
    if (first_end < first_start) return true;  // nothing can make up for the first end
    std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.t < b.t; });
    std::unordered_map<std::string, int64_t> sum;
    std::vector<int64_t*> touched;
    std::string key;
    for (size_t k = 0; k < changes.size();) {
      const Time t = changes[k].t;
      for (; k < changes.size() && changes[k].t == t; ++k) {
        Key(changes[k].slot, &key);
        int64_t& s = sum[key];
        s += changes[k].delta;
        touched.push_back(&s);
      }
      for (int64_t* s : touched)
        if (*s < 0) return true;
      touched.clear();
    }
    return false;
  }
  void Finish(RowEmitter& out) {
    op_->held_ = false;
    if (op_->next_tick_ == Time::kInfTick) return;
    FinalTicks<uint32_t> ticks;
    ValueIds ids;
    std::string key;
    auto id_of = [&](uint32_t slot) {
      Key(slot, &key);
      return ids.Id(key);
    };
    for (uint32_t s : Alive()) ticks.Alive(s, id_of(s));
    T().AdvanceTo(Time::Infinity(),
                  [&](Time t, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
                    for (uint32_t s : starts) ticks.Change(t, s, id_of(s), 1);
                    for (uint32_t s : ends) ticks.Change(t, s, id_of(s), -1);
                  });
    ticks.Run(op_->next_tick_, Furthest(op_->furthest_), op_->at_changes_,
              [&](int64_t from, int64_t to, const std::vector<uint32_t>& rows) { EmitTicks(from, to, rows, out); });
    op_->next_tick_ = Time::kInfTick;
  }
  void EmitTicks(int64_t from, int64_t to, const std::vector<uint32_t>& alive, RowEmitter& out) {
    if (alive.empty() || from >= to) return;
    ++depth_;
    for (int64_t tick = from; tick < to; ++tick) {
      for (uint32_t s : alive) {
        Row r;
        r.values = T().values(s);
        r.sync = {tick, 0};
        out.Emit(r);
      }
    }
    --depth_;
  }

  RowTracker& T() const { return op_->instants_.rows(); }

  RStream* op_;
  int depth_ = 0;
};

std::unique_ptr<RowOperator> RStream::ToRows() { return std::make_unique<Rows>(this); }

void RegisterRStream(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "rstream",
              .description = "RSTREAM",
              .output = D::Output::kStream,
              .firing = D::Firing::kEveryTick,
              .tracks_lifetimes = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime, "RSTREAM reads one relation");
               // (A commit taking ISTREAM or DSTREAM from whole results, paper 002: "diff".)
               const json::Value* diff = s.params.is_object() ? s.params.find("diff") : nullptr;
               return std::make_unique<RStream>(*in[0].schema, ctx.negative, PlannedPolicy(s.params), ctx.furthest,
                                                diff != nullptr && !diff->is_null());
             });
}

// The one state (the relation alive now and its changes to come), the first tick not decided,
// whether it is held, and whether (row form) close() has begun.
void RStream::Snapshot(SnapshotWriter& w) const {
  instants_.Snapshot(w);
  w.I64(next_tick_);
  w.Bool(held_);
  w.Bool(closing_);
}

void RStream::Restore(SnapshotReader& r) {
  instants_.Restore(r);
  next_tick_ = r.I64();
  held_ = r.Bool();
  closing_ = r.Bool();
  CheckTicks(r, next_tick_, instants_.next_instant(), instants_.any_alive(), closing_ || held_);
}
}  // namespace cq
