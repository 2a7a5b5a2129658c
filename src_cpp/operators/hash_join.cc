// The join's batch form: a thin driver over its one state (operators/hash_join_state.h) kept in
// the batch store — the input batches whole, keys computed a batch at a time — whose results of a
// round are gathered column by column into one batch, the residual predicate evaluated over it.
#include "operators/hash_join.h"

#include <algorithm>

#include "base/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"
#include "rows/row_operator.h"

namespace cq {

namespace {

// The state written in the one format and read into a core of the other store.
template <typename To, typename From>
std::unique_ptr<To> MoveState(const From& from, const JoinSpec& spec) {
  SnapshotWriter w;
  from.Write(w);
  auto to = std::make_unique<To>(spec);
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  r.set_holder_capacity(spec.holders->capacity());
  to->Read(r);
  CQ_CHECK(r.left() == 0, "a join's state did not move whole");
  return to;
}

}  // namespace

HashJoin::HashJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
                   std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual,
                   bool negative, HolderTable* holders, ExpirationPolicy policy, const std::vector<int64_t>& windows)
    : residual_(std::move(residual)) {
  schema_ = left;
  schema_.insert(schema_.end(), right.begin(), right.end());
  for (int64_t w : windows) shrink_.push_back(Duration::Ticks(windows.back() - w));
  if (shared()) schema_.push_back({"slice", TypeId::kInt64});
  shared_ = std::make_shared<const Schema>(schema_);
  keys_[0] = std::move(left_keys);
  keys_[1] = std::move(right_keys);
  CQ_CHECK(keys_[0].size() == keys_[1].size(), "join keys differ in number");
  spec_.input[0] = left;
  spec_.input[1] = right;
  for (size_t c = 0; c < keys_[0].size(); ++c) {
    CQ_CHECK(keys_[0][c]->type() == keys_[1][c]->type(), "join keys differ in type");
    spec_.key_types.push_back(keys_[0][c]->type());
  }
  for (int side = 0; side < 2; ++side)
    for (const auto& k : keys_[side]) spec_.keys[side].push_back(k.get());
  spec_.negative = negative;
  spec_.holders = holders;
  spec_.policy = policy;
  batch_ = std::make_unique<BatchCore>(spec_);
}

HashJoin::~HashJoin() = default;

HashJoin::BatchCore& HashJoin::batch_core() {
  if (!batch_) {
    batch_ = MoveState<BatchCore>(*rows_, spec_);
    rows_.reset();
  }
  return *batch_;
}

HashJoin::RowCore& HashJoin::row_core() {
  if (!rows_) {
    rows_ = MoveState<RowCore>(*batch_, spec_);
    batch_.reset();
  }
  return *rows_;
}

// The pairs of a round (many rows of both inputs), gathered into one batch when the round ends or
// the pairs grow many.
class HashJoin::BatchSink {
 public:
  using H = JoinBatchStore::Handle;
  BatchSink(HashJoin& j, BatchCore& core, Emitter& out) : j_(j), core_(core), out_(out) {}
  void Begin(int, H) {}
  // Inlined into the probe loop: GCC's own choice moved with unrelated changes (+5 % a pair).
  [[gnu::always_inline]] void Pair(int side, H x, H y, const JoinMeta& xm, const JoinMeta& ym) {
    Time sync, other;
    bool open;
    if (!core_.PairTimes(xm, ym, &sync, &other, &open)) return;
    em_.push_back({side == 0 ? x : y, side == 0 ? y : x, sync, other, open});
    if (em_.size() >= 65536) Flush();
  }
  void Flush();

 private:
  struct Result {
    H l, r;
    Time sync, other;  // as the output row's
    bool open;         // direct: end pending
  };
  HashJoin& j_;
  BatchCore& core_;
  Emitter& out_;
  std::vector<Result> em_;
};

