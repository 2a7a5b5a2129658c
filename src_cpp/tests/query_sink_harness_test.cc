// A query's output (operators/query_sink.h) in the operator harness (tests/operator_harness.h):
// stream- and relation-valued, with and without expose_steps, relation rows whose ends come later
// (fixed at their instant, or at close as ∞), direct and under the Negative Tuple method (positives
// waiting for their negatives, or for close). Its batch form, its row form, snapshots, and the
// form changed half way, either way and there and back (the rows waiting move between the two
// layouts of its one state), must output the same rows, each once. The output is read back by
// draining it after close.
#include "operators/query_sink.h"
#include "tests/operator_harness.h"

namespace cq::test {
namespace {

using harness::InputTuple;
using harness::OperatorCase;

// Every type a row holds as a word, a string, and no value at all.
const Schema kInput = {
    {"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"d", TypeId::kFloat64}, {"b", TypeId::kBool}, {"n", TypeId::kNull}};

// The chunks a query's output holds, as tuples: user columns, then start (and end, NULL for never)
// ticks, then their steps (with expose_steps).
void DrainSink(Operator& op, harness::Recorder& rec, bool relation, bool steps) {
  const size_t width = kInput.size();
  const size_t times = relation ? 2 : 1;
  for (const OutputChunk& c : dynamic_cast<QuerySink&>(op).Drain()) {
    CQ_EXPECT_EQ(c.columns.size(), width + times * (steps ? 2 : 1));
    for (int64_t i = 0; i < c.length; ++i) {
      std::string v;
      for (size_t k = 0; k < width; ++k)
        v += (k ? "," : "") + harness::ShowCell(harness::Recorder::CellOf(c.columns[k], i));
      auto time = [&](size_t k) {
        const Column& ticks = c.columns[width + k];
        if (!ticks.IsValid(i)) return Time::Infinity();
        return Time{ticks.i64()[i], steps ? c.columns[width + times + k].i64()[i] : 0};
      };
      const Time start = time(0);
      rec.Record(v, start, relation ? time(1) : start);
    }
  }
}

OperatorCase Case(BatchKind kind, bool steps) {
  const bool relation = kind == BatchKind::kLifetime;
  OperatorCase c;
  c.name = std::string(relation ? "the output of a relation-valued query" : "the output of a stream-valued query") +
           (steps ? ", expose_steps" : "");
  c.spec = std::string(R"({"op": "sink", "query": "q", "expose_steps": )") + (steps ? "true" : "false") + "}";
  c.inputs = {{kInput, kind}};
  c.drain = [relation, steps](Operator& op, harness::Recorder& rec) { DrainSink(op, rec, relation, steps); };
  // (A producer fixes every pending end by close, as ∞ at the latest: a row whose end is never
  // fixed is never final, and never output.)
  c.adjust = [](std::vector<InputTuple>& tuples) {
    for (InputTuple& t : tuples) t.fix_at_close |= t.pending && t.end.IsInfinite();
  };
  return c;
}

CQ_TEST(query_sink_forms_agree_in_the_harness) {
  for (BatchKind kind : {BatchKind::kLifetime, BatchKind::kStream})
    for (bool steps : {true, false}) {
      const OperatorCase c = Case(kind, steps);
      for (uint64_t seed = 1; seed <= 100; ++seed)
        if (harness::ExpectFormsAgree(c, seed) > 0) break;  // (one seed's report is enough)
    }
}

// A call into the engine that fails half way takes the queries' output back to its mark
// (Engine::Run). Marking does not flush the rows being gathered (a push of one row marks every
// output first): they stay at the mark, and whatever came after goes, also when a batch of many
// rows after the mark flushed them into a chunk of its own rows, and the gathering goes on after.
CQ_TEST(query_sink_rolls_back_to_its_mark_with_the_rows_it_was_gathering) {
  struct Nowhere final : Emitter {
    void Emit(Batch) override {}
    void EmitEnds(EndBatch) override {}
  } out;
  const Schema schema = {{"v", TypeId::kInt64}};
  auto rows = [&](int64_t first, int64_t n) {
    Batch b;
    b.kind = BatchKind::kStream;
    b.schema = std::make_shared<const Schema>(schema);
    b.length = n;
    I64s v;
    for (int64_t i = 0; i < n; ++i) v.push_back(first + i);
    b.columns.push_back(I64(v));
    b.sync.ticks = I64(v).values;
    return b;
  };
  auto drained = [](QuerySink& s) {
    std::vector<int64_t> got;
    for (const OutputChunk& c : s.Drain())
      for (int64_t i = 0; i < c.length; ++i) got.push_back(c.columns[0].i64()[i]);
    return got;
  };
  for (int64_t small_after : {0, 3})
    for (int64_t large_after : {0, 100}) {
      QuerySink s("q", BatchKind::kStream, schema, false, false);
      s.Push(0, rows(0, 2), out);  // gathered, not a chunk yet
      s.Push(0, rows(2, 1), out);
      const QuerySink::Position mark = s.Mark();
      if (small_after) s.Push(0, rows(100, small_after), out);
      if (large_after) s.Push(0, rows(200, large_after), out);
      s.Rollback(mark);
      CQ_EXPECT_EQ(s.queued_rows(), int64_t{3});
      s.Push(0, rows(3, 1), out);
      CQ_EXPECT(drained(s) == (std::vector<int64_t>{0, 1, 2, 3}));
    }
}

}  // namespace
}  // namespace cq::test
