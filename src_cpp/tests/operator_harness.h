#pragma once
// A harness for stateful operators (issue 28; operators/ADDING_AN_OPERATOR.md): an operator built
// from its spec through the registry, as the planner builds it, is driven with random time-ordered
// input (seeded) in every way the engine may drive it, and every way must give the same result:
//
//   batch      the batch form: batches of random sizes, progress at random points (the reference)
//   rows       the row form, instant by instant, as a loop region drives it
//   snapshot   the batch form snapshotted between two input events (with its holder table), a new
//              operator built from the spec and restored from the bytes, and run on
//   to rows    the batch form until a random input event, then its row form, asked for then
//              (Operator::ToRows after the batch form ran: the state is kept); the other way,
//              the row form, then the batch form; and there and back (batch, rows, batch)
//   negative   the operator built for the Negative Tuple method, its input as positive tuples at
//              their starts and negative tuples at their ends (in batch form, in row form, turned
//              into rows half way and back, each cut by a snapshot too) — where the operator has
//              that variant
// and the row form and a switch, each cut by a snapshot too. "The same result": the same
// relation at every instant; with OperatorCase::exact, the same tuples (values, start, end).
//
// Input tuples live [start, end): a known end (a ghost when end = start), none (they never end), or
// one pending behind an expiration holder, fixed at its end's instant (or at close, as ∞), or
// never. Their values come from small domains, so that keys meet; NULLs now and then; doubles are
// multiples of 1/4, so that any order of adding them gives the same sum.
//
//   OperatorCase c;  // the spec, its input ports
//   for (uint64_t seed = 1; seed <= 40; ++seed) harness::ExpectFormsAgree(c, seed);
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "base/json.h"
#include "batch/snapshot.h"
#include "lifetime/expiration_holder.h"
#include "operators/operator.h"
#include "operators/registry.h"
#include "rows/row.h"
#include "rows/row_operator.h"
#include "tests/test_util.h"

namespace cq::test::harness {

// A value of an input or output column: NULL, int64, double, bool or string.
using Cell = std::variant<std::monostate, int64_t, double, bool, std::string>;

inline std::string ShowCell(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return "NULL";
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&c)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&c)) return "'" + *s + "'";
  std::ostringstream os;
  os.precision(17);
  os << std::get<double>(c);
  return os.str();
}

inline std::string ShowTime(Time t) {
  if (t.IsInfinite()) return "inf";
  return std::to_string(t.tick) + (t.step ? "+" + std::to_string(t.step) + "e" : "");
}

struct Port {
  Schema schema;
  BatchKind kind = BatchKind::kLifetime;
};

struct InputTuple;
class Recorder;

struct OperatorCase {
  std::string name;
  std::string spec;  // the operator's spec object: {"op": ..., its parameters}
  std::vector<Port> inputs;
  // Every input tuple lives this long (the spec plans its input so: "lifetime": "constant").
  std::optional<Duration> constant;
  bool negative = true;  // it has a Negative Tuple variant (OperatorContext::negative)
  bool exact = true;     // the same tuples, not only the same relation at every instant
  // Its Negative Tuple variant passes ghosts on (a positive and its negative at one instant make
  // results at that instant, as a join's do): the variant's runs agree with each other exactly,
  // and with the direct method's results but for those ghosts.
  bool negative_ghosts = false;
  bool steps = true;    // input instants with ε-steps too
  int64_t ticks = 14;   // input instants span ticks [0, ticks)
  bool rows = true;     // it has a row form (Operator::ToRows)
  bool source = false;  // built with no input operator (a relation's scan): its input comes on port 0
  // Before close, the rows Operator::Backlog(p) hands a query registered at the last instant p are
  // recorded beside the output (the engine's least progress, OperatorContext::least, follows the
  // instants).
  bool backlog = false;
  // The engine's progress P the operator is given (OperatorContext::furthest; RSTREAM reads it):
  // null for none.
  std::optional<int64_t> furthest;
  // A random value of column `col` of port `port`; null: the default domains above.
  std::function<Cell(Rng&, int port, size_t col, TypeId type)> value;
  // Makes the random input one the operator accepts (a relation's deletes need an alive copy):
  // it may change the tuples' values, in time order.
  std::function<void(std::vector<InputTuple>&)> adjust;
  // A query's output emits nothing: its result is read from it after close, into the recorder
  // (Recorder::Record). Its row form gathers (RowOperator::gathers): it is flushed where the
  // executor flushes it, at the end of every call.
  std::function<void(Operator&, Recorder&)> drain;
};

