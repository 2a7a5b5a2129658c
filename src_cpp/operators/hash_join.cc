#include "operators/hash_join.h"

#include <algorithm>

#include "base/errors.h"
#include "batch/row_equal.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {

constexpr uint32_t kNoSeq = 0xFFFFFFFFu;

uint64_t HashStart(uint64_t h, Time t) {
  return MixHash(h ^ MixHash(static_cast<uint64_t>(t.tick) * 31 + static_cast<uint64_t>(t.step)));
}

}  // namespace

HashJoin::HashJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
                   std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual,
                   bool negative, HolderTable* holders, ExpirationPolicy policy)
    : left_(left),
      right_(right),
      residual_(std::move(residual)),
      negative_(negative),
      holders_(holders),
      policy_(policy) {
  sides_[0].expiring = ExpirationSet<Side::Expiry>(policy);
  sides_[1].expiring = ExpirationSet<Side::Expiry>(policy);
  schema_ = left_;
  schema_.insert(schema_.end(), right_.begin(), right_.end());
  shared_ = std::make_shared<const Schema>(schema_);
  sides_[0].keys = std::move(left_keys);
  sides_[1].keys = std::move(right_keys);
  CQ_CHECK(sides_[0].keys.size() == sides_[1].keys.size(), "join keys differ in number");
  Schema key_types;
  for (size_t c = 0; c < sides_[0].keys.size(); ++c) {
    CQ_CHECK(sides_[0].keys[c]->type() == sides_[1].keys[c]->type(), "join keys differ in type");
    key_types.push_back({"", sides_[0].keys[c]->type()});
  }
  key_equal_ = std::make_unique<RowEqual>(key_types);
  int64_key_ = key_types.size() == 1 && key_types[0].type == TypeId::kInt64;
  row_equal_ = std::make_unique<RowEqual>(left_);
  row_equal_right_ = std::make_unique<RowEqual>(right_);
}

void HashJoin::Push(int port, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  Side& s = sides_[port];
  Kept k;
  k.seq = s.next_seq++;
  k.batch = in.Compact();
  const int64_t n = k.batch.length;
  for (const auto& e : s.keys) k.key_cols.push_back(e->Evaluate(k.batch));
  k.keys.resize(static_cast<size_t>(n));
  HashRows(k.key_cols, n, k.keys.data());
  if (negative_) {
    k.rows.resize(static_cast<size_t>(n));
    HashRows(k.batch.columns, n, k.rows.data());
    for (int64_t i = 0; i < n; ++i) {
      // A positive is identified by its own start; a negative by the start it ends (`other`).
      const bool positive = k.batch.EndAt(i).IsInfinite();
      k.rows[i] = HashStart(k.rows[i], positive ? k.batch.StartAt(i) : k.batch.other.At(i));
    }
  } else {
    k.ends.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (k.batch.EndPending(i)) {
        k.ends[i] = Time::MinusInfinity();
        s.pending[k.batch.holders.as<const HolderId>()[i]] = {k.seq, static_cast<uint32_t>(i)};
      } else {
        k.ends[i] = k.batch.EndAt(i);
      }
    }
  }
  if (s.kept.empty()) s.cursor_batch = k.seq, s.cursor_row = 0;
  k.live = n;
  s.kept.push_back(std::move(k));
  s.LoadCursor();
}

void HashJoin::Side::LoadCursor() {
  cursor_ticks = nullptr;
  if (kept.empty() || cursor_batch - kept.front().seq >= kept.size()) return;
  const TimeColumn& sync = at(static_cast<uint32_t>(cursor_batch)).batch.sync;
  cursor_ticks = sync.tick_data();
  cursor_steps = sync.has_steps() ? sync.step_data() : nullptr;
  cursor_length = at(static_cast<uint32_t>(cursor_batch)).batch.length;
}

Time HashJoin::NextStart(int side) const {
  // The instant a row is met at: its start, or for a negative tuple its end (`sync` either way).
  const Side& s = sides_[side];
  if (!s.cursor_ticks) return Time::Infinity();
  return {s.cursor_ticks[s.cursor_row], s.cursor_steps ? s.cursor_steps[s.cursor_row] : 0};
}

