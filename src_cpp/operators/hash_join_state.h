#pragma once
// The hash join's one state (operators/hash_join.h, rows/ROWS.md): both inputs' kept tuples, their
// index by join key, the rows whose ends are pending, the rows waiting to be joined, and the
// results whose ends are pending. One algorithm, JoinCore, over a row store given as a template
// argument, so that each form keeps rows the way its hot path reads them:
//   JoinBatchStore  the batch form's: the input batches kept whole (compacted), a row named by
//                   its batch's sequence number and its row, keys computed and hashed a batch at
//                   a time, results gathered column by column;
//   JoinRowStore    the row form's: a RowStore slot per row (values copied in), keys hashed a row
//                   at a time, results emitted a row at a time.
// What each row is to the join (JoinMeta: its instant, its end or the holder that fixes it, its
// key's hash, whether it waits or is joined) and everything else is the same in both. A state is
// written in one format whichever store holds it (JoinCore::Write): per input, the kept rows as
// one batch of values with their JoinMeta, the joined ones first, then those waiting in the order
// they wait; the open results. The index, the pending holders and the expiration set are derived
// from those on reading. A form asked for while the other holds the state takes it over through
// that format (HashJoin::batch_core, row_core), so either form may run at any time.
//
// The semantics (SEMANTICS.md §4.2: at every t, the SQL join of R1(t) and R2(t)):
//  * the inputs are joined in time order, the left first at equal times, so a tuple meets every
//    tuple of the other side that started before it; a tuple whose key has a NULL joins nothing
//    and is not kept, nor is a ghost (end = start);
//  * direct: a result lives on [max(s1, s2), min(e1, e2)); while an input's end is pending the
//    result's is too (paper 003 §4.1), fixed when both ends are known, or when one is known (e)
//    and progress has reached e (a pending end is never below progress, §4.3: the minimum is e);
//  * negative: a positive probes the other side and yields positive results; a negative takes
//    its positive out of its side's index and yields the negative results of the pairs still
//    alive.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "base/errors.h"
#include "base/hash_multimap.h"
#include "base/scratch_list.h"
#include "batch/batch.h"
#include "batch/row_equal.h"
#include "batch/snapshot.h"
#include "kernels/expression.h"
#include "lifetime/expiration_holder.h"
#include "lifetime/expiration_set.h"
#include "rows/row.h"
#include "rows/row_expression.h"

namespace cq {

// What the join knows of a kept row.
struct JoinMeta {
  Time sync;        // its start; a negative tuple: its end
  Time other;       // direct: its end once known; negative: Infinity for a positive, else the start it ends
  uint64_t key;     // hash of the join key (each store hashes its own way)
  HolderId holder;  // direct: the holder that fixes its end while it is pending, else kNoHolder
  uint32_t state;   // JoinRowState
};
enum JoinRowState : uint32_t {
  kJoinFree = 0,     // not kept (a slot free, or a row that joins nothing)
  kJoinWaiting = 1,  // waiting to be joined
  kJoinJoined = 2,   // in the index
  kJoinLetGo = 3,    // out of both; the row store frees its slot when no emission is under way
};

// What both forms and both stores are built from (HashJoin owns the expressions).
struct JoinSpec {
  Schema input[2];
  std::vector<const Expression*> keys[2];
  std::vector<TypeId> key_types;
  bool negative = false;
  HolderTable* holders = nullptr;
  ExpirationPolicy policy = ExpirationPolicy::kLazy;
  // Direct method: hash these columns of each kept row (value_hash), for a bag difference over
  // the joined rows (ISTREAM fused with the join: operators/istream_join.h).
  bool hash_values = false;
  std::vector<int> value_cols[2];
};

// A kept row as the snapshot format writes it (JoinMeta less the key hash, which is the store's).
struct JoinKeptRow {
  Time sync;
  Time other;
  HolderId holder;
  uint32_t state;
};

// The direct method's results whose end is pending, by their holder id (ids are small and
// recycled), and the ends that wait for progress. Store-independent: it knows the rows' ends only.
class JoinOpenResults {
 public:
  struct Fixed {
    HolderId id;
    Time end;
  };
  struct Link {  // an open result of an input row whose end is pending
    uint64_t serial;
    HolderId result;
    uint32_t unused = 0;
  };
  // A new open result of rows l and r (at least one pending): its holder.
  HolderId Open(const JoinMeta& l, const JoinMeta& r, HolderTable* holders);
  // Input `port`'s holder `id` fixed its row's end: the results fixed now go to `fixed`, the others
  // wait for progress to reach `end`. `links` is scratch (an emission may be under way).
  void InputEnd(int port, HolderId id, Time end, Time progress, std::vector<Link>& links, std::vector<Fixed>& fixed);
  // The results whose end waits for progress, through `progress`; at close, those with one end
  // known take it (the other is never below progress).
  void Resolve(Time progress, std::vector<Fixed>& fixed);
  Time next_end() const { return waiting_.next_end(); }
  void Write(SnapshotWriter& w) const;
  void Read(SnapshotReader& r, bool negative);

