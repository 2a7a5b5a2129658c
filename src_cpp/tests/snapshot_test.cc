// Engine snapshots: the writer and reader of the binary form (round trips of every column type,
// shared buffers written once, every truncation and damaged lengths rejected with
// CqError(kSnapshot)), and Engine::Snapshot/Restore (restore-then-continue equals the run without
// a break, damaged bytes and other plans or options refused, the engine left as it was).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "batch/snapshot.h"
#include "engine/engine.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

// A batch with a column of every type (with NULLs), ε-steps, end times, holder ids and a selection.
Batch SampleBatch() {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(
      Schema{{"i", TypeId::kInt64}, {"d", TypeId::kFloat64}, {"s", TypeId::kUtf8}, {"f", TypeId::kBool}});
  b.length = 4;
  b.columns = {I64({1, std::nullopt, -3, 4}), F64({0.5, 2.5, std::nullopt, -1}), Str({"x", std::nullopt, "", "yz"}),
               Bool({true, false, std::nullopt, true})};
  b.sync.ticks = I64({1, 2, 2, 5}).values;
  b.sync.steps = I64({0, 0, 1, 0}).values;
  b.other.ticks = I64({3, Time::kInfTick, 4, 9}).values;
  b.holders = Buffer::Allocate(4 * sizeof(HolderId));
  const HolderId ids[4] = {kNoHolder, 7, kNoHolder, 2};
  std::memcpy(b.holders.data, ids, sizeof ids);
  b.has_selection = true;
  b.selection = Buffer::Allocate(2 * 4);
  b.selection.as<uint32_t>()[0] = 1;
  b.selection.as<uint32_t>()[1] = 3;
  b.selection_count = 2;
  return b;
}

std::string Serialized(const Batch& b) {
  SnapshotWriter w;
  w.WriteBatch(b);
  return w.bytes();
}

CQ_TEST(snapshot_reader_reads_back_what_the_writer_wrote) {
  SnapshotWriter w;
  w.U64(42);
  w.I64(-7);
  w.Bool(true);
  w.Str("héllo");
  w.PodVec(std::vector<Time>{{1, 2}, Time::Infinity()});
  w.OptDur(Duration::Ticks(5));
  w.OptDur(std::nullopt);
  const Batch b = SampleBatch();
  w.WriteBatch(b);
  EndBatch e;
  e.length = 2;
  e.holders = Buffer::Allocate(8);
  e.holders.as<HolderId>()[0] = 3;
  e.holders.as<HolderId>()[1] = 9;
  e.ends.ticks = I64({10, 11}).values;
  w.WriteEnds(e);

  SnapshotReader r(w.bytes().data(), w.bytes().size());
  CQ_EXPECT_EQ(r.U64(), 42);
  CQ_EXPECT_EQ(r.I64(), -7);
  CQ_EXPECT(r.Bool());
  CQ_EXPECT_EQ(r.Str(), "héllo");
  const auto times = r.PodVec<Time>();
  CQ_ASSERT(times.size() == 2);
  CQ_EXPECT(times[0] == (Time{1, 2}) && times[1] == Time::Infinity());
  CQ_EXPECT(r.OptDur() == std::optional<Duration>(Duration::Ticks(5)));
  CQ_EXPECT(!r.OptDur().has_value());
  const Batch got = r.ReadBatch();
  CQ_EXPECT(got.kind == BatchKind::kLifetime);
  CQ_ASSERT(got.schema && got.schema->size() == b.schema->size());
  for (size_t c = 0; c < b.schema->size(); ++c)
    CQ_EXPECT((*got.schema)[c].name == (*b.schema)[c].name && (*got.schema)[c].type == (*b.schema)[c].type);
  CQ_EXPECT_EQ(got.length, 4);
  CQ_EXPECT(ReadI64(got.columns[0]) == ReadI64(b.columns[0]));
  CQ_EXPECT(ReadF64(got.columns[1]) == ReadF64(b.columns[1]));
  CQ_EXPECT(ReadStr(got.columns[2]) == ReadStr(b.columns[2]));
  CQ_EXPECT(ReadBool(got.columns[3]) == ReadBool(b.columns[3]));
  for (int64_t i = 0; i < 4; ++i) {
    CQ_EXPECT(got.sync.At(i) == b.sync.At(i));
    CQ_EXPECT(got.other.At(i) == b.other.At(i));
    CQ_EXPECT_EQ(got.holders.as<HolderId>()[i], b.holders.as<HolderId>()[i]);
  }
  CQ_EXPECT(got.has_selection && got.selection_count == 2 && got.sel()[0] == 1 && got.sel()[1] == 3);
  const EndBatch ge = r.ReadEnds();
  CQ_EXPECT(ge.length == 2 && ge.ids()[1] == 9 && ge.ends.At(1) == (Time{11, 0}));
  CQ_EXPECT_EQ(r.left(), 0);
}