bool HashJoin::KeysEqual(const Kept& a, uint32_t i, const Kept& b, uint32_t j) const {
  if (int64_key_) {  // the commonest join: one int64 key
    const Column& x = a.key_cols[0];
    const Column& y = b.key_cols[0];
    return x.i64()[i] == y.i64()[j] && x.IsValid(i) && y.IsValid(j);
  }
  for (size_t c = 0; c < a.key_cols.size(); ++c)
    if (!a.key_cols[c].IsValid(i) || !b.key_cols[c].IsValid(j)) return false;  // NULL joins nothing
  return (*key_equal_)(a.key_cols, i, b.key_cols, j);
}

void HashJoin::RemoveFromTable(Side& s, uint64_t hash, Ref ref) {
  Ref taken;
  if (s.table.Take(hash, [&](const Ref& r) { return r.seq == ref.seq && r.row == ref.row; }, &taken))
    --s.at(ref.seq).live;
}

void HashJoin::Expire(int side, Time t) {
  Side& s = sides_[side];
  s.expiring.ExpireThrough(t, [&](const Side::Expiry& e) {
    RemoveFromTable(s, s.at(e.ref.seq).keys[e.ref.row], e.ref);
  });
}

void HashJoin::ProcessRow(int side, Ref x, Emitted& em) {
  Side& s = sides_[side];
  Side& o = sides_[1 - side];
  Kept& k = s.at(x.seq);
  const Batch& b = k.batch;
  const uint64_t h = k.keys[x.row];
  auto probe = [&](auto&& f) {
    o.table.ForEachWith(h, [&](const Ref& y) {
      const Kept& ky = o.at(y.seq);
      if (KeysEqual(k, x.row, ky, y.row)) f(y, ky);
    });
  };
  auto add = [&](Ref y, Time start, Time end, bool open) {
    em.push_back({side == 0 ? x : y, side == 0 ? y : x, start, end, open});
  };
  const Time sx = b.StartAt(x.row);
  if (negative_) {
    const bool positive = b.EndAt(x.row).IsInfinite();
    if (positive) {
      probe([&](Ref y, const Kept&) { add(y, sx, Time::Infinity(), false); });
      s.table.Insert(h, x);
      return;
    }
    // A negative tuple at `sx` ends the positive that started at `other`: it leaves the table, and
    // the pairs it made leave with it.
    const Time started = b.other.At(x.row);
    const RowEqual& eq = side == 0 ? *row_equal_ : *row_equal_right_;
    Ref positive_ref;
    const bool found = s.table.Take(h, [&](const Ref& p) {
      const Kept& kp = s.at(p.seq);
      return kp.rows[p.row] == k.rows[x.row] && kp.batch.StartAt(p.row) == started &&
             eq(kp.batch.columns, p.row, b.columns, x.row);
    }, &positive_ref);
    CQ_CHECK(found, "join: a negative tuple without its positive");
    --s.at(positive_ref.seq).live;
    probe([&](Ref y, const Kept& ky) { add(y, std::max(started, ky.batch.StartAt(y.row)), sx, false); });
    --k.live;  // the negative itself is not kept
    return;
  }
  const Time ex = k.ends[x.row];
  const bool x_pending = ex == Time::MinusInfinity();
  if (!x_pending && !(sx < ex)) {  // a ghost joins nothing
    --k.live;
    return;
  }
  Expire(1 - side, sx);
  probe([&](Ref y, const Kept& ky) {
    const Time ey = ky.ends[y.row];
    const bool y_pending = ey == Time::MinusInfinity();
    if (!x_pending && !y_pending) {
      const Time end = std::min(ex, ey);
      if (sx < end) add(y, sx, end, false);
      return;
    }
    add(y, sx, Time::Infinity(), true);
  });
  s.table.Insert(h, x);
  if (!x_pending && !ex.IsInfinite()) s.expiring.Insert({ex, x});
}

void HashJoin::Process(Time progress, Emitter& out) {
  Emitted em;
  for (;;) {
    const Time l = NextStart(0), r = NextStart(1);
    const int side = l <= r ? 0 : 1;
    const Time t = side == 0 ? l : r;
    if (t.IsInfinite() || progress < t) break;
    Side& s = sides_[side];
    ProcessRow(side, {static_cast<uint32_t>(s.cursor_batch), static_cast<uint32_t>(s.cursor_row)}, em);
    if (++s.cursor_row >= s.cursor_length) {
      ++s.cursor_batch;
      s.cursor_row = 0;
      s.LoadCursor();
    }
    if (em.size() >= 65536) EmitResults(em, out);
  }
  EmitResults(em, out);
}

