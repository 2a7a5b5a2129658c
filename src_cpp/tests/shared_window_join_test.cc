// The shared window join (operators/shared_window_join.h) and its routes (operators/swj_route.h):
//  * in the operator harness (tests/operator_harness.h), its batch form, row form, snapshots and
//    switches between the forms give the same tuples;
//  * for every query i, its slices ≤ i with ends moved to t_y + wi are exactly the tuples of the
//    hash join over [Range wi] windows of the same input (equal timestamps across inputs, NULL
//    keys, duplicates, ε-steps, equal windows, w = 1, residuals, no keys);
//  * a snapshot restored and taken again gives the same bytes;
//  * the route keeps slices ≤ i, moves ends and drops the slice column, in both forms;
//  * the route fused with ISTREAM (operators/swj_route_istream.h) emits each pair at its start
//    less one equal pair ending there each, across batches and a snapshot/restore.
#include "operators/shared_window_join.h"
#include "operators/swj_route.h"
#include "operators/swj_route_istream.h"
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;
using harness::Recorder;

const Schema kLeft = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"x", TypeId::kInt64}};
const Schema kRight = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"y", TypeId::kInt64}};

std::string Col(int i, const char* type) {
  return std::string(R"({"kind": "column", "index": )") + std::to_string(i) + R"(, "type": ")" + type + "\"}";
}
const std::string kLk = Col(0, "int64"), kRk = Col(0, "int64");
const std::string kLs = Col(1, "utf8"), kRs = Col(1, "utf8");
// a.x < b.y over the joined row.
const std::string kXBelowY =
    R"({"kind": "call", "fn": "less", "type": "bool", "args": [)" + Col(2, "int64") + ", " + Col(5, "int64") + "]}";

struct Shared {
  std::string name, left_keys, right_keys, residual;
  std::vector<int64_t> windows;
};