// ---- input -------------------------------------------------------------------------------------

struct InputTuple {
  int port = 0;
  std::vector<Cell> values;
  Time start;
  Time end = Time::Infinity();  // ∞: it never ends
  bool pending = false;         // its end travels later, through an expiration holder
  bool fix_at_close = false;    // pending, end ∞: fixed so at close (else never fixed)
};

// What happens at an instant, in order: a tuple comes (under the negative method its positive),
// its pending end is fixed, or (negative method) its negative comes.
struct Event {
  enum Kind : uint8_t { kTuple, kFix, kNegative } kind;
  size_t tuple;
};
struct Instant {
  Time t;
  std::vector<Event> events;
};

struct Script {
  std::vector<InputTuple> tuples;
  std::vector<Instant> direct, negative;  // the same input for each lifetime method, in time order
};

inline Cell RandomCell(const OperatorCase& c, Rng& rng, int port, size_t col, TypeId type) {
  if (c.value) return c.value(rng, port, col, type);
  if (type == TypeId::kNull || rng.Below(9) == 0) return std::monostate{};
  switch (type) {
    case TypeId::kInt64: return rng.Below(6) - 1;
    case TypeId::kFloat64: return static_cast<double>(rng.Below(13) - 4) / 4;
    case TypeId::kBool: return rng.Below(2) == 0;
    case TypeId::kUtf8: return std::string(1, static_cast<char>('a' + rng.Below(4)));
    case TypeId::kNull: break;
  }
  return std::monostate{};
}

inline Script RandomScript(const OperatorCase& c, Rng& rng) {
  // The instants: ticks, some with an ε-step instant after them.
  std::vector<Time> times;
  for (int64_t t = 0; t < c.ticks; ++t) {
    times.push_back({t, 0});
    if (c.steps && rng.Below(4) == 0) times.push_back({t, 1});
  }
  Script s;
  std::map<Time, std::vector<Event>> direct, negative;            // each instant's events
  std::map<Time, std::vector<Event>> late_direct, late_negative;  // those after its own tuples
  for (size_t i = 0; i < times.size(); ++i) {
    for (int64_t n = rng.Below(4); n > 0; --n) {
      InputTuple in;
      in.port = static_cast<int>(rng.Below(static_cast<int64_t>(c.inputs.size())));
      const Port& port = c.inputs[static_cast<size_t>(in.port)];
      for (size_t col = 0; col < port.schema.size(); ++col)
        in.values.push_back(RandomCell(c, rng, in.port, col, port.schema[col].type));
      in.start = times[i];
      // An end among the next instants, or past the last.
      const size_t j = i + static_cast<size_t>(rng.Below(6));
      const Time later = j < times.size() ? times[j] : Time{c.ticks + static_cast<int64_t>(j - times.size()), 0};
      if (port.kind == BatchKind::kStream) {
        in.end = in.start;
      } else if (c.constant) {
        in.end = in.start + *c.constant;
      } else {
        switch (rng.Below(5)) {
          case 0: break;  // never ends
          case 1: in.end = later; break;
          default:
            in.pending = true;
            switch (rng.Below(6)) {
              case 0: break;  // never fixed
              case 1: in.fix_at_close = true; break;
              default: in.end = later;
            }
        }
      }
      const size_t id = s.tuples.size();
      s.tuples.push_back(in);
      direct[in.start].push_back({Event::kTuple, id});
      negative[in.start].push_back({Event::kTuple, id});
      if (port.kind == BatchKind::kStream || in.end.IsInfinite()) continue;
      // What ends at its own start comes after it; what ends later, before that instant's tuples.
      const bool ghost = in.end == in.start;
      if (in.pending) (ghost ? late_direct : direct)[in.end].push_back({Event::kFix, id});
      (ghost ? late_negative : negative)[in.end].push_back({Event::kNegative, id});
    }
  }
  if (c.adjust) c.adjust(s.tuples);
  auto flatten = [](std::map<Time, std::vector<Event>>& at, std::map<Time, std::vector<Event>>& late) {
    for (auto& [t, evs] : late) at[t].insert(at[t].end(), evs.begin(), evs.end());
    std::vector<Instant> out;
    for (auto& [t, evs] : at) out.push_back({t, std::move(evs)});
    return out;
  };
  // (Within an instant, the ends of earlier tuples come first: they were put in before its own
  // tuples were made.)
  s.direct = flatten(direct, late_direct);
  s.negative = flatten(negative, late_negative);
  return s;
}