void HashJoin::EmitResults(Emitted& em, Emitter& out) {
  const int64_t n = static_cast<int64_t>(em.size());
  if (n == 0) return;
  Batch o;
  o.kind = BatchKind::kLifetime;
  o.schema = shared_;
  o.length = n;
  // Columns of each side (rows of many kept batches, interleaved).
  auto gather = [&](int side) {
    Side& s = sides_[side];
    std::vector<BatchRow> rows(em.size());
    for (size_t k = 0; k < em.size(); ++k) {
      const Ref ref = side == 0 ? em[k].l : em[k].r;
      rows[k] = {ref.seq, ref.row};
    }
    auto cols = GatherRows([&](uint32_t seq) -> const Batch& { return s.at(seq).batch; }, rows,
                           (side == 0 ? left_ : right_).size());
    for (Column& c : cols) o.columns.push_back(std::move(c));
  };
  gather(0);
  gather(1);
  // Times: direct intervals (end open where pending); negative: a positive at its start with an
  // open end, a negative at its end with `other` = the start it ends.
  o.sync.ticks = Buffer::Allocate(n * 8);
  o.other.ticks = Buffer::Allocate(n * 8);
  bool steps = false;
  for (const Result& e : em) steps |= e.start.step != 0 || (!e.end.IsInfinite() && e.end.step != 0);
  if (steps) {
    o.sync.steps = Buffer::AllocateZeroed(n * 8);
    o.other.steps = Buffer::AllocateZeroed(n * 8);
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool neg = negative_ && !em[i].end.IsInfinite();
    const Time sync = neg ? em[i].end : em[i].start;
    const Time other = neg ? em[i].start : em[i].end;
    o.sync.ticks.as<int64_t>()[i] = sync.tick;
    o.other.ticks.as<int64_t>()[i] = other.IsInfinite() ? Time::kInfTick : other.tick;
    if (steps) {
      o.sync.steps.as<int64_t>()[i] = sync.step;
      o.other.steps.as<int64_t>()[i] = other.IsInfinite() ? 0 : other.step;
    }
  }
  // The residual predicate decides which pairs are results.
  std::vector<uint32_t> keep;
  if (residual_) {
    Column pred = residual_->Evaluate(o);
    for (int64_t i = 0; i < n; ++i)
      if (pred.IsValid(i) && pred.BoolAt(i)) keep.push_back(static_cast<uint32_t>(i));
  } else {
    keep.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) keep[i] = static_cast<uint32_t>(i);
  }
  if (!keep.empty()) {
    if (!negative_) {
      bool any_open = false;
      for (uint32_t i : keep) any_open |= em[i].open;
      if (any_open) {
        o.holders = Buffer::Allocate(n * sizeof(HolderId));
        HolderId* h = o.holders.as<HolderId>();
        for (int64_t i = 0; i < n; ++i) h[i] = kNoHolder;
        for (uint32_t i : keep) {
          if (!em[i].open) continue;
          holders_->Allocate(1, &h[i]);
          const Ref l = em[i].l, r = em[i].r;
          Open op{l, r, kNoHolder, kNoHolder, em[i].start, next_serial_++};
          const Kept& kl = sides_[0].at(l.seq);
          const Kept& kr = sides_[1].at(r.seq);
          if (kl.ends[l.row] == Time::MinusInfinity()) op.lh = kl.batch.holders.as<const HolderId>()[l.row];
          if (kr.ends[r.row] == Time::MinusInfinity()) op.rh = kr.batch.holders.as<const HolderId>()[r.row];
          for (int side = 0; side < 2; ++side) {
            const HolderId in = side == 0 ? op.lh : op.rh;
            if (in == kNoHolder) continue;
            auto& by = open_by_input_[side];
            if (in >= by.size()) by.resize(std::max<size_t>(in + 1, by.size() * 2));
            by[in].push_back(h[i]);
          }
          // One side known: that end is the result's once the other side's progress reaches it.
          if (op.lh == kNoHolder) waiting_.Insert({kl.ends[l.row], h[i], op.serial});
          if (op.rh == kNoHolder) waiting_.Insert({kr.ends[r.row], h[i], op.serial});
          if (h[i] >= open_.size()) {
            open_.resize(std::max<size_t>(h[i] + 1, open_.size() * 2));
            open_live_.resize(open_.size(), 0);
          }
          open_[h[i]] = op;
          open_live_[h[i]] = 1;
        }
      }
    }
    if (keep.size() != static_cast<size_t>(n)) {
      o.has_selection = true;
      o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
      std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
      o.selection_count = static_cast<int64_t>(keep.size());
    }
    out.Emit(o.Compact());
  }
  em.clear();
}

