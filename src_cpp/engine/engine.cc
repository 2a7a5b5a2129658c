#include "engine/engine.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "base/json.h"
#include "batch/buffer.h"
#include "executors/dts/dts_executor.h"
#include "executors/heartbeat/heartbeat_executor.h"
#include "executors/scheduled/scheduled_executor.h"
#include "operators/registry.h"
#include "operators/relation_scan.h"
#include "operators/stream_scan.h"
#include "operators/swj_bounded.h"
#include "plan/plan_util.h"

namespace cq {

namespace {

// The operator that its descriptor's role says it is: a cast checked in debug builds (DuckDB's
// PhysicalOperator::Cast<T>), where a dynamic_cast per operator would ask the type again.
template <class T>
T& As(Operator& op) {
  assert(dynamic_cast<T*>(&op) != nullptr);
  return static_cast<T&>(op);
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
  KeepWorkingMemory();
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"max_loop_steps", options_.max_loop_steps},
                                    {"max_loop_ticks", options_.max_loop_ticks},
                                    {"max_loop_rows", options_.max_loop_rows}})
    if (value < 1)
      throw CqError(ErrorKind::kSemantic, std::string(name) + " must be at least 1; found " + std::to_string(value));
  if (options_.max_run < 1)
    throw CqError(ErrorKind::kSemantic, "max_run must be at least 1; found " + std::to_string(options_.max_run));
  if (options_.batch_size < 1)
    throw CqError(ErrorKind::kSemantic, "batch_size must be at least 1; found " + std::to_string(options_.batch_size));
  if (options_.lifetime != "direct" && options_.lifetime != "negative")
    throw CqError(ErrorKind::kSemantic, "lifetime='" + options_.lifetime + "': expected 'direct' or 'negative'");
  txn_->managers = std::make_shared<txn::TransactionManagers>();
  if (!(options_.lock_timeout >= 0))
    throw CqError(ErrorKind::kSemantic,
                  "lock_timeout must be 0 seconds or more; found " + std::to_string(options_.lock_timeout));
  txn_->managers->set_options(
      {txn::StrategyFromName(options_.txn),
       std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(options_.lock_timeout))});
  if (options_.redo != "always" && options_.redo != "on_change")
    throw CqError(ErrorKind::kSemantic, "redo='" + options_.redo + "': expected 'on_change' or 'always'");
  if (options_.txn != "none" && options_.executor != "scheduled")
    throw CqError(ErrorKind::kSemantic, "txn='" + options_.txn +
                                            "' runs under executor='scheduled' only; found "
                                            "executor='" +
                                            options_.executor + "'");
  if (options_.executor == "dts")
    executor_ = std::make_unique<DtsExecutor>(
        options_.hybrid, LoopBounds{options_.max_loop_steps, options_.max_loop_ticks, options_.max_loop_rows});
  else if (options_.executor == "heartbeat")
    executor_ = std::make_unique<HeartbeatExecutor>(options_.max_run, holders_.get());
  else if (options_.executor == "scheduled")
    executor_ = std::make_unique<ScheduledExecutor>(
        sched::Options{options_.scheduler, options_.batch, options_.gatekeeper}, holders_.get(), txn_.get(),
        OperatorContext{holders_.get(), options_.lifetime == "negative", furthest_.get(), least_.get(),
                        Time::MinusInfinity(), txn_.get()},
        options_.redo == "always");
  else
    throw CqError(ErrorKind::kSemantic,
                  "executor='" + options_.executor + "': expected 'dts', 'heartbeat' or 'scheduled'");
}

template <typename F>
void Engine::Run(F&& f) {
  // The queries' results as they stand: what was final before the call. A call that fails half
  // way (a runaway loop) leaves them so, for fetch(), rather than with some of a loop's instants.
  marks_.clear();  // (a member: a push of one row should not allocate for it)
  for (QuerySink* s : SinkList()) marks_.emplace_back(s, s->Mark());
  auto fail = [&](ErrorKind kind, const char* what) {
    failed_ = std::make_unique<CqError>(kind, what);
    for (auto& [s, mark] : marks_) s->Rollback(mark);
    txn_->managers->AbortAll();
  };
  try {
    f();
  } catch (const CqError& e) {
    fail(e.kind(), e.what());
    if (restored_ && e.kind() == ErrorKind::kInternal) throw Inconsistent(e.what());
    throw;
  } catch (const std::exception& e) {
    fail(ErrorKind::kInternal, e.what());
    if (restored_) throw Inconsistent(e.what());
    throw;
  }
}

// Restore checks each operator's state on its own, but not whether the states agree with each
// other (a result an aggregate holds open against the positive its consumer keeps, say): a
// snapshot damaged in such a value restores, and the disagreement shows when the value is used,
// as a broken invariant. In a restored engine that is reported as the snapshot's error.
CqError Engine::Inconsistent(const std::string& what) {
  failed_ = std::make_unique<CqError>(
      ErrorKind::kSnapshot,
      "the state restored from a snapshot is inconsistent (damaged in a way the checks at restore "
      "cannot see, or a bug in cq): " +
          what);
  return *failed_;
}

