#pragma once
// GROUP BY with COUNT(*), COUNT, SUM, AVG, MIN, MAX (optionally DISTINCT): at every instant t, the
// SQL aggregate of R(t) per group (SPEC §4; no row for an empty group, so an aggregate without
// GROUP BY over an empty relation yields nothing).
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
// chosen from the plan and the lifetime method (STYLE §4):
//   kConstant  direct method, lifetimes of one duration d known at plan time ([Range T], [Now],
//              [Range Unbounded], through filters and projections): starts come in time order and
//              ends are the same rows d later, in the same order, so the retained input chunks are
//              the expiration FIFO and two cursors (next start, next end) merge them instant by
//              instant. Nothing per row but its group id.
//   kNegative  negative method: positives and negatives arrive stamped with their instant, in time
//              order; one cursor walks them.
//   kGeneral   direct method, anything else (known ends of any length, pending ends): a
//              RelationTracker hands over each complete instant.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batch/group_index.h"
#include "operators/aggregate_functions.h"
#include "kernels/expression.h"
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"

namespace cq {

class Aggregate final : public Operator {
 public:
  struct Spec {
    std::string fn;  // count_star | count | sum | avg | min | max
    bool distinct;
    TypeId type;     // of the result
    std::unique_ptr<Expression> arg;  // null for count_star
  };
  enum class Input : uint8_t { kConstant, kNegative, kGeneral };

  Aggregate(std::vector<std::unique_ptr<Expression>> keys, std::vector<Spec> aggs, Schema output, Input input,
            ExpirationPolicy policy, HolderTable* holders);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return output_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
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
  using Value = aggfn::Result;
  // Input rows retained by kConstant and kNegative, in time order: one chunk per input batch, or a
  // merge of several when a union delivered them out of order.
  // An argument column as the per-row loop reads it: no indirection through Column and Buffer.
  struct ArgView {
    const uint8_t* validity;  // null when there is no NULL
    const void* values;
    bool IsValid(int64_t row) const { return !validity || bitmap::Get(validity, row); }
    int64_t I64(int64_t row) const { return static_cast<const int64_t*>(values)[row]; }
    double F64(int64_t row) const { return static_cast<const double*>(values)[row]; }
    static ArgView Of(const Column& c) { return {c.has_nulls() ? c.validity.data : nullptr, c.values.data}; }
  };
  struct Chunk {
    TimeColumn sync;
    Columns args;
    std::vector<ArgView> views;  // of args
    Buffer groups;  // uint32 per row
    Buffer signs;   // kNegative: int8 per row, +1 for a positive tuple, -1 for a negative one
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
  // The per-row and per-result helpers take the number of aggregates as a template argument
  // when it is 1 (the commonest query), so that their loops over aggregates disappear; 0 means
  // na_.
  template <size_t kNa>
  void ApplyRow(const ArgView* views, const Column* args, int64_t row, uint32_t g, int64_t sign);
  void ApplyMultiset(const Agg& agg, const Column& c, int64_t row, uint32_t g, int64_t sign);
  // The groups touched at instant t get their new results.
  template <size_t kNa>
  void EndInstant(Time t);
  template <size_t kNa>
  Value Compute(uint32_t g, size_t a, std::string* s) const;
  template <size_t kNa>
  void Open(uint32_t g, Time t);
  template <size_t kNa>
  void Close(uint32_t g, Time t);
  template <size_t kNa>
  void AppendRow(uint32_t g, Time start, Time end, const Value* values, const std::string* strs);

  // kConstant / kNegative
  bool Valid(const Cursor& c) const { return c.chunk < chunks_.size(); }
  // Moves c past empty chunk ends and unpacks its chunk.
  void Load(Cursor& c) const;
  void Step(Cursor& c) const {
    if (++c.row >= c.length) Load(c);
  }
  void RunOrdered(Time progress);
  template <typename T, size_t kNa>
  void RunInstants(Time progress);

  std::vector<std::unique_ptr<Expression>> keys_;
  std::vector<Agg> aggs_;
  size_t na_ = 0;  // aggs_.size()
  Schema output_;
  std::shared_ptr<const Schema> shared_output_;
  Input input_;
  ExpirationPolicy policy_;
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
  std::vector<Value> current_;  // the open result's values
  std::vector<std::string> current_str_;
  std::vector<uint32_t> touched_;  // groups touched at the current instant: the first touched_count_
  size_t touched_count_ = 0;
  std::vector<Value> now_;            // scratch: a group's new values
  std::vector<std::string> now_str_;

  // kConstant / kNegative
  std::optional<Duration> duration_;
  std::vector<Chunk> chunks_;
  Cursor next_start_, next_end_;  // the next start (kNegative: event) and, kConstant, the next end
  Time max_sync_ = Time::MinusInfinity();
  int64_t retained_ = 0;  // rows ever retained: the next chunk's base
  // kGeneral
  std::unique_ptr<InstantTracker> tracker_;
  std::shared_ptr<const Schema> derived_schema_;  // arguments, then the group id
  size_t nargs_ = 0;  // argument columns (the tracked rows' columns before the group id)
  InstantTracker::Changes changes_;  // what the tracker hands over, kept for its capacity
  // Applies changes_ to the groups.
  template <size_t kNa>
  void RunChanges();

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