void HashJoin::BatchSink::Flush() {
  const int64_t n = static_cast<int64_t>(em_.size());
  if (n == 0) return;
  Batch o;
  o.kind = BatchKind::kLifetime;
  o.schema = j_.shared_;
  o.length = n;
  // Columns of each side (rows of many kept batches, interleaved).
  std::vector<BatchRow> rows(em_.size());
  for (int side = 0; side < 2; ++side) {
    const JoinBatchStore& s = core_.store(side);
    for (size_t k = 0; k < em_.size(); ++k) {
      const H h = side == 0 ? em_[k].l : em_[k].r;
      rows[k] = {JoinBatchStore::Seq(h), JoinBatchStore::Row(h)};
    }
    auto cols =
        GatherRows([&](uint32_t seq) -> const Batch& { return s.batch(seq); }, rows, j_.spec_.input[side].size());
    for (Column& c : cols) o.columns.push_back(std::move(c));
  }
  if (j_.shared()) {
    Column slice;
    slice.type = TypeId::kInt64;
    slice.length = n;
    slice.values = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) slice.values.as<int64_t>()[i] = j_.SliceOf(em_[i].sync, em_[i].other);
    o.columns.push_back(std::move(slice));
  }
  o.sync.ticks = Buffer::Allocate(n * 8);
  o.other.ticks = Buffer::Allocate(n * 8);
  bool steps = false;
  for (const Result& e : em_) steps |= e.sync.step != 0 || (!e.other.IsInfinite() && e.other.step != 0);
  if (steps) {
    o.sync.steps = Buffer::AllocateZeroed(n * 8);
    o.other.steps = Buffer::AllocateZeroed(n * 8);
  }
  for (int64_t i = 0; i < n; ++i) {
    const Result& e = em_[i];
    o.sync.ticks.as<int64_t>()[i] = e.sync.tick;
    o.other.ticks.as<int64_t>()[i] = e.other.IsInfinite() ? Time::kInfTick : e.other.tick;
    if (steps) {
      o.sync.steps.as<int64_t>()[i] = e.sync.step;
      o.other.steps.as<int64_t>()[i] = e.other.IsInfinite() ? 0 : e.other.step;
    }
  }
  // The residual predicate decides which pairs are results.
  std::vector<uint32_t> keep;
  if (j_.residual_) {
    Column pred = j_.residual_->Evaluate(o);
    for (int64_t i = 0; i < n; ++i)
      if (pred.IsValid(i) && pred.BoolAt(i)) keep.push_back(static_cast<uint32_t>(i));
  } else {
    keep.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) keep[i] = static_cast<uint32_t>(i);
  }
  if (!keep.empty()) {
    bool any_open = false;
    for (uint32_t i : keep) any_open |= em_[i].open;
    if (any_open) {
      o.holders = Buffer::Allocate(n * sizeof(HolderId));
      HolderId* h = o.holders.as<HolderId>();
      for (int64_t i = 0; i < n; ++i) h[i] = kNoHolder;
      for (uint32_t i : keep)
        if (em_[i].open)
          h[i] = core_.results().Open(core_.store(0).meta(em_[i].l), core_.store(1).meta(em_[i].r), j_.spec_.holders);
    }
    if (keep.size() != static_cast<size_t>(n)) {
      o.has_selection = true;
      o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
      std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
      o.selection_count = static_cast<int64_t>(keep.size());
    }
    out_.Emit(o.Compact());
  }
  em_.clear();
}

void HashJoin::Push(int port, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  BatchCore& core = batch_core();
  core.store(port).Push(in, [&](JoinBatchStore::Handle x) { core.Waits(port, x); });
}

void HashJoin::PushEnds(int port, const EndBatch& ends, Emitter& out) {
  if (spec_.negative) return;
  BatchCore& core = batch_core();
  std::vector<JoinOpenResults::Fixed> fixed;
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId id = ends.ids()[k];
    const Time e = ends.ends.At(k);
    // Results with this tuple: fixed now if the other end is known, else once progress reaches e.
    if (core.InputEnd(port, id, e)) core.results().InputEnd(port, id, e, core.progress(), links_, fixed);
  }
  core.results().Resolve(core.progress(), fixed);
  EmitFixed(fixed, out);
}