std::string Windows(const std::vector<int64_t>& w) {
  std::string s;
  for (int64_t x : w) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

OperatorCase SharedCase(const Shared& s) {
  OperatorCase c;
  c.name = "shared join " + s.name + " windows " + Windows(s.windows);
  c.spec = R"({"op": "shared_window_join", "left_keys": [)" + s.left_keys + R"(], "right_keys": [)" + s.right_keys +
           R"(], "residual": )" + s.residual + R"(, "expiration": "lazy", "windows": )" + Windows(s.windows) + "}";
  c.inputs = {{kLeft, BatchKind::kLifetime}, {kRight, BatchKind::kLifetime}};
  c.constant = Duration::Ticks(s.windows.back());
  c.negative = false;  // (the direct method only)
  c.ticks = 16;
  return c;
}

OperatorCase JoinCase(const Shared& s, int64_t w) {
  OperatorCase c = SharedCase(s);
  c.name = "join " + s.name + " over [Range " + std::to_string(w) + "]";
  c.spec = R"({"op": "join", "left_keys": [)" + s.left_keys + R"(], "right_keys": [)" + s.right_keys +
           R"(], "residual": )" + s.residual + R"(, "expiration": "lazy"})";
  c.constant = Duration::Ticks(w);
  return c;
}

std::vector<Shared> Cases() {
  return {
      {"a.k = b.k", kLk, kRk, "null", {1, 3, 7}},
      {"a.k = b.k", kLk, kRk, "null", {2, 2, 5, 5, 5}},  // equal windows share a slice
      {"a.k = b.k", kLk, kRk, "null", {1}},
      {"a.k = b.k and a.x < b.y", kLk, kRk, kXBelowY, {1, 4, 6, 9}},
      {"a.k = b.k and a.s = b.s", kLk + ", " + kLs, kRk + ", " + kRs, "null", {3, 8}},
      {"a.x < b.y (theta)", "", "", kXBelowY, {2, 3, 4}},
      {"cross product", "", "", "null", {0, 1, 5}},  // a window of 0 holds nothing
  };
}

CQ_TEST(shared_join_forms_agree_in_the_harness) {
  for (const Shared& s : Cases())
    for (uint64_t seed = 1; seed <= 30; ++seed)
      if (harness::ExpectFormsAgree(SharedCase(s), seed) > 0) break;
}

// Query i's tuples as its route gives them: slice ≤ i, end − (wn − wi), no slice column.
std::vector<Recorder::Tuple> Routed(const std::vector<Recorder::Tuple>& all, int64_t i, int64_t shrink) {
  std::vector<Recorder::Tuple> out;
  for (const Recorder::Tuple& t : all) {
    const size_t comma = t.values.rfind(',');
    if (std::stoll(t.values.substr(comma + 1)) > i) continue;
    Time end = t.end;
    end.tick -= shrink;
    out.push_back({t.values.substr(0, comma), t.start, end});
  }
  std::sort(out.begin(), out.end());
  return out;
}

CQ_TEST(shared_join_slices_are_the_joins_of_each_window) {
  for (const Shared& s : Cases()) {
    const OperatorCase shared = SharedCase(s);
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      Rng rng(seed);
      const harness::Script script = harness::RandomScript(shared, rng);
      harness::RunOptions batch{"batch"}, rows{"rows", false, true};
      for (const harness::RunOptions& o : {batch, rows}) {
        harness::Run run(shared, script, o);
        const std::vector<Recorder::Tuple> all = run.Go().Tuples();
        for (size_t q = 0; q < s.windows.size(); ++q) {
          const OperatorCase join = JoinCase(s, s.windows[q]);
          Rng again(seed);
          const harness::Script own = harness::RandomScript(join, again);
          harness::Run alone(join, own, batch);
          const std::vector<Recorder::Tuple> want = alone.Go().Tuples();
          const std::vector<Recorder::Tuple> got =
              Routed(all, static_cast<int64_t>(q) + 1, s.windows.back() - s.windows[q]);
          if (got != want) {
            Fail(__FILE__, __LINE__,
                 shared.name + ", " + o.name + ", seed " + std::to_string(seed) + ", query " + std::to_string(q + 1) +
                     ":\nshared:\n" + harness::ShowTuples(got) + "alone:\n" + harness::ShowTuples(want) + "input:\n" +
                     harness::ShowScript(script, false));
            return;
          }
        }
      }
    }
  }
}

Batch Input(const Schema& schema, const std::vector<int64_t>& k, const std::vector<int64_t>& t, int64_t w) {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(schema);
  b.length = static_cast<int64_t>(k.size());
  std::vector<std::optional<int64_t>> keys(k.begin(), k.end()), xs(k.size(), 7);
  std::vector<std::optional<std::string>> ss(k.size(), "a");
  b.columns.push_back(I64(keys));
  b.columns.push_back(Str(ss));
  b.columns.push_back(I64(xs));
  std::vector<Time> sync;
  for (int64_t x : t) sync.push_back({x, 0});
  b.sync = MakeTimeColumn(sync);
  b.constant_duration = Duration::Ticks(w);
  return b;
}

std::string SnapshotOf(const Operator& op) {
  SnapshotWriter w;
  op.Snapshot(w);
  return w.bytes();
}

CQ_TEST(shared_join_snapshot_restores_the_same_bytes) {
  const OperatorCase c = SharedCase(Cases()[0]);
  HolderTable holders;
  std::unique_ptr<Operator> op = harness::Build(c, false, &holders);
  Recorder rec(op->output_schema(), BatchKind::kLifetime, false);
  op->Push(0, Input(kLeft, {1, 2, 1}, {0, 1, 1}, 7), rec);
  op->Push(1, Input(kRight, {1, 1, 3}, {1, 2, 4}, 7), rec);
  op->AdvanceTo({3, 0}, rec);
  op->Push(0, Input(kLeft, {3, 1}, {5, 6}, 7), rec);
  const std::string bytes = SnapshotOf(*op);
  std::unique_ptr<Operator> again = harness::Build(c, false, &holders);
  SnapshotReader r(bytes.data(), bytes.size());
  again->Restore(r);
  CQ_EXPECT_EQ(r.left(), 0u);
  CQ_EXPECT(SnapshotOf(*again) == bytes);
  // Both go on alike.
  Recorder a(op->output_schema(), BatchKind::kLifetime, false), b(op->output_schema(), BatchKind::kLifetime, false);
  for (auto* o : {op.get(), again.get()}) {
    Recorder& out = o == op.get() ? a : b;
    o->Push(1, Input(kRight, {1, 3}, {6, 7}, 7), out);
    o->AdvanceTo(Time::Infinity(), out);
  }
  CQ_EXPECT(a.Tuples() == b.Tuples());
  CQ_EXPECT(!a.Tuples().empty());
}

