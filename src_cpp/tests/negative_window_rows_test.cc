// The row forms of the Negative Tuple method's windows (NegativeTimeWindow, NegativeRowWindow),
// driven as the DTS executor drives a loop region — instant by instant, each instant's rows
// pushed, then everything advanced past it — against their batch forms: the same positives and
// negatives, at the same times, in the same order. Also rows coming back into a window while it
// emits (a loop through a delay), and snapshots taken between instants.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "batch/snapshot.h"
#include "operators/negative_row_window.h"
#include "operators/negative_time_window.h"
#include "rows/row_operator.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

const Schema kSchema = {{"i", TypeId::kInt64}, {"s", TypeId::kUtf8}};

struct In {
  int64_t i;
  std::optional<std::string> s;
  Time t;
};

// A tuple as it leaves a window: its values, `sync` and `other` (positive: other = ∞; negative:
// sync = its end, other = the start it ends).
struct Out {
  int64_t i;
  std::optional<std::string> s;
  Time sync, other;
  bool positive() const { return other.IsInfinite(); }
  bool operator==(const Out& o) const { return i == o.i && s == o.s && sync == o.sync && other == o.other; }
  std::string ToString() const {
    return (positive() ? "+" : "-") + std::to_string(i) + "/" + (s ? *s : "NULL") + "@" + sync.ToString() +
           (positive() ? "" : "(from " + other.ToString() + ")");
  }
};

Out OutOf(const Row& r) {
  Out o{r.values[0].i, std::nullopt, r.sync, r.other};
  if (r.values[1].valid) o.s = std::string(r.values[1].s->view());
  return o;
}

// ---- the batch form ------------------------------------------------------------------------------

class BatchRecorder final : public Emitter {
 public:
  void Emit(Batch b) override {
    const I64s i = ReadI64(b.columns[0]);
    const Strs s = ReadStr(b.columns[1]);
    for (int64_t k = 0; k < b.num_rows(); ++k) {
      const int64_t p = b.Physical(k);
      out.push_back({*i[static_cast<size_t>(p)], s[static_cast<size_t>(p)], b.StartAt(p), b.EndAt(p)});
    }
  }
  void EmitEnds(EndBatch) override { ++ends; }
  std::vector<Out> out;
  int ends = 0;
};

Batch BatchOf(const std::vector<In>& rows) {
  Batch b;
  b.schema = std::make_shared<const Schema>(kSchema);
  b.length = static_cast<int64_t>(rows.size());
  I64s i;
  Strs s;
  std::vector<Time> t;
  for (const In& r : rows) {
    i.push_back(r.i);
    s.push_back(r.s);
    t.push_back(r.t);
  }
  b.columns.push_back(I64(i));
  b.columns.push_back(Str(s));
  b.sync = MakeTimeColumn(t);
  return b;
}

// All rows in one batch, or (`one_by_one`) a batch per row; then close.
std::vector<Out> RunBatch(Operator& op, const std::vector<In>& rows, bool one_by_one) {
  BatchRecorder rec;
  if (one_by_one) {
    for (const In& r : rows) op.Push(0, BatchOf({r}), rec);
  } else if (!rows.empty()) {
    op.Push(0, BatchOf(rows), rec);
  }
  op.AdvanceTo(Time::Infinity(), rec);
  CQ_EXPECT_EQ(rec.ends, 0);
  return rec.out;
}

// ---- the row form, as a loop region runs it -----------------------------------------------------

class RowRecorder final : public RowEmitter {
 public:
  void Emit(const Row& r) override {
    out.push_back(OutOf(r));
    if (hook) hook(r);
  }
  void EmitEnd(HolderId, Time) override { ++ends; }
  std::vector<Out> out;
  int ends = 0;
  std::function<void(const Row&)> hook;  // (rows coming back through a loop)
};