 private:
  struct Result {
    Time end[2];      // each input's end, once known
    uint64_t serial;  // 0: not open; the entries naming the id check they still mean this result
    HolderId in[2];   // each input's holder while its end is pending, else kNoHolder
  };
  struct Waiting {
    Time end;
    uint64_t serial;
    HolderId result;
    uint32_t unused = 0;
  };
  std::vector<Result> open_;
  std::vector<std::vector<Link>> by_input_[2];  // by input holder id; entries of fixed results linger
  uint64_t next_serial_ = 1;
  ExpirationSet<Waiting> waiting_;
};

// ---- the stores --------------------------------------------------------------------------------

// The batch form's: kept batches by sequence number, each with its rows' JoinMeta, key columns
// and (negative method) value hashes. A handle is (sequence number << 32 | row). Rows wait in
// arrival order: a cursor walks them.
class JoinBatchStore {
 public:
  using Handle = uint64_t;
  static constexpr Handle kNone = ~Handle{0};
  JoinBatchStore(const JoinSpec& spec, int side);

  // Keeps `b`'s rows, waiting (those that join nothing: not kept); f(handle) for each row whose
  // end is pending.
  template <typename F>
  void Push(const Batch& b, F&& pending);
  Time HeadTime() const { return cursor_meta_ ? cursor_meta_[cursor_row_].sync : Time::Infinity(); }
  Handle PopHead() {
    const Handle h = Make(cursor_seq_, static_cast<uint32_t>(cursor_row_));
    if (++cursor_row_ >= cursor_length_) {
      ++cursor_seq_;
      cursor_row_ = 0;
      LoadCursor();
    }
    return h;
  }
  JoinMeta& meta(Handle h) { return at(Seq(h)).meta[Row(h)]; }
  const JoinMeta& meta(Handle h) const { return at(Seq(h)).meta[Row(h)]; }
  void LetGo(Handle h) {
    Chunk& c = at(Seq(h));
    c.meta[Row(h)].state = kJoinFree;
    --c.live;
  }
  // Lets h go when taken(its key hash) says it left the index (its batch looked up once).
  template <typename F>
  void LetGoIf(Handle h, F&& taken) {
    Chunk& c = at(Seq(h));
    JoinMeta& m = c.meta[Row(h)];
    if (!taken(m.key)) return;
    m.state = kJoinFree;
    --c.live;
  }
  struct Chunk;
  // A row as the join reads it while it joins: its JoinMeta and its key as the probes of the
  // other side compare it (its batch looked up once per row).
  struct Probe {
    Chunk* chunk;
    uint32_t row;
    int64_t key;  // the one int64 key's value (the commonest join)
  };
  Probe ProbeOf(Handle x) const {
    Chunk& c = at(Seq(x));
    return {&c, Row(x), int64_key_ ? c.key_cols[0].i64()[Row(x)] : 0};
  }
  JoinMeta& meta(const Probe& p) { return p.chunk->meta[p.row]; }
  // y's JoinMeta when its key equals the probe's, else null (the pair's sink reads it: one lookup
  // of y's batch per candidate). Rows with a NULL key are never joined: only values are compared.
  const JoinMeta* Matches(const Probe& p, const JoinBatchStore& o, Handle y) const {
    const Chunk& cy = o.at(Seq(y));
    const bool eq = int64_key_ ? cy.key_cols[0].i64()[Row(y)] == p.key
                               : (*key_equal_)(p.chunk->key_cols, p.row, cy.key_cols, Row(y));
    return eq ? &cy.meta[Row(y)] : nullptr;
  }
  bool SameValues(Handle p, Handle x) const;  // (negative method)
  // The hash of the row's JoinSpec::value_cols (spec.hash_values).
  uint64_t value_hash(Handle h) const { return at(Seq(h)).values[Row(h)]; }
  // Drops the batches whose rows are all let go.
  void Trim();