void Engine::CheckUsable() const {
  if (failed_)
    throw CqError(failed_->kind(), std::string("the engine stopped at an earlier error and cannot go on (create a new "
                                               "Engine): ") +
                                       failed_->what());
}

void Engine::AddPlan(const std::string& plan_json) {
  CheckUsable();
  json::Value plan = json::Parse(plan_json);
  if (const json::Value* drop = plan.find("drop")) {  // (a closed engine may let go of a query)
    Drop(*drop);
    plans_.push_back(plan_json);
    return;
  }
  if (closed_) throw CqError(ErrorKind::kInput, "the engine is closed; no query can be added");
  std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> built;
  // Schemas of the fragment's own operators, for the inputs that refer to them.
  std::map<int, OperatorInput> fresh;
  std::map<std::string, StreamState> new_streams;
  std::map<std::string, int> new_sinks;
  // What each operator of the fragment says it produces: a loop's back edge reads an operator that
  // is built after its reader; what it really produces is checked against this once it is built.
  std::map<int, std::pair<Schema, BatchKind>> declared;
  std::vector<std::pair<int, int>> forward;  // (reader, operator read before it was built)
  // The engine's progress now: what an operator added now reads is seen as it stands here.
  const Time registered_at = *least_;
  std::vector<std::pair<int, int>> replays;  // (an operator built before, its new reader)
  std::map<int, int> new_depth;
  for (const json::Value& o : plan["operators"].array())
    if (const json::Value* out = o.find("output"))
      declared[static_cast<int>(o["id"].integer())] = {
          SchemaFromJson((*out)["schema"]),
          (*out)["kind"].str() == "stream" ? BatchKind::kStream : BatchKind::kLifetime};
  for (const json::Value& o : plan["operators"].array()) {
    OperatorSpec spec;
    spec.id = static_cast<int>(o["id"].integer());
    spec.op = o["op"].str();
    spec.params = o;
    if (const json::Value* ins = o.find("inputs"))
      for (const json::Value& i : ins->array()) spec.inputs.push_back(static_cast<int>(i.integer()));
    int depth = 1;
    for (int in : spec.inputs) {  // (a back edge of a loop reads an operator not built yet: no depth)
      if (auto d = new_depth.find(in); d != new_depth.end()) depth = std::max(depth, d->second + 1);
      else if (auto e = depth_.find(in); e != depth_.end()) depth = std::max(depth, e->second + 1);
    }
    if (depth > kMaxPlanDepth) {
      const json::Value* q = o.find("query");
      throw CqError(
          ErrorKind::kSemantic,
          "queries read each other too deeply: " + std::string(q ? "query '" + q->str() + "'" : "an operator") +
              " would run " + std::to_string(depth) + " operators after its input, and cq runs at most " +
              std::to_string(kMaxPlanDepth) +
              " in a row (a batch is handed down the chain call by call); "
              "read an earlier query of the chain, or split the work over engines");
    }
    new_depth[spec.id] = depth;
    std::vector<OperatorInput> inputs;
    for (int in : spec.inputs) {
      if (auto it = fresh.find(in); it != fresh.end()) {
        inputs.push_back(it->second);
      } else if (auto d = declared.find(in); d != declared.end() && !executor_->op(in)) {
        inputs.push_back({&d->second.first, d->second.second});
        forward.push_back({spec.id, in});
      } else {
        Operator* existing = executor_->op(in);
        CQ_CHECK(existing, "plan refers to unknown operator " + std::to_string(in));
        inputs.push_back({&existing->output_schema(), existing->output_kind()});
      }
    }
    OperatorContext ctx;
    ctx.holders = holders_.get();
    ctx.negative = options_.lifetime == "negative";
    ctx.furthest = furthest_.get();
    ctx.least = least_.get();
    ctx.registered_at = registered_at;
    ctx.txn = txn_.get();
    std::unique_ptr<Operator> op = OperatorRegistry::Global().Create(spec, inputs, ctx);
    fresh[spec.id] = {&op->output_schema(), op->output_kind()};
    using Role = OperatorDescriptor::Role;
    switch (OperatorRegistry::Global().descriptor(spec.op).role) {
      case Role::kStreamSource: {
        const StreamScan& scan = As<StreamScan>(*op);
        CQ_CHECK(!streams_.count(scan.stream()) && !new_streams.count(scan.stream()),
                 "stream '" + scan.stream() + "' registered twice");
        new_streams[scan.stream()] = {spec.id, scan.shared_schema(), advanced_};
        break;
      }
      case Role::kRelationSource: {
        RelationScan& scan = As<RelationScan>(*op);
        CQ_CHECK(!streams_.count(scan.relation()) && !new_streams.count(scan.relation()),
                 "relation '" + scan.relation() + "' registered twice");
        new_streams[scan.relation()] = {spec.id, scan.shared_schema(), advanced_, &scan};
        break;
      }
      case Role::kOutput: {
        const QuerySink& sink = As<QuerySink>(*op);
        CQ_CHECK(!sinks_.count(sink.query()) && !new_sinks.count(sink.query()),
                 "query '" + sink.query() + "' registered twice");
        new_sinks[sink.query()] = spec.id;
        break;
      }
      case Role::kNone: break;
    }
    for (int in : spec.inputs)
      if (!fresh.count(in) && !declared.count(in)) replays.push_back({in, spec.id});
    built.emplace_back(std::move(spec), std::move(op));
  }
  for (const auto& [reader, id] : forward) {
    CQ_CHECK(fresh.count(id), "plan refers to unknown operator " + std::to_string(id));
    const auto& [schema, kind] = declared.at(id);
    bool same = fresh.at(id).kind == kind && fresh.at(id).schema->size() == schema.size();
    for (size_t c = 0; same && c < schema.size(); ++c) same = (*fresh.at(id).schema)[c].type == schema[c].type;
    CQ_CHECK(same,
             "operator " + std::to_string(reader) + " was built for another output of operator " + std::to_string(id));
  }
  executor_->Add(std::move(built));  // atomic; nothing below can fail
  streams_.merge(new_streams);
  sinks_.merge(new_sinks);
  sinks_stale_ = true;
  ++sinks_generation_;
  depth_.merge(new_depth);
  plans_.push_back(plan_json);
  UpdateProgress();  // (a new input may be behind the others)
  Run([&] {
    // What the new operators must still be handed of the ones they read (SEMANTICS.md §4):
    // relations as they stand, delayed rows from now on.
    for (const auto& [producer, reader] : replays)
      for (const Batch& b : executor_->op(producer)->Backlog(registered_at)) executor_->Replay(producer, reader, b);
    PropagateProgress();
  });
}

