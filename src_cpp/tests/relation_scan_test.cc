// The relation scan on its own (both lifetime methods), fed changes by hand, and the engine's push
// to a relation: op column, the check of deletes before anything runs, and close.
#include <algorithm>

#include "engine/engine.h"
#include "operators/relation_scan.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr auto N = std::nullopt;

const Schema kSchema = {{"k", TypeId::kInt64}};

// What the scan emitted, in order: "k@start..end" rows (end "?" while pending, with the holder
// remembered) and "#holder=end" fixed ends.
struct Collect final : Emitter {
  std::vector<std::string> events;
  void Emit(Batch in) override {
    const Batch b = in.Compact();
    CQ_EXPECT(b.kind == BatchKind::kLifetime);
    for (int64_t i = 0; i < b.length; ++i) {
      const auto k = ReadI64(b.columns[0])[i];
      const std::string v = k ? std::to_string(*k) : "NULL";
      const std::string end = b.EndPending(i)           ? "?" + std::to_string(b.holders.as<const HolderId>()[i])
                              : b.EndAt(i).IsInfinite() ? "inf"
                                                        : std::to_string(b.EndAt(i).tick);
      events.push_back(v + "@" + std::to_string(b.StartAt(i).tick) + ".." + end);
    }
  }
  void EmitEnds(EndBatch e) override {
    for (int64_t i = 0; i < e.length; ++i)
      events.push_back("#" + std::to_string(e.ids()[i]) + "=" +
                       (e.ends.At(i).IsInfinite() ? "inf" : std::to_string(e.ends.At(i).tick)));
  }
};

// A batch of changes: values, ops ("+" / "-"; empty: no op column) and ticks.
Batch Changes(const I64s& k, const Strs& ops, const std::vector<int64_t>& ts) {
  Batch b;
  b.kind = BatchKind::kStream;
  b.length = static_cast<int64_t>(k.size());
  b.columns = {I64(k)};
  if (!ops.empty()) b.columns.push_back(Str(ops));
  I64s t(ts.begin(), ts.end());
  b.sync.ticks = I64(t).values;
  return b;
}

CQ_TEST(direct_scan_gives_holders_and_ends_the_oldest_copy) {
  HolderTable holders;
  RelationScan scan("r", kSchema, /*negative=*/false, &holders);
  Collect out;
  scan.Push(0, Changes({1, 1, 2}, {}, {0, 1, 1}), out);
  // The delete at 3 ends the copy of 1 from 0 (holder 0), not the one from 1 (holder 1); the
  // insert and delete of 5 inside the batch at 3 is a ghost and does not go out; 7 lives [3, 4).
  scan.Push(0, Changes({1, 5, 5, 7, 7}, {"-", "+", "-", "+", "-"}, {3, 3, 3, 3, 4}), out);
  CQ_EXPECT_EQ(out.events, (std::vector<std::string>{"1@0..?0", "1@1..?1", "2@1..?2", "#0=3", "7@3..4"}));
  CQ_EXPECT_EQ(scan.alive(), 2);
  CQ_EXPECT_EQ(holders.live(), 2);  // the ended copies' ids went back to the table
  out.events.clear();
  scan.AdvanceTo(Time{10, 0}, out);
  CQ_EXPECT(out.events.empty());
  scan.AdvanceTo(Time::Infinity(), out);  // close: what is alive never ends
  std::sort(out.events.begin(), out.events.end());
  CQ_EXPECT_EQ(out.events, (std::vector<std::string>{"#1=inf", "#2=inf"}));
  CQ_EXPECT_EQ(holders.live(), 0);
}

CQ_TEST(negative_scan_emits_positives_and_negatives_in_order) {
  HolderTable holders;
  RelationScan scan("r", kSchema, /*negative=*/true, &holders);
  Collect out;
  scan.Push(0, Changes({N, 4, N, N}, {"+", "+", "+", "-"}, {0, 1, 2, 5}), out);
  // A negative is the tuple at its end, with `other` the start it ends: printed sync..other here.
  CQ_EXPECT_EQ(out.events, (std::vector<std::string>{"NULL@0..inf", "4@1..inf", "NULL@2..inf", "NULL@5..0"}));
  CQ_EXPECT_EQ(holders.live(), 0);
}

