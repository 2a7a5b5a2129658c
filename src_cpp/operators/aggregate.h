#pragma once
// GROUP BY with COUNT(*), COUNT, SUM, AVG, MIN, MAX (optionally DISTINCT): at every instant t, the
// SQL aggregate of R(t) per group (SEMANTICS.md §4.2; no row for an empty group, so an aggregate
// without GROUP BY over an empty relation yields nothing).
//
// Incremental: each complete instant's inserted and expired tuples update their groups'
// accumulators (MIN/MAX and DISTINCT keep an ordered multiset of values, so they stay right when
// the extreme expires). A group whose value changed ends its current result tuple at t and starts
// a new one. The result's end is not known when it starts — it is the group's next change — so
// under the direct method it leaves with an expiration holder (paper 003 §4.1), fixed at that
// change; under the negative method the old value leaves as a negative tuple.
//
// Columnar throughout: a row's group is a dense id found a batch at a time (GroupIndex), its
// arguments are read from typed columns, accumulators are flat arrays indexed by group id, and
// results are appended to typed output columns. The instants reach the groups one of three ways,
// chosen from the plan and the lifetime method (ARCHITECTURE.md §3.4):
//   kConstant  direct method, lifetimes of one duration d known at plan time ([Range T], [Now],
//              [Range Unbounded], through filters and projections): starts come in time order and
//              ends are the same rows d later, in the same order, so the retained input chunks are
//              the expiration FIFO and two cursors (next start, next end) merge them instant by
//              instant. Nothing per row but its group id.
//   kNegative  negative method: positives and negatives arrive stamped with their instant, in time
//              order; one cursor walks them.
//   kGeneral   direct method, anything else (known ends of any length, pending ends): a
//              RelationTracker hands over each complete instant.
//   kRows      the input is a stream and each group's relation is its last N rows: the plan had
//              [Partition By <the GROUP BY keys> Rows N] in front (cq_py/planner/fusion.py), and
//              each group keeps its N latest arguments in a ring, the oldest leaving as a row of
//              its group arrives. No window, no pending ends, no tracker. Either lifetime method:
//              the input has no lifetimes, and the results leave as the method says.
//
// One state, two drivers (rows/ROWS.md): the groups, their accumulators and open results, and the
// input rows whose instants have not come yet belong to this object, and its one Snapshot writes
// them. The batch form (Push, PushEnds, AdvanceTo) and the row form (ToRows, aggregate_rows.cc) are
// drivers over it, and hand the results of an instant to a sink of their own (a batch being built,
// or rows emitted at once). The input rows waiting for their instants are in the chunks above
// (kConstant, kNegative, batch form only) or in the one tracker state (rows/instants.h: kGeneral,
// and the row form of every input), never in both: ToRows may be asked at any time, also after the
// batch form ran, and the rows the chunks hold then move into the tracker state; the batch form
// that runs again reads that state (as kGeneral does) until it is empty, then goes back to chunks.
#include <bit>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batch/group_index.h"
#include "kernels/expression.h"
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/aggregate_functions.h"
#include "operators/operator.h"
#include "rows/instants.h"

namespace cq {

class Aggregate final : public Operator {
 public:
  struct Spec {
    std::string fn;  // count_star | count | sum | avg | min | max
    bool distinct;
    TypeId type;                      // of the result
    std::unique_ptr<Expression> arg;  // null for count_star
  };
  enum class Input : uint8_t { kConstant, kNegative, kGeneral, kRows };
  // What it emits: its result relation, or, fused with the ISTREAM or DSTREAM that read it alone,
  // the stream of that operator. A group's result row is unique (its keys are in it), so I(t) −
  // D(t) of the relation is the new rows of the groups whose value changed at t, and D(t) − I(t)
  // their old ones: no tracker, no bag difference, no expiration holders.
  enum class Emits : uint8_t { kRelation, kInserted, kDeleted };