void Engine::Drop(const json::Value& drop) {
  const std::string query = drop["query"].str();
  const auto sink = sinks_.find(query);
  if (sink == sinks_.end()) throw CqError(ErrorKind::kSemantic, "unknown query '" + query + "': nothing to drop");
  std::vector<int> ids;
  for (const json::Value& i : drop["operators"].array()) ids.push_back(static_cast<int>(i.integer()));
  CQ_CHECK(std::find(ids.begin(), ids.end(), sink->second) != ids.end(),
           "dropping query '" + query + "' keeps its output operator");
  for (const auto& [name, st] : streams_)
    CQ_CHECK(std::find(ids.begin(), ids.end(), st.source_id) == ids.end(),
             "dropping query '" + query + "' would remove input '" + name + "'");
  executor_->Remove(ids);  // atomic; nothing below can fail
  sinks_.erase(sink);
  sinks_stale_ = true;
  ++sinks_generation_;
  for (int id : ids) depth_.erase(id);
}

const Engine::StreamState& Engine::Input(const std::string& stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) {
    std::string known;
    for (const auto& [name, s] : streams_) known += (known.empty() ? "" : ", ") + name;
    throw CqError(ErrorKind::kInput,
                  "unknown stream '" + stream + "'; registered streams: " + (known.empty() ? "(none)" : known), stream);
  }
  return it->second;
}

const Schema& Engine::InputSchema(const std::string& stream) const { return *Input(stream).schema; }

void Engine::Push(const std::string& stream, std::vector<ImportedBatch> batches) {
  CheckUsable();
  StreamState& st = Input(stream);
  if (closed_) throw CqError(ErrorKind::kInput, "the engine is closed; push to '" + stream + "' rejected", stream);

  // 1. Validate everything; nothing changes if anything is rejected.
  Time last = st.progress;
  std::vector<Batch> ready = Prepare(stream, st, std::move(batches), &last, true, {});

  // 2. Run, batch_size rows at a time, as that many pushes would: once a slice's worth of rows
  // has gone in, the input's progress moves to the next row's time before it follows, so that
  // the operators finish the instants below it and let their rows go (ISTREAM keeps every row of
  // an instant not complete yet). Memory then follows the queries' state, not the push's size.
  // Under a transaction strategy, commit operators commit an instant as soon as it is final at
  // them (paper 002 §3.5), not at the push's end: the engine's progress P is where the push
  // reaches, from its start, so that RSTREAM emits each complete instant of it at once.
  if (options_.txn != "none" && !last.IsInfinite()) *furthest_ = std::max(*furthest_, last.tick);
  Run([&] {
    const int64_t slice = options_.batch_size;
    int64_t since = 0;  // rows run since the progress last moved
    for (const Batch& batch : ready) {
      for (int64_t at = 0; at < batch.length; at += slice) {
        const int64_t n = std::min(slice, batch.length - at);
        if (since >= slice) {
          MoveProgress(st, {batch.sync.tick_data()[at], 0});
          since = 0;
        }
        executor_->Push(st.source_id, n == batch.length ? batch : batch.Slice(at, n));
        since += n;
      }
    }
    MoveProgress(st, last);
  });
}

