// ReissueHolders on its own: pending tuples leave under fresh holder ids (known ends pass as they
// are), each end comes back under the id it was given, once, and ends of tuples that never came
// this way are dropped. Its state survives a snapshot.
#include "operators/reissue_holders.h"
#include "batch/snapshot.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

struct Collect final : Emitter {
  std::vector<Batch> batches;
  std::vector<EndBatch> ends;
  void Emit(Batch b) override { batches.push_back(b.Compact()); }
  void EmitEnds(EndBatch e) override { ends.push_back(e); }
};

const Schema kSchema = {{"v", TypeId::kInt64}};

// Rows v = 0, 1, ... starting at tick 0, 1, ... with the given holder ids.
Batch Pending(const std::vector<HolderId>& ids) {
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = std::make_shared<const Schema>(kSchema);
  b.length = static_cast<int64_t>(ids.size());
  I64s v;
  for (size_t i = 0; i < ids.size(); ++i) v.push_back(static_cast<int64_t>(i));
  b.columns = {I64(v)};
  b.sync.ticks = I64(v).values;
  b.other.ticks = I64(I64s(ids.size(), 100)).values;
  b.holders = Buffer::Allocate(b.length * static_cast<int64_t>(sizeof(HolderId)));
  for (size_t i = 0; i < ids.size(); ++i) b.holders.as<HolderId>()[i] = ids[i];
  return b;
}

EndBatch Ends(const std::vector<HolderId>& ids, int64_t tick) {
  EndBatch e;
  e.length = static_cast<int64_t>(ids.size());
  e.holders = Buffer::Allocate(e.length * static_cast<int64_t>(sizeof(HolderId)));
  for (size_t i = 0; i < ids.size(); ++i) e.holders.as<HolderId>()[i] = ids[i];
  e.ends = MakeTimeColumn(std::vector<Time>(ids.size(), Time{tick, 0}));
  return e;
}

CQ_TEST(reissue_gives_pending_tuples_fresh_ids_and_maps_their_ends) {
  HolderTable table;
  HolderId upstream[3];
  table.Allocate(3, upstream);  // the ids the producer upstream holds: 0, 1, 2
  ReissueHolders op(kSchema, BatchKind::kLifetime, &table);
  Collect out;
  op.Push(0, Pending({upstream[0], kNoHolder, upstream[2]}), out);
  CQ_EXPECT_EQ(out.batches.size(), 1);
  const HolderId* h = out.batches[0].holders.as<const HolderId>();
  CQ_EXPECT(h[1] == kNoHolder);
  for (int i : {0, 2})
    for (HolderId u : upstream) CQ_EXPECT(h[i] != u);
  CQ_EXPECT(h[0] != h[2]);
  CQ_EXPECT_EQ(table.live(), 5);

  // The end of upstream[2] and one of an id that never came this way.
  op.PushEnds(0, Ends({upstream[2], upstream[1]}, 7), out);
  CQ_EXPECT_EQ(out.ends.size(), 1);
  CQ_EXPECT_EQ(out.ends[0].length, 1);
  CQ_EXPECT_EQ(out.ends[0].ids()[0], h[2]);
  CQ_EXPECT(out.ends[0].ends.At(0) == (Time{7, 0}));
  CQ_EXPECT_EQ(table.live(), 4);  // the id given for upstream[2] is free again

  // A snapshot keeps the id still out; after a restore its end is mapped as before.
  SnapshotWriter w;
  op.Snapshot(w);
  ReissueHolders back(kSchema, BatchKind::kLifetime, &table);
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  back.Restore(r);
  Collect out2;
  back.PushEnds(0, Ends({upstream[0], upstream[0]}, 9), out2);
  CQ_EXPECT_EQ(out2.ends.size(), 1);
  CQ_EXPECT_EQ(out2.ends[0].length, 1);  // once: a second end for the same id is not its own
  CQ_EXPECT_EQ(out2.ends[0].ids()[0], h[0]);
}

CQ_TEST(reissue_passes_batches_without_pending_ends_as_they_are) {
  HolderTable table;
  ReissueHolders op(kSchema, BatchKind::kLifetime, &table);
  Collect out;
  Batch b = Pending({kNoHolder});
  b.holders = {};
  op.Push(0, b, out);
  CQ_EXPECT_EQ(out.batches.size(), 1);
  CQ_EXPECT(out.batches[0].holders.empty());
  CQ_EXPECT_EQ(table.live(), 0);
}

}  // namespace
}  // namespace cq::test