void HashJoin::EmitFixed(const std::vector<JoinOpenResults::Fixed>& fixed, Emitter& out) {
  if (fixed.empty()) return;
  std::vector<HolderId> ids;
  std::vector<Time> at;
  for (const auto& f : fixed) {
    ids.push_back(f.id);
    at.push_back(f.end);
  }
  EndBatch eb;
  eb.length = static_cast<int64_t>(ids.size());
  eb.holders = Buffer::Allocate(eb.length * sizeof(HolderId));
  std::copy(ids.begin(), ids.end(), eb.holders.as<HolderId>());
  eb.ends = MakeTimeColumn(at);
  out.EmitEnds(eb);
  spec_.holders->Release(ids.data(), eb.length);  // every consumer has seen them
}

Time HashJoin::next_firing(int64_t) const {
  // Rows waiting for the other side, and results whose end waits for progress to reach it.
  const auto next = [&](const auto& core) {
    Time t = core.NextRow();
    if (!spec_.negative) t = std::min(t, core.results().next_end());
    return t;
  };
  return batch_ ? next(*batch_) : next(*rows_);
}

void HashJoin::AdvanceTo(Time progress, Emitter& out) {
  BatchCore& core = batch_core();
  core.set_progress(progress);
  BatchSink sink(*this, core, out);
  core.Drain(progress, true, sink);
  sink.Flush();
  if (!spec_.negative) {
    core.Expire(0, progress);
    core.Expire(1, progress);
    std::vector<JoinOpenResults::Fixed> fixed;
    core.results().Resolve(progress, fixed);
    EmitFixed(fixed, out);
  }
  core.store(0).Trim();
  core.store(1).Trim();
}

std::string HashJoin::Explain() const {
  return std::string(keys_[0].empty() ? "Join (nested loops)" : "HashJoin") +
         (spec_.negative ? " (negative tuples)" : "");
}

void HashJoin::Snapshot(SnapshotWriter& w) const {
  if (batch_) batch_->Write(w);
  else rows_->Write(w);
}

void HashJoin::Restore(SnapshotReader& r) {
  // Into a new state, in the store of the form that runs.
  if (batch_) {
    auto core = std::make_unique<BatchCore>(spec_);
    core->Read(r);
    batch_ = std::move(core);
  } else {
    auto core = std::make_unique<RowCore>(spec_);
    core->Read(r);
    rows_ = std::move(core);
  }
}

void RegisterHashJoin(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "join",
              .description = "a query over several sources (join)",
              .output = D::Output::kRelation,
              .lifetimes = D::Lifetimes::kJoin,
              .partition = D::Partition::kOnJoinKeys,
              .columns = D::Columns::kConcat},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               JoinExpressions e = CompileJoinSpec(s, in);
               return std::make_unique<HashJoin>(*in[0].schema, *in[1].schema, std::move(e.keys[0]),
                                                 std::move(e.keys[1]), std::move(e.residual), ctx.negative, ctx.holders,
                                                 PlannedPolicy(s.params));
             });
}

JoinExpressions CompileJoinSpec(const OperatorSpec& s, const std::vector<OperatorInput>& in) {
  CQ_CHECK(in.size() == 2 && in[0].kind == BatchKind::kLifetime && in[1].kind == BatchKind::kLifetime,
           "a join reads two relations");
  JoinExpressions out;
  for (const json::Value& e : s.params["left_keys"].array())
    out.keys[0].push_back(Expression::Compile(e, *in[0].schema));
  for (const json::Value& e : s.params["right_keys"].array())
    out.keys[1].push_back(Expression::Compile(e, *in[1].schema));
  Schema both = *in[0].schema;
  both.insert(both.end(), in[1].schema->begin(), in[1].schema->end());
  if (const json::Value* res = s.params.find("residual"); res && !res->is_null())
    out.residual = Expression::Compile(*res, both);
  return out;
}

}  // namespace cq