void PushIn(RowOperator& op, const In& in, RowEmitter& out) {
  Value v[2] = {Value::Int(in.i), in.s ? Value::String(*in.s) : Value::Null()};
  Row r;
  r.values = v;
  r.sync = in.t;
  op.Push(0, r, out);
  if (in.s) ReleaseString(v[1].s);
}

struct Region {
  std::unique_ptr<RowOperator> op;
  Time now = Time::MinusInfinity();
  Time progress = Time::MinusInfinity();
  RowRecorder rec;
  std::vector<In> rows;  // the input, in time order
  size_t next = 0;
  int instants = 0;

  // Runs the next instant (the next input row's or the window's own firing); false when none is
  // left below `bound`.
  bool Step(Time bound = Time::Infinity()) {
    Time t = op->next_firing(0);
    if (next < rows.size()) t = std::min(t, rows[next].t);
    if (!(t < bound)) return false;
    CQ_ASSERT(!(t < progress));
    now = t;
    rec.set_now(&now);
    while (next < rows.size() && rows[next].t == t) PushIn(*op, rows[next++], rec);
    const Time p{t.tick, t.step + 1};
    // (with advances_when_due the executor skips the call when nothing is due; it must not matter)
    if (!op->advances_when_due() || op->next_firing(0) < p) op->AdvanceTo(p, rec);
    progress = p;
    now = Time::MinusInfinity();
    ++instants;
    return true;
  }
  void Close() {
    while (Step()) {
    }
    op->AdvanceTo(Time::Infinity(), rec);
  }
};

std::vector<Out> RunRows(const std::function<std::unique_ptr<RowOperator>()>& make, const std::vector<In>& rows) {
  Region g;
  g.op = make();
  g.rows = rows;
  while (g.Step()) {
  }
  g.op->AdvanceTo(Time::Infinity(), g.rec);
  CQ_EXPECT_EQ(g.rec.ends, 0);
  return g.rec.out;
}

// ---- inputs ------------------------------------------------------------------------------------

std::vector<In> RandomInput(uint64_t seed, int n) {
  Rng rng(seed);
  std::vector<In> rows;
  int64_t tick = rng.Below(3);
  int64_t step = 0;
  const char* strs[] = {"a", "b", "", "ccc"};
  for (int k = 0; k < n; ++k) {
    switch (rng.Below(6)) {
      case 0: break;          // the same instant again
      case 1: ++step; break;  // an ε later (rows of a loop)
      default: tick += 1 + rng.Below(3); step = 0;
    }
    std::optional<std::string> s;
    if (rng.Below(5)) s = strs[rng.Below(4)];
    rows.push_back({k, s, {tick, step}});
  }
  return rows;
}

struct TimeCase {
  const char* kind;
  int64_t range, slide;
};
const TimeCase kTimeCases[] = {
    {"now", 0, 1},   {"range", 3, 1}, {"range", 1, 1}, {"range", 0, 1},  // (range 0: ghosts)
    {"slide", 5, 2}, {"slide", 2, 5}, {"slide", 4, 4}, {"unbounded", 0, 1},
};

std::unique_ptr<Operator> MakeTime(const TimeCase& c) {
  return std::make_unique<NegativeTimeWindow>(c.kind, c.range, c.slide, kSchema);
}

std::string Name(const TimeCase& c) {
  return std::string(c.kind) + " " + std::to_string(c.range) + "/" + std::to_string(c.slide);
}

// Every positive before its negative, times non-decreasing, negatives first within an instant
// unless waiting for their own positive.
void ExpectWellFormed(const std::vector<Out>& out, const std::string& what) {
  std::map<std::pair<int64_t, Time>, int> open;  // (value, start) -> positives not yet ended
  bool ok = true;
  std::string why;
  for (size_t k = 0; k < out.size() && ok; ++k) {
    const Out& o = out[k];
    if (k > 0 && o.sync < out[k - 1].sync) ok = false, why = "time goes back at " + o.ToString();
    if (o.positive()) {
      ++open[{o.i, o.sync}];
    } else if (open[{o.i, o.other}]-- <= 0) {
      ok = false, why = "a negative before its positive: " + o.ToString();
    }
  }
  if (!ok) Fail(__FILE__, __LINE__, what + ": " + why);
}