std::vector<Batch> Engine::Prepare(const std::string& stream, const StreamState& st, std::vector<ImportedBatch> batches,
                                   Time* last, bool deletes, std::span<const int64_t> rows) const {
  std::vector<Batch> ready = Validate(stream, st, std::move(batches), last, rows);
  if (st.relation && deletes) {
    // Deletes are checked against the alive copies as the push would change them, before any runs.
    const int64_t r = st.relation->FirstMissingDelete(ready);
    if (r >= 0) {
      int64_t row = r;
      size_t k = 0;
      while (row >= ready[k].length) row -= ready[k++].length;
      const Batch& b = ready[k];
      std::string values;
      for (size_t c = 0; c < st.schema->size(); ++c)
        values += (c ? ", " : "") + (*st.schema)[c].name + "=" + ValueToString(b.columns[c], row);
      const int64_t shown = rows.empty() ? r : rows[static_cast<size_t>(r)];
      throw CqError(ErrorKind::kInput,
                    Describe(stream, st) + ": row " + std::to_string(shown) + " deletes (" + values + ") at ts " +
                        std::to_string(b.sync.tick_data()[row]) +
                        ", which is not in the relation: a delete must match a row inserted before "
                        "it and not deleted yet",
                    stream, shown);
    }
  }
  return ready;
}

void Engine::Check(const std::string& stream, std::vector<ImportedBatch> batches, bool deletes,
                   std::span<const int64_t> rows) const {
  CheckUsable();
  const StreamState& st = Input(stream);
  if (closed_) throw CqError(ErrorKind::kInput, "the engine is closed; push to '" + stream + "' rejected", stream);
  int64_t n = 0;
  for (const ImportedBatch& b : batches) n += b.length;
  if (!rows.empty() && static_cast<int64_t>(rows.size()) != n)
    throw CqError(ErrorKind::kInternal,
                  "Check: " + std::to_string(rows.size()) + " row numbers for " + std::to_string(n) + " rows");
  Time last = st.progress;
  Prepare(stream, st, std::move(batches), &last, deletes, rows);
}

void Engine::AdvanceInput(const std::string& stream, Time t) {
  CheckUsable();
  StreamState& st = Input(stream);
  if (closed_) throw CqError(ErrorKind::kInput, "the engine is closed; progress of '" + stream + "' rejected", stream);
  if (t <= st.progress) return;
  Run([&] { MoveProgress(st, t); });
}

void Engine::AdvanceInputs(const std::vector<std::string>& streams, Time t) {
  CheckUsable();
  std::vector<StreamState*> moved;
  for (const std::string& stream : streams) {
    StreamState& st = Input(stream);
    if (closed_)
      throw CqError(ErrorKind::kInput, "the engine is closed; progress of '" + stream + "' rejected", stream);
    if (st.progress < t) moved.push_back(&st);
  }
  if (moved.empty()) return;
  Run([&] {
    for (StreamState* st : moved) st->progress = t;
    UpdateProgress();
    PropagateProgress();
  });
}

void Engine::MoveProgress(StreamState& st, Time t) {
  if (t <= st.progress) return;
  st.progress = t;
  UpdateProgress();
  PropagateProgress();
}

std::string Engine::Describe(const std::string& name, const StreamState& st) {
  return (st.relation ? "relation '" : "stream '") + name + "'";
}