inline std::string ShowScript(const Script& s, bool negative) {
  std::string out;
  for (const Instant& in : negative ? s.negative : s.direct) {
    out += "  " + ShowTime(in.t) + ":";
    for (const Event& e : in.events) {
      const InputTuple& x = s.tuples[e.tuple];
      out += e.kind == Event::kFix ? " fix#" : e.kind == Event::kNegative ? " neg#" : " #";
      out += std::to_string(e.tuple);
      if (e.kind != Event::kTuple) continue;
      out += "@" + std::to_string(x.port) + "(";
      for (size_t k = 0; k < x.values.size(); ++k) out += (k ? "," : "") + ShowCell(x.values[k]);
      out += ")->" + (x.pending && x.end.IsInfinite() ? std::string(x.fix_at_close ? "close" : "never")
                                                      : ShowTime(x.end) + (x.pending ? "(pending)" : ""));
    }
    out += "\n";
  }
  return out;
}

// ---- output ------------------------------------------------------------------------------------

// What an operator emitted, in either form, read back as tuples over [start, end).
class Recorder final : public Emitter, public RowEmitter {
 public:
  struct Tuple {
    std::string values;
    Time start, end;
    bool operator<(const Tuple& o) const {
      if (values != o.values) return values < o.values;
      if (start != o.start) return start < o.start;
      return end < o.end;
    }
    bool operator==(const Tuple& o) const = default;
  };
  // `negative`: the Negative Tuple method, under which a relation's tuples end as negative tuples
  // (a stream's are only stamped).
  Recorder(const Schema& schema, BatchKind kind, bool negative)
      : schema_(schema), kind_(kind), negative_(negative && kind == BatchKind::kLifetime) {}

  void Emit(Batch b) override {
    const Batch c = b.Compact();
    for (int64_t i = 0; i < c.length; ++i) {
      std::string v;
      for (size_t k = 0; k < c.columns.size(); ++k) v += (k ? "," : "") + ShowCell(CellOf(c.columns[k], i));
      const HolderId h = c.EndPending(i) ? c.holders.as<const HolderId>()[i] : kNoHolder;
      Add(v, c.sync.At(i), kind_ == BatchKind::kStream ? c.sync.At(i) : c.EndAt(i), h);
    }
  }
  void EmitEnds(EndBatch e) override {
    for (int64_t k = 0; k < e.length; ++k) EmitEnd(e.ids()[k], e.ends.At(k));
  }
  void Emit(const Row& r) override {
    std::string v;
    for (size_t k = 0; k < schema_.size(); ++k) v += (k ? "," : "") + ShowCell(CellOf(schema_[k].type, r.values[k]));
    Add(v, r.sync, kind_ == BatchKind::kStream ? r.sync : r.other, r.holder);
  }
  void EmitEnd(HolderId id, Time end) override {
    auto it = open_.find(id);
    if (it == open_.end()) {
      problems_.push_back("an end for holder " + std::to_string(id) + ", which no open tuple has");
      return;
    }
    tuples_[it->second].end = end;
    open_.erase(it);
  }