// ---- time windows ------------------------------------------------------------------------------

CQ_TEST(negative_time_window_rows_send_what_the_batch_form_sends) {
  for (const TimeCase& c : kTimeCases) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const std::vector<In> rows = RandomInput(seed, 1 + static_cast<int>(seed % 23));
      auto all = MakeTime(c), one = MakeTime(c), rf = MakeTime(c);
      const std::vector<Out> whole = RunBatch(*all, rows, false);
      const std::vector<Out> single = RunBatch(*one, rows, true);
      const std::vector<Out> got = RunRows([&] { return rf->ToRows(); }, rows);
      CQ_EXPECT_EQ(got, whole);
      CQ_EXPECT_EQ(got, single);
      ExpectWellFormed(got, Name(c));
      // No tuple starts before it arrives (in a loop: not below the instant the region runs).
      bool late_enough = true;
      for (const Out& o : got)
        if (o.positive()) late_enough &= !(o.sync < rows[static_cast<size_t>(o.i)].t);
      if (!late_enough)
        Fail(__FILE__, __LINE__, Name(c) + " seed " + std::to_string(seed) + ": a positive before its tuple");
      if (got != whole) {
        Fail(__FILE__, __LINE__, Name(c) + " seed " + std::to_string(seed));
        return;
      }
    }
  }
}

CQ_TEST(negative_time_window_rows_fixed_cases) {
  // [Range 2] over 1@1, 2@1, 3@2, 4@3: negatives at 3 go before the positive at 3.
  const std::vector<In> rows = {{1, "a", {1, 0}}, {2, std::nullopt, {1, 0}}, {3, "c", {2, 0}}, {4, "d", {3, 0}}};
  NegativeTimeWindow w("range", 2, 1, kSchema);
  const Time inf = Time::Infinity();
  CQ_EXPECT_EQ(RunRows([&] { return w.ToRows(); }, rows), (std::vector<Out>{{1, "a", {1, 0}, inf},
                                                                            {2, std::nullopt, {1, 0}, inf},
                                                                            {3, "c", {2, 0}, inf},
                                                                            {1, "a", {3, 0}, {1, 0}},
                                                                            {2, std::nullopt, {3, 0}, {1, 0}},
                                                                            {4, "d", {3, 0}, inf},
                                                                            {3, "c", {4, 0}, {2, 0}},
                                                                            {4, "d", {5, 0}, {3, 0}}}));
  // [Now]: each tuple ends an ε after it starts.
  NegativeTimeWindow now("now", 0, 1, kSchema);
  CQ_EXPECT_EQ(RunRows([&] { return now.ToRows(); }, {{1, "a", {4, 0}}, {2, "b", {4, 1}}}),
               (std::vector<Out>{
                   {1, "a", {4, 0}, inf}, {1, "a", {4, 1}, {4, 0}}, {2, "b", {4, 1}, inf}, {2, "b", {4, 2}, {4, 1}}}));
  // [Range 2 Slide 5]: 6 lives [10, 10) — a ghost, positive then negative; 7 lives [10, 15).
  NegativeTimeWindow slide("slide", 2, 5, kSchema);
  CQ_EXPECT_EQ(
      RunRows([&] { return slide.ToRows(); }, {{6, "x", {6, 0}}, {7, "y", {9, 0}}}),
      (std::vector<Out>{
          {6, "x", {10, 0}, inf}, {6, "x", {10, 0}, {10, 0}}, {7, "y", {10, 0}, inf}, {7, "y", {15, 0}, {10, 0}}}));
  // In a loop ([Range 5 Slide 5] at 10+1ε): slide boundaries sit at step 0 (SEMANTICS.md §4.1), so
  // a tuple at an ε-step of a boundary tick is after it and starts at the next boundary, 15 — never
  // below the instant that made it; its end is the boundary at or after 15+1ε, 20.
  const std::vector<In> on_boundary = {{1, "a", {10, 1}}, {2, "b", {12, 2}}};
  const std::vector<Out> kept = {
      {1, "a", {15, 0}, inf}, {2, "b", {15, 0}, inf}, {1, "a", {20, 0}, {15, 0}}, {2, "b", {20, 0}, {15, 0}}};
  NegativeTimeWindow on("slide", 5, 5, kSchema), on_batch("slide", 5, 5, kSchema);
  CQ_EXPECT_EQ(RunRows([&] { return on.ToRows(); }, on_boundary), kept);
  CQ_EXPECT_EQ(RunBatch(on_batch, on_boundary, false), kept);
  // ... and with [Range 0 Slide 5] a ghost at that next boundary.
  NegativeTimeWindow zero("slide", 0, 5, kSchema);
  CQ_EXPECT_EQ(
      RunRows([&] { return zero.ToRows(); }, {{1, "a", {10, 1}}, {2, "b", {12, 0}}}),
      (std::vector<Out>{
          {1, "a", {15, 0}, inf}, {1, "a", {15, 0}, {15, 0}}, {2, "b", {15, 0}, inf}, {2, "b", {15, 0}, {15, 0}}}));
  // [Range Unbounded]: positives only, at once.
  NegativeTimeWindow unb("unbounded", 0, 1, kSchema);
  auto r = unb.ToRows();
  CQ_EXPECT(!r->stateful());
  CQ_EXPECT_EQ(RunRows([&] { return unb.ToRows(); }, {{1, "a", {1, 0}}, {2, "b", {5, 0}}}),
               (std::vector<Out>{{1, "a", {1, 0}, inf}, {2, "b", {5, 0}, inf}}));
}