std::vector<Batch> Engine::Validate(const std::string& stream, const StreamState& st,
                                    std::vector<ImportedBatch> batches, Time* last,
                                    std::span<const int64_t> rows) const {
  const Schema& schema = *st.schema;
  auto what = [&] { return Describe(stream, st); };
  std::vector<Batch> ready;
  int64_t row_base = 0;
  // The row number a message names: the push's own, or the one `rows` gives.
  auto shown = [&](int64_t r) { return rows.empty() ? r : rows[static_cast<size_t>(r)]; };
  for (ImportedBatch& b : batches) {
    // A relation's changes may carry the op column between its columns and the timestamp.
    const bool has_op = st.relation && b.columns.size() == schema.size() + 2;
    if (b.columns.size() != schema.size() + 1 && !has_op)
      throw CqError(ErrorKind::kInput,
                    what() + " expects " + std::to_string(schema.size()) + " columns " + SchemaToString(schema) +
                        (st.relation ? ", optionally an op column," : "") + " and a timestamp; found " +
                        std::to_string(b.columns.size()) + " columns",
                    stream);
    for (size_t c = 0; c < schema.size(); ++c) {
      const Column& col = b.columns[c];
      if (col.type != schema[c].type && col.type != TypeId::kNull)
        throw CqError(ErrorKind::kInput,
                      what() + " column '" + schema[c].name + "': expected " + std::string(TypeName(schema[c].type)) +
                          ", found " + std::string(TypeName(col.type)),
                      stream);
    }
    if (has_op) {
      const Column& op = b.columns[schema.size()];
      if (op.type != TypeId::kUtf8)
        throw CqError(ErrorKind::kInput,
                      what() +
                          ": the op column must hold the strings '+' (insert) or '-' "
                          "(delete); found " +
                          std::string(TypeName(op.type)),
                      stream);
      for (int64_t r = 0; r < b.length; ++r) {
        if (op.IsValid(r) && op.StrAt(r).size() == 1 && (op.StrAt(r)[0] == '+' || op.StrAt(r)[0] == '-')) continue;
        throw CqError(ErrorKind::kInput,
                      what() + ": op at row " + std::to_string(shown(row_base + r)) + " is " + ValueToString(op, r) +
                          "; expected '+' (insert) or '-' (delete)",
                      stream, shown(row_base + r));
      }
    }
    const Column& ts = b.columns.back();
    if (ts.type != TypeId::kInt64)
      throw CqError(ErrorKind::kInput,
                    what() + ": the timestamp must be int64 ticks, found " + std::string(TypeName(ts.type)), stream);
    if (ts.has_nulls()) {
      int64_t r = 0;
      while (ts.IsValid(r)) ++r;
      throw CqError(ErrorKind::kInput, what() + ": null timestamp at row " + std::to_string(shown(row_base + r)),
                    stream, shown(row_base + r));
    }
    const int64_t* t = ts.i64();
    // Inputs sit at step 0 (SEMANTICS.md §2): a row at tick x is acceptable when (x, 0) is not
    // below the progress, which an advance may have set to a later step of the same tick.
    // A branch-free pass first (it vectorizes); the offending row is looked for only on failure.
    bool ordered = b.length == 0 || Time{t[0], 0} >= *last;
    for (int64_t r = 1; r < b.length; ++r) ordered &= t[r] >= t[r - 1];
    // The extremes of int64 stand for ±∞ (time/time.h): a row there would be taken for one.
    auto infinite = [&](int64_t r) {
      return CqError(ErrorKind::kInput,
                     what() + ": row " + std::to_string(shown(row_base + r)) + " has ts " + std::to_string(t[r]) +
                         ", outside the engine's ticks from " + std::to_string(Time::kMinTick + 1) + " to " +
                         std::to_string(Time::kInfTick - 1) + " (the extremes of int64 stand for ±∞)",
                     stream, shown(row_base + r));
    };
    if (!ordered) {
      for (int64_t r = 0; r < b.length; ++r) {
        if (t[r] == Time::kMinTick || t[r] == Time::kInfTick) throw infinite(r);  // (the cause, not the order)
        if (Time{t[r], 0} < *last) {
          const bool in_push = r > 0 || row_base > 0;
          throw CqError(ErrorKind::kInput,
                        what() + ": timestamps must not decrease; row " + std::to_string(shown(row_base + r)) +
                            " has ts " + std::to_string(t[r]) + " after " +
                            (in_push ? "ts " + last->ToString() + " of the row before it"
                                     : last->ToString() + ", the " + (st.relation ? "relation" : "stream") +
                                           "'s progress (its latest timestamp or advance)"),
                        stream, shown(row_base + r));
        }
        *last = {t[r], 0};
      }
    }
    // Rows in order can have the least only first and the greatest only last.
    if (b.length && (t[0] == Time::kMinTick || t[b.length - 1] == Time::kInfTick)) {
      int64_t r = 0;
      while (t[r] != Time::kMinTick && t[r] != Time::kInfTick) ++r;
      throw infinite(r);
    }
    if (b.length) *last = {t[b.length - 1], 0};
    row_base += b.length;
    if (b.length == 0) continue;
    Batch batch;
    batch.kind = BatchKind::kStream;
    batch.schema = st.schema;
    batch.length = b.length;
    batch.sync.ticks = b.columns.back().values;
    b.columns.pop_back();
    for (size_t c = 0; c < schema.size(); ++c)
      if (b.columns[c].type == TypeId::kNull) b.columns[c] = Column::Nulls(schema[c].type, b.length);
    batch.columns = std::move(b.columns);
    ready.push_back(std::move(batch));
  }
  return ready;
}

void Engine::UpdateProgress() {
  Time least = streams_.empty() ? Time::MinusInfinity() : Time::Infinity();
  for (const auto& [name, s] : streams_) {
    least = std::min(least, s.progress);
    if (!s.progress.IsInfinite()) *furthest_ = std::max(*furthest_, s.progress.tick);
  }
  *least_ = least;
}

void Engine::PropagateProgress() {
  // (Filled in place: after the first call it allocates nothing, and it comes after every push.)
  for (const auto& [name, s] : streams_) source_progress_[s.source_id] = s.progress;
  executor_->AdvanceTo(source_progress_);
}

void Engine::Advance(Time t) {
  CheckUsable();
  if (closed_) throw CqError(ErrorKind::kInput, "the engine is closed; advance rejected");
  if (t <= advanced_) return;
  advanced_ = t;
  for (auto& [name, s] : streams_) s.progress = std::max(s.progress, t);
  UpdateProgress();
  Run([&] { PropagateProgress(); });
}

void Engine::Close() {
  if (closed_) return;
  CheckUsable();
  // P stays where the inputs left it: RSTREAM emits every tick up to it (SEMANTICS.md §4.3). First
  // every input goes to P (nothing comes below it now): what is final there reaches the queries
  // even if a loop then runs away past it.
  Time furthest = Time::MinusInfinity();
  for (const auto& [name, s] : streams_) furthest = std::max(furthest, s.progress);
  bool behind = false;
  for (const auto& [name, s] : streams_) behind |= s.progress < furthest;
  if (behind && !furthest.IsInfinite()) {
    for (auto& [name, s] : streams_) s.progress = furthest;
    UpdateProgress();
    Run([&] { PropagateProgress(); });
  }
  advanced_ = Time::Infinity();
  for (auto& [name, s] : streams_) s.progress = Time::Infinity();
  UpdateProgress();
  Run([&] { PropagateProgress(); });
  closed_ = true;
}