void HashJoin::ResolveOpen(Time progress, std::vector<std::pair<HolderId, Time>>& fixed) {
  waiting_.ExpireThrough(progress, [&](const Waiting& w) {
    if (!IsOpen(w.result) || open_[w.result].serial != w.serial) return;  // fixed already
    const Open& op = open_[w.result];
    for (int side = 0; side < 2; ++side) {
      const HolderId in = side == 0 ? op.lh : op.rh;
      if (in == kNoHolder) continue;
      std::vector<HolderId>& results = open_by_input_[side][in];
      auto j = std::find(results.begin(), results.end(), w.result);
      if (j != results.end()) {
        *j = results.back();
        results.pop_back();
      }
    }
    fixed.push_back({w.result, w.end});
    open_live_[w.result] = 0;
  });
}

void HashJoin::PushEnds(int port, const EndBatch& ends, Emitter& out) {
  if (negative_) return;
  Side& s = sides_[port];
  std::vector<std::pair<HolderId, Time>> fixed;
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId id = ends.ids()[k];
    const Time e = ends.ends.At(k);
    auto p = s.pending.find(id);
    if (p == s.pending.end()) continue;  // a tuple that never reached the join
    const Ref ref = p->second;
    s.pending.erase(p);
    Kept& kept = s.at(ref.seq);
    kept.ends[ref.row] = e;
    const bool processed = ref.seq < s.cursor_batch || (ref.seq == s.cursor_batch && ref.row < s.cursor_row);
    if (processed && !e.IsInfinite()) s.expiring.Insert({e, ref});
    // Results with this tuple: fixed now if the other end is known, else once the other side's
    // progress reaches e.
    // The tuple's results, taken out; its list gets the scratch buffer, so both keep a capacity.
    scratch_.clear();
    if (id < open_by_input_[port].size()) scratch_.swap(open_by_input_[port][id]);
    for (HolderId r : scratch_) {
      Open& op = open_[r];
      (port == 0 ? op.lh : op.rh) = kNoHolder;
      if (op.lh == kNoHolder && op.rh == kNoHolder) {
        const Time el = sides_[0].at(op.l.seq).ends[op.l.row];
        const Time er = sides_[1].at(op.r.seq).ends[op.r.row];
        fixed.push_back({r, std::min(el, er)});
        open_live_[r] = 0;
      } else {
        waiting_.Insert({e, r, op.serial});
      }
    }
  }
  ResolveOpen(progress_, fixed);
  EmitFixed(fixed, out);
}

void HashJoin::EmitFixed(const std::vector<std::pair<HolderId, Time>>& fixed, Emitter& out) {
  if (fixed.empty()) return;
  std::vector<HolderId> ids;
  std::vector<Time> at;
  for (const auto& [id, end] : fixed) {
    ids.push_back(id);
    at.push_back(end);
  }
  EndBatch eb;
  eb.length = static_cast<int64_t>(ids.size());
  eb.holders = Buffer::Allocate(eb.length * sizeof(HolderId));
  std::copy(ids.begin(), ids.end(), eb.holders.as<HolderId>());
  eb.ends = MakeTimeColumn(at);
  out.EmitEnds(eb);
  holders_->Release(ids.data(), eb.length);  // every consumer has seen them
}

void HashJoin::Trim(Side& s) {
  while (!s.kept.empty() && s.kept.front().live == 0 && s.kept.front().seq < s.cursor_batch) s.kept.pop_front();
}

Time HashJoin::next_firing(int64_t) const {
  // Rows waiting for the other side, and results whose end waits for progress to reach it.
  Time t = std::min(NextStart(0), NextStart(1));
  if (!negative_) t = std::min(t, waiting_.next_end());
  return t;
}

