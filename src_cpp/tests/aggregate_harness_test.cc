// The aggregate (operators/aggregate.h) in the operator harness (tests/operator_harness.h): its
// batch form, its row form, snapshots, the batch form turned into its row form half way, and the
// Negative Tuple variant give the same result tuples, for each kind of key (none, one int64 —
// the direct table —, a double, a bool, a computed one, several with a string), each function
// (COUNT(*), COUNT, SUM, AVG, MIN, MAX, DISTINCT) alone (the one-aggregate instantiation) and
// together, over each input it is planned for (constant durations — zero, whole ticks, with an
// ε-step — and lifetimes of any kind with pending ends), with each expiration policy.
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::OperatorCase;

// The input relation: k INT, s STRING, x INT, d DOUBLE, b BOOL.
const Schema kInput = {
    {"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"x", TypeId::kInt64}, {"d", TypeId::kFloat64}, {"b", TypeId::kBool}};
const char* kTypes[] = {"int64", "utf8", "int64", "float64", "bool"};

std::string Col(int i) {
  return std::string(R"({"kind": "column", "index": )") + std::to_string(i) + R"(, "type": ")" + kTypes[i] + "\"}";
}

// fn over column `arg` (-1: COUNT(*)), with its result type.
std::string Agg(const std::string& fn, int arg, bool distinct = false) {
  std::string type = fn == "count" || fn == "count_star" ? "int64" : fn == "avg" ? "float64" : kTypes[arg];
  return R"({"fn": ")" + fn + R"(", "distinct": )" + (distinct ? "true" : "false") + R"(, "type": ")" + type +
         R"(", "arg": )" + (arg < 0 ? std::string("null") : Col(arg)) + "}";
}

OperatorCase Case(const std::string& name, const std::string& keys, const std::vector<std::string>& aggs,
                  std::optional<Duration> constant = std::nullopt, const std::string& expiration = "lazy") {
  OperatorCase c;
  c.name = "aggregate " + name;
  std::string list;
  for (const std::string& a : aggs) list += (list.empty() ? "" : ", ") + a;
  c.spec = R"({"op": "aggregate", "keys": [)" + keys + R"(], "aggregates": [)" + list + R"(], "expiration": ")" +
           expiration + "\"" + (constant ? R"(, "lifetime": "constant")" : "") + "}";
  c.inputs = {{kInput, BatchKind::kLifetime}};
  c.constant = constant;
  return c;
}

std::vector<OperatorCase> Cases() {
  const std::string mod3 = R"({"kind": "call", "fn": "modulo", "type": "int64", "args": [)" + Col(2) +
                           R"(, {"kind": "literal", "type": "int64", "value": 3}]})";
  return {
      Case("AVG(x) GROUP BY k", Col(0), {Agg("avg", 2)}),
      Case("COUNT(*), SUM(x), AVG(d) GROUP BY k", Col(0), {Agg("count_star", -1), Agg("sum", 2), Agg("avg", 3)}),
      Case("AVG(x) GROUP BY k over [Range 3]", Col(0), {Agg("avg", 2)}, Duration::Ticks(3), "fifo"),
      Case("SUM(d), COUNT(x) GROUP BY k over [Range 2 + e]", Col(0), {Agg("sum", 3), Agg("count", 2)},
           Duration{2, 1, false}),
      Case("COUNT(*) GROUP BY k over [Now]", Col(0), {Agg("count_star", -1)}, Duration{0, 1, false}),
      Case("COUNT(*) over zero durations", "", {Agg("count_star", -1)}, Duration::Ticks(0)),
      Case("COUNT(*), MIN(s), MAX(d), COUNT(DISTINCT x) over [Range 4]", "",
           {Agg("count_star", -1), Agg("min", 1), Agg("max", 3), Agg("count", 2, true)}, Duration::Ticks(4)),
      Case("SUM(DISTINCT x), MIN(x), MAX(s), COUNT(d) GROUP BY s, b", Col(1) + ", " + Col(4),
           {Agg("sum", 2, true), Agg("min", 2), Agg("max", 1), Agg("count", 3)}),
      Case("COUNT(x), AVG(d) GROUP BY d", Col(3), {Agg("count", 2), Agg("avg", 3)}, std::nullopt, "insertion_sort"),
      Case("SUM(d), MAX(x) GROUP BY x % 3", mod3, {Agg("sum", 3), Agg("max", 2)}),
      Case("MIN(d) GROUP BY b", Col(4), {Agg("min", 3)}),
      Case("MAX(s) GROUP BY k", Col(0), {Agg("max", 1)}),
      Case("AVG(DISTINCT d) GROUP BY k, s over [Range 5]", Col(0) + ", " + Col(1), {Agg("avg", 3, true)},
           Duration::Ticks(5)),
  };
}

