// The reference join (operators/reference_join.h) on a hand-built in-process store: a key lookup
// joins each stream row with the row of its key in the version current when the row is pushed
// (a commit between pushes shows in later rows only), keeps the row's time, lifetime and holder,
// drops rows whose key is missing or NULL, applies the residual on the pairs; a scan joins every
// row; every push is one read in the log, with the version read and the row's instant.
#include <chrono>

#include "base/json.h"
#include "operators/reference_join.h"
#include "operators/registry.h"
#include "tests/test_util.h"
#include "txn/resource.h"

namespace cq::test {
namespace {

using namespace std::chrono_literals;

struct Collect final : Emitter {
  std::vector<Batch> batches;
  void Emit(Batch b) override { batches.push_back(b.Compact()); }
  void EmitEnds(EndBatch) override {}
};

const Schema kInput = {{"k", TypeId::kInt64}, {"a", TypeId::kInt64}};

// Stream rows (k, a) at ticks `ts`, alive 10 ticks (a [Range 10] window's output).
Batch Rows(const I64s& k, const I64s& a, const std::vector<int64_t>& ts) {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(kInput);
  b.length = static_cast<int64_t>(ts.size());
  b.columns = {I64(k), I64(a)};
  std::vector<Time> t;
  for (int64_t x : ts) t.push_back({x, 0});
  b.sync = MakeTimeColumn(t);
  b.constant_duration = Duration{10};
  return b;
}

txn::ResourceChange Upsert(const I64s& ids, const Strs& names) {
  txn::ResourceChange c{"x", txn::ChangeKind::kUpsert, {}, static_cast<int64_t>(ids.size())};
  c.columns.push_back(I64(ids));
  c.columns.push_back(Str(names));
  return c;
}

struct Fixture {
  txn::ResourceStore store;
  txn::Bindings bindings;
  std::unique_ptr<Operator> op;
  Collect out;

  explicit Fixture(const std::string& spec) {
    store.Define({"x", {{"id", TypeId::kInt64}, {"name", TypeId::kUtf8}}, {0}});
    store.Commit({Upsert({1, 2, 3}, {"one", "two", "three"})}, 1s, "load");
    bindings.resources["x"] = std::make_shared<txn::StoreResource>(&store, "x");
    OperatorSpec s;
    s.id = 7;
    s.op = "reference_join";
    s.inputs = {0};
    s.params = json::Parse(spec);
    OperatorContext ctx;
    ctx.txn = &bindings;
    op = OperatorRegistry::Global().Create(s, {{&kInput, BatchKind::kLifetime}}, ctx);
  }
};

const char* kKey =
    R"({"resource": "x", "access": "key", "keys": [{"kind": "column", "index": 0, "type": "int64"}],
        "residual": null})";

CQ_TEST(reference_join_looks_up_each_row_in_the_version_current_when_it_is_pushed) {
  Fixture f(kKey);
  f.op->Push(0, Rows({2, 9, 1}, {20, 90, 10}, {0, 1, 1}), f.out);
  f.store.Commit({Upsert({9, 1}, {"nine", "uno"})}, 1s, "t");
  f.op->Push(0, Rows({9, 1}, {91, 11}, {5, 6}), f.out);
  CQ_ASSERT(f.out.batches.size() == 2);
  const Batch& a = f.out.batches[0];
  CQ_EXPECT_EQ(ReadI64(a.columns[1]), (I64s{20, 10}));  // key 9 is not there yet
  CQ_EXPECT_EQ(ReadStr(a.columns[3]), (Strs{"two", "one"}));
  CQ_EXPECT(a.sync.At(0) == (Time{0, 0}) && a.sync.At(1) == (Time{1, 0}));
  CQ_EXPECT(a.constant_duration == Duration{10});  // the window's lifetimes go on unchanged
  const Batch& b = f.out.batches[1];
  CQ_EXPECT_EQ(ReadStr(b.columns[3]), (Strs{"nine", "uno"}));
  CQ_EXPECT_EQ(ReadI64(b.columns[2]), (I64s{9, 1}));
  const auto log = f.bindings.log.records();
  CQ_ASSERT(log.size() == 2);
  CQ_EXPECT(log[0].op == 7 && log[0].resource == "x" && log[0].version == 1 && log[0].rows == 2);
  CQ_EXPECT(log[1].version == 2 && log[1].instant == (Time{5, 0}) && log[1].rows == 2);
}

CQ_TEST(reference_join_a_null_key_matches_nothing_and_the_residual_filters_pairs) {
  Fixture f(R"({"resource": "x", "access": "key",
                "keys": [{"kind": "column", "index": 0, "type": "int64"}],
                "residual": {"kind": "call", "fn": "greater", "type": "bool",
                             "args": [{"kind": "column", "index": 1, "type": "int64"},
                                      {"kind": "literal", "type": "int64", "value": 15}]}})");
  f.op->Push(0, Rows({std::nullopt, 1, 2, 3}, {50, 10, 20, 30}, {0, 0, 0, 0}), f.out);
  CQ_ASSERT(f.out.batches.size() == 1);
  CQ_EXPECT_EQ(ReadI64(f.out.batches[0].columns[1]), (I64s{20, 30}));
  CQ_EXPECT_EQ(f.bindings.log.records()[0].rows, 3);  // the lookups that found a row
}

CQ_TEST(reference_join_a_scan_joins_every_row_of_the_resource) {
  Fixture f(R"({"resource": "x", "access": "scan", "keys": [], "residual": null})");
  f.op->Push(0, Rows({0, 0}, {1, 2}, {3, 4}), f.out);
  CQ_ASSERT(f.out.batches.size() == 1);
  const Batch& b = f.out.batches[0];
  CQ_EXPECT_EQ(ReadI64(b.columns[1]), (I64s{1, 1, 1, 2, 2, 2}));
  CQ_EXPECT_EQ(ReadI64(b.columns[2]), (I64s{1, 2, 3, 1, 2, 3}));
  CQ_EXPECT(b.sync.At(5) == (Time{4, 0}));
  CQ_EXPECT_EQ(f.bindings.log.records()[0].rows, 3);
}

CQ_TEST(reference_join_an_unbound_resource_is_an_input_error) {
  OperatorSpec s;
  s.id = 1;
  s.op = "reference_join";
  s.inputs = {0};
  s.params = json::Parse(kKey);
  txn::Bindings none;
  OperatorContext ctx;
  ctx.txn = &none;
  auto e = CQ_CATCH(OperatorRegistry::Global().Create(s, {{&kInput, BatchKind::kLifetime}}, ctx));
  CQ_EXPECT(e && e->kind() == ErrorKind::kInput);
}

}  // namespace
}  // namespace cq::test