QuerySink* Engine::Sink(const std::string& query) const {
  auto it = sinks_.find(query);
  if (it == sinks_.end()) {
    std::string known;
    for (const auto& [name, id] : sinks_) known += (known.empty() ? "" : ", ") + name;
    throw CqError(ErrorKind::kSemantic,
                  "unknown query '" + query + "'; registered queries: " + (known.empty() ? "(none)" : known));
  }
  return static_cast<QuerySink*>(executor_->op(it->second));
}

std::vector<OutputChunk> Engine::Drain(const std::string& query) { return Sink(query)->Drain(); }

const std::vector<QuerySink*>& Engine::SinkList() {
  if (sinks_stale_) {
    sink_list_.clear();
    for (const auto& [name, id] : sinks_) sink_list_.push_back(static_cast<QuerySink*>(executor_->op(id)));
    sinks_stale_ = false;
  }
  return sink_list_;
}

void Engine::Watch(const std::vector<std::string>& queries) {
  for (const std::string& q : queries) Sink(q);  // (an unknown name throws; nothing changes)
  watched_ = queries;
  watched_generation_ = ~uint64_t{0};
}

std::vector<std::pair<size_t, std::vector<OutputChunk>>> Engine::DrainWatched() {
  if (watched_generation_ != sinks_generation_) {
    watched_sinks_.clear();
    for (const std::string& q : watched_) {
      auto it = sinks_.find(q);  // (a query dropped since is not drained)
      watched_sinks_.push_back(it == sinks_.end() ? nullptr : static_cast<QuerySink*>(executor_->op(it->second)));
    }
    watched_generation_ = sinks_generation_;
  }
  std::vector<std::pair<size_t, std::vector<OutputChunk>>> out;
  for (size_t k = 0; k < watched_sinks_.size(); ++k)
    if (QuerySink* s = watched_sinks_[k])
      if (std::vector<OutputChunk> chunks = s->Drain(); !chunks.empty()) out.emplace_back(k, std::move(chunks));
  return out;
}

const Schema& Engine::OutputSchema(const std::string& query) const { return Sink(query)->output_schema(); }

std::vector<std::string> Engine::Queries() const {
  std::vector<std::string> q;
  for (const auto& [name, id] : sinks_) q.push_back(name);
  return q;
}

std::vector<std::pair<int, int64_t>> Engine::Evaluations() const {
  if (!executor_->counts_evaluations())
    throw CqError(ErrorKind::kInput,
                  "evaluations are counted under executor='scheduled' or 'heartbeat'; found "
                  "executor='" +
                      options_.executor + "'");
  std::vector<std::pair<int, int64_t>> out;
  for (int id : executor_->order()) out.emplace_back(id, executor_->evaluations(id));
  return out;
}

std::string Engine::Explain() const {
  std::string s;
  for (int id : executor_->order()) {
    s += '#';
    s += std::to_string(id);
    const auto& ins = executor_->inputs(id);
    if (!ins.empty()) {
      s += " <- ";
      for (size_t i = 0; i < ins.size(); ++i) {
        s += i ? ", #" : "#";
        s += std::to_string(ins[i]);
      }
    }
    s += ": " + executor_->op(id)->Explain();
    if (const std::string f = executor_->form(id); f != "batch") s += " [" + f + "]";
    s += "\n";
  }
  return s;
}

std::string Engine::SharedJoinReport(int id) const {
  for (int op : executor_->order())
    if (op == id)
      if (const auto* j = dynamic_cast<const SwjBounded*>(executor_->op(id))) return j->Report();
  throw CqError(ErrorKind::kInput, "operator #" + std::to_string(id) + " is not a bounded shared window join");
}

// ---- snapshots ---------------------------------------------------------------------------------
//
// Layout: a 32-byte header — magic, format version, flags (0), payload size, payload checksum —
// then the payload: the annex, the options, the plans (the text of every AddPlan call), then the
// state: holder table, inputs' progress, the executor's state, and one section per operator in
// execution order, each headed by the operator's id and explain() line.

namespace {

constexpr char kMagic[8] = {'C', 'Q', 'S', 'N', 'A', 'P', '\r', '\n'};
// 2: structs written field by field (no padding bytes), so that the same state gives the same bytes.
// 3: the aggregate writes one state for both its forms (operators/aggregate.h).
// 4: so do the Negative Tuple windows and UNION ALL: their row forms write nothing of their own.
//    ISTREAM, DSTREAM, RSTREAM and the aggregate write their input's one tracker state
//    (rows/instants.h), whichever form holds it.
//    The hash join writes one state for both its forms (operators/hash_join_state.h).
// 5: so does the query output: its row form writes nothing of its own (operators/query_sink.h).
// 6: the tracker state writes one format, the batch representation's, whichever form holds it.
// 7: the bounded shared join writes its work counters (operators/swj_bounded.h).
// 8: an ISTREAM over a shared join's route is one operator with a state of its own (the pairs
//    not yet ended: operators/swj_route_istream.h) where there were a route and an ISTREAM.
// 9: a MASTER part shared by a base group has one master trigger, its members filters over it
//    (cq_py/planner/master_sharing.py), where each member had a trigger of its own.
constexpr uint32_t kFormatVersion = 9;
constexpr size_t kHeaderSize = 32;

}  // namespace

