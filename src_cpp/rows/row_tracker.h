#pragma once
// The row form of InstantTracker (lifetime/instant_tracker.h): what ISTREAM, DSTREAM, RSTREAM and
// the aggregate see of their input relation inside a loop region — the bags of tuples that start
// and that end at each instant, once the instant is complete. The two lifetime methods behind one
// interface, as there:
//   RowRelationTracker  (direct)    lifetimes [start, end) with known or pending ends
//   RowNegativeTracker  (negative)  positive tuples at their start, negative tuples at their end
// Rows are kept in a RowStore, by slot. A slot let go of stays readable until Collect(), which the
// owner calls when none of its rows is on its way downstream (a loop may bring a row back into the
// owner while it emits).
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "base/hash_multimap.h"
#include "lifetime/expiration_set.h"
#include "rows/row.h"

namespace cq {

class RowTracker {
 public:
  // A non-owning reference to the owner's visitor (a lambda living through the call).
  class Visitor {
   public:
    template <typename F>
    Visitor(const F& f)  // NOLINT: implicit, so that a lambda can be passed as is
        : obj_(&f), call_([](const void* o, Time t, const std::vector<uint32_t>& s, const std::vector<uint32_t>& e) {
            (*static_cast<const F*>(o))(t, s, e);
          }) {}
    void operator()(Time t, const std::vector<uint32_t>& s, const std::vector<uint32_t>& e) const {
      call_(obj_, t, s, e);
    }

   private:
    const void* obj_;
    void (*call_)(const void*, Time, const std::vector<uint32_t>&, const std::vector<uint32_t>&);
  };

  // `stored`: the schema of the rows pushed.
  explicit RowTracker(const Schema& stored)
      : schema_(std::make_shared<const Schema>(stored)), store_(RowLayout(stored)) {}
  virtual ~RowTracker() = default;

  virtual void Push(const Row& row) = 0;
  virtual void PushEnd(HolderId id, Time end) = 0;
  // visit(t, starts, ends) for every complete instant t < progress where something happens, in
  // time order. A ghost (start = end) appears in neither list under the direct method; under the
  // negative method its positive and its negative are both at t, in both lists (as in the batch
  // form's NegativeTracker): owners cancel them as bags, or apply starts before ends. Rows pushed
  // during a visit wait for a later instant.
  virtual void AdvanceTo(Time progress, const Visitor& visit) = 0;
  // The next instant at which something happens (Time::Infinity() when nothing is pending).
  virtual Time next_instant() const = 0;
  // The tuples alive now (only when made to track them, for RSTREAM), in no particular order.
  virtual void Alive(std::vector<uint32_t>& out) const = 0;
  virtual bool any_alive() const = 0;
  // f(t, slot, +1) for each start and f(t, slot, -1) for each end it knows of at instants it has
  // not handed over yet, in no particular order: the starts it holds (and their ends, when known)
  // and the known ends of tuples alive now — not ends still pending (holders), nor changes that
  // have not reached it. For RSTREAM beyond the engine's progress (SEMANTICS.md §4.3).
  virtual void ForEachKnownChange(const std::function<void(Time, uint32_t, int)>& f) const = 0;

  // What a change of form carries over (rows/instants.h), as InstantTracker::ForEachKept says,
  // with slots for rows. A started row's start is not kept: it reads as MinusInfinity.
  using KeptVisitor = std::function<void(uint32_t slot, Time start, Time end, HolderId holder, bool started)>;
  virtual void ForEachKept(const KeptVisitor& f) const = 0;
  // Takes over a tuple already started (InstantTracker::Adopt): its end in `row.other`, or pending
  // behind `row.holder`.
  virtual void Adopt(const Row& row) = 0;

  const Value* values(uint32_t slot) const { return store_.Get(slot); }
  const RowLayout& layout() const { return store_.layout(); }
  const std::shared_ptr<const Schema>& schema() const { return schema_; }
  // Frees the slots let go of since the last call.
  void Collect() {
    if (released_.empty()) return;
    for (uint32_t s : released_) store_.Remove(s);
    released_.clear();
  }
  // The rows of `a` left after taking away, as bags, rows of `b` with equal values (ISTREAM is
  // starts − ends, DSTREAM ends − starts), appended to `out`, in a's order. Linear in the rows.
  void AppendBagDifference(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                           std::vector<uint32_t>& out) const;
  // The rows AppendBagDifference compared and the table entries it visited so far (but for a row
  // against a row), for tests that check its cost grows linearly.
  uint64_t bag_work() const { return bag_work_; }
  size_t kept_rows() const { return store_.size() - released_.size(); }
  // f(values) for every row kept (for owners checking a restored snapshot).
  template <typename F>
  void ForEachKeptValues(F&& f) const {
    store_.ForEach([&](uint32_t s) { f(store_.Get(s)); });
  }

 protected:
  void Release(uint32_t slot) { released_.push_back(slot); }
  void Release(const std::vector<uint32_t>& slots) { released_.insert(released_.end(), slots.begin(), slots.end()); }

  std::shared_ptr<const Schema> schema_;
  RowStore store_;
  std::vector<uint32_t> released_;