  // The snapshot format's rows: the kept ones (f(handle) each), and their values as one batch.
  template <typename F>
  void ForEachKept(F&& f) const;
  Batch Values(const std::vector<Handle>& rows) const;
  // Takes rows of that format (the joined first); handles[i] is row i's.
  bool Import(const Batch& values, const std::vector<JoinKeptRow>& rows, std::vector<Handle>& handles);

  static uint32_t Seq(Handle h) { return static_cast<uint32_t>(h >> 32); }
  static uint32_t Row(Handle h) { return static_cast<uint32_t>(h); }
  static Handle Make(uint32_t seq, uint32_t row) { return (Handle{seq} << 32) | row; }
  const Batch& batch(uint32_t seq) const { return at(seq).batch; }

  // A kept batch (its own and the join's columns, and each row's JoinMeta).
  struct Chunk {
    uint32_t seq;
    Batch batch;  // compact
    std::vector<Column> key_cols;
    ScratchList<JoinMeta> meta;    // batch.length, all set by Push or Import
    ScratchList<uint64_t> values;  // negative: hash of each row's values, to find a positive again;
                                   // spec.hash_values: of its value_cols
    int64_t live;
  };

 private:
  // Kept batches by sequence number, oldest first: a vector of pointers indexed from the first
  // number it holds (a lookup per probe, so no deque arithmetic).
  Chunk& at(uint32_t seq) const { return *slots_[seq - first_seq_]; }
  bool empty() const { return head_ == slots_.size(); }
  Chunk& Add(Batch b);
  void LoadCursor();

  const JoinSpec* spec_;
  int side_;
  std::unique_ptr<RowEqual> key_equal_, row_equal_;
  bool int64_key_ = false;
  std::vector<std::unique_ptr<Chunk>> slots_;
  size_t head_ = 0;         // slots_[head_] is the oldest kept
  uint32_t first_seq_ = 0;  // the number of slots_[0]
  uint32_t next_seq_ = 0;
  uint32_t cursor_seq_ = 0;  // the next row to join: batch cursor_seq_, row cursor_row_
  int64_t cursor_row_ = 0;
  const JoinMeta* cursor_meta_ = nullptr;  // its batch's (null when no row waits)
  int64_t cursor_length_ = 0;
  ScratchList<uint64_t> hashes_;  // Add's key hashes, refilled for every batch
};

// The row form's: a RowStore slot per row (the input's columns, then the join keys that are not
// plain columns, computed once), a JoinMeta per slot, and a queue of the slots waiting.
class JoinRowStore {
 public:
  using Handle = uint32_t;
  static constexpr Handle kNone = 0xFFFFFFFFu;
  JoinRowStore(const JoinSpec& spec, int side);