namespace {

std::string OptionsText(const EngineOptions& o) {
  return "lifetime='" + o.lifetime + "', executor='" + o.executor +
         "', expose_steps=" + (o.expose_steps ? "true" : "false") + ", hybrid=" + (o.hybrid ? "true" : "false") +
         ", max_loop_steps=" + std::to_string(o.max_loop_steps) + ", max_run=" + std::to_string(o.max_run);
}

CqError SnapshotMismatch(const std::string& what) {
  return CqError(ErrorKind::kSnapshot, "the snapshot does not fit this engine: " + what);
}

}  // namespace

std::string Engine::Snapshot(std::string_view annex) const {
  CheckUsable();
  if (options_.executor == "scheduled")
    throw CqError(ErrorKind::kSnapshot,
                  "engine snapshots are supported under executor='dts' and 'heartbeat'; this engine runs "
                  "executor='scheduled'");
  SnapshotWriter w;
  std::string& out = w.bytes();
  out.assign(kHeaderSize, '\0');
  w.Str(annex);
  w.Str(options_.lifetime);
  w.Str(options_.executor);
  w.Bool(options_.expose_steps);
  w.Bool(options_.hybrid);
  w.I64(options_.max_loop_steps);
  w.I64(options_.max_run);
  w.U64(plans_.size());
  for (const std::string& p : plans_) w.Str(p);

  holders_->Snapshot(w);
  w.U64(streams_.size());
  for (const auto& [name, st] : streams_) {
    w.Str(name);
    w.Pod(st.progress);
  }
  w.Pod(advanced_);
  w.Bool(closed_);
  size_t at = w.Begin();
  executor_->Snapshot(w);
  w.End(at);
  w.U64(executor_->order().size());
  for (int id : executor_->order()) {
    const Operator* op = executor_->op(id);
    w.I64(id);
    w.Str(op->Explain());
    at = w.Begin();
    executor_->SnapshotOperator(id, w);
    w.End(at);
  }

  const uint64_t size = out.size() - kHeaderSize;
  const uint64_t sum = SnapshotChecksum(out.data() + kHeaderSize, size);
  std::memcpy(out.data(), kMagic, 8);
  std::memcpy(out.data() + 8, &kFormatVersion, 4);
  std::memcpy(out.data() + 16, &size, 8);
  std::memcpy(out.data() + 24, &sum, 8);
  return std::move(out);
}

std::string_view Engine::SnapshotPayload(std::string_view s) {
  if (s.size() < kHeaderSize || std::memcmp(s.data(), kMagic, 8) != 0)
    throw CqError(ErrorKind::kSnapshot, s.size() < kHeaderSize && s.size() >= 8 && std::memcmp(s.data(), kMagic, 8) == 0
                                            ? "not a valid cq snapshot: it ends in its header (truncated)"
                                            : "not a cq snapshot (its first bytes are not a snapshot's)");
  uint32_t version, flags;
  uint64_t size, sum;
  std::memcpy(&version, s.data() + 8, 4);
  std::memcpy(&flags, s.data() + 12, 4);
  std::memcpy(&size, s.data() + 16, 8);
  std::memcpy(&sum, s.data() + 24, 8);
  if (version != kFormatVersion)
    throw CqError(ErrorKind::kSnapshot, "the snapshot has format version " + std::to_string(version) +
                                            "; this cq reads version " + std::to_string(kFormatVersion));
  if (flags != 0) SnapshotReader::Corrupt("unknown header flags");
  const uint64_t have = s.size() - kHeaderSize;
  if (size != have)
    SnapshotReader::Corrupt(size > have ? "it is truncated (" + std::to_string(have) + " of " + std::to_string(size) +
                                              " payload bytes)"
                                        : std::to_string(have - size) + " bytes follow its end");
  if (SnapshotChecksum(s.data() + kHeaderSize, size) != sum)
    SnapshotReader::Corrupt("its checksum does not match (damaged)");
  return s.substr(kHeaderSize);
}

std::string Engine::SnapshotAnnex(std::string_view snapshot) {
  const std::string_view payload = SnapshotPayload(snapshot);
  SnapshotReader r(payload.data(), payload.size());
  return r.Str();
}

