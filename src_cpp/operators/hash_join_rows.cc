// The join's row form (rows/ROWS.md): the symmetric hash join of hash_join.h over the rows of a
// loop, with the same semantics (SEMANTICS.md §4.2: at every t, the SQL join of R1(t) and R2(t))
// and the same rules for lifetimes:
//  * direct: a result lives on [max(s1, s2), min(e1, e2)); while an input's end is pending the
//    result's is too, fixed when both ends are known, or when one is known (e) and progress has
//    reached e (a pending end is never below progress, so the minimum is then e);
//  * negative: a positive probes the other side and yields positive results; a negative takes its
//    positive out of its side's table and yields the negative results of the pairs still alive.
//
// Each input's rows are kept in a RowStore (with the join keys that are not plain columns
// computed once, after the row's own columns), found by key hash in a flat table. Rows are joined
// in time order across the two inputs, once progress has passed them, as in the batch form. (At
// the instant the region runs, RowEmitter::now(), a row could go at once: every row below it is
// out on both inputs. But an end due at that instant may not be: the row would meet a tuple that
// ends at its start, a ghost result the batch form does not make, for no gain, since the executor
// advances this join at that instant anyway.)
//
// Re-entrancy: rows are joined only by AdvanceTo. A row that comes back through a loop while this
// join emits waits in its queue, and the loop draining the queues takes it in turn, so the tables
// never change while an emission is under way (probes emit straight from the table) and no result
// of a pair goes out before the results of earlier rows. What can come back during an emission is
// an input's end: it changes only the rows' ends and the open results, which are read afresh for
// each pair.
#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/hash_join.h"
#include "rows/row_expression.h"
#include "rows/row_operator.h"

