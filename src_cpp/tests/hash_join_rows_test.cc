// The join's row form (operators/hash_join_rows.cc) against its batch form run through a
// BatchAdapter, both driven as a loop region drives its members (an instant at a time: the rows
// and ends of the instant, then AdvanceTo past it). Random inputs on both sides — known ends,
// ghosts, ends that never come, pending ends fixed later (their ids recycled), under the negative
// method positives and negatives — with an equi-join key on a column, on a computed key, or none,
// with and without a residual predicate. The two outputs must hold the same relation at every
// instant (ghosts aside). The row form also runs with a snapshot and restore in the middle, and
// with a loop's re-entrancy: rows coming back into the join while it emits, and input ends fixed
// in the middle of its emissions.
#include <functional>
#include <map>

#include "batch/snapshot.h"
#include "executors/dts/batch_adapter.h"
#include "operators/hash_join.h"
#include "rows/row_operator.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

const Schema kLeft = {{"a", TypeId::kInt64}, {"b", TypeId::kInt64}};
const Schema kRight = {{"k", TypeId::kInt64}, {"d", TypeId::kInt64}};

enum class Keys { kColumn, kComputed, kNone };
struct Variant {
  Keys keys;
  bool residual;
  bool negative;
};

std::string Column(int i) { return R"({"kind": "column", "index": )" + std::to_string(i) + R"(, "type": "int64"})"; }
std::string Mod3(int i) {
  return R"({"kind": "call", "fn": "modulo", "type": "int64", "args": [)" + Column(i) +
         R"(, {"kind": "literal", "type": "int64", "value": 3}]})";
}

std::unique_ptr<HashJoin> MakeJoin(const Variant& v, HolderTable* holders) {
  std::vector<std::unique_ptr<Expression>> lk, rk;
  if (v.keys != Keys::kNone) {
    const bool computed = v.keys == Keys::kComputed;
    lk.push_back(Expression::Compile(json::Parse(computed ? Mod3(0) : Column(0)), kLeft));
    rk.push_back(Expression::Compile(json::Parse(computed ? Mod3(0) : Column(0)), kRight));
  }
  Schema both = kLeft;
  both.insert(both.end(), kRight.begin(), kRight.end());
  std::unique_ptr<Expression> residual;
  if (v.residual)
    residual = Expression::Compile(json::Parse(R"({"kind": "call", "fn": "less", "type": "bool", "args": [)" +
                                               Column(1) + ", " + Column(3) + "]}"),
                                   both);
  return std::make_unique<HashJoin>(kLeft, kRight, std::move(lk), std::move(rk), std::move(residual), v.negative,
                                    holders);
}

// An input row: its values, its lifetime and, when its end is pending, the instant that fixes it
// (-1: never) and the end. Under the negative method a negative tuple carries `other` = the start
// it ends.
struct Input {
  int port;
  std::optional<int64_t> key;
  int64_t value;
  Time sync, other;
  bool pending;
  int64_t fix = -1;
  Time end;
};
// What happens at an instant, in order: a row goes in, or a pending end is fixed.
struct Action {
  bool end;
  size_t input;
};
struct Script {
  std::vector<Input> inputs;
  std::vector<std::vector<Action>> instants;  // by tick
};