CQ_TEST(negative_time_window_rows_fire_by_themselves_when_a_negative_is_due) {
  NegativeTimeWindow w("range", 5, 1, kSchema);
  auto op = w.ToRows();
  CQ_EXPECT(op->advances_when_due());
  CQ_EXPECT(op->next_firing(0).IsInfinite());
  RowRecorder rec;
  Time now{3, 0};
  rec.set_now(&now);
  PushIn(*op, {1, "a", {3, 0}}, rec);
  CQ_EXPECT_EQ(rec.out.size(), 1u);  // the positive at once: the region runs its instant
  CQ_EXPECT_EQ(op->next_firing(0), (Time{8, 0}));
  // Nothing below the negative's time: AdvanceTo sends nothing (the executor may skip it).
  op->AdvanceTo({8, 0}, rec);
  CQ_EXPECT_EQ(rec.out.size(), 1u);
  op->AdvanceTo({8, 1}, rec);
  CQ_ASSERT(rec.out.size() == 2u);
  CQ_EXPECT_EQ(rec.out[1], (Out{1, "a", {8, 0}, {3, 0}}));
  CQ_EXPECT(op->next_firing(0).IsInfinite());
  // A row that comes ahead of the region's instant (through a delay) waits for its instant.
  PushIn(*op, {2, "b", {9, 1}}, rec);
  CQ_EXPECT_EQ(rec.out.size(), 2u);
  CQ_EXPECT_EQ(op->next_firing(0), (Time{9, 1}));
  op->AdvanceTo({9, 2}, rec);
  CQ_ASSERT(rec.out.size() == 3u);
  CQ_EXPECT_EQ(rec.out[2], (Out{2, "b", {9, 1}, Time::Infinity()}));
  CQ_EXPECT_EQ(op->next_firing(0), (Time{14, 1}));
}

