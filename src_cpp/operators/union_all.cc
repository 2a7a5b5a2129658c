#include "operators/union_all.h"

#include <algorithm>

#include "engine/errors.h"
#include "operators/registry.h"

namespace cq {

UnionAll::UnionAll(const Schema& schema, BatchKind kind, int inputs)
    : schema_(schema), kind_(kind), shared_(std::make_shared<const Schema>(schema)), waiting_(inputs) {}

void UnionAll::Push(int port, const Batch& batch, Emitter& out) {
  if (batch.num_rows() == 0) return;
  if (kind_ == BatchKind::kLifetime) {
    Batch b = batch;
    b.schema = shared_;  // the union's column names (the first input's)
    out.Emit(std::move(b));
    return;
  }
  waiting_[port].push_back(batch.Compact());
}

void UnionAll::AdvanceTo(Time progress, Emitter& out) {
  if (kind_ == BatchKind::kLifetime) return;
  // Rows below `progress` are final on every input: a k-way merge by time, ties in input order.
  // Waiting batches are numbered per input: input i's k-th batch is (i << 24) | k.
  std::vector<size_t> batch(waiting_.size(), 0);
  std::vector<int64_t> row(waiting_.size(), 0);
  auto head = [&](size_t in) -> const Batch* {
    while (batch[in] < waiting_[in].size() && row[in] >= waiting_[in][batch[in]].length) ++batch[in], row[in] = 0;
    if (batch[in] == waiting_[in].size()) return nullptr;
    const Batch* b = &waiting_[in][batch[in]];
    return b->StartAt(row[in]) < progress ? b : nullptr;
  };
  std::vector<BatchRow> merged;
  std::vector<Time> ts;
  for (;;) {
    int best = -1;
    for (size_t in = 0; in < waiting_.size(); ++in) {
      const Batch* b = head(in);
      if (b && (best < 0 || b->StartAt(row[in]) < waiting_[best][batch[best]].StartAt(row[best])))
        best = static_cast<int>(in);
    }
    if (best < 0) break;
    ts.push_back(waiting_[best][batch[best]].StartAt(row[best]));
    merged.push_back({(static_cast<uint32_t>(best) << 24) | static_cast<uint32_t>(batch[best]),
                      static_cast<uint32_t>(row[best]++)});
  }
  if (merged.empty()) return;
  Batch o;
  o.kind = BatchKind::kStream;
  o.schema = shared_;
  o.length = static_cast<int64_t>(merged.size());
  o.columns = GatherRows([&](uint32_t k) -> const Batch& { return waiting_[k >> 24][k & 0xFFFFFF]; },
                         merged, schema_.size());
  o.sync = MakeTimeColumn(ts);
  // Drop what went out: whole batches, and the taken front of a partly taken one.
  for (size_t in = 0; in < waiting_.size(); ++in) {
    for (size_t k = 0; k < batch[in]; ++k) waiting_[in].pop_front();
    if (row[in] > 0 && !waiting_[in].empty()) {
      Batch& b = waiting_[in].front();
      b = b.Slice(row[in], b.length - row[in]);
    }
  }
  out.Emit(std::move(o));
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
    return std::make_unique<UnionAll>(*in[0].schema, in[0].kind, static_cast<int>(in.size()));
  });
}

}  // namespace cq