void HashJoin::AdvanceTo(Time progress, Emitter& out) {
  progress_ = progress;
  Process(progress, out);
  if (!negative_) {
    Expire(0, progress);
    Expire(1, progress);
    std::vector<std::pair<HolderId, Time>> fixed;
    ResolveOpen(progress, fixed);
    EmitFixed(fixed, out);
  }
  Trim(sides_[0]);
  Trim(sides_[1]);
}

std::string HashJoin::Explain() const {
  return std::string(sides_[0].keys.empty() ? "Join (nested loops)" : "HashJoin") +
         (negative_ ? " (negative tuples)" : "");
}

void RegisterHashJoin(OperatorRegistry& r) {
  r.Register("join", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                        const OperatorContext& ctx) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 2 && in[0].kind == BatchKind::kLifetime && in[1].kind == BatchKind::kLifetime,
             "a join reads two relations");
    std::vector<std::unique_ptr<Expression>> lk, rk;
    for (const json::Value& e : s.params["left_keys"].array()) lk.push_back(Expression::Compile(e, *in[0].schema));
    for (const json::Value& e : s.params["right_keys"].array()) rk.push_back(Expression::Compile(e, *in[1].schema));
    Schema both = *in[0].schema;
    both.insert(both.end(), in[1].schema->begin(), in[1].schema->end());
    std::unique_ptr<Expression> residual;
    if (const json::Value* res = s.params.find("residual"); res && !res->is_null())
      residual = Expression::Compile(*res, both);
    return std::make_unique<HashJoin>(*in[0].schema, *in[1].schema, std::move(lk), std::move(rk),
                                      std::move(residual), ctx.negative, ctx.holders, PlannedPolicy(s.params));
  });
}


// Per side: the kept batches (with their key columns, key hashes and ends as fixed so far), the
// cursor, the probe table, the pending holders and the expiration set. Then the open results
// (direct method) and the ends that wait for the other side's progress.
void HashJoin::Snapshot(SnapshotWriter& w) const {
  w.Pod(progress_);
  for (const Side& s : sides_) {
    w.U32(s.next_seq);
    w.U64(s.kept.size());
    for (size_t i = s.kept.head; i < s.kept.slots.size(); ++i) {
      const Kept& k = *s.kept.slots[i];
      w.U32(k.seq);
      w.WriteBatch(k.batch);
      w.PodVec(k.keys);
      w.Cols(k.key_cols);
      w.Times(k.ends);
      w.PodVec(k.rows);
      w.I64(k.live);
    }
    w.U64(s.cursor_batch);
    w.I64(s.cursor_row);
    s.table.Snapshot(w);
    w.U64(s.pending.size());
    for (const auto* e : SortedEntries(s.pending)) {
      w.U32(e->first);
      w.Pod(e->second);
    }
    s.expiring.Snapshot(w);
  }
  w.PodVec(open_);
  w.PodVec(open_live_);
  for (const auto& by : open_by_input_) {
    w.U64(by.size());
    for (const auto& results : by) w.PodVec(results);
  }
  w.U64(next_serial_);
  waiting_.Snapshot(w);
}