 private:
  // Below this many pairs, AppendBagDifference compares every row of a with b's (no table).
  static constexpr size_t kFewPairs = 64;
  // AppendBagDifference's rows of b by value: a value's entry in counts_, its first row and how
  // many rows of b hold it that have not cancelled a row of a yet.
  struct ValueCount {
    uint32_t slot;
    int64_t n;
  };
  mutable HashMultimap<uint32_t> by_value_;
  mutable std::vector<ValueCount> counts_;
  mutable uint64_t bag_work_ = 0;
};

class RowRelationTracker final : public RowTracker {
 public:
  // `starts_only`: only instants where a tuple starts are visited, and ends at other instants are
  // let go of silently — for ISTREAM, whose I(t) − D(t) is empty without starts, so that an
  // instant where its input only expires is not an instant of its own.
  RowRelationTracker(const Schema& stored, ExpirationPolicy policy, bool track_alive, bool starts_only = false)
      : RowTracker(stored), track_alive_(track_alive), starts_only_(starts_only && !track_alive), expiring_(policy) {}
  void Push(const Row& row) override;
  void PushEnd(HolderId id, Time end) override;
  void AdvanceTo(Time progress, const Visitor& visit) override;
  Time next_instant() const override {
    const Held* h;
    return NextInstant(h);
  }
  void Alive(std::vector<uint32_t>& out) const override { out.assign(alive_.begin(), alive_.end()); }
  bool any_alive() const override { return !alive_.empty(); }
  void ForEachKnownChange(const std::function<void(Time, uint32_t, int)>& f) const override;
  void ForEachKept(const KeptVisitor& f) const override;
  void Adopt(const Row& row) override;

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  // A start held back until its instant is complete, with its end (MinusInfinity: pending).
  struct Held {
    Time start;
    Time end;
    uint32_t slot;
    HolderId holder;
  };
  // A held start that came below the FIFO's tail, with its arrival number for ties.
  struct Late {
    Held held;
    uint64_t order;
    bool operator>(const Late& o) const {
      return held.start != o.held.start ? o.held.start < held.start : order > o.order;
    }
  };
  struct Entry {
    Time end;
    uint32_t slot;
  };
  // The next instant, and in `h` the held start that comes out next (null when none): AdvanceTo
  // starts its instant's loop from it.
  Time NextInstant(const Held*& h) const {
    h = NextHeld();
    const Time t = h ? h->start : Time::Infinity();
    return starts_only_ ? t : std::min(t, expiring_.next_end());
  }
  // The held start that comes out next: the FIFO's head or the late heap's, whichever is smaller
  // (equal starts: the FIFO's came first).
  const Held* NextHeld() const {
    const Held* f = HasFrom(fifo_, fifo_head_) ? &fifo_[fifo_head_] : nullptr;
    if (late_.empty()) return f;
    if (!f || late_.front().held.start < f->start) return &late_.front().held;
    return f;
  }
  void PopHeld(const Held* h) {
    if (!late_.empty() && h == &late_.front().held) return PopLate();
    if (!HasFrom(fifo_, ++fifo_head_)) {  // (a loop's instant: the FIFO is empty again)
      fifo_base_ += fifo_.size();
      fifo_.clear();
      fifo_head_ = 0;
    } else if (fifo_head_ >= 4096) {
      CompactFifo();
    }
  }
  void PopLate();
  [[gnu::noinline]] void CompactFifo();  // (rare: once per 4,096 pops without the FIFO emptying)
  void AddAlive(uint32_t slot);
  void RemoveAlive(uint32_t slot);
  static void Put(std::vector<uint32_t>& by_id, HolderId id, uint32_t v) {
    if (id >= by_id.size()) by_id.resize(std::max<size_t>(id + 1, by_id.size() * 2), kNone);
    by_id[id] = v;
  }

  bool track_alive_;
  bool starts_only_;
  // Held starts: in start order on the common path (a FIFO, O(1) a row); a start below the
  // FIFO's tail (inputs interleaving) goes to a min-heap.
  std::vector<Held> fifo_;
  size_t fifo_head_ = 0;
  uint64_t fifo_base_ = 0;  // the number of fifo_[0] among all rows the FIFO ever held
  std::vector<Late> late_;
  uint64_t arrivals_ = 0;
  std::vector<uint32_t> held_pending_;  // by holder id: the FIFO number (mod 2^32) of a held pending start
  std::vector<uint32_t> undetermined_;  // by holder id: the slot of a started row, end pending
  ExpirationSet<Entry> expiring_;
  std::vector<uint32_t> alive_;          // track_alive: the slots alive
  std::vector<uint32_t> alive_pos_;      // by slot: its place in alive_
  std::vector<uint32_t> starts_, ends_;  // AdvanceTo's lists, kept for their capacity
};

class RowNegativeTracker final : public RowTracker {
 public:
  RowNegativeTracker(const Schema& stored, bool track_alive) : RowTracker(stored), track_alive_(track_alive) {}
  void Push(const Row& row) override;
  void PushEnd(HolderId, Time) override {}  // negative tuples carry the ends
  void AdvanceTo(Time progress, const Visitor& visit) override;
  Time next_instant() const override { return pending_.empty() ? Time::Infinity() : pending_.begin()->first; }
  void Alive(std::vector<uint32_t>& out) const override;
  bool any_alive() const override { return !alive_.empty(); }
  void ForEachKnownChange(const std::function<void(Time, uint32_t, int)>& f) const override;
  void ForEachKept(const KeptVisitor& f) const override;
  void Adopt(const Row& row) override;

 private:
  struct Instant {
    std::vector<uint32_t> positives, negatives;
  };
  bool track_alive_;
  std::map<Time, Instant> pending_;  // events of instants not complete yet
  HashMultimap<uint32_t> alive_;     // track_alive: positives alive, by value hash
};

std::unique_ptr<RowTracker> MakeRowTracker(bool negative, ExpirationPolicy policy, bool track_alive,
                                           const Schema& stored, bool starts_only = false);

}  // namespace cq