CQ_TEST(first_missing_delete_simulates_the_push_and_changes_nothing) {
  HolderTable holders;
  RelationScan scan("r", kSchema, false, &holders);
  Collect out;
  scan.Push(0, Changes({1}, {}, {0}), out);
  std::vector<Batch> push = {Changes({1, 2}, {"-", "+"}, {1, 1}), Changes({2, 2}, {"-", "-"}, {2, 2})};
  CQ_EXPECT_EQ(scan.FirstMissingDelete(push), 3);  // the second delete of 2 (row 1 of batch 2)
  push.pop_back();
  CQ_EXPECT_EQ(scan.FirstMissingDelete(push), -1);
  CQ_EXPECT_EQ(scan.FirstMissingDelete({Changes({3}, {"-"}, {1})}), 0);
  CQ_EXPECT_EQ(scan.alive(), 1);
}

std::unique_ptr<Engine> RelationEngine(const std::string& lifetime) {
  auto e = std::make_unique<Engine>(EngineOptions{lifetime});
  e->AddPlan(R"({"operators": [
    {"id": 0, "op": "relation_scan", "inputs": [], "relation": "r", "schema": [["k", "int64"]]},
    {"id": 1, "op": "sink", "inputs": [0], "query": "q"}]})");
  return e;
}

// "k:start-end" rows of the query, sorted.
std::vector<std::string> Drained(Engine& e) {
  std::vector<std::string> rows;
  for (const OutputChunk& c : e.Drain("q")) {
    const I64s k = ReadI64(c.columns[0]), s = ReadI64(c.columns[1]), t = ReadI64(c.columns[2]);
    for (int64_t i = 0; i < c.length; ++i)
      rows.push_back(std::to_string(*k[i]) + ":" + std::to_string(*s[i]) + "-" +
                     (t[i] ? std::to_string(*t[i]) : "null"));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

CQ_TEST(engine_push_to_a_relation_refuses_a_missing_delete_whole) {
  for (const std::string lifetime : {"direct", "negative"}) {
    auto e = RelationEngine(lifetime);
    std::vector<ImportedBatch> ok;
    ok.push_back(MakeBatch({"k", "ts"}, {I64({1, 2}), I64({0, 1})}, 2));  // no op column: inserts
    e->Push("r", std::move(ok));
    std::vector<ImportedBatch> bad;
    bad.push_back(MakeBatch({"k", "op", "ts"}, {I64({3, 1}), Str({"+", "-"}), I64({2, 2})}, 2));
    bad.push_back(MakeBatch({"k", "op", "ts"}, {I64({1}), Str({"-"}), I64({3})}, 1));
    auto err = CQ_CATCH(e->Push("r", std::move(bad)));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT(err->kind() == ErrorKind::kInput);
    CQ_EXPECT_EQ(err->row(), 2);
    CQ_EXPECT_EQ(err->stream(), "r");
    CQ_EXPECT(std::string(err->what()).find("relation 'r': row 2 deletes (k=1) at ts 3") != std::string::npos);
    std::vector<ImportedBatch> bad_op;
    bad_op.push_back(MakeBatch({"k", "op", "ts"}, {I64({1}), Str({N}), I64({2})}, 1));
    err = CQ_CATCH(e->Push("r", std::move(bad_op)));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT(std::string(err->what()).find("op at row 0 is NULL") != std::string::npos);
    // Nothing of the refused pushes happened: 3 was not inserted, 1 is still alive.
    std::vector<ImportedBatch> more;
    more.push_back(MakeBatch({"k", "op", "ts"}, {I64({1}), Str({"-"}), I64({4})}, 1));
    e->Push("r", std::move(more));
    e->Close();
    CQ_EXPECT_EQ(Drained(*e), (std::vector<std::string>{"1:0-4", "2:1-null"}));
  }
}

}  // namespace
}  // namespace cq::test