  // rows_per_group: kRows's N. negative: the results leave as negative tuples (implied by kNegative).
  Aggregate(std::vector<std::unique_ptr<Expression>> keys, std::vector<Spec> aggs, Schema output, Input input,
            ExpirationPolicy policy, HolderTable* holders, Emits emits = Emits::kRelation, int64_t rows_per_group = 0,
            bool negative = false);
  ~Aggregate() override;
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  // The row form, over this state: before any input, or later (the rows kept so far stay here and
  // come out at their instants through whichever form is advanced).
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return output_; }
  BatchKind output_kind() const override {
    return emits_ == Emits::kRelation ? BatchKind::kLifetime : BatchKind::kStream;
  }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  using Fn = aggfn::Fn;
  using Op = aggfn::Op;
  struct Agg {
    Fn fn;
    Op op;
    bool distinct;
    TypeId type;      // of the result
    TypeId arg_type;  // kNull for COUNT(*)
    int arg = -1;     // argument column
    int set = -1;     // multiset (MIN, MAX, DISTINCT)
    std::unique_ptr<Expression> expr;
  };
  using Acc = aggfn::Acc;
  using Multiset = aggfn::Multiset;
  using Result = aggfn::Result;
  // An argument column as the per-row loop reads it: no indirection through Column and Buffer.
  struct ArgView {
    const uint8_t* validity;  // null when there is no NULL
    const void* values;
    bool IsValid(int64_t row) const { return !validity || bitmap::Get(validity, row); }
    int64_t I64(int64_t row) const { return static_cast<const int64_t*>(values)[row]; }
    double F64(int64_t row) const { return static_cast<const double*>(values)[row]; }
    static ArgView Of(const Column& c) { return {c.has_nulls() ? c.validity.data : nullptr, c.values.data}; }
  };
  // Input rows retained by kConstant and kNegative, in time order: one chunk per input batch, or a
  // merge of several when a union delivered them out of order.
  struct Chunk {
    TimeColumn sync;
    Columns args;
    std::vector<ArgView> views;  // of args
    Buffer groups;               // uint32 per row
    Buffer signs;                // kNegative: int8 per row, +1 for a positive tuple, -1 for a negative one
    int64_t length = 0;
    int64_t base = 0;  // the position of its first row among all rows ever retained
  };
  // A row of chunks_, with what the loops read of its chunk unpacked (reloaded whenever chunks_
  // may have changed).
  struct Cursor {
    size_t chunk = 0;  // index into chunks_; chunks_.size() when past the last row
    int64_t row = 0;
    int64_t base = 0;  // of its chunk (past the last row: the position after it)
    int64_t length = 0;
    const int64_t* ticks = nullptr;
    const int64_t* steps = nullptr;
    const uint32_t* groups = nullptr;
    const int8_t* signs = nullptr;
    const Column* args = nullptr;
    const ArgView* views = nullptr;
    Time At() const { return {ticks[row], steps ? steps[row] : 0}; }
    bool Before(const Cursor& o) const { return base + row < o.base + o.row; }
  };
  void Grow(uint32_t groups);

  // A row's arguments as ApplyRow reads them: from a batch's columns, or from a row's values (the
  // row form's tracker keeps the arguments, then the group id).
  struct ColumnArgs {
    const ArgView* views;
    const Column* columns;
    int64_t row;
    bool Valid(int a) const { return views[a].IsValid(row); }
    int64_t I64(int a) const { return views[a].I64(row); }
    double F64(int a) const { return views[a].F64(row); }
    bool Present(int a) const { return columns[a].IsValid(row); }
    aggfn::Arg Multiset(int a, TypeId type) const;
  };
  // kRows: one slot of a group's ring, each argument's 8 bytes (a double's bits, a bool as 0/1).
  struct RingArgs {
    const int64_t* values;
    const uint8_t* valid;
    bool Valid(int a) const { return valid[a]; }
    int64_t I64(int a) const { return values[a]; }
    double F64(int a) const { return std::bit_cast<double>(values[a]); }
    bool Present(int a) const { return valid[a]; }
    aggfn::Arg Multiset(int a, TypeId type) const;
  };
  struct ValueArgs {
    const Value* values;
    bool Valid(int a) const { return values[a].valid; }
    int64_t I64(int a) const { return values[a].i; }
    double F64(int a) const { return values[a].d; }
    bool Present(int a) const { return values[a].valid; }
    aggfn::Arg Multiset(int a, TypeId type) const;
  };
  // Where an instant's results go. BatchOut: the output AdvanceTo builds (out_group_ ... below),
  // handed on as one batch at its end. RowOut (aggregate_rows.cc): the row form's, which emits a
  // group's result opened or closed at t (its state already says so) at once.
  struct BatchOut {};
  class RowOut {
   public:
    RowOut(Aggregate* a, RowEmitter* out) : a_(a), out_(out) {}
    void Opened(uint32_t g, Time t);
    void Closed(uint32_t g, Time t);

   private:
    // Group g's keys and open result's values, over [sync, other) or with a holder.
    void Emit(uint32_t g, Time sync, Time other, HolderId holder);
    Aggregate* a_;
    RowEmitter* out_;
  };

  // The per-row and per-result helpers take the number of aggregates as a template argument
  // when it is 1 (the commonest query), so that their loops over aggregates disappear; 0 means
  // na_. The ordered loops also take that one aggregate's Op (kAnyOp: read per row), so that the
  // switch over it leaves the per-row path.
  static constexpr int kAnyOp = -1;
  template <size_t kNa, typename Args, int kOp = kAnyOp>
  void ApplyRow(const Args& args, uint32_t g, int64_t sign);
  void ApplyMultiset(size_t a, const aggfn::Arg& v, uint32_t g, int64_t sign);
  // The groups touched at instant t get their new results.
  template <size_t kNa, typename Out>
  void EndInstant(Time t, Out& out);
  template <size_t kNa>
  Result Compute(uint32_t g, size_t a, std::string* s) const;
  template <size_t kNa, typename Out>
  void Open(uint32_t g, Time t, Out& out);
  template <size_t kNa, typename Out>
  void Close(uint32_t g, Time t, Out& out);
  // A row of the output being built; kEnd: with its end (a relation's row; a fused stream's rows
  // have none).
  template <size_t kNa, bool kEnd = true>
  void AppendRow(uint32_t g, Time start, Time end, const Result* values, const std::string* strs);

