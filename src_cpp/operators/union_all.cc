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
  // Rows below `progress` are final on every input: merge them by time.
  std::vector<std::vector<std::pair<const Batch*, int64_t>>> rows(waiting_.size());
  for (size_t in = 0; in < waiting_.size(); ++in) {
    for (const Batch& b : waiting_[in]) {
      int64_t k = 0;
      while (k < b.length && b.StartAt(k) < progress) ++k;
      for (int64_t r = 0; r < k; ++r) rows[in].push_back({&b, r});
      if (k < b.length) break;
    }
  }
  // A k-way merge of the inputs' sorted rows, ties in input order.
  std::vector<size_t> pos(waiting_.size(), 0);
  std::vector<std::pair<const Batch*, int64_t>> merged;
  for (;;) {
    int best = -1;
    for (size_t in = 0; in < rows.size(); ++in) {
      if (pos[in] == rows[in].size()) continue;
      const auto& [b, r] = rows[in][pos[in]];
      if (best < 0 || b->StartAt(r) < rows[best][pos[best]].first->StartAt(rows[best][pos[best]].second))
        best = static_cast<int>(in);
    }
    if (best < 0) break;
    merged.push_back(rows[best][pos[best]++]);
  }
  if (!merged.empty()) {
    // Gather the merged rows run by run of one batch.
    Batch o;
    o.kind = BatchKind::kStream;
    o.schema = shared_;
    o.length = static_cast<int64_t>(merged.size());
    std::vector<std::vector<Column>> parts;
    std::vector<TimeColumn> times;
    size_t i = 0;
    while (i < merged.size()) {
      const Batch* b = merged[i].first;
      std::vector<uint32_t> idx;
      while (i < merged.size() && merged[i].first == b) idx.push_back(static_cast<uint32_t>(merged[i++].second));
      std::vector<Column> cols;
      for (const Column& c : b->columns) cols.push_back(Gather(c, idx.data(), static_cast<int64_t>(idx.size())));
      parts.push_back(std::move(cols));
      times.push_back(GatherTime(b->sync, idx.data(), static_cast<int64_t>(idx.size())));
    }
    for (size_t c = 0; c < schema_.size(); ++c) {
      std::vector<const Column*> ptrs;
      for (const auto& p : parts) ptrs.push_back(&p[c]);
      o.columns.push_back(ptrs.size() == 1 ? *ptrs[0] : Concat(ptrs.data(), static_cast<int64_t>(ptrs.size())));
    }
    o.sync.ticks = Buffer::Allocate(o.length * 8);
    bool steps = false;
    for (const auto& t : times) steps |= t.has_steps();
    if (steps) o.sync.steps = Buffer::AllocateZeroed(o.length * 8);
    int64_t p = 0;
    for (const auto& t : times) {
      const int64_t len = t.ticks.size / 8;
      std::copy(t.tick_data(), t.tick_data() + len, o.sync.ticks.as<int64_t>() + p);
      if (t.has_steps()) std::copy(t.step_data(), t.step_data() + len, o.sync.steps.as<int64_t>() + p);
      p += len;
    }
    // Drop what went out.
    for (size_t in = 0; in < waiting_.size(); ++in) {
      int64_t n = static_cast<int64_t>(rows[in].size());
      while (n > 0 && !waiting_[in].empty()) {
        Batch& b = waiting_[in].front();
        if (n >= b.length) {
          n -= b.length;
          waiting_[in].pop_front();
        } else {
          Batch rest;
          rest.kind = b.kind;
          rest.schema = b.schema;
          rest.length = b.length - n;
          for (const Column& c : b.columns) rest.columns.push_back(SliceColumn(c, n, rest.length));
          rest.sync = SliceTime(b.sync, n, rest.length);
          b = std::move(rest);
          n = 0;
        }
      }
    }
    out.Emit(std::move(o));
  }
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