CQ_TEST(snapshot_writes_a_shared_buffer_once_and_shares_it_again) {
  Batch b = SampleBatch();
  I64s many(1000);
  for (int64_t i = 0; i < 1000; ++i) many[i] = i;
  b.columns[0] = I64(many);  // longer than the batch: a view of a bigger column, as slices are
  Batch view = b;            // another batch over the same buffers, as operators keep them
  view.has_selection = false;
  const size_t one = Serialized(b).size();
  CQ_EXPECT(one > 8000);
  SnapshotWriter w;
  w.WriteBatch(b);
  w.WriteBatch(view);
  CQ_EXPECT(w.bytes().size() < one + one / 4);  // the second batch is references only
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  const Batch x = r.ReadBatch(), y = r.ReadBatch();
  CQ_EXPECT(x.columns[0].values.data == y.columns[0].values.data);
  CQ_EXPECT(x.columns[2].values.data == y.columns[2].values.data);
  CQ_EXPECT(x.schema == y.schema);
  CQ_EXPECT(!y.has_selection);
}

CQ_TEST(snapshot_reader_rejects_every_truncation) {
  const std::string bytes = Serialized(SampleBatch());
  for (size_t n = 0; n < bytes.size(); ++n) {
    SnapshotReader r(bytes.data(), n);
    auto e = CQ_CATCH(r.ReadBatch());
    CQ_ASSERT(e.has_value());
    CQ_EXPECT(e->kind() == ErrorKind::kSnapshot);
  }
}

CQ_TEST(snapshot_reader_rejects_damaged_lengths_and_offsets) {
  // A count far beyond what is left: refused before anything is allocated.
  SnapshotWriter w;
  w.U64(uint64_t{1} << 60);
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  auto e = CQ_CATCH(r.PodVec<int64_t>());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(e->kind() == ErrorKind::kSnapshot);

  // A utf8 column whose last offset points past its bytes.
  Column s = Str({"ab", "c"});
  Buffer offsets = Buffer::Allocate(12);
  std::memcpy(offsets.data, s.offsets.data, 12);
  offsets.as<int32_t>()[2] = 1000;
  s.offsets = offsets;
  SnapshotWriter w2;
  w2.Col(s);
  SnapshotReader r2(w2.bytes().data(), w2.bytes().size());
  e = CQ_CATCH(r2.Col());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("offsets") != std::string::npos);

  // A selection naming a row the batch does not have.
  Batch b = SampleBatch();
  b.selection.as<uint32_t>()[1] = 4;
  const std::string bytes = Serialized(b);
  SnapshotReader r3(bytes.data(), bytes.size());
  e = CQ_CATCH(r3.ReadBatch());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(e->kind() == ErrorKind::kSnapshot);
}

// A struct with padding after `id` (4 bytes) and after `flag` (7 bytes): what memory held there
// before must not reach the snapshot.
struct Padded {
  uint64_t key;
  uint32_t id;
  Time at;
  bool flag;
};

std::string WithGarbage(unsigned char fill) {
  std::vector<Padded> v(3);
  std::memset(static_cast<void*>(v.data()), fill, v.size() * sizeof(Padded));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].key = i * 10;
    v[i].id = static_cast<uint32_t>(i);
    v[i].at = {static_cast<int64_t>(i), 1};
    v[i].flag = i % 2 == 1;
  }
  SnapshotWriter w;
  w.PodVec(v);
  w.Pod(v[1]);
  return w.bytes();
}