  // The instants below `progress` (from the chunks or the tracker state, whichever holds the rows),
  // with their results; at close (progress infinite) the results still open never end.
  template <typename Out>
  void Advance(Time progress, Out& out);
  template <typename Out>
  void AdvanceBatchInput(Time progress, Out& out);
  template <size_t kNa, typename Out>
  void AdvanceRowInput(Time progress, Out& out);
  // The batch form is about to run: the tracker state in batch form, and (kConstant, kNegative)
  // whether it holds rows the chunks must leave to it.
  void EnterBatch();
  // The row form is about to run: the rows the chunks hold move into the tracker state.
  void EnterRows() {
    if (!chunks_.empty()) ChunksToRows();
  }
  [[gnu::noinline]] void ChunksToRows();
  bool UsesInstants() const { return input_ == Input::kGeneral || general_; }
  Time BatchNextInstant() const;  // the chunks'
  Time NextInstant() const;

  // kConstant / kNegative
  bool Valid(const Cursor& c) const { return c.chunk < chunks_.size(); }
  // Moves c past empty chunk ends and unpacks its chunk.
  void Load(Cursor& c) const;
  void Step(Cursor& c) const {
    if (++c.row >= c.length) Load(c);
  }
  template <typename Out>
  void RunOrdered(Time progress, Out& out);
  template <typename T, size_t kNa, int kOp, typename Out>
  void RunInstants(Time progress, Out& out);
  template <typename T, size_t kNa, int kOp, typename Out>
  void RunRows(Time progress, Out& out);

  std::vector<std::unique_ptr<Expression>> keys_;
  std::vector<Agg> aggs_;
  size_t na_ = 0;  // aggs_.size()
  Schema output_;
  std::shared_ptr<const Schema> shared_output_;
  Input input_;
  Emits emits_;
  bool negative_;  // the results leave as negative tuples (else with expiration holders)
  HolderTable* holders_;
  GroupIndex index_;
  bool has_strings_ = false;  // some result is utf8
  size_t sets_per_group_ = 0;

  // Per group, indexed by group id (per group and aggregate: [g * aggs_.size() + a]).
  struct Group {
    int64_t rows = 0;
    int64_t out_row = -1;  // the row of its open result in the output being built, or -1
    Time started;          // its open result's start
    HolderId holder = kNoHolder;
    bool open = false;     // a result tuple is alive
    bool touched = false;  // in touched_
    bool listed = false;   // in opened_
  };
  std::vector<Group> groups_;
  std::vector<Acc> accs_;
  std::vector<Multiset> sets_;
  std::vector<Result> current_;  // the open result's values
  std::vector<std::string> current_str_;
  std::vector<uint32_t> touched_;  // groups touched at the current instant: the first touched_count_
  size_t touched_count_ = 0;
  std::vector<Result> now_;  // scratch: a group's new values
  std::vector<std::string> now_str_;

  // kConstant / kNegative
  std::optional<Duration> duration_;
  // (A deque: the chunks both cursors have left go from the front at every instant, and in row
  // form there is one per row.)
  std::deque<Chunk> chunks_;
  int64_t stepped_chunks_ = 0;    // chunks whose rows have ε-steps
  Cursor next_start_, next_end_;  // the next start (kNegative: event) and, kConstant, the next end
  Time max_sync_ = Time::MinusInfinity();
  int64_t retained_ = 0;  // rows ever retained: the next chunk's base
  // kRows: per group, a ring of its last rows_ rows' arguments ([slot * nargs_ + a]). It grows by
  // doubling up to rows_ slots: a group with few rows costs few, whatever N.
  struct Ring {
    uint64_t head = 0, size = 0;
    std::vector<int64_t> values;
    std::vector<uint8_t> valid;
  };
  int64_t rows_ = 0;
  std::vector<Ring> rings_;
  void GrowRing(Ring& r) const;
  // The tracker state (kGeneral; the row form): the input rows with their lifetimes, as what the
  // groups need of each (its arguments, then its group id).
  std::optional<Instants> instants_;
  bool general_ = false;  // kConstant, kNegative: the tracker state holds rows (the row form left them)
  std::shared_ptr<const Schema> derived_schema_;  // arguments, then the group id
  size_t nargs_ = 0;                              // argument columns (the tracked rows' columns before the group id)
  InstantTracker::Changes changes_;               // what the tracker hands over, kept for its capacity
  // Applies changes_ to the groups.
  template <size_t kNa, typename Out>
  void RunChanges(const InstantTracker& tracker, Out& out);

  // The output being built by AdvanceTo: group, start, end and values of each row.
  BufferBuilder<uint32_t> out_group_;
  TimeBuilder out_start_, out_end_;
  std::vector<ValueStore> out_values_;
  std::vector<uint32_t> opened_;  // groups that opened a result in the output being built
  std::vector<HolderId> fixed_ids_;
  std::vector<Time> fixed_at_;
  int64_t out_hint_ = 0;  // rows of the last output: room made before the next
};

}  // namespace cq
