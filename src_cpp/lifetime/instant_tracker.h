#pragma once
// What a relation-to-stream operator (ISTREAM, DSTREAM, RSTREAM) sees of its input relation: the
// tuples that start and that end at each instant t, instant by instant, once t is complete (the
// input's progress is past it, so no start and no end at t can still arrive). Two strategies, one
// per lifetime method (SEMANTICS.md §5), behind this one interface:
//   RelationTracker  (direct)    lifetimes [start, end) with known or pending ends
//   NegativeTracker  (negative)  positive tuples at their start, negative tuples at their end
// Rows are kept by reference to the batches they came in (no copy); the rows a visit sees stay
// readable until the next call into the tracker.
#include <functional>
#include <memory>
#include <vector>

#include "base/ring.h"
#include "base/scratch_list.h"
#include "batch/batch.h"
#include "batch/row_equal.h"
#include "batch/snapshot.h"

namespace cq {

class InstantTracker {
 public:
  struct RowRef {
    uint32_t seq;
    uint32_t row;
  };
  // A non-owning reference to the caller's visitor (a lambda that lives through the call): loops
  // call AdvanceTo at every instant, and a std::function would allocate for each call.
  class Visitor {
   public:
    template <typename F>
    Visitor(const F& f)  // NOLINT: implicit, so that a lambda can be passed as is
        : obj_(&f), call_([](const void* o, Time t, const std::vector<RowRef>& s, const std::vector<RowRef>& e) {
            (*static_cast<const F*>(o))(t, s, e);
          }) {}
    void operator()(Time t, const std::vector<RowRef>& s, const std::vector<RowRef>& e) const { call_(obj_, t, s, e); }

   private:
    const void* obj_;
    void (*call_)(const void*, Time, const std::vector<RowRef>&, const std::vector<RowRef>&);
  };

  // The lists it hands over are refilled at every call (see ScratchList).
  template <typename T>
  using List = ScratchList<T>;

  // What AdvanceTo visits, for all complete instants below a progress at once: the starts and
  // the ends, each list in time order with the instant of each row. Operators that outside loops
  // get thousands of instants per call work on these lists a column at a time, with no call per
  // instant.
  struct Changes {
    List<RowRef> starts, ends;
    List<Time> start_at, end_at;
    void clear() {
      starts.clear();
      ends.clear();
      start_at.clear();
      end_at.clear();
    }
  };

  virtual ~InstantTracker() = default;
  virtual void Push(const Batch& batch) = 0;
  virtual void PushEnds(const EndBatch& ends) = 0;
  // visit(t, starts, ends) for every complete instant t < progress where something happens, in
  // time order. Ghosts (start = end) cancel out.
  virtual void AdvanceTo(Time progress, const Visitor& visit) = 0;
  // The same instants, flattened into `out` (cleared first); the rows stay readable until the next
  // call into the tracker. An instant's starts and ends are the runs of equal instants in the two
  // lists.
  virtual void Collect(Time progress, Changes& out);
  // The next instant at which something happens (Time::Infinity() when nothing is pending).
  virtual Time next_instant() const = 0;
  // The tuples alive now (only when the tracker was made to track them, for RSTREAM).
  virtual std::vector<RowRef> alive() const = 0;
  virtual bool any_alive() const = 0;

  const Batch& batch(uint32_t seq) const { return retained_[seq - retained_.front().seq].batch; }
  bool RowsEqual(RowRef a, RowRef b) const {
    return (*equal_)(batch(a.seq).columns, a.row, batch(b.seq).columns, b.row);
  }
  // At every instant of `c`, the rows of one side left after taking away, as bags, rows of the
  // other with equal values: appended to `out`, each with its instant — I(t) − D(t) with
  // `starts_minus_ends` (ISTREAM), else D(t) − I(t) (DSTREAM). Rows are compared only at instants
  // that have both starts and ends.
  void AppendBagDifferences(const Changes& c, bool starts_minus_ends, List<RowRef>& out, List<Time>& ts) const;
  // Rows (by reference) as one compact stream batch, each with its own timestamp.
  Batch Gather(const List<RowRef>& rows, const List<Time>& ts, const std::shared_ptr<const Schema>& schema) const;
  // Rows still held (for tests: zero once everything has ended and been seen).
  int64_t retained_rows() const;