Script RandomScript(Rng& rng, bool negative) {
  const int64_t ticks = 10;
  Script s;
  s.instants.resize(ticks);
  auto key = [&]() -> std::optional<int64_t> {
    if (rng.Below(8) == 0) return std::nullopt;
    return rng.Below(4);
  };
  std::vector<std::vector<Action>> later(ticks);  // fixes and negatives due at each tick
  for (int64_t t = 0; t < ticks; ++t) {
    std::vector<Action>& at = s.instants[t];
    at = later[t];  // what earlier rows fix at t comes before the rows of t
    std::vector<Action> after;
    for (int64_t n = rng.Below(4); n > 0; --n) {
      Input in{static_cast<int>(rng.Below(2)), key(), rng.Below(4), {t, 0}, Time::Infinity(), false, -1, {}};
      const size_t id = s.inputs.size();
      const int64_t until = t + rng.Below(5);
      if (negative) {
        s.inputs.push_back(in);
        at.push_back({false, id});
        if (rng.Below(5) == 0 || until >= ticks) continue;  // never ends
        Input neg = in;
        neg.sync = {until, 0};
        neg.other = in.sync;
        s.inputs.push_back(neg);
        (until == t ? after : later[until]).push_back({false, s.inputs.size() - 1});
        continue;
      }
      switch (rng.Below(4)) {
        case 0: in.other = {until, 0}; break;  // a ghost when until == t
        case 1: break;                         // never ends
        default:
          in.pending = true;
          if (rng.Below(6) != 0 && until < ticks) {
            in.fix = until;
            in.end = {until, 0};
            (until == t ? after : later[until]).push_back({true, id});
          }
      }
      s.inputs.push_back(in);
      at.push_back({false, id});
    }
    at.insert(at.end(), after.begin(), after.end());
  }
  return s;
}

// The relation an operator emitted, read back: each tuple with its lifetime (direct), or the
// positive and negative tuples (negative).
struct Output {
  struct Tuple {
    std::string values;
    Time start, end;
    int sign;
  };
  bool negative = false;
  std::vector<Tuple> tuples;
  std::map<HolderId, size_t> open;

  void Add(const Row& r) {
    std::string v;
    for (int c = 0; c < 4; ++c) v += (c ? "," : "") + (r.values[c].valid ? std::to_string(r.values[c].i) : "-");
    if (r.pending()) {
      CQ_EXPECT(!negative && open.count(r.holder) == 0);  // an id is not given out twice
      open[r.holder] = tuples.size();
      tuples.push_back({v, r.sync, Time::Infinity(), 1});
    } else if (negative) {
      tuples.push_back({v, r.sync, Time::Infinity(), r.other.IsInfinite() ? 1 : -1});
    } else {
      tuples.push_back({v, r.sync, r.other, 1});
    }
  }
  void End(HolderId id, Time end) {
    auto it = open.find(id);
    CQ_ASSERT(it != open.end());
    tuples[it->second].end = end;
    open.erase(it);
  }
  // R(t), each tuple with its multiplicity.
  std::vector<std::string> At(Time t) const {
    std::map<std::string, int64_t> r;
    for (const Tuple& x : tuples) {
      if (negative) {
        if (!(t < x.start)) r[x.values] += x.sign;
      } else if (!(t < x.start) && t < x.end) {
        ++r[x.values];
      }
    }
    std::vector<std::string> out;
    for (const auto& [v, n] : r)
      if (n != 0) out.push_back(v + " x" + std::to_string(n));
    return out;
  }
};

// Runs `script` through the operator `make` builds, as a region does. `snapshot_at`: the operator
// is snapshotted after that instant and a new one restored from it. `loop`: re-entrancy as a loop
// brings it, while the join emits — each third result goes back into the right input at the next
// instant (those rows are added to the script, for the reference to read), and a pending end is
// fixed: one due at the running instant while its rows and ends come in, one due at the next
// instant, at the running instant + ε (the script then says so), while the join advances.
struct Driver : RowEmitter {
  std::function<std::unique_ptr<RowOperator>()> make;
  // The operator whose form `op` is: snapshots write its state, then the form's, as the executor
  // does (DtsExecutor::SnapshotOperator).
  std::function<Operator*()> owner;
  std::unique_ptr<RowOperator> op;
  HolderTable* holders;
  Script* script;
  bool loop = false;
  Output out;
  std::map<size_t, HolderId> ids;  // input -> its holder, while its end is pending
  std::vector<bool> fixed;
  int64_t tick = 0;
  bool pushing = false;
  int64_t results = 0;
  int64_t emitted = 0;       // rows and ends
  bool given = false;        // since the last advance
  size_t looped = SIZE_MAX;  // inputs from this one on came through the loop, delivered by it
  Time now_;