CQ_TEST(shared_join_refuses_inputs_that_are_not_its_widest_window) {
  const OperatorCase c = SharedCase(Cases()[0]);
  HolderTable holders;
  std::unique_ptr<Operator> op = harness::Build(c, false, &holders);
  Recorder rec(op->output_schema(), BatchKind::kLifetime, false);
  CQ_EXPECT_THROWS(op->Push(0, Input(kLeft, {1}, {0}, 3), rec), CqError);
  CQ_EXPECT_EQ(op->output_schema().back().name, "slice");
  CQ_EXPECT_EQ(op->Explain(), "SharedWindowJoin windows [1, 3, 7]");
}

CQ_TEST(route_keeps_its_slices_and_moves_their_ends) {
  // Results of a shared join with windows [2, 5, 9]: (v, slice) over [start, end).
  const Schema in = {{"v", TypeId::kInt64}, {"slice", TypeId::kInt64}};
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(in);
  b.length = 4;
  b.columns.push_back(I64({10, 11, 12, 13}));
  b.columns.push_back(I64({1, 3, 2, 1}));
  b.sync = MakeTimeColumn({{3, 0}, {4, 0}, {4, 1}, {6, 0}});
  b.other = MakeTimeColumn({{11, 0}, {10, 0}, {12, 1}, {14, 0}});
  // A selection that leaves out row 3.
  b.has_selection = true;
  b.selection = Buffer::Allocate(12);
  for (uint32_t k = 0; k < 3; ++k) b.selection.as<uint32_t>()[k] = k;
  b.selection_count = 3;
  OperatorSpec spec;
  spec.params = json::Parse(R"({"op": "swj_route", "slice": 2, "shrink": 4})");
  spec.op = "swj_route";
  OperatorContext ctx;
  std::unique_ptr<Operator> route = OperatorRegistry::Global().Create(spec, {{&in, BatchKind::kLifetime}}, ctx);
  CQ_EXPECT_EQ(route->output_schema().size(), 1u);
  Recorder batch(route->output_schema(), BatchKind::kLifetime, false);
  route->Push(0, b, batch);
  const std::vector<Recorder::Tuple> want = {{"10", {3, 0}, {7, 0}}, {"12", {4, 1}, {8, 1}}};
  CQ_EXPECT(batch.Tuples() == want);
  // The row form.
  Recorder rows(route->output_schema(), BatchKind::kLifetime, false);
  std::unique_ptr<RowOperator> r = route->ToRows();
  const int64_t vs[3][2] = {{10, 1}, {11, 3}, {12, 2}};
  for (int k = 0; k < 3; ++k) {
    const Value v[2] = {Value::Int(vs[k][0]), Value::Int(vs[k][1])};
    Row row;
    row.values = v;
    row.sync = b.sync.At(k);
    row.other = b.other.At(k);
    r->Push(0, row, rows);
  }
  CQ_EXPECT(rows.Tuples() == want);
}

