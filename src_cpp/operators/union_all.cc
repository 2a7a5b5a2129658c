#include "operators/union_all.h"

#include <algorithm>

#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/registry.h"

namespace cq {

UnionAll::UnionAll(const Schema& schema, BatchKind kind)
    : schema_(schema), kind_(kind), shared_(std::make_shared<const Schema>(schema)) {}

void UnionAll::Push(int, const Batch& batch, Emitter&) { waiting_.Add(batch); }

void UnionAll::PushEnds(int, const EndBatch& ends, Emitter& out) {
  EndBatch rest = waiting_.AddEnds(ends);
  if (rest.length) out.EmitEnds(std::move(rest));
}

void UnionAll::AdvanceTo(Time progress, Emitter& out) {
  Batch b = waiting_.Release(progress);
  if (b.length == 0) return;
  b.schema = shared_;  // the union's column names (the first input's)
  out.Emit(std::move(b));
}

void RegisterUnionAll(OperatorRegistry& r) {
  r.Register("union_all", [](const OperatorSpec&, const std::vector<OperatorInput>& in,
                             const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() >= 2, "UNION ALL takes two inputs or more");
    for (const auto& i : in) {
      CQ_CHECK(i.kind == in[0].kind, "UNION ALL of a stream and a relation");
      CQ_CHECK(i.schema->size() == in[0].schema->size(), "UNION ALL inputs differ in width");
      for (size_t c = 0; c < i.schema->size(); ++c)
        CQ_CHECK((*i.schema)[c].type == (*in[0].schema)[c].type, "UNION ALL inputs differ in types");
    }
    return std::make_unique<UnionAll>(*in[0].schema, in[0].kind);
  });
}


// The rows waiting to go out in time order.
void UnionAll::Snapshot(SnapshotWriter& w) const { waiting_.Snapshot(w); }
void UnionAll::Restore(SnapshotReader& r) { waiting_.Restore(r, schema_); }
}  // namespace cq