  void Emit(const Row& r) override {
    out.Add(r);
    ++emitted;
    if (!loop) return;
    FixOneDue();
    if (pushing) return;
    // (Rows come back only once every row of the running instant is in: a port's rows come in
    // time order.)
    if (++results % 3 != 0 || r.sync.tick + 1 >= static_cast<int64_t>(script->instants.size())) return;
    Input back{1,
               r.values[0].valid ? std::optional<int64_t>(r.values[0].i) : std::nullopt,
               (r.values[1].i + 1) % 4,
               {r.sync.tick + 1, 0},
               {r.sync.tick + 3, 0},
               false,
               -1,
               {}};
    script->inputs.push_back(back);
    fixed.push_back(false);
    auto& next = script->instants[r.sync.tick + 1];
    next.insert(next.begin(), Action{false, script->inputs.size() - 1});
    Deliver(script->inputs.size() - 1);
  }
  void EmitEnd(HolderId id, Time end) override {
    out.End(id, end);
    ++emitted;
    if (loop) FixOneDue();
  }
  // A pending end fixed while the join is in the middle of an emission; never below its progress.
  void FixOneDue() {
    for (const auto& [input, id] : ids) {
      Input& in = script->inputs[input];
      if (fixed[input] || in.fix != tick + (pushing ? 0 : 1)) continue;
      if (!pushing) in.end = {tick, 1};
      Fix(input);
      return;
    }
  }
  void Fix(size_t input) {
    const Input& in = script->inputs[input];
    auto it = ids.find(input);
    if (fixed[input] || it == ids.end()) return;
    fixed[input] = true;
    const HolderId id = it->second;
    ids.erase(it);
    given = true;
    op->PushEnd(in.port, id, in.end, *this);
    holders->Release(&id, 1);  // as a producer does once the end is out
  }
  void Deliver(size_t input) {
    const Input& in = script->inputs[input];
    ValueBuffer v(2);
    v[0] = in.key ? Value::Int(*in.key) : Value::Null();
    v[1] = Value::Int(in.value);
    Row r;
    r.values = v.data();
    r.sync = in.sync;
    r.other = in.other;
    if (in.pending) {
      holders->Allocate(1, &r.holder);
      ids[input] = r.holder;
    }
    given = true;
    op->Push(in.port, r, *this);
  }

  void Run(int64_t snapshot_at) {
    op = make();
    set_now(&now_);
    fixed.assign(script->inputs.size(), false);
    for (tick = 0; tick < static_cast<int64_t>(script->instants.size()); ++tick) {
      now_ = {tick, 0};
      pushing = true;
      // (Indexed: the loop may add rows to the next instant, never to this one.)
      const std::vector<Action> actions = script->instants[tick];
      for (const Action& a : actions) {
        if (a.end) {
          Fix(a.input);
        } else if (a.input < looped) {
          Deliver(a.input);
        }
      }
      pushing = false;
      // An operator that advances only when due does nothing otherwise (the executor skips it).
      const bool idle = op->advances_when_due() && !given && !(op->next_firing(tick) < Time{tick, 1});
      const int64_t before = emitted;
      op->AdvanceTo({tick, 1}, *this);
      if (idle) CQ_EXPECT_EQ(emitted, before);
      given = false;
      now_ = Time::MinusInfinity();
      CQ_EXPECT(!(op->next_firing(tick) < Time{tick, 1}));
      if (tick == snapshot_at) {
        SnapshotWriter w;
        owner()->Snapshot(w);
        op->Snapshot(w);
        op = make();
        SnapshotReader r(w.bytes().data(), w.bytes().size());
        owner()->Restore(r);
        op->Restore(r);
        CQ_EXPECT_EQ(r.left(), 0);
      }
    }
    op->AdvanceTo(Time::Infinity(), *this);
  }
};