  // A tuple read from an operator that emits nothing (OperatorCase::drain).
  void Record(const std::string& values, Time start, Time end) { tuples_.push_back({values, start, end}); }

  // The tuples, each with its lifetime (negative method: each positive with the negative that
  // ended it), sorted; and what was wrong with the output itself.
  std::vector<Tuple> Tuples() {
    std::vector<Tuple> out;
    if (!negative_) {
      out = tuples_;
    } else {
      std::multimap<std::pair<std::string, Time>, size_t> open;  // positives not ended
      for (const Tuple& t : tuples_) {
        if (t.end.IsInfinite()) {
          open.emplace(std::make_pair(t.values, t.start), out.size());
          out.push_back(t);
          continue;
        }
        // A negative: sync is its end, other the start of the positive it ends.
        auto it = open.find({t.values, t.end});
        if (it == open.end()) {
          problems_.push_back("a negative tuple (" + t.values + ") at " + ShowTime(t.start) + " for a start " +
                              ShowTime(t.end) + " no positive tuple has");
          continue;
        }
        out[it->second].end = t.start;
        open.erase(it);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::vector<std::string>& problems() const { return problems_; }

  static Cell CellOf(const Column& c, int64_t i) {
    if (c.type == TypeId::kNull || !c.IsValid(i)) return std::monostate{};
    switch (c.type) {
      case TypeId::kInt64: return c.i64()[i];
      case TypeId::kFloat64: return c.f64()[i];
      case TypeId::kBool: return c.BoolAt(i);
      case TypeId::kUtf8: return std::string(c.StrAt(i));
      case TypeId::kNull: break;
    }
    return std::monostate{};
  }

 private:
  static Cell CellOf(TypeId type, const Value& v) {
    if (type == TypeId::kNull || !v.valid) return std::monostate{};
    switch (type) {
      case TypeId::kInt64: return v.i;
      case TypeId::kFloat64: return v.d;
      case TypeId::kBool: return v.i != 0;
      case TypeId::kUtf8: return std::string(v.s->view());
      case TypeId::kNull: break;
    }
    return std::monostate{};
  }
  void Add(const std::string& values, Time sync, Time other, HolderId holder) {
    if (holder != kNoHolder) {
      if (negative_ || !open_.emplace(holder, tuples_.size()).second)
        problems_.push_back("holder " + std::to_string(holder) + " given to a second open tuple");
      other = Time::Infinity();
    }
    tuples_.push_back({values, sync, other});
  }

  Schema schema_;
  BatchKind kind_;
  bool negative_;
  std::vector<Tuple> tuples_;
  std::map<HolderId, size_t> open_;  // output tuples whose end is pending
  std::vector<std::string> problems_;
};

// ---- runs --------------------------------------------------------------------------------------

struct RunOptions {
  std::string name;
  bool negative = false;
  bool rows = false;              // the row form from the start
  size_t to_rows_at = SIZE_MAX;   // the batch form, then from this input event on the row form
  size_t snapshot_at = SIZE_MAX;  // a snapshot, rebuild and restore before this input event
  size_t to_batch_at = SIZE_MAX;  // the row form, then from this input event on the batch form
  uint64_t seed = 1;              // batch sizes and progress
};

// The operator as the planner builds it, with the method the run asks for.
inline std::unique_ptr<Operator> Build(const OperatorCase& c, bool negative, HolderTable* holders,
                                       const Time* least = nullptr) {
  OperatorSpec spec;
  spec.id = 1;
  spec.params = json::Parse(c.spec);
  spec.op = spec.params["op"].str();
  std::vector<OperatorInput> in;
  if (!c.source)
    for (const Port& p : c.inputs) in.push_back({&p.schema, p.kind});
  OperatorContext ctx;
  ctx.holders = holders;
  ctx.least = least;
  ctx.negative = negative;
  ctx.furthest = c.furthest ? &*c.furthest : nullptr;  // (the case outlives the operator)
  return OperatorRegistry::Global().Create(spec, in, ctx);
}

class Run {
 public:
  Run(const OperatorCase& c, const Script& s, const RunOptions& o)
      : c_(c), s_(s), o_(o), rng_(o.seed), ids_(s.tuples.size(), kNoHolder) {
    holders_ = std::make_unique<HolderTable>();
    op_ = Build(c, o.negative, holders_.get(), c.backlog ? &least_ : nullptr);
    rec_ = std::make_unique<Recorder>(op_->output_schema(), op_->output_kind(), o.negative && !c.drain);
    if (o.rows) rows_ = op_->ToRows();
  }

  Recorder& Go() {
    size_t at = 0;  // events delivered
    Time last = Time::MinusInfinity();
    for (const Instant& in : o_.negative ? s_.negative : s_.direct) {
      last = least_ = in.t;
      if (rows_) rows_->AdvanceTo(in.t, *rec_);  // (every input below t is in)
      else if (rng_.Below(3) == 0) Flush(), op_->AdvanceTo(in.t, *rec_);
      for (const Event& e : in.events) {
        // The cuts come between two events, also of one instant (a push may end inside one).
        if (at == o_.to_rows_at) {
          Flush();
          rows_ = op_->ToRows();
          rows_->AdvanceTo(in.t, *rec_);
        }
        if (at == o_.to_batch_at && rows_) {
          rows_->AdvanceTo(in.t, *rec_);
          Gathered();
          rows_.reset();
        }
        if (at == o_.snapshot_at) {
          Flush();
          SnapshotAndRestore();
        }
        ++at;
        if (rows_) PushRow(e);
        else Add(e);
      }
      if (rows_ && rng_.Below(2) == 0) rows_->AdvanceTo(in.t + Duration::Epsilon(), *rec_);
      Gathered();
    }
    Flush();
    if (c_.backlog)  // (from the least progress on: what no form has let go of yet)
      for (const Batch& b : op_->Backlog(last)) rec_->Emit(b);
    // Close: ends fixed as ∞ go out first, then the operator closes.
    for (size_t k = 0; k < s_.tuples.size(); ++k) {
      const InputTuple& x = s_.tuples[k];
      if (o_.negative || !x.fix_at_close) continue;
      if (rows_) {
        rows_->PushEnd(x.port, ids_[k], Time::Infinity(), *rec_);
      } else {
        EndBatch e;
        e.length = 1;
        e.holders = Buffer::Allocate(sizeof(HolderId));
        *e.holders.as<HolderId>() = ids_[k];
        e.ends = MakeTimeColumn({Time::Infinity()});
        op_->PushEnds(x.port, e, *rec_);
      }
    }
    if (rows_) rows_->AdvanceTo(Time::Infinity(), *rec_);
    else op_->AdvanceTo(Time::Infinity(), *rec_);
    Gathered();
    if (c_.drain) c_.drain(*op_, *rec_);
    return *rec_;
  }

 private:
  void Gathered() {
    if (rows_ && rows_->gathers()) rows_->Flush();
  }

  // The batch form's delivery being gathered: tuples of one port, or end fixes of one port.
  struct Gathering {
    int port = -1;
    bool ends = false;
    std::vector<Event> events;
  };

  void Add(const Event& e) {
    const int port = s_.tuples[e.tuple].port;
    const bool ends = e.kind == Event::kFix;
    if (!g_.events.empty() && (g_.port != port || g_.ends != ends || rng_.Below(4) == 0)) Flush();
    g_.port = port;
    g_.ends = ends;
    g_.events.push_back(e);
  }

  void Flush() {
    if (g_.events.empty()) return;
    const Port& port = c_.inputs[static_cast<size_t>(g_.port)];
    if (g_.ends) {
      std::vector<HolderId> ids;
      std::vector<Time> ends;
      for (const Event& e : g_.events) {
        ids.push_back(ids_[e.tuple]);
        ends.push_back(s_.tuples[e.tuple].end);
      }
      EndBatch b;
      b.length = static_cast<int64_t>(ids.size());
      b.holders = Buffer::Allocate(b.length * static_cast<int64_t>(sizeof(HolderId)));
      std::copy(ids.begin(), ids.end(), b.holders.as<HolderId>());
      b.ends = MakeTimeColumn(ends);
      op_->PushEnds(g_.port, b, *rec_);
      holders_->Release(ids.data(), b.length);  // (every consumer has seen the ends)
      g_.events.clear();
      return;
    }
    const int64_t n = static_cast<int64_t>(g_.events.size());
    Batch b;
    b.kind = port.kind;
    b.schema = std::make_shared<const Schema>(port.schema);
    b.length = n;
    for (size_t col = 0; col < port.schema.size(); ++col) {
      std::vector<Cell> cells;
      for (const Event& e : g_.events) cells.push_back(s_.tuples[e.tuple].values[col]);
      b.columns.push_back(ColumnOf(port.schema[col].type, cells));
    }
    std::vector<Time> sync, other;
    std::vector<HolderId> holders(static_cast<size_t>(n), kNoHolder);
    bool pending = false;
    for (size_t k = 0; k < g_.events.size(); ++k) {
      const Event& e = g_.events[k];
      const InputTuple& x = s_.tuples[e.tuple];
      if (e.kind == Event::kNegative) {
        sync.push_back(x.end);
        other.push_back(x.start);
        continue;
      }
      sync.push_back(x.start);
      other.push_back(o_.negative || x.pending ? Time::Infinity() : x.end);
      if (!o_.negative && x.pending) {
        holders[k] = ids_[e.tuple] = holders_->AllocateOne();
        pending = true;
      }
    }
    b.sync = MakeTimeColumn(sync);
    if (port.kind == BatchKind::kLifetime) {
      if (c_.constant && !o_.negative) b.constant_duration = c_.constant;
      else b.other = MakeTimeColumn(other);
    }
    if (pending) {
      b.holders = Buffer::Allocate(n * static_cast<int64_t>(sizeof(HolderId)));
      std::copy(holders.begin(), holders.end(), b.holders.as<HolderId>());
    }
    op_->Push(g_.port, b, *rec_);
    g_.events.clear();
  }

  void PushRow(const Event& e) {
    const InputTuple& x = s_.tuples[e.tuple];
    if (e.kind == Event::kFix) {
      rows_->PushEnd(x.port, ids_[e.tuple], x.end, *rec_);
      holders_->ReleaseOne(ids_[e.tuple]);
      return;
    }
    const Port& port = c_.inputs[static_cast<size_t>(x.port)];
    std::vector<Value> values;
    for (size_t col = 0; col < x.values.size(); ++col) values.push_back(ValueOf(port.schema[col].type, x.values[col]));
    Row r;
    r.values = values.data();
    if (e.kind == Event::kNegative) {
      r.sync = x.end;
      r.other = x.start;
    } else {
      r.sync = x.start;
      r.other = port.kind == BatchKind::kStream || o_.negative || x.pending ? Time::Infinity() : x.end;
      if (!o_.negative && x.pending) r.holder = ids_[e.tuple] = holders_->AllocateOne();
    }
    rows_->Push(x.port, r, *rec_);
    RowLayout(port.schema).Release(values.data());
  }

  // Engine snapshots, as the engine takes them: the holder table, then the operator (and its row
  // form); restored into a new table and an operator built afresh from the spec (its row form
  // asked for first, as the executor replays the plan before it restores).
  void SnapshotAndRestore() {
    Gathered();
    SnapshotWriter w;
    holders_->Snapshot(w);
    op_->Snapshot(w);
    if (rows_) rows_->Snapshot(w);
    // The input's producer holds the ids of the input's pending ends: its state follows (the
    // holder table's restore expects the ids in use to be named by the state after it).
    w.PodVec(ids_);
    auto holders = std::make_unique<HolderTable>();
    std::unique_ptr<Operator> op = Build(c_, o_.negative, holders.get(), c_.backlog ? &least_ : nullptr);
    std::unique_ptr<RowOperator> rows;
    if (rows_) rows = op->ToRows();
    SnapshotReader r(w.bytes().data(), w.bytes().size());
    holders->Restore(r);
    r.set_holder_capacity(holders->capacity());
    op->Restore(r);
    if (rows) rows->Restore(r);
    std::vector<HolderId> ids;
    r.PodVec(ids);
    CQ_EXPECT(ids == ids_);
    CQ_EXPECT_EQ(r.left(), 0u);
    rows_ = std::move(rows);
    op_ = std::move(op);
    holders_ = std::move(holders);
  }

  static Column ColumnOf(TypeId type, const std::vector<Cell>& cells) {
    auto get = [&](auto tag) {
      using T = decltype(tag);
      std::vector<std::optional<T>> v;
      for (const Cell& c : cells)
        v.push_back(std::holds_alternative<T>(c) ? std::optional<T>(std::get<T>(c)) : std::nullopt);
      return v;
    };
    switch (type) {
      case TypeId::kInt64: return I64(get(int64_t{}));
      case TypeId::kFloat64: return F64(get(double{}));
      case TypeId::kBool: return Bool(get(bool{}));
      case TypeId::kUtf8: return Str(get(std::string{}));
      case TypeId::kNull: break;
    }
    return Column::Nulls(TypeId::kNull, static_cast<int64_t>(cells.size()));
  }
  static Value ValueOf(TypeId type, const Cell& c) {
    if (std::holds_alternative<std::monostate>(c)) return Value::Null();
    switch (type) {
      case TypeId::kInt64: return Value::Int(std::get<int64_t>(c));
      case TypeId::kFloat64: return Value::Double(std::get<double>(c));
      case TypeId::kBool: return Value::Bool(std::get<bool>(c));
      case TypeId::kUtf8: return Value::String(std::get<std::string>(c));
      case TypeId::kNull: break;
    }
    return Value::Null();
  }

  const OperatorCase& c_;
  const Script& s_;
  RunOptions o_;
  Rng rng_;
  Time least_ = Time::MinusInfinity();    // the engine's least progress, for OperatorContext::least
  std::unique_ptr<HolderTable> holders_;  // (declared before the operator: it outlives it)
  std::unique_ptr<Operator> op_;
  std::unique_ptr<RowOperator> rows_;  // (after the operator: it goes first)
  std::unique_ptr<Recorder> rec_;
  std::vector<HolderId> ids_;  // by input tuple: its holder while its end is pending
  Gathering g_;
};

// Where a's relation and b's differ: at each instant where some tuple starts or ends, each value
// with its multiplicity in a less than in b (empty: they agree).
inline std::map<Time, std::map<std::string, int64_t>> RelationAtInstants(const std::vector<Recorder::Tuple>& a,
                                                                         const std::vector<Recorder::Tuple>& b) {
  std::set<Time> points;
  for (const auto* v : {&a, &b})
    for (const Recorder::Tuple& t : *v) {
      points.insert(t.start);
      points.insert(t.end);
    }
  std::map<Time, std::map<std::string, int64_t>> out;
  for (Time p : points) {
    auto& r = out[p];
    for (const Recorder::Tuple& t : a)
      if (!(p < t.start) && p < t.end) ++r[t.values];
    for (const Recorder::Tuple& t : b)
      if (!(p < t.start) && p < t.end) --r[t.values];
    std::erase_if(r, [](const auto& kv) { return kv.second == 0; });
    if (r.empty()) out.erase(p);
  }
  return out;
}

inline std::string ShowTuples(const std::vector<Recorder::Tuple>& v) {
  std::string out;
  for (const Recorder::Tuple& t : v)
    out += "  (" + t.values + ") [" + ShowTime(t.start) + ", " + ShowTime(t.end) + ")\n";
  return out;
}

// Runs case `c` on the input of `seed` in every way above and records a failure for each way whose
// result differs from the batch form's. Returns the number of ways that differed.
inline int ExpectFormsAgree(const OperatorCase& c, uint64_t seed) {
  Rng rng(seed);
  const Script s = RandomScript(c, rng);
  size_t n = 0, nn = 0;  // input events
  for (const Instant& in : s.direct) n += in.events.size();
  for (const Instant& in : s.negative) nn += in.events.size();
  auto cut = [&](size_t size) {
    return size < 2 ? SIZE_MAX : 1 + static_cast<size_t>(rng.Below(static_cast<int64_t>(size - 1)));
  };
  std::vector<RunOptions> runs;
  // Each way, for one lifetime method (the first run, the direct method's batch form, is the
  // reference).
  auto method = [&](bool negative, size_t size) {
    const std::string m = negative ? "negative " : "";
    runs.push_back({negative ? "negative" : "batch", negative});
    runs.push_back({m + "rows", negative, true});
    runs.push_back({m + "snapshot", negative, false, SIZE_MAX, cut(size)});
    runs.push_back({m + "to rows", negative, false, cut(size)});
    runs.push_back({m + "rows, snapshot", negative, true, SIZE_MAX, cut(size)});
    const size_t at = cut(size);
    const size_t later = at == SIZE_MAX || at + 1 >= size
                             ? SIZE_MAX
                             : at + 1 + static_cast<size_t>(rng.Below(static_cast<int64_t>(size - at - 1)));
    runs.push_back({m + "to rows, snapshot after", negative, false, at, later});
    RunOptions back{m + "rows, to batch", negative, true};
    back.to_batch_at = cut(size);
    runs.push_back(back);
    // There and back: the state the batch form built taken over by the row form, and back again.
    runs.push_back({m + "to rows, to batch, snapshot", negative, false, at, cut(size), later});
  };
  method(false, n);
  if (c.negative) method(true, nn);
  if (!c.rows)  // (the batch form alone, with and without snapshots)
    std::erase_if(runs, [](const RunOptions& o) { return o.rows || o.to_rows_at != SIZE_MAX; });
  std::vector<Recorder::Tuple> reference, negative_reference;
  bool have_negative_reference = false;  // (an empty result is a reference too)
  auto no_ghosts = [](std::vector<Recorder::Tuple> v) {
    std::erase_if(v, [](const Recorder::Tuple& t) { return t.start == t.end; });
    return v;
  };
  int failed = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    RunOptions& o = runs[k];
    o.seed = seed * 1000 + k;
    Run run(c, s, o);
    Recorder& rec = run.Go();
    std::vector<Recorder::Tuple> got = rec.Tuples();
    std::string why;
    for (const std::string& p : rec.problems()) why += "  " + p + "\n";
    const bool first_negative = o.negative && !have_negative_reference && c.negative_ghosts;
    const std::vector<Recorder::Tuple>& want = o.negative && c.negative_ghosts && !first_negative ? negative_reference
                                               : first_negative                                   ? no_ghosts(reference)
                                                                                                  : reference;
    const std::vector<Recorder::Tuple> have = first_negative ? no_ghosts(got) : got;
    if (first_negative) {
      negative_reference = got;
      have_negative_reference = true;
    }
    if (k == 0) {
      reference = got;
    } else if (c.exact ? have != want : !RelationAtInstants(have, want).empty()) {
      why += "  differs from the " +
             std::string(o.negative && !first_negative && c.negative_ghosts ? "negative " : "") + "batch form's:\n" +
             o.name + ":\n" + ShowTuples(have) + "batch:\n" + ShowTuples(want);
    }
    if (why.empty()) continue;
    ++failed;
    Fail(__FILE__, __LINE__,
         c.name + ", seed " + std::to_string(seed) + ", " + o.name + " (cuts: rows at " +
             (o.to_rows_at == SIZE_MAX ? "-" : std::to_string(o.to_rows_at)) + ", batch at " +
             (o.to_batch_at == SIZE_MAX ? "-" : std::to_string(o.to_batch_at)) + ", snapshot at " +
             (o.snapshot_at == SIZE_MAX ? "-" : std::to_string(o.snapshot_at)) + "):\n" + why + "input:\n" +
             ShowScript(s, o.negative));
  }
  return failed;
}

}  // namespace cq::test::harness