  // What a change of form carries over (rows/instants.h: an operator's one state changes its
  // representation): f(row, start, end, holder, started) for every row kept. Not started: an event
  // whose instant is not complete yet — under the direct method a held start, with its known end
  // or its pending end's holder; under the negative method a positive (end ∞) or a negative (end
  // finite) stamped `start`. Started: a tuple whose start was handed over and whose end was not —
  // its end known, pending behind `holder`, or ∞ (kept only when alive tuples are tracked); under
  // the negative method a positive alive (tracked only). Rows pushed back (Push) and adopted
  // (Adopt) rebuild the same state.
  using KeptVisitor = std::function<void(RowRef, Time start, Time end, HolderId holder, bool started)>;
  virtual void ForEachKept(const KeptVisitor& f) const = 0;
  // Takes over tuples already started (the `started` rows of ForEachKept, from the other form):
  // their ends in `started`'s own (known, or pending behind a holder, or ∞); `started`'s starts are
  // not read.
  virtual void Adopt(const Batch& started) = 0;

  // Engine snapshots: the retained rows and the strategy's own state. `expect`: the schema of the
  // batches the owner pushes.
  virtual void Snapshot(SnapshotWriter& w) const = 0;
  virtual void Restore(SnapshotReader& r, const Schema& expect) = 0;
  // The batches retained, oldest first (for owners that check what restored rows hold).
  std::vector<const Batch*> retained_batches() const {
    std::vector<const Batch*> out;
    for (const Retained& r : retained_) out.push_back(&r.batch);
    return out;
  }

 protected:
  struct Retained {
    uint32_t seq;
    Batch batch;
    int64_t live;        // references to its rows still held
    bool plain = false;  // its rows are plain numbers (RowEqual::IsPlain), asked once, as it comes
  };
  // Keeps a compact copy of the batch's rows (by reference) with `live` references; its seq.
  uint32_t Retain(Batch compact, int64_t live);
  // A reference let go of: its batch goes at the next call (FlushReleases) once nothing else holds
  // it, so that visitors can still read the row.
  void Release(RowRef r) { --retained_[r.seq - retained_.front().seq].live; }
  // Release of each of n references: those of one batch in a row (as a batch's rows mostly end
  // together) let go of at once.
  void Release(const RowRef* refs, size_t n) {
    for (size_t k = 0; k < n;) {
      const uint32_t seq = refs[k].seq;
      size_t k2 = k + 1;
      while (k2 < n && refs[k2].seq == seq) ++k2;
      retained_[seq - retained_.front().seq].live -= static_cast<int64_t>(k2 - k);
      k = k2;
    }
  }
  void FlushReleases();
  // The retained batches, shared by both strategies.
  void SnapshotRetained(SnapshotWriter& w) const;
  void RestoreRetained(SnapshotReader& r, const Schema& expect);
  // A restored reference names a row of a retained batch.
  bool Holds(RowRef r) const {
    return !retained_.empty() && r.seq >= retained_.front().seq && r.seq - retained_.front().seq < retained_.size() &&
           r.row < static_cast<uint64_t>(batch(r.seq).length);
  }

  Ring<Retained> retained_;
  uint32_t next_seq_ = 0;
  std::unique_ptr<RowEqual> equal_;

 private:
  // A retained batch's columns, and whether its rows are plain numbers (RowEqual::IsPlain).
  struct BatchCols {
    std::span<const Column> cols;
    bool plain;
  };
  // The BatchCols of the retained batch numbered `seq`, for AppendBagDifferences: from a table of
  // every retained batch's, by its number less the first's, when building it costs no more than
  // the rows to compare (an instant of a batch of many rows: a row finds its batch with a
  // subtraction); otherwise looked up in the retained batches (a row or two against thousands of
  // batches retained, as single-row pushes leave, where building the table cost a pass over them
  // all at every instant).
  struct ColsOf {
    const InstantTracker* tracker;
    const BatchCols* table;  // or null: look up
    uint32_t base;
    BatchCols operator()(uint32_t seq) const {
      if (table) return table[seq - base];
      const Retained& r = tracker->retained_[seq - base];
      return {r.batch.columns, r.plain};
    }
  };
  // AppendBagDifferences at instant t when every row is plain numbers: the rows of `a` left go to
  // o/ot from m on, and m moves past them. False, with m unchanged, when a row is not plain.
  bool PlainInstants(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const ColsOf& cols, RowRef* o,
                     Time* ot, size_t& m) const;
  // PlainInstants with the lookup resolved once (`cols(seq)` -> BatchCols): a table's base and
  // address held where the rows written cannot change them.
  template <typename Lookup>
  bool PlainPieces(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const Lookup& cols, RowRef* o,
                   Time* ot, size_t& m) const;
  // One piece of PlainInstants: at most 64 rows of `b`. `a` may lie in o from m on.
  template <typename Lookup>
  bool PlainInstant(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const Lookup& cols, RowRef* o,
                    Time* ot, size_t& m) const;
  mutable std::vector<BatchCols> batch_cols_;  // AppendBagDifferences' table, kept for its capacity
};

// One of the two strategies, as the engine's lifetime method says.
std::unique_ptr<InstantTracker> MakeInstantTracker(bool negative, int policy, bool track_alive);

}  // namespace cq