// Results of a shared join with windows [3, 5, 7]: (v, w, slice) over [start, t_y + 7).
Batch Pairs(const std::vector<int64_t>& v, const std::vector<int64_t>& slice, const std::vector<Time>& start,
            const std::vector<Time>& end) {
  const Schema in = {{"v", TypeId::kInt64}, {"w", TypeId::kInt64}, {"slice", TypeId::kInt64}};
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(in);
  b.length = static_cast<int64_t>(v.size());
  std::vector<int64_t> w;
  for (size_t k = 0; k < v.size(); ++k) w.push_back(100 + static_cast<int64_t>(k));
  b.columns.push_back(I64(std::vector<std::optional<int64_t>>(v.begin(), v.end())));
  b.columns.push_back(I64(std::vector<std::optional<int64_t>>(w.begin(), w.end())));
  b.columns.push_back(I64(std::vector<std::optional<int64_t>>(slice.begin(), slice.end())));
  b.sync = MakeTimeColumn(start);
  b.other = MakeTimeColumn(end);
  return b;
}

std::unique_ptr<Operator> FusedRoute() {
  // Query 2 ([Range 5]): slices 1-2, ends 2 earlier; ISTREAM compares v alone.
  static const Schema in = {{"v", TypeId::kInt64}, {"w", TypeId::kInt64}, {"slice", TypeId::kInt64}};
  OperatorSpec spec;
  spec.op = "swj_route_istream";
  spec.params = json::Parse(R"({"op": "swj_route_istream", "slice": 2, "shrink": 2, "window": 5, "compare": [0]})");
  OperatorContext ctx;
  return OperatorRegistry::Global().Create(spec, {{&in, BatchKind::kLifetime}}, ctx);
}

CQ_TEST(route_fused_with_istream_cancels_starts_against_equal_pairs_ending_there) {
  // v=1 over [1, 6) and v=2 over [2, 7) (query 2's ends); v=9 is slice 3 (not query 2's).
  const Batch first = Pairs({1, 2, 9}, {1, 2, 3}, {{1, 0}, {2, 0}, {2, 0}}, {{8, 0}, {9, 0}, {9, 0}});
  // At 6 two pairs of v=1 start: one is cancelled by the v=1 ending at 6 (a bag difference), the
  // other starts; at 7 the v=2 starting is cancelled by the v=2 ending there; the v=3 starts.
  const Batch second =
      Pairs({1, 1, 2, 3}, {1, 2, 1, 2}, {{6, 0}, {6, 0}, {7, 0}, {7, 0}}, {{12, 0}, {12, 0}, {13, 0}, {13, 0}});
  std::unique_ptr<Operator> op = FusedRoute();
  CQ_EXPECT_EQ(op->output_kind(), BatchKind::kStream);
  CQ_EXPECT_EQ(op->output_schema().size(), 2u);
  Recorder whole(op->output_schema(), BatchKind::kStream, false);
  op->Push(0, first, whole);
  op->AdvanceTo({3, 0}, whole);
  // A snapshot here (the pairs of the first batch still open), restored into a fresh operator.
  const std::string bytes = SnapshotOf(*op);
  std::unique_ptr<Operator> again = FusedRoute();
  SnapshotReader r(bytes.data(), bytes.size());
  again->Restore(r);
  CQ_EXPECT_EQ(r.left(), 0u);
  CQ_EXPECT(SnapshotOf(*again) == bytes);
  Recorder rest(op->output_schema(), BatchKind::kStream, false);
  op->Push(0, second, whole);
  again->Push(0, second, rest);
  op->AdvanceTo(Time::Infinity(), whole);
  again->AdvanceTo(Time::Infinity(), rest);
  std::vector<std::string> got, after;
  for (const Recorder::Tuple& t : whole.Tuples()) got.push_back(t.values + "@" + std::to_string(t.start.tick));
  for (const Recorder::Tuple& t : rest.Tuples()) after.push_back(t.values + "@" + std::to_string(t.start.tick));
  // (Tuples() sorts by values.)
  CQ_EXPECT(got == (std::vector<std::string>{"1,100@1", "1,101@6", "2,101@2", "3,103@7"}));
  CQ_EXPECT(after == (std::vector<std::string>{"1,101@6", "3,103@7"}));
}

}  // namespace
}  // namespace cq::test