CQ_TEST(snapshot_writer_writes_structs_field_by_field_so_padding_never_reaches_the_bytes) {
  static_assert(sizeof(Padded) > 8 + 4 + 16 + 1);
  const std::string a = WithGarbage(0x00), b = WithGarbage(0xAB);
  CQ_EXPECT(a == b);
  CQ_EXPECT_EQ(a.size(), 8 + 4 * (8 + 4 + 16 + 1));  // packed: the fields' bytes only
  SnapshotReader r(a.data(), a.size());
  const auto v = r.PodVec<Padded>();
  CQ_ASSERT(v.size() == 3);
  CQ_EXPECT(v[2].key == 20 && v[2].id == 2 && v[2].at == (Time{2, 1}) && !v[2].flag && v[1].flag);
  const Padded one = r.Pod<Padded>();
  CQ_EXPECT(one.id == 1 && one.flag);
  CQ_EXPECT_EQ(r.left(), 0);

  // A bool field holds 0 or 1 only: any other byte is damage, refused before it is loaded as a bool.
  std::string bad = a;
  bad[8 + 8 + 4 + 16] = 2;  // the first item's flag
  SnapshotReader r2(bad.data(), bad.size());
  auto e = CQ_CATCH(r2.PodVec<Padded>());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("a flag: expected 0 or 1, found 2") != std::string::npos);
}

CQ_TEST(snapshot_reader_checks_ids_times_and_counts_and_says_where) {
  SnapshotWriter w;
  w.U32(7);            // an id
  w.U32(3);            // a holder id
  w.Pod(Time{5, -1});  // not a time: a negative step
  w.U64(100);          // a count of 16-byte items, with far fewer bytes left
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  auto e = CQ_CATCH(r.Below<uint32_t>(5, "a queue's id"));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()) == "not a valid cq snapshot: a queue's id: expected below 5, found 7");
  r.set_holder_capacity(3);
  {
    auto in = SnapshotReader::In("operator #4 (Window [Rows 2])");
    e = CQ_CATCH(r.Holder());
  }
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(
      std::string(e->what()) ==
      "not a valid cq snapshot: in operator #4 (Window [Rows 2]): an expiration holder id: expected below 3, found 3");
  e = CQ_CATCH(r.TimeValue("a window's next end"));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("a window's next end: expected a time, found (tick 5, step -1)") !=
            std::string::npos);
  e = CQ_CATCH(r.Count(16, "the kept rows"));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("the kept rows of 100 items of 16 bytes or more exceeds the 0 bytes left") !=
            std::string::npos);

  // A time an operator reached is not past its progress; one still to come is not before it.
  SnapshotWriter w2;
  w2.Pod(Time{9, 0});
  SnapshotReader r2(w2.bytes().data(), w2.bytes().size());
  r2.set_progress({8, 0});
  e = CQ_CATCH(r2.TimeReached("a join's progress"));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("not past the operator's progress (tick 8, step 0), found (tick 9, step 0)") !=
            std::string::npos);
  e = CQ_CATCH(r2.CheckToCome({7, 3}, "a window's next negative"));
  CQ_ASSERT(e.has_value());
  r2.CheckToCome({8, 0}, "a window's next negative");  // (at progress: to come)
}

CQ_TEST(snapshot_reader_refuses_a_lifetime_batch_without_ends_and_holder_ids_out_of_range) {
  Batch b = SampleBatch();
  b.other = {};  // a lifetime batch must say when its rows end
  std::string bytes = Serialized(b);
  SnapshotReader r(bytes.data(), bytes.size());
  auto e = CQ_CATCH(r.ReadBatch());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("a lifetime batch has no end times") != std::string::npos);

  bytes = Serialized(SampleBatch());  // holder ids 7 and 2
  SnapshotReader r2(bytes.data(), bytes.size());
  r2.set_holder_capacity(5);
  e = CQ_CATCH(r2.ReadBatch());
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("a batch's holder ids: expected ids below 5, found 7 at row 1") !=
            std::string::npos);

  SnapshotReader r3(bytes.data(), bytes.size());
  e = CQ_CATCH(r3.ReadBatch(*SampleBatch().schema, BatchKind::kStream));
  CQ_ASSERT(e.has_value());
  CQ_EXPECT(std::string(e->what()).find("expected stream rows, found lifetime rows") != std::string::npos);
}

// ---- the engine ---------------------------------------------------------------------------------