  // Keeps `row` waiting: its slot, or kNone when a key is NULL (it joins nothing).
  Handle Add(const Row& row);
  Time HeadTime() const { return head_ < queue_.size() ? kept_[queue_[head_]].sync : Time::Infinity(); }
  Handle PopHead() {
    const Handle h = queue_[head_++];
    TrimFront(queue_, head_);  // (a queue that never empties is compacted too)
    return h;
  }
  JoinMeta& meta(Handle h) { return kept_[h]; }
  const JoinMeta& meta(Handle h) const { return kept_[h]; }
  void LetGo(Handle h) {
    kept_[h].state = kJoinLetGo;
    released_.push_back(h);
  }
  template <typename F>
  void LetGoIf(Handle h, F&& taken) {
    if (taken(kept_[h].key)) LetGo(h);
  }
  struct Probe {
    const Value* values;  // (a RowStore slot's values never move)
    Handle h;
  };
  Probe ProbeOf(Handle x) const { return {store_.Get(x), x}; }
  JoinMeta& meta(const Probe& p) { return kept_[p.h]; }
  // As JoinBatchStore::Matches.
  const JoinMeta* Matches(const Probe& p, const JoinRowStore& o, Handle y) const {
    // Rows with a NULL key are never kept: only values are compared.
    const Value* u = p.values;
    const Value* v = o.store_.Get(y);
    if (int64_key_) return u[key_cols_[0]].i == v[o.key_cols_[0]].i ? &o.kept_[y] : nullptr;
    for (size_t k = 0; k < key_cols_.size(); ++k)
      if (!ValueEqual(spec_->key_types[k], u[key_cols_[k]], v[o.key_cols_[k]])) return nullptr;
    return &o.kept_[y];
  }
  bool SameValues(Handle p, Handle x) const { return layout_.Equal(store_.Get(p), store_.Get(x)); }
  // Frees the slots let go of (when no emission of the join is under way).
  void Collect();
  const Value* values(Handle h) const { return store_.Get(h); }
  size_t width() const { return width_; }

  template <typename F>
  void ForEachKept(F&& f) const {
    for (Handle h = 0; h < kept_.size(); ++h)
      if (kept_[h].state == kJoinJoined) f(h);
    for (size_t i = head_; i < queue_.size(); ++i) f(queue_[i]);
  }
  Batch Values(const std::vector<Handle>& rows) const;
  bool Import(const Batch& values, const std::vector<JoinKeptRow>& rows, std::vector<Handle>& handles);

 private:
  bool KeyHash(const Value* v, uint64_t* h) const;

  const JoinSpec* spec_;
  size_t width_ = 0;                                      // the input's columns
  std::vector<std::unique_ptr<RowExpression>> computed_;  // the keys that are not plain columns
  std::vector<int> key_cols_;                             // each key's column in a kept row
  bool int64_key_ = false;
  std::shared_ptr<const Schema> input_;
  RowLayout layout_;  // of the input's columns alone
  RowStore store_;
  std::vector<JoinMeta> kept_;  // by slot
  std::vector<Handle> queue_;   // slots waiting to be joined, in arrival (so time) order
  size_t head_ = 0;
  std::vector<Handle> released_;
};

// ---- the core ----------------------------------------------------------------------------------

template <typename Store>
class JoinCore {
 public:
  using H = typename Store::Handle;
  explicit JoinCore(const JoinSpec& spec) : spec_(spec), sides_{Side(spec, 0), Side(spec, 1)} {}

  Store& store(int side) { return sides_[side].store; }
  const Store& store(int side) const { return sides_[side].store; }
  JoinOpenResults& results() { return results_; }
  const JoinOpenResults& results() const { return results_; }
  Time progress() const { return progress_; }
  void set_progress(Time p) { progress_ = std::max(progress_, p); }

  // A row kept by store(port).Add or Push, waiting: indexed by its pending holder.
  void Waits(int port, H x) {
    const HolderId h = store(port).meta(x).holder;
    if (h == kNoHolder) return;
    std::vector<H>& p = sides_[port].pending;
    if (h >= p.size()) p.resize(std::max<size_t>(h + 1, p.size() * 2), Store::kNone);
    p[h] = x;
  }
  // Input `port`'s row behind holder `id` ends at `end`; false when no kept row waits for it (a
  // row that joins nothing). Its results are the caller's (results().InputEnd).
  bool InputEnd(int port, HolderId id, Time end) {
    Side& s = sides_[port];
    if (id >= s.pending.size() || s.pending[id] == Store::kNone) return false;
    const H x = s.pending[id];
    s.pending[id] = Store::kNone;
    JoinMeta& m = s.store.meta(x);
    m.other = end;
    m.holder = kNoHolder;
    if (m.state == kJoinJoined && !end.IsInfinite()) s.expiring.Insert({end, x});
    return true;
  }