namespace cq {

class HashJoin::Rows final : public RowOperator {
 public:
  explicit Rows(const HashJoin& j);
  void Push(int port, const Row& row, RowEmitter& out) override;
  void PushEnd(int port, HolderId id, Time end, RowEmitter& out) override;
  void AdvanceTo(Time progress, RowEmitter& out) override;
  Time next_firing(int64_t) const override;
  bool advances_when_due() const override { return true; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  enum State : uint32_t {
    kFree = 0,
    kWaiting = 1,  // in the queue
    kJoined = 2,   // in the table
    kLetGo = 3,    // out of both, its slot freed when no emission is under way
  };
  // What the join knows of a kept row, by its slot.
  struct Kept {
    Time sync;   // its start; a negative tuple: its end
    Time other;  // direct: its end once known; negative: Infinity for a positive, else the start it ends
    uint64_t key;     // hash of the join key
    HolderId holder;  // direct: the holder that fixes its end, kNoHolder once known
    uint32_t state;
  };
  struct Expiry {
    Time end;
    uint32_t slot;
    uint32_t unused = 0;
  };
  struct Input {
    size_t width = 0;  // the input's columns
    std::vector<std::unique_ptr<RowExpression>> computed;  // the keys that are not plain columns
    std::vector<int> key_cols;  // each key's column in a kept row
    std::shared_ptr<const Schema> stored;  // the input's columns, then the computed keys
    RowLayout layout;                      // of the input's columns alone
    RowStore store;
    std::vector<Kept> kept;
    std::vector<uint32_t> queue;  // slots waiting to be joined, in arrival (so time) order
    size_t head = 0;
    HashMultimap<uint32_t> table;   // slots that can still join, by key hash
    std::vector<uint32_t> pending;  // direct: by holder id, the slot whose end it fixes
    ExpirationSet<Expiry> expiring; // direct: joined slots by known end
    std::vector<uint32_t> released;
  };
  // A direct result whose end is pending, by its holder id (ids are small and recycled).
  struct Open {
    Time end[2];      // each input's end, once known
    uint64_t serial;  // 0: not open; the entries naming the id check they still mean this result
    HolderId in[2];   // each input's holder while its end is pending, else kNoHolder
  };
  struct Link {  // an open result of an input row whose end is pending
    uint64_t serial;
    HolderId result;
    uint32_t unused = 0;
  };
  struct Waiting {  // an open result whose end is fixed once progress reaches `end`
    Time end;
    uint64_t serial;
    HolderId result;
    uint32_t unused = 0;
  };
  struct Fixed {
    HolderId id;
    Time end;
  };
  // Per depth of nesting: an end coming back through a loop fixes results while others are still
  // being emitted.
  struct Scratch {
    std::vector<Link> links;
    std::vector<Fixed> fixed;
  };
  // Counts the nesting of calls; the outermost frees the slots let go of, once nothing of this
  // join is on its way downstream.
  struct Depth {
    Rows& j;
    explicit Depth(Rows& rows) : j(rows) {
      if (++j.depth_ > j.scratch_.size()) j.scratch_.push_back(std::make_unique<Scratch>());
    }
    ~Depth() {
      if (--j.depth_ == 0) j.Collect();
    }
    Scratch& scratch() const { return *j.scratch_[j.depth_ - 1]; }
  };

  Time Head(int side) const {
    const Input& s = sides_[side];
    return s.head < s.queue.size() ? s.kept[s.queue[s.head]].sync : Time::Infinity();
  }
  // The key's hash; false when a key is NULL (the row joins nothing).
  bool KeyHash(const Input& s, const Value* v, uint64_t* h) const;
  bool KeysEqual(const Value* a, const std::vector<int>& ca, const Value* b, const std::vector<int>& cb) const;
  void Drain(Time below, RowEmitter& out);
  void Join(int side, uint32_t slot, RowEmitter& out);
  void EmitPair(int side, uint32_t x, uint32_t y, RowEmitter& out);
  void LetGo(Input& s, uint32_t slot) {
    s.kept[slot].state = kLetGo;
    s.released.push_back(slot);
  }
  void Unjoin(Input& s, uint32_t slot);
  void Expire(int side, Time t) {
    Input& s = sides_[side];
    s.expiring.ExpireThrough(t, [&](const Expiry& e) { Unjoin(s, e.slot); });
  }
  void ResolveOpen(Time progress, std::vector<Fixed>& fixed);
  void EmitFixed(const std::vector<Fixed>& fixed, RowEmitter& out);
  void Collect();

  bool negative_;
  HolderTable* holders_;
  std::vector<TypeId> key_types_;
  bool int64_key_;
  std::unique_ptr<RowExpression> residual_;
  Input sides_[2];
  std::vector<Value> joined_;  // the pair being emitted: left's columns, then right's
  Time progress_ = Time::MinusInfinity();
  // direct
  std::vector<Open> open_;
  std::vector<std::vector<Link>> by_input_[2];  // by input holder id; entries of fixed results linger
  uint64_t next_serial_ = 1;
  ExpirationSet<Waiting> waiting_;
  size_t depth_ = 0;
  std::vector<std::unique_ptr<Scratch>> scratch_;
};

HashJoin::Rows::Rows(const HashJoin& j) : negative_(j.negative_), holders_(j.holders_) {
  for (int side = 0; side < 2; ++side) {
    Input& s = sides_[side];
    const Schema& schema = side == 0 ? j.left_ : j.right_;
    s.width = schema.size();
    Schema stored = schema;
    for (const auto& k : j.sides_[side].keys) {
      if (k->is_column()) {
        s.key_cols.push_back(k->column_index());
        continue;
      }
      s.key_cols.push_back(static_cast<int>(stored.size()));
      stored.push_back({"key", k->type()});
      s.computed.push_back(RowExpression::From(*k));
    }
    s.stored = std::make_shared<const Schema>(stored);
    s.layout = RowLayout(schema);
    s.store = RowStore(RowLayout(stored));
    s.expiring = ExpirationSet<Expiry>(j.policy_);
  }
  for (const auto& k : j.sides_[0].keys) key_types_.push_back(k->type());
  int64_key_ = key_types_.size() == 1 && key_types_[0] == TypeId::kInt64;
  if (j.residual_) residual_ = RowExpression::From(*j.residual_);
  joined_.resize(j.schema_.size());
}

bool HashJoin::Rows::KeyHash(const Input& s, const Value* v, uint64_t* h) const {
  uint64_t x = 0x2545F4914F6CDD1DULL;  // no keys (nested loops): one hash for every row
  for (size_t k = 0; k < s.key_cols.size(); ++k) {
    const Value& kv = v[s.key_cols[k]];
    if (!kv.valid) return false;
    x = MixHash(x * 31 + ValueHash(key_types_[k], kv));
  }
  *h = x;
  return true;
}

bool HashJoin::Rows::KeysEqual(const Value* a, const std::vector<int>& ca, const Value* b,
                               const std::vector<int>& cb) const {
  // Rows with a NULL key are never kept: only values are compared.
  if (int64_key_) return a[ca[0]].i == b[cb[0]].i;
  for (size_t k = 0; k < ca.size(); ++k)
    if (!ValueEqual(key_types_[k], a[ca[k]], b[cb[k]])) return false;
  return true;
}

void HashJoin::Rows::Push(int port, const Row& row, RowEmitter&) {
  if (!negative_ && !row.pending() && !(row.sync < row.other)) return;  // a ghost joins nothing
  Input& s = sides_[port];
  const size_t nc = s.computed.size();
  ValueBuffer buf(nc ? s.width + nc : 0);
  const Value* v = row.values;
  if (nc) {
    std::memcpy(static_cast<void*>(buf.data()), row.values, s.width * sizeof(Value));
    for (size_t k = 0; k < nc; ++k) buf[s.width + k] = s.computed[k]->Evaluate(row.values);
    v = buf.data();
  }
  uint64_t h;
  if (KeyHash(s, v, &h)) {
    const uint32_t slot = s.store.Add(v);
    if (slot >= s.kept.size()) s.kept.resize(std::max<size_t>(slot + 1, s.kept.size() * 2));
    s.kept[slot] = {row.sync, row.pending() ? Time::MinusInfinity() : row.other, h, row.holder, kWaiting};
    if (row.pending()) {
      if (row.holder >= s.pending.size()) s.pending.resize(std::max<size_t>(row.holder + 1, s.pending.size() * 2), kNone);
      s.pending[row.holder] = slot;
    }
    s.queue.push_back(slot);
  }
  for (size_t k = 0; k < nc; ++k)
    if (buf[s.width + k].valid && s.computed[k]->type() == TypeId::kUtf8) ReleaseString(buf[s.width + k].s);
}

void HashJoin::Rows::Drain(Time below, RowEmitter& out) {
  for (;;) {
    // Equal times: the left input first, as the batch form.
    const Time l = Head(0), r = Head(1);
    const int side = l <= r ? 0 : 1;
    if (!((side == 0 ? l : r) < below)) return;
    Input& s = sides_[side];
    const uint32_t slot = s.queue[s.head++];
    if (s.head == s.queue.size()) {
      s.queue.clear();
      s.head = 0;
    }
    Join(side, slot, out);
  }
}

void HashJoin::Rows::Unjoin(Input& s, uint32_t slot) {
  uint32_t taken;
  if (s.table.Take(s.kept[slot].key, [&](uint32_t x) { return x == slot; }, &taken)) LetGo(s, slot);
}

void HashJoin::Rows::Join(int side, uint32_t slot, RowEmitter& out) {
  Input& s = sides_[side];
  Input& o = sides_[1 - side];
  const Kept x = s.kept[slot];
  if (negative_ && !x.other.IsInfinite()) {
    // A negative tuple at `sync` ends the positive that started at `other`: it leaves the table,
    // and the pairs it made leave with it.
    const Value* v = s.store.Get(slot);
    uint32_t positive;
    const bool found = s.table.Take(x.key, [&](uint32_t p) {
      return s.kept[p].sync == x.other && s.layout.Equal(s.store.Get(p), v);
    }, &positive);
    CQ_CHECK(found, "join: a negative tuple without its positive");
    LetGo(s, positive);
    LetGo(s, slot);
  } else if (negative_) {
    s.table.Insert(x.key, slot);
    s.kept[slot].state = kJoined;
  } else {
    if (x.holder == kNoHolder && !(x.sync < x.other)) {  // its end came while it waited: a ghost
      LetGo(s, slot);
      return;
    }
    Expire(1 - side, x.sync);
    s.table.Insert(x.key, slot);
    s.kept[slot].state = kJoined;
    if (x.holder == kNoHolder && !x.other.IsInfinite()) s.expiring.Insert({x.other, slot});
  }
  const Value* v = s.store.Get(slot);
  std::memcpy(static_cast<void*>(joined_.data() + (side == 0 ? 0 : sides_[0].width)), v, s.width * sizeof(Value));
  o.table.ForEachWith(x.key, [&](uint32_t y) {
    if (KeysEqual(v, s.key_cols, o.store.Get(y), o.key_cols)) EmitPair(side, slot, y, out);
  });
}

void HashJoin::Rows::EmitPair(int side, uint32_t xs, uint32_t ys, RowEmitter& out) {
  Input& o = sides_[1 - side];
  std::memcpy(static_cast<void*>(joined_.data() + (side == 0 ? sides_[0].width : 0)), o.store.Get(ys),
              o.width * sizeof(Value));
  if (residual_ && !residual_->IsTrue(joined_.data())) return;
  // Copies, read afresh for each pair: an end coming back through a loop may have fixed either.
  const Kept x = sides_[side].kept[xs], y = o.kept[ys];
  Row r;
  r.values = joined_.data();
  r.sync = x.sync;
  if (negative_) {
    if (!x.other.IsInfinite()) r.other = std::max(x.other, y.sync);
    out.Emit(r);
    return;
  }
  if (x.holder == kNoHolder && y.holder == kNoHolder) {
    r.other = std::min(x.other, y.other);
    if (r.sync < r.other) out.Emit(r);
    return;
  }
  HolderId h;
  holders_->Allocate(1, &h);
  if (h >= open_.size()) open_.resize(std::max<size_t>(h + 1, open_.size() * 2), Open{});
  Open& op = open_[h];
  op.serial = next_serial_++;
  for (int k = 0; k < 2; ++k) {
    const Kept& in = k == side ? x : y;
    op.in[k] = in.holder;
    op.end[k] = in.other;
    if (in.holder != kNoHolder) {
      auto& by = by_input_[k];
      if (in.holder >= by.size()) by.resize(std::max<size_t>(in.holder + 1, by.size() * 2));
      by[in.holder].push_back({op.serial, h});
    } else if (!in.other.IsInfinite()) {  // (an end of Infinity is the result's only at close)
      waiting_.Insert({in.other, op.serial, h});
    }
  }
  r.holder = h;
  out.Emit(r);
}

void HashJoin::Rows::PushEnd(int port, HolderId id, Time end, RowEmitter& out) {
  if (negative_) return;
  Input& s = sides_[port];
  if (id >= s.pending.size() || s.pending[id] == kNone) return;  // a row that joins nothing
  Depth depth(*this);
  const uint32_t slot = s.pending[id];
  s.pending[id] = kNone;
  Kept& k = s.kept[slot];
  k.other = end;
  k.holder = kNoHolder;
  if (k.state == kJoined && !end.IsInfinite()) s.expiring.Insert({end, slot});
  // Its open results: fixed now where the other end is known, else once progress reaches `end`.
  // The list is taken out (its vector gets the scratch's, so both keep a capacity).
  Scratch& sc = depth.scratch();
  sc.links.clear();
  if (id < by_input_[port].size()) sc.links.swap(by_input_[port][id]);
  sc.fixed.clear();
  for (const Link& l : sc.links) {
    Open& op = open_[l.result];
    if (op.serial != l.serial) continue;  // fixed already, by the other end's progress
    op.in[port] = kNoHolder;
    op.end[port] = end;
    if (op.in[1 - port] == kNoHolder) {
      sc.fixed.push_back({l.result, std::min(op.end[0], op.end[1])});
      op.serial = 0;
    } else if (!end.IsInfinite() || progress_.IsInfinite()) {
      waiting_.Insert({end, op.serial, l.result});
    }
  }
  ResolveOpen(progress_, sc.fixed);
  EmitFixed(sc.fixed, out);
}

void HashJoin::Rows::ResolveOpen(Time progress, std::vector<Fixed>& fixed) {
  waiting_.ExpireThrough(progress, [&](const Waiting& w) {
    Open& op = open_[w.result];
    if (op.serial != w.serial) return;
    fixed.push_back({w.result, w.end});
    op.serial = 0;
  });
}

void HashJoin::Rows::EmitFixed(const std::vector<Fixed>& fixed, RowEmitter& out) {
  for (const Fixed& f : fixed) {
    out.EmitEnd(f.id, f.end);
    holders_->Release(&f.id, 1);  // every consumer has seen it
  }
}

void HashJoin::Rows::AdvanceTo(Time progress, RowEmitter& out) {
  Depth depth(*this);
  progress_ = std::max(progress_, progress);
  Drain(progress, out);
  if (negative_) return;
  Expire(0, progress);
  Expire(1, progress);
  // Ends are fixed only when one is below `progress` (those equal to it wait for the next
  // advance): otherwise this call does nothing the executor could miss (advances_when_due).
  if (!(waiting_.next_end() < progress) && !progress.IsInfinite()) return;
  Scratch& sc = depth.scratch();
  sc.fixed.clear();
  ResolveOpen(progress, sc.fixed);
  if (progress.IsInfinite()) {
    // Close: a result with one end known has that end (the other is never below progress).
    for (HolderId h = 0; h < open_.size(); ++h) {
      Open& op = open_[h];
      if (op.serial == 0 || (op.in[0] != kNoHolder && op.in[1] != kNoHolder)) continue;
      sc.fixed.push_back({h, op.in[0] == kNoHolder ? op.end[0] : op.end[1]});
      op.serial = 0;
    }
  }
  EmitFixed(sc.fixed, out);
}

Time HashJoin::Rows::next_firing(int64_t) const {
  // Rows waiting to be joined, and results whose end waits for progress to reach it.
  Time t = std::min(Head(0), Head(1));
  if (!negative_) t = std::min(t, waiting_.next_end());
  return t;
}

void HashJoin::Rows::Collect() {
  for (Input& s : sides_) {
    for (uint32_t slot : s.released) {
      s.store.Remove(slot);
      s.kept[slot].state = kFree;
    }
    s.released.clear();
  }
}

std::unique_ptr<RowOperator> HashJoin::ToRows() { return std::make_unique<Rows>(*this); }

// ---- snapshots -------------------------------------------------------------------------------

// Per input: the kept rows (values, then what the join knows of each), the queue, the table and
// the expiration set. Then the open results, their links from the inputs' holders, and the ends
// that wait for progress. (Taken between calls: no slot is let go of and not yet freed.)
void HashJoin::Rows::Snapshot(SnapshotWriter& w) const {
  w.Pod(progress_);
  for (const Input& s : sides_) {
    CQ_CHECK(s.released.empty(), "a join snapshot inside a call");
    s.store.Snapshot(w, s.stored);
    w.PodVec(s.kept);
    w.PodVec(s.queue.data() + s.head, s.queue.size() - s.head);
    s.table.Snapshot(w);
    s.expiring.Snapshot(w);
  }
  w.PodVec(open_);
  for (const auto& by : by_input_) {
    w.U64(by.size());
    for (const auto& links : by) w.PodVec(links);
  }
  w.U64(next_serial_);
  waiting_.Snapshot(w);
}

void HashJoin::Rows::Restore(SnapshotReader& r) {
  progress_ = r.TimeReached("a join's progress");
  bool ok = true;
  for (Input& s : sides_) {
    s.store.Restore(r, *s.stored);
    // (A free slot holds whatever it last held, or zeros.)
    r.PodVec(s.kept, "a join's kept rows", [&](const Kept& k) {
      return k.state == kFree || (SnapshotReader::ValidTime(k.sync) && SnapshotReader::ValidTime(k.other) &&
                                  k.state <= kLetGo && (k.holder == kNoHolder || r.ValidHolder(k.holder)));
    });
    s.store.ForEach([&](uint32_t slot) { ok &= slot < s.kept.size(); });
    CQ_SNAPSHOT_CHECK(ok, "a join's kept rows are inconsistent");
    s.pending.clear();
    for (uint32_t slot = 0; slot < s.kept.size(); ++slot) {
      const Kept& k = s.kept[slot];
      const bool live = s.store.live(slot);
      ok &= live ? k.state == kWaiting || k.state == kJoined : k.state == kFree;
      if (!live || k.holder == kNoHolder) continue;
      ok &= !negative_;
      if (k.holder >= s.pending.size()) s.pending.resize(k.holder + 1, kNone);
      ok &= s.pending[k.holder] == kNone;
      s.pending[k.holder] = slot;
    }
    CQ_SNAPSHOT_CHECK(ok, "a join's kept rows are inconsistent");
    r.PodVec(s.queue);
    s.head = 0;
    for (size_t i = 0; i < s.queue.size(); ++i) {
      const uint32_t slot = s.queue[i];
      ok = ok && slot < s.kept.size() && s.kept[slot].state == kWaiting &&
            (i == 0 || !(s.kept[slot].sync < s.kept[s.queue[i - 1]].sync));
    }
    size_t waiting = 0;
    for (const Kept& k : s.kept) waiting += k.state == kWaiting;
    ok &= waiting == s.queue.size();
    s.table.Restore(r, [&](uint32_t slot) { return slot < s.kept.size() && s.kept[slot].state == kJoined; },
                    [&](uint32_t slot) { return s.kept[slot].key; });
    size_t joined = 0;
    for (const Kept& k : s.kept) joined += k.state == kJoined;
    ok &= joined == s.table.size();
    s.expiring.Restore(r);
    s.expiring.ForEach([&](const Expiry& e) {
      ok &= !negative_ && e.slot < s.kept.size() && s.kept[e.slot].state == kJoined;
    });
    s.released.clear();
    CQ_SNAPSHOT_CHECK(ok, "a join's queue or table refers to rows it does not keep");
  }
  r.PodVec(open_);
  // Open results are indexed by their holder id.
  for (size_t h = 0; h < open_.size(); ++h)
    if (open_[h].serial != 0)
      ok &= !negative_ && (open_[h].in[0] != kNoHolder || open_[h].in[1] != kNoHolder) && r.ValidHolder(static_cast<HolderId>(h)) &&
            SnapshotReader::ValidTime(open_[h].end[0]) && SnapshotReader::ValidTime(open_[h].end[1]);
  for (auto& by : by_input_) {
    by.assign(r.Count(8), {});
    for (auto& links : by) {
      r.PodVec(links);
      for (const Link& l : links) ok &= l.result < open_.size();
    }
  }
  // An open result's pending input ends index the lists of results by input holder.
  for (const Open& op : open_)
    for (int k = 0; k < 2 && op.serial != 0; ++k) ok &= op.in[k] == kNoHolder || op.in[k] < by_input_[k].size();
  next_serial_ = r.U64();
  waiting_.Restore(r);
  waiting_.ForEach([&](const Waiting& w) { ok &= w.result < open_.size(); });
  for (const Open& op : open_) ok &= op.serial < next_serial_;
  CQ_SNAPSHOT_CHECK(ok, "a join's open results are inconsistent");
}

}  // namespace cq