// REGISTER STREAM s(k INT, v INT);
// REGISTER QUERY g AS SELECT k, SUM(v) FROM s [Rows 3] GROUP BY k;   (pending ends: holders)
// REGISTER QUERY i AS ISTREAM(SELECT k, v FROM s [Range 4]);
std::string Plan() {
  return R"({"operators": [
    {"id": 0, "op": "stream_scan", "inputs": [], "stream": "s", "schema": [["k", "int64"], ["v", "int64"]]},
    {"id": 1, "op": "row_window", "inputs": [0], "rows": 3},
    {"id": 2, "op": "aggregate", "inputs": [1],
     "keys": [{"kind": "column", "index": 0, "type": "int64"}],
     "aggregates": [{"fn": "sum", "distinct": false, "type": "int64", "arg": {"kind": "column", "index": 1, "type": "int64"}}]},
    {"id": 3, "op": "sink", "inputs": [2], "query": "g"},
    {"id": 4, "op": "window", "inputs": [0], "kind": "range", "range": {"ticks": 4}},
    {"id": 5, "op": "istream", "inputs": [4], "lifetime": "constant"},
    {"id": 6, "op": "sink", "inputs": [5], "query": "i"}]})";
}

ImportedBatch Rows(const I64s& k, const I64s& v, const I64s& ts) {
  return MakeBatch({"k", "v", "ts"}, {I64(k), I64(v), I64(ts)}, static_cast<int64_t>(ts.size()));
}

void PushRows(Engine& e, const I64s& k, const I64s& v, const I64s& ts) {
  std::vector<ImportedBatch> b;
  b.push_back(Rows(k, v, ts));
  e.Push("s", std::move(b));
}

std::vector<std::string> Out(Engine& e, const std::string& q) {
  std::vector<std::string> rows;
  for (const OutputChunk& c : e.Drain(q))
    for (int64_t i = 0; i < c.length; ++i) {
      std::string row;
      for (const Column& col : c.columns) row += (col.IsValid(i) ? std::to_string(col.i64()[i]) : "NULL") + "|";
      rows.push_back(row);
    }
  std::sort(rows.begin(), rows.end());
  return rows;
}

void FirstHalf(Engine& e) {
  PushRows(e, {1, 2, 1, 1}, {10, 20, 30, 40}, {0, 1, 1, 3});
  e.Advance({4, 0});
}

void SecondHalf(Engine& e) {
  PushRows(e, {2, 1, 2}, {5, 6, 7}, {5, 8, 8});
  e.Close();
}

CQ_TEST(engine_restored_from_a_snapshot_continues_like_the_original) {
  Engine straight(EngineOptions{});
  straight.AddPlan(Plan());
  FirstHalf(straight);
  SecondHalf(straight);

  Engine first(EngineOptions{});
  first.AddPlan(Plan());
  FirstHalf(first);
  const std::string blob = first.Snapshot("annex");
  CQ_EXPECT_EQ(Engine::SnapshotAnnex(blob), "annex");
  Engine second(EngineOptions{});
  second.AddPlan(Plan());
  second.Restore(blob);
  SecondHalf(second);
  for (const char* q : {"g", "i"}) CQ_EXPECT(Out(second, q) == Out(straight, q));
  // The original goes on by itself too: the snapshot took nothing from it.
  SecondHalf(first);
  Engine again(EngineOptions{});
  again.AddPlan(Plan());
  FirstHalf(again);
  SecondHalf(again);
  for (const char* q : {"g", "i"}) CQ_EXPECT(Out(first, q) == Out(again, q));
}

CQ_TEST(engine_refuses_damaged_snapshots_and_stays_as_it_was) {
  Engine e(EngineOptions{});
  e.AddPlan(Plan());
  FirstHalf(e);
  const std::string blob = e.Snapshot();
  Engine target(EngineOptions{});
  target.AddPlan(Plan());
  PushRows(target, {9}, {9}, {2});
  // Every truncation, and a flipped byte in every 97th position, is refused.
  for (size_t n = 0; n < blob.size(); n += (n < 64 ? 1 : 13)) {
    auto err = CQ_CATCH(target.Restore(std::string_view(blob).substr(0, n)));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT(err->kind() == ErrorKind::kSnapshot);
  }
  for (size_t at = 0; at < blob.size(); at += 97) {
    std::string bad = blob;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    auto err = CQ_CATCH(target.Restore(bad));
    CQ_ASSERT(err.has_value());
    CQ_EXPECT(err->kind() == ErrorKind::kSnapshot);
  }
  // The target kept its own state: its row at 2 is still there.
  target.Close();
  const auto rows = Out(target, "i");
  CQ_ASSERT(rows.size() == 1);
  CQ_EXPECT_EQ(rows[0], "9|9|2|");
}