  Time NextRow() const { return std::min(sides_[0].store.HeadTime(), sides_[1].store.HeadTime()); }
  // Joins the waiting rows in time order, the left input first at equal times: those below
  // `limit`, or with `through` those not after it. The sink hears sink.Begin(side, x) for each
  // row, then sink.Pair(side, x, y, m, ym) for each row y of the other side with an equal key (m:
  // what x's JoinMeta was when the probe began; ym: y's, valid until the sink emits). A sink with
  // an Instant(t) hears it before the first row of each instant t is joined, when every row
  // ending at t is still in the index (EndingPairs).
  template <typename Sink>
  void Drain(Time limit, bool through, Sink& sink) {
    constexpr bool kInstants = requires { sink.Instant(Time{}); };
    Time last = Time::MinusInfinity();
    for (;;) {
      const Time l = sides_[0].store.HeadTime(), r = sides_[1].store.HeadTime();
      const int side = l <= r ? 0 : 1;
      const Time t = side == 0 ? l : r;
      if (t.IsInfinite() || (through ? limit < t : !(t < limit))) return;
      if constexpr (kInstants) {
        if (last != t) {
          last = t;
          sink.Instant(t);
        }
      }
      Join(side, sides_[side].store.PopHead(), sink);
    }
  }
  // Direct method, ends known: f(l, r) for every joined pair that ends at t (min of its rows' ends
  // is t, its start before t). Right for the instant the sink's Instant(t) hears, before any row of
  // t is joined: rows ending at t are still in the index then, and none starting at t is yet.
  template <typename F>
  void EndingPairs(Time t, F&& f) {
    for (int side = 0; side < 2; ++side) {
      Side& s = sides_[side];
      const Store& ss = s.store;
      const Store& os = sides_[1 - side].store;
      s.expiring.ForEachThrough(t, [&](const Expiry& e) {
        if (e.end != t) return;
        const typename Store::Probe probe = ss.ProbeOf(e.ref);
        sides_[1 - side].table.ForEachWith(ss.meta(e.ref).key, [&](H y) {
          const JoinMeta* ym = ss.Matches(probe, os, y);
          // (A pair whose rows both end at t is the left row's.)
          if (!ym || !(ym->sync < t) || ym->other < t || (side == 1 && ym->other == t)) return;
          if (side == 0) f(e.ref, y);
          else f(y, e.ref);
        });
      });
    }
  }
  // The result of x (of input `side`) and y, in a row's time fields; false when there is none.
  bool PairTimes(const JoinMeta& x, const JoinMeta& y, Time* sync, Time* other, bool* open) const {
    *sync = x.sync;
    *open = false;
    if (spec_.negative) {
      *other = x.other.IsInfinite() ? x.other : std::max(x.other, y.sync);
      return true;
    }
    if (x.holder == kNoHolder && y.holder == kNoHolder) {
      *other = std::min(x.other, y.other);
      return x.sync < *other;
    }
    *other = Time::Infinity();
    *open = true;
    return true;
  }
  // Rows of the index whose end is through t leave it.
  void Expire(int side, Time t) {
    Side& s = sides_[side];
    s.expiring.ExpireThrough(t, [&](const Expiry& e) {
      s.store.LetGoIf(e.ref, [&](uint64_t key) {
        H taken;
        return s.table.Take(key, [&](H x) { return x == e.ref; }, &taken);
      });
    });
  }

  // The one snapshot format (see the top of this file).
  void Write(SnapshotWriter& w) const;
  void Read(SnapshotReader& r);

 private:
  struct Expiry {
    Time end;
    H ref;
  };
  struct Side {
    Side(const JoinSpec& spec, int side) : store(spec, side), expiring(spec.policy) {}
    Store store;
    HashMultimap<H> table;           // rows that can still join, by key hash
    std::vector<H> pending;          // direct: by holder id, the row whose end it fixes
    ExpirationSet<Expiry> expiring;  // direct: joined rows by known end
  };