void Engine::Restore(std::string_view snapshot) {
  const std::string_view payload = SnapshotPayload(snapshot);
  SnapshotReader r(payload.data(), payload.size());
  r.Str();  // the annex: the caller's
  EngineOptions o;
  o.lifetime = r.Str();
  o.executor = r.Str();
  o.expose_steps = r.Bool();
  o.hybrid = r.Bool();
  o.max_loop_steps = r.I64();
  o.max_run = r.I64();
  if (OptionsText(o) != OptionsText(options_))
    throw SnapshotMismatch("it was taken with options " + Printable(OptionsText(o)) + "; this engine has " +
                           OptionsText(options_));
  if (options_.executor == "scheduled")
    throw CqError(ErrorKind::kSnapshot, "engine snapshots are supported under executor='dts' and 'heartbeat'");
  const size_t plans = r.Count(8);
  if (plans != plans_.size())
    throw SnapshotMismatch("it was taken after " + std::to_string(plans) +
                           " plan fragments (AddPlan calls; one per "
                           "CQL text that registered operators); this engine has " +
                           std::to_string(plans_.size()));
  for (size_t k = 0; k < plans; ++k) {
    const std::string p = r.Str();
    if (p == plans_[k]) continue;
    size_t at = 0;
    while (at < p.size() && at < plans_[k].size() && p[at] == plans_[k][at]) ++at;
    const size_t from = at < 40 ? 0 : at - 40;
    throw SnapshotMismatch("plan fragment " + std::to_string(k + 1) + " differs at byte " + std::to_string(at) +
                           ": the snapshot's has ..." + Printable(p.substr(from, 80)) + "..., this engine's ..." +
                           Printable(plans_[k].substr(from, 80)) + "...");
  }
  // The state goes into a rebuilt engine, which replaces this one only once all of it is read:
  // on any error this engine stays as it was.
  Engine fresh(options_);
  for (const std::string& p : plans_) fresh.AddPlan(p);
  SnapshotReader::Guarded([&] { fresh.RestoreState(r); });
  if (r.left() != 0) SnapshotReader::Corrupt(std::to_string(r.left()) + " bytes follow the last operator's state");
  std::swap(holders_, fresh.holders_);
  std::swap(depth_, fresh.depth_);
  std::swap(furthest_, fresh.furthest_);
  std::swap(least_, fresh.least_);
  std::swap(executor_, fresh.executor_);
  std::swap(streams_, fresh.streams_);
  std::swap(sinks_, fresh.sinks_);
  sinks_stale_ = true;
  ++sinks_generation_;
  std::swap(advanced_, fresh.advanced_);
  std::swap(closed_, fresh.closed_);
  std::swap(failed_, fresh.failed_);
  restored_ = true;
}

void Engine::RestoreState(SnapshotReader& r) {
  {
    auto in = r.In("the expiration holder table");
    holders_->Restore(r);
  }
  r.set_holder_capacity(holders_->capacity());
  const size_t streams = r.Count(17);
  if (streams != streams_.size())
    throw SnapshotMismatch("it has " + std::to_string(streams) + " inputs; this engine has " +
                           std::to_string(streams_.size()));
  for (auto& [name, st] : streams_) {
    const std::string n = r.Str();
    if (n != name)
      throw SnapshotMismatch("it has an input '" + Printable(n) + "' where this engine has '" + name + "'");
    st.progress = r.TimeValue("an input's progress");
  }
  advanced_ = r.TimeValue("the engine's progress");
  closed_ = r.Bool();
  // An advance moves every input at least as far; close() moves everything to the end.
  for (const auto& [name, st] : streams_) {
    if (st.progress < advanced_ || st.progress.IsInfinite() != closed_)
      SnapshotReader::Corrupt("input '" + name + "' is at " + SnapshotReader::Show(st.progress) + ", the engine at " +
                              SnapshotReader::Show(advanced_) + (closed_ ? ", closed" : ", open"));
  }
  if (advanced_.IsInfinite() != closed_) SnapshotReader::Corrupt("the engine's progress and its closed flag differ");
  std::map<int, Time> sources;
  for (const auto& [name, st] : streams_) sources[st.source_id] = st.progress;
  UpdateProgress();  // (after close() no operator reads it any more)
  r.Section("the executor's state", [&] { executor_->Restore(r, sources); });
  const size_t ops = r.Count(17);
  if (ops != executor_->order().size())
    throw SnapshotMismatch("it has " + std::to_string(ops) + " operators; this engine has " +
                           std::to_string(executor_->order().size()));
  for (int id : executor_->order()) {
    Operator* op = executor_->op(id);
    const int64_t sid = r.I64();
    const std::string name = r.Str();
    const std::string what = "operator #" + std::to_string(id) + " (" + op->Explain() + ")";
    if (sid != id || name != op->Explain())
      throw SnapshotMismatch("it has operator #" + std::to_string(sid) + " (" + Printable(name) +
                             ") where this engine has " + what);
    r.Section("the state of " + what, [&] { executor_->RestoreOperator(id, r); });
  }
}

}  // namespace cq

namespace cq {

void Engine::BindResource(const std::string& name, std::shared_ptr<txn::Resource> resource) {
  txn_->resources[name] = std::move(resource);
}

void Engine::BindModel(const std::string& name, std::shared_ptr<txn::Model> model) {
  txn_->models[name] = std::move(model);
}

}  // namespace cq