void HashJoin::Restore(SnapshotReader& r) {
  progress_ = r.TimeReached("a join's progress");
  bool ok = true;
  for (int side = 0; side < 2; ++side) {
    Side& s = sides_[side];
    s.next_seq = r.U32();
    s.kept = Side::Batches{};
    for (size_t n = r.Count(1); n > 0; --n) {
      Kept k;
      k.seq = r.U32();
      k.batch = r.ReadBatch(side == 0 ? &left_ : &right_);
      r.PodVec(k.keys);
      k.key_cols = r.Cols();
      r.Times(k.ends);
      // (direct) an end known is not before its row's start; a pending one is MinusInfinity.
      for (size_t i = 0; i < k.ends.size() && i < static_cast<size_t>(k.batch.length); ++i)
        ok &= k.ends[i] == Time::MinusInfinity() || !(k.ends[i] < k.batch.StartAt(static_cast<int64_t>(i)));
      r.PodVec(k.rows);
      k.live = r.I64();
      const auto len = static_cast<size_t>(k.batch.length);
      CQ_SNAPSHOT_CHECK(!k.batch.has_selection && k.seq < s.next_seq &&
                            (s.kept.empty() || k.seq == s.kept.slots.back()->seq + 1) && k.keys.size() == len &&
                            k.key_cols.size() == s.keys.size() && (negative_ ? k.rows.size() : k.ends.size()) == len,
                        "a join's kept batches are inconsistent");
      for (size_t c = 0; c < k.key_cols.size(); ++c)
        ok &= k.key_cols[c].length >= k.batch.length && k.key_cols[c].type == s.keys[c]->type();
      s.kept.push_back(std::move(k));
    }
    CQ_SNAPSHOT_CHECK(s.kept.empty() || s.kept.slots.back()->seq + 1 == s.next_seq, "a join's kept batches are out of sequence");
    s.cursor_batch = r.U64();
    s.cursor_row = r.I64();
    auto holds = [&s](const Ref& x) {
      return !s.kept.empty() && x.seq >= s.kept.front().seq && x.seq - s.kept.front().seq < s.kept.size() &&
             x.row < static_cast<uint64_t>(s.kept.at(x.seq).batch.length);
    };
    // The cursor names a kept row, or the batch after the last one.
    if (s.kept.empty() || s.cursor_batch - s.kept.front().seq >= s.kept.size())
      ok &= s.cursor_row == 0 && (s.kept.empty() || s.cursor_batch == s.kept.front().seq + s.kept.size());
    else
      ok &= s.cursor_row >= 0 && s.cursor_row < s.kept.at(static_cast<uint32_t>(s.cursor_batch)).batch.length;
    CQ_SNAPSHOT_CHECK(ok, "a join's kept rows or cursor are out of range");  // (before LoadCursor reads them)
    // Rows up to progress have been joined: the cursor's is later.
    if (!s.kept.empty() && s.cursor_batch - s.kept.front().seq < s.kept.size())
      r.CheckToCome(s.kept.at(static_cast<uint32_t>(s.cursor_batch)).batch.StartAt(s.cursor_row), "a join's next row");
    s.table.Restore(r, holds, [&s](const Ref& x) { return s.kept.at(x.seq).keys[x.row]; });
    s.pending.clear();
    for (size_t n = r.Count(12, "a join's pending rows"); n > 0; --n) {
      const HolderId h = r.Holder();
      const Ref ref = r.Pod<Ref>();
      ok = ok && holds(ref) && !negative_ && s.kept.at(ref.seq).ends[ref.row] == Time::MinusInfinity() &&
           s.pending.emplace(h, ref).second;
    }
    s.expiring.Restore(r);
    r.CheckToCome(s.expiring.next_end(), "a join's next expiring row");  // (AdvanceTo expires through progress)
    s.expiring.ForEach([&](const Side::Expiry& e) {
      ok = ok && holds(e.ref) && !negative_ && s.kept.at(e.ref.seq).ends[e.ref.row] == e.end;
    });
    s.LoadCursor();
  }
  r.PodVec(open_);
  r.PodVec(open_live_);
  ok &= open_live_.size() == open_.size();
  for (size_t i = 0; ok && i < open_.size(); ++i) {
    ok &= open_live_[i] <= 1;
    if (!open_live_[i]) continue;
    const Open& op = open_[i];
    ok &= SnapshotReader::ValidTime(op.start) && (op.lh == kNoHolder || r.ValidHolder(op.lh)) &&
          (op.rh == kNoHolder || r.ValidHolder(op.rh));
    for (int side = 0; side < 2; ++side) {
      const Side& s = sides_[side];
      const Ref x = side == 0 ? op.l : op.r;
      ok &= !s.kept.empty() && x.seq >= s.kept.front().seq && x.seq - s.kept.front().seq < s.kept.size() &&
            x.row < static_cast<uint64_t>(s.kept.at(x.seq).batch.length);
    }
  }
  for (auto& by : open_by_input_) {
    by.assign(r.Count(8), {});
    for (auto& results : by) {
      r.PodVec(results);
      for (HolderId h : results) ok = ok && h < open_.size() && open_live_[h];
    }
  }
  // An open result's pending input ends index the lists of results by input holder.
  for (size_t i = 0; ok && i < open_.size(); ++i)
    if (open_live_[i])
      ok &= (open_[i].lh == kNoHolder || open_[i].lh < open_by_input_[0].size()) &&
            (open_[i].rh == kNoHolder || open_[i].rh < open_by_input_[1].size());
  next_serial_ = r.U64();
  waiting_.Restore(r);
  r.CheckToCome(waiting_.next_end(), "a join's next result end");
  CQ_SNAPSHOT_CHECK(ok, "a join's state refers to rows it does not keep");
}
}  // namespace cq