  template <typename Sink>
  void Join(int side, H x, Sink& sink) {
    Side& s = sides_[side];
    Side& o = sides_[1 - side];
    const typename Store::Probe probe = s.store.ProbeOf(x);
    JoinMeta& mr = s.store.meta(probe);  // (not used once pairs go out: a row coming back through a
    const JoinMeta m = mr;               // loop may add rows, and move the row store's JoinMetas)
    if (m.state != kJoinWaiting) return;
    if (spec_.negative && !m.other.IsInfinite()) {
      // A negative tuple at `sync` ends the positive that started at `other`: it leaves the
      // index, and the pairs it made leave with it.
      H positive;
      const bool found = s.table.Take(
          m.key, [&](H p) { return s.store.meta(p).sync == m.other && s.store.SameValues(p, x); }, &positive);
      CQ_CHECK(found, "join: a negative tuple without its positive");
      s.store.LetGo(positive);
      s.store.LetGo(x);
    } else if (spec_.negative) {
      s.table.Insert(m.key, x);
      mr.state = kJoinJoined;
    } else {
      if (m.holder == kNoHolder && !(m.sync < m.other)) {  // its end came while it waited: a ghost
        s.store.LetGo(x);
        return;
      }
      mr.state = kJoinJoined;
      Expire(1 - side, m.sync);
      s.table.Insert(m.key, x);
      if (m.holder == kNoHolder && !m.other.IsInfinite()) s.expiring.Insert({m.other, x});
    }
    sink.Begin(side, x);
    const Store& ss = s.store;
    const Store& os = o.store;
    o.table.ForEachWith(m.key, [&](H y) {
      if (const JoinMeta* ym = ss.Matches(probe, os, y)) sink.Pair(side, x, y, m, *ym);
    });
  }