struct Form {
  HolderTable holders;
  std::unique_ptr<HashJoin> join;
  Driver driver;
};

// The batch form through an adapter, as a region runs an operator without a row form.
void RunReference(Form& f, const Variant& v, Script& script) {
  f.driver.out.negative = v.negative;
  f.driver.holders = &f.holders;
  f.driver.script = &script;
  f.driver.make = [&f, v]() -> std::unique_ptr<RowOperator> {
    f.join = MakeJoin(v, &f.holders);
    std::vector<BatchAdapter::Input> ins = {
        {std::make_shared<const Schema>(kLeft), BatchKind::kLifetime, std::nullopt},
        {std::make_shared<const Schema>(kRight), BatchKind::kLifetime, std::nullopt}};
    return std::make_unique<BatchAdapter>(f.join.get(), std::move(ins));
  };
  f.driver.Run(-1);
}

void RunRows(Form& f, const Variant& v, Script& script, int64_t snapshot_at, bool loop) {
  f.driver.out.negative = v.negative;
  f.driver.holders = &f.holders;
  f.driver.script = &script;
  f.driver.loop = loop;
  if (loop) f.driver.looped = script.inputs.size();
  f.driver.make = [&f, v]() -> std::unique_ptr<RowOperator> {
    f.join = MakeJoin(v, &f.holders);
    return f.join->ToRows();
  };
  f.driver.owner = [&f]() -> Operator* { return f.join.get(); };
  f.driver.Run(snapshot_at);
}

void Compare(const Output& got, const Output& want, int64_t ticks, const std::string& what) {
  for (int64_t t = 0; t <= ticks + 6; ++t) {
    const auto g = got.At({t, 0}), w = want.At({t, 0});
    if (g != w) {
      Fail(__FILE__, __LINE__,
           what + " at " + std::to_string(t) + "\n    rows:  " + Show(g) + "\n    batch: " + Show(w));
      return;
    }
  }
}

void CheckVariant(const Variant& v, const std::string& name) {
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    Rng rng(seed * 7919 + static_cast<uint64_t>(v.keys) * 31 + v.residual * 3 + v.negative);
    Script script = RandomScript(rng, v.negative);
    const int64_t ticks = static_cast<int64_t>(script.instants.size());
    Form want;
    RunReference(want, v, script);
    const std::string what = name + " seed " + std::to_string(seed);
    for (bool snapshot : {false, true}) {
      Form got;
      Script copy = script;
      RunRows(got, v, copy, snapshot ? static_cast<int64_t>(seed % ticks) : -1, false);
      Compare(got.driver.out, want.driver.out, ticks, what + (snapshot ? " with a snapshot" : ""));
    }
    if (v.negative) continue;
    // A loop: what the row form emits comes back into it; the reference reads the same inputs.
    Form got;
    Script looped = script;
    RunRows(got, v, looped, -1, true);
    Form ref;
    RunReference(ref, v, looped);
    Compare(got.driver.out, ref.driver.out, ticks, what + " in a loop");
  }
}

CQ_TEST(join_rows_match_batch_on_a_column_key_direct) { CheckVariant({Keys::kColumn, false, false}, "column key"); }
CQ_TEST(join_rows_match_batch_on_a_computed_key_with_residual_direct) {
  CheckVariant({Keys::kComputed, true, false}, "computed key, residual");
}
CQ_TEST(join_rows_match_batch_in_nested_loops_direct) { CheckVariant({Keys::kNone, true, false}, "nested loops"); }
CQ_TEST(join_rows_match_batch_on_a_column_key_negative) { CheckVariant({Keys::kColumn, true, true}, "column key"); }
CQ_TEST(join_rows_match_batch_in_nested_loops_negative) { CheckVariant({Keys::kNone, false, true}, "nested loops"); }

}  // namespace
}  // namespace cq::test