CQ_TEST(negative_time_window_rows_take_rows_back_while_they_emit) {
  // A loop: every row the window sends goes round through a delay of ε and comes back in (a new
  // tuple, values 100, 101, ...) while the window is still emitting — up to a bound. The window must send
  // every tuple's positive and negative once, with the values it was given, in time order.
  for (const TimeCase& c : kTimeCases) {
    auto w = MakeTime(c);
    Region g;
    g.op = w->ToRows();
    // (distinct ticks: in a region, rows come back only after the instant's own rows are in)
    g.rows = {{1, "a", {2, 0}}, {2, std::nullopt, {5, 0}}, {3, "c", {7, 0}}};
    int64_t pushed = 0;
    std::map<int64_t, Time> fed;  // value -> the time it came in
    for (const In& r : g.rows) fed[r.i] = r.t;
    g.rec.hook = [&](const Row& r) {
      if (pushed >= 60) return;
      const In back{100 + pushed, std::string("loop") + std::to_string(pushed), {r.sync.tick, r.sync.step + 1}};
      ++pushed;
      fed[back.i] = back.t;
      PushIn(*g.op, back, g.rec);
    };
    g.Close();
    const std::vector<Out>& out = g.rec.out;
    ExpectWellFormed(out, Name(c));
    // Each tuple fed in went out as a positive (with its own values), and as a negative when its
    // end is finite.
    std::map<int64_t, int> pos, neg;
    bool values_ok = true;
    for (const Out& o : out) {
      (o.positive() ? pos : neg)[o.i]++;
      if (o.i >= 100) values_ok &= o.s.has_value() && o.s->rfind("loop", 0) == 0;
    }
    CQ_EXPECT(values_ok);
    CQ_EXPECT_EQ(pushed, 60);
    for (const auto& [i, t] : fed) {
      CQ_EXPECT_EQ(pos[i], 1);
      CQ_EXPECT_EQ(neg[i], std::string(c.kind) == "unbounded" ? 0 : 1);
    }
  }
}

// A run cut after each of `cuts` instants by a snapshot of the window (its one state, which the
// row form runs on) and a restore into a window built afresh, whose row form carries on, gives what
// the uncut run gives.
template <typename Make>
void ExpectSurvivesSnapshots(Make make, const std::vector<In>& rows, int cuts) {
  auto w = make();
  const std::vector<Out> straight = RunRows([&] { return w->ToRows(); }, rows);
  for (int cut = 0; cut < cuts; ++cut) {
    std::unique_ptr<Operator> window = make();
    Region g;
    g.op = window->ToRows();
    g.rows = rows;
    auto snapshot_and_restore = [&] {
      SnapshotWriter out;
      window->Snapshot(out);
      g.op.reset();
      window = make();
      SnapshotReader in(out.bytes().data(), out.bytes().size());
      window->Restore(in);
      g.op = window->ToRows();
    };
    if (cut == 0) snapshot_and_restore();
    while (g.Step()) {
      if (g.instants == cut) snapshot_and_restore();
    }
    g.op->AdvanceTo(Time::Infinity(), g.rec);
    CQ_EXPECT_EQ(g.rec.ends, 0);
    CQ_EXPECT_EQ(g.rec.out, straight);
  }
}

CQ_TEST(negative_time_window_rows_survive_snapshots_between_instants) {
  for (const TimeCase& c : kTimeCases)
    for (uint64_t seed = 1; seed <= 6; ++seed)
      ExpectSurvivesSnapshots([&] { return MakeTime(c); }, RandomInput(seed * 31, 18), 30);
}

// ---- row windows -------------------------------------------------------------------------------

struct RowCase {
  int64_t rows;
  bool partitioned;  // by s
};
const RowCase kRowCases[] = {{1, false}, {3, false}, {1, true}, {2, true}, {5, true}};

std::unique_ptr<Operator> MakeRows(const RowCase& c) {
  return std::make_unique<NegativeRowWindow>(c.rows, c.partitioned ? std::vector<int>{1} : std::vector<int>{}, kSchema);
}