// Damage the checksum cannot see (the bytes re-summed, as a forged snapshot would be): restoring
// either succeeds or throws CqError — the structural checks (lengths, types, references into
// kept batches, sequence numbers, reference counts) stand between the bytes and the engine's
// indexes. (Run under CQ_SANITIZE to see that nothing reads out of bounds.) What a forged
// snapshot that passes them does when the engine runs on is not checked: values (a timestamp, a
// count) are taken as they are; the checksum is what keeps accidental damage out.
CQ_TEST(engine_restore_of_forged_bytes_throws_or_succeeds_but_never_crashes) {
  std::string plan = Plan();
  // Also a join (two sides, open results) and a union (ordered runs) in the same engine.
  plan.replace(plan.rfind("]}"), 2, R"(,
    {"id": 7, "op": "stream_scan", "inputs": [], "stream": "t", "schema": [["k", "int64"], ["v", "int64"]]},
    {"id": 8, "op": "row_window", "inputs": [7], "rows": 2},
    {"id": 9, "op": "join", "inputs": [1, 8],
     "left_keys": [{"kind": "column", "index": 0, "type": "int64"}],
     "right_keys": [{"kind": "column", "index": 0, "type": "int64"}]},
    {"id": 10, "op": "sink", "inputs": [9], "query": "j"}]})");
  Engine e(EngineOptions{});
  e.AddPlan(plan);
  FirstHalf(e);
  std::vector<ImportedBatch> t;
  t.push_back(Rows({1, 2}, {5, 6}, {4, 4}));
  e.Push("t", std::move(t));
  const std::string blob = e.Snapshot();
  // CQ_FUZZ_SEED=n explores other damage (the default is fixed: a failure must repeat).
  const char* seed = std::getenv("CQ_FUZZ_SEED");
  Rng rng(seed ? std::strtoull(seed, nullptr, 10) : 7);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bad = blob;
    for (int k = 0, n = 1 + static_cast<int>(rng.Below(3)); k < n; ++k) {
      const size_t at = 32 + static_cast<size_t>(rng.Below(static_cast<int64_t>(bad.size() - 32)));
      bad[at] = static_cast<char>(rng.Below(4) == 0 ? rng.Next() : bad[at] ^ (1 << rng.Below(8)));
    }
    const uint64_t sum = SnapshotChecksum(bad.data() + 32, bad.size() - 32);
    std::memcpy(bad.data() + 24, &sum, 8);
    Engine target(EngineOptions{});
    target.AddPlan(plan);
    try {
      target.Restore(bad);
    } catch (const CqError&) {
      ++refused;
    }
  }
  CQ_EXPECT(refused > 1000);  // most damage is seen; the rest changed values, not structure
}

CQ_TEST(engine_refuses_a_snapshot_of_other_plans_or_options) {
  Engine e(EngineOptions{});
  e.AddPlan(Plan());
  const std::string blob = e.Snapshot();

  Engine other_options(EngineOptions{"negative"});
  other_options.AddPlan(Plan());
  auto err = CQ_CATCH(other_options.Restore(blob));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT(err->kind() == ErrorKind::kSnapshot);
  CQ_EXPECT(std::string(err->what()).find("lifetime='direct'") != std::string::npos);

  Engine no_plan(EngineOptions{});
  err = CQ_CATCH(no_plan.Restore(blob));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT(std::string(err->what()).find("1 plan fragments") != std::string::npos);

  std::string plan = Plan();
  plan.replace(plan.find("\"rows\": 3"), 9, "\"rows\": 4");
  Engine other_plan(EngineOptions{});
  other_plan.AddPlan(plan);
  err = CQ_CATCH(other_plan.Restore(blob));
  CQ_ASSERT(err.has_value());
  CQ_EXPECT(std::string(err->what()).find("plan fragment 1 differs") != std::string::npos);

  EngineOptions sc;
  sc.executor = "scheduled";
  Engine scheduled(sc);
  scheduled.AddPlan(Plan());
  err = CQ_CATCH(scheduled.Snapshot());
  CQ_ASSERT(err.has_value());
  CQ_EXPECT(std::string(err->what()).find("executor='dts' and 'heartbeat'") != std::string::npos);
}

}  // namespace
}  // namespace cq::test