// Rows of `c`'s input over ticks [from, to): k = t % 3, x = t, the rest NULL; each lives 5 ticks, as
// a known end, or (pending) behind a holder fixed at its end.
Batch InputBatch(int64_t from, int64_t to, bool pending, HolderTable& holders, std::vector<HolderId>& ids) {
  I64s k, x;
  std::vector<Time> sync, other;
  for (int64_t t = from; t < to; ++t) {
    k.push_back(t % 3);
    x.push_back(t);
    sync.push_back({t, 0});
    other.push_back(pending ? Time::Infinity() : Time{t + 5, 0});
  }
  const int64_t n = to - from;
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(kInput);
  b.length = n;
  b.columns = {I64(k), Column::Nulls(TypeId::kUtf8, n), I64(x), Column::Nulls(TypeId::kFloat64, n),
               Column::Nulls(TypeId::kBool, n)};
  b.sync = MakeTimeColumn(sync);
  if (!pending) {
    b.constant_duration = Duration::Ticks(5);
    return b;
  }
  b.other = MakeTimeColumn(other);
  b.holders = Buffer::Allocate(n * static_cast<int64_t>(sizeof(HolderId)));
  holders.Allocate(n, b.holders.as<HolderId>());
  ids.insert(ids.end(), b.holders.as<HolderId>(), b.holders.as<HolderId>() + n);
  return b;
}

// The ends fixed at tick t: those of the rows of tick t - 5.
EndBatch EndsAt(int64_t t, std::vector<HolderId>& ids) {
  EndBatch e;
  e.length = 1;
  e.holders = Buffer::Allocate(sizeof(HolderId));
  *e.holders.as<HolderId>() = ids[static_cast<size_t>(t - 5)];
  e.ends = MakeTimeColumn({Time{t, 0}});
  return e;
}

// The batch form takes ticks 0-11 in batches and advances to 10: it holds rows whose ends are
// still to come, and results whose ends are pending. Then its row form is asked for and takes
// ticks 12-19 a row at a time: the results are those of a run in batch form throughout.
CQ_TEST(aggregate_turns_into_its_row_form_mid_stream) {
  for (bool pending : {false, true}) {
    const OperatorCase c = pending
                               ? Case("AVG(x) GROUP BY k", Col(0), {Agg("avg", 2)})
                               : Case("AVG(x) GROUP BY k over [Range 5]", Col(0), {Agg("avg", 2)}, Duration::Ticks(5));
    HolderTable hb, hm;
    std::vector<HolderId> ib, im;  // input holders, by tick
    std::unique_ptr<Operator> batch = harness::Build(c, false, &hb), mixed = harness::Build(c, false, &hm);
    harness::Recorder rb(batch->output_schema(), BatchKind::kLifetime, false);
    harness::Recorder rm(mixed->output_schema(), BatchKind::kLifetime, false);
    // Pending ends: the end fixed at t goes in before the row of t (as a window would send them),
    // so batches run from one fix to the next.
    for (int64_t from = 0; from < 12;) {
      const int64_t to = pending ? (from < 5 ? 5 : from + 1) : from + 4;
      if (pending && from >= 5) {
        batch->PushEnds(0, EndsAt(from, ib), rb);
        mixed->PushEnds(0, EndsAt(from, im), rm);
        hb.Release(&ib[static_cast<size_t>(from - 5)], 1);
        hm.Release(&im[static_cast<size_t>(from - 5)], 1);
      }
      batch->Push(0, InputBatch(from, to, pending, hb, ib), rb);
      mixed->Push(0, InputBatch(from, to, pending, hm, im), rm);
      from = to;
    }
    mixed->AdvanceTo({10, 0}, rm);
    CQ_EXPECT((mixed->next_firing(0) == Time{10, 0}));  // ticks 10 and 11 wait, and the ends of 5-11
    const size_t before = rm.Tuples().size();
    std::unique_ptr<RowOperator> rows = mixed->ToRows();
    for (int64_t t = 12; t < 20; ++t) {
      rows->AdvanceTo({t, 0}, rm);
      if (pending) {
        rows->PushEnd(0, im[static_cast<size_t>(t - 5)], {t, 0}, rm);
        hm.ReleaseOne(im[static_cast<size_t>(t - 5)]);
        batch->PushEnds(0, EndsAt(t, ib), rb);
        hb.Release(&ib[static_cast<size_t>(t - 5)], 1);
      }
      batch->Push(0, InputBatch(t, t + 1, pending, hb, ib), rb);
      const Value values[] = {Value::Int(t % 3), Value::Null(), Value::Int(t), Value::Null(), Value::Null()};
      Row r;
      r.values = values;
      r.sync = {t, 0};
      if (pending) r.holder = im.emplace_back(hm.AllocateOne());
      else r.other = {t + 5, 0};
      rows->Push(0, r, rm);
    }
    batch->AdvanceTo(Time::Infinity(), rb);
    rows->AdvanceTo(Time::Infinity(), rm);
    const std::vector<harness::Recorder::Tuple> want = rb.Tuples(), got = rm.Tuples();
    CQ_EXPECT(got.size() > before + 10);  // the row form went on from where the batch form was
    CQ_EXPECT_EQ(harness::ShowTuples(got), harness::ShowTuples(want));
    CQ_EXPECT(rb.problems().empty() && rm.problems().empty());
  }
}

CQ_TEST(aggregate_forms_agree_in_the_harness) {
  for (const OperatorCase& c : Cases())
    for (uint64_t seed = 1; seed <= 100; ++seed)
      if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
}

}  // namespace
}  // namespace cq::test