CQ_TEST(negative_row_window_rows_send_what_the_batch_form_sends) {
  for (const RowCase& c : kRowCases) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const std::vector<In> rows = RandomInput(seed + 100, 1 + static_cast<int>(seed % 29));
      auto all = MakeRows(c), one = MakeRows(c), rf = MakeRows(c);
      const std::vector<Out> whole = RunBatch(*all, rows, false);
      const std::vector<Out> got = RunRows([&] { return rf->ToRows(); }, rows);
      CQ_EXPECT_EQ(got, whole);
      CQ_EXPECT_EQ(got, RunBatch(*one, rows, true));
      ExpectWellFormed(got, "rows " + std::to_string(c.rows));
    }
  }
  // By hand: [Partition By s Rows 1] — a tuple ends when the next of its partition (NULL is one
  // partition too) arrives.
  NegativeRowWindow w(1, {1}, kSchema);
  const Time inf = Time::Infinity();
  CQ_EXPECT_EQ(RunRows([&] { return w.ToRows(); },
                       {{1, "a", {1, 0}}, {2, std::nullopt, {1, 0}}, {3, "a", {2, 0}}, {4, std::nullopt, {3, 0}}}),
               (std::vector<Out>{{1, "a", {1, 0}, inf},
                                 {2, std::nullopt, {1, 0}, inf},
                                 {1, "a", {2, 0}, {1, 0}},
                                 {3, "a", {2, 0}, inf},
                                 {2, std::nullopt, {3, 0}, {1, 0}},
                                 {4, std::nullopt, {3, 0}, inf}}));
}

CQ_TEST(negative_row_window_rows_take_rows_back_while_they_emit) {
  // Rows coming back during an emission are handled once it is over, each as an arrival of its
  // own: [Rows 1] then still sends every tuple's positive before its negative, with its values.
  for (const RowCase& c : kRowCases) {
    auto w = MakeRows(c);
    Region g;
    g.op = w->ToRows();
    // (distinct instants: a window of rows sends at once, and a loop brings nothing back before
    // the region has released its instant's rows)
    g.rows = {{1, "a", {2, 0}}, {2, "b", {3, 0}}, {3, "a", {4, 0}}};
    int64_t pushed = 0;
    g.rec.hook = [&](const Row& r) {
      if (pushed >= 50) return;
      const In back{1000 + pushed, std::string(pushed % 2 ? "a" : "b"), {r.sync.tick, r.sync.step + 1}};
      ++pushed;
      PushIn(*g.op, back, g.rec);
    };
    g.Close();
    const std::vector<Out>& out = g.rec.out;
    ExpectWellFormed(out, "rows " + std::to_string(c.rows));
    std::map<int64_t, int> pos, neg;
    for (const Out& o : out) (o.positive() ? pos : neg)[o.i]++;
    CQ_EXPECT_EQ(pushed, 50);
    CQ_EXPECT_EQ(pos.size(), 53u);
    // The last N of each partition never end; all others end once.
    std::map<std::optional<std::string>, int> last;
    int open = 0;
    for (const auto& [i, n] : pos) {
      CQ_EXPECT_EQ(n, 1);
      open += neg.count(i) ? 0 : 1;
      CQ_EXPECT(!neg.count(i) || neg.at(i) == 1);
    }
    CQ_EXPECT_EQ(open, c.partitioned ? 2 * c.rows : c.rows);
    // Negatives carry the values of their positives.
    std::map<int64_t, Out> first;
    bool same = true;
    for (const Out& o : out) {
      if (o.positive()) first.emplace(o.i, o);
      else same &= first.count(o.i) && first.at(o.i).s == o.s && first.at(o.i).sync == o.other;
    }
    CQ_EXPECT(same);
  }
}

CQ_TEST(negative_row_window_rows_survive_snapshots_between_instants) {
  for (const RowCase& c : kRowCases)
    for (uint64_t seed = 1; seed <= 6; ++seed)
      ExpectSurvivesSnapshots([&] { return MakeRows(c); }, RandomInput(seed * 17 + 3, 20), 25);
}

}  // namespace
}  // namespace cq::test