  const JoinSpec& spec_;
  Side sides_[2];
  Time progress_ = Time::MinusInfinity();
  JoinOpenResults results_;
};

template <typename F>
void JoinBatchStore::Push(const Batch& in, F&& pending) {
  Chunk& k = Add(in.Compact());
  const Batch& b = k.batch;
  const int64_t n = b.length;
  // A row with a NULL key joins nothing; under the direct method neither does a ghost.
  for (const Column& c : k.key_cols)
    if (c.has_nulls())
      for (int64_t i = 0; i < n; ++i)
        if (!c.IsValid(i)) k.meta[i].state = kJoinFree;
  const HolderId* holders = spec_->negative || b.holders.empty() ? nullptr : b.holders.as<const HolderId>();
  // (Batch::StartAt and EndAt, the start read once for both.)
  const int64_t* ticks = b.sync.tick_data();
  const int64_t* steps = b.sync.has_steps() ? b.sync.step_data() : nullptr;
  const std::optional<Duration>& duration = b.constant_duration;
  for (int64_t i = 0; i < n; ++i) {
    JoinMeta& m = k.meta[i];
    m.sync = {ticks[i], steps ? steps[i] : 0};
    m.holder = kNoHolder;
    if (holders && holders[i] != kNoHolder) {
      m.other = Time::MinusInfinity();
      if (m.state == kJoinWaiting) {
        m.holder = holders[i];
        pending(Make(k.seq, static_cast<uint32_t>(i)));
      } else {
        --k.live;
      }
      continue;
    }
    m.other = duration ? m.sync + *duration : b.other.At(i);
    if (!spec_->negative && !(m.sync < m.other)) m.state = kJoinFree;
    k.live -= m.state == kJoinFree;
  }
  LoadCursor();
}

template <typename F>
void JoinBatchStore::ForEachKept(F&& f) const {
  // The joined rows, then those waiting (from the cursor on), in order.
  for (size_t i = head_; i < slots_.size(); ++i) {
    const Chunk& c = *slots_[i];
    for (size_t r = 0; r < static_cast<size_t>(c.batch.length); ++r)
      if (c.meta[r].state == kJoinJoined) f(Make(c.seq, static_cast<uint32_t>(r)));
  }
  for (size_t i = head_; i < slots_.size(); ++i) {
    const Chunk& c = *slots_[i];
    if (c.seq < cursor_seq_) continue;
    for (size_t r = c.seq == cursor_seq_ ? static_cast<size_t>(cursor_row_) : 0;
         r < static_cast<size_t>(c.batch.length); ++r)
      if (c.meta[r].state == kJoinWaiting) f(Make(c.seq, static_cast<uint32_t>(r)));
  }
}

template <typename Store>
void JoinCore<Store>::Write(SnapshotWriter& w) const {
  w.Pod(progress_);
  for (const Side& s : sides_) {
    std::vector<H> rows;
    s.store.ForEachKept([&](H h) { rows.push_back(h); });
    std::vector<JoinKeptRow> kept;
    for (H h : rows) {
      const JoinMeta& m = s.store.meta(h);
      kept.push_back({m.sync, m.other, m.holder, m.state});
    }
    w.PodVec(kept);
    if (!rows.empty()) w.WriteBatch(s.store.Values(rows));
  }
  results_.Write(w);
}

template <typename Store>
void JoinCore<Store>::Read(SnapshotReader& r) {
  progress_ = r.TimeReached("a join's progress");
  for (int side = 0; side < 2; ++side) {
    Side& s = sides_[side];
    std::vector<JoinKeptRow> kept;
    r.PodVec(kept, "a join's kept rows", [&](const JoinKeptRow& k) {
      return SnapshotReader::ValidTime(k.sync) && SnapshotReader::ValidTime(k.other) &&
             (k.state == kJoinWaiting || k.state == kJoinJoined) &&
             (k.holder == kNoHolder ||
              (!spec_.negative && r.ValidHolder(k.holder) && k.other == Time::MinusInfinity()));
    });
    Batch values;
    if (!kept.empty()) values = r.ReadBatch(&spec_.input[side]);
    CQ_SNAPSHOT_CHECK(values.length == static_cast<int64_t>(kept.size()) && !values.has_selection,
                      "a join's kept rows and their values differ in number");
    // The joined rows come first, then those waiting, in time order and not before progress. (A
    // joined row's end may be behind the reader's progress: a loop's members are restored at
    // their loop's, which runs ahead of what the row form has expired.)
    bool ok = true;
    size_t i = 0;
    Time last = Time::MinusInfinity();
    while (i < kept.size() && kept[i].state == kJoinJoined) ++i;
    for (size_t j = i; j < kept.size(); ++j) {
      ok &= kept[j].state == kJoinWaiting && !(kept[j].sync < last);
      last = kept[j].sync;
    }
    CQ_SNAPSHOT_CHECK(ok, "a join's waiting rows are out of order");
    if (i < kept.size()) r.CheckToCome(kept[i].sync, "a join's next row");
    std::vector<H> handles;
    CQ_SNAPSHOT_CHECK(s.store.Import(values, kept, handles), "a join's kept row has a NULL key");
    s.table.clear();
    s.pending.clear();
    std::vector<Expiry> ends;
    for (size_t k = 0; k < kept.size(); ++k) {
      const H h = handles[k];
      const JoinMeta& m = s.store.meta(h);
      if (m.holder != kNoHolder) {
        CQ_SNAPSHOT_CHECK(m.holder >= s.pending.size() || s.pending[m.holder] == Store::kNone,
                          "a join's holder fixes two rows");
        Waits(side, h);
      }
      if (m.state != kJoinJoined) continue;
      s.table.Insert(m.key, h);
      if (m.holder == kNoHolder && !spec_.negative && !m.other.IsInfinite()) ends.push_back({m.other, h});
    }
    std::stable_sort(ends.begin(), ends.end(), [](const Expiry& a, const Expiry& b) { return a.end < b.end; });
    s.expiring = ExpirationSet<Expiry>(spec_.policy);
    for (const Expiry& e : ends) s.expiring.Insert(e);
  }
  results_.Read(r, spec_.negative);
}

}  // namespace cq
