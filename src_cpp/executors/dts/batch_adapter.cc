#include "executors/dts/batch_adapter.h"

#include "base/errors.h"
#include "batch/snapshot.h"

namespace cq {

BatchAdapter::BatchAdapter(Operator* op, std::vector<Input> inputs) : op_(op), inputs_(std::move(inputs)) {}

BatchAdapter::Run& BatchAdapter::RunFor(int port) {
  if (used_ > 0 && runs_[used_ - 1].port == port) return runs_[used_ - 1];
  const Input& in = inputs_.at(static_cast<size_t>(port));
  if (used_ == runs_.size()) {
    runs_.push_back({port, RowBatchBuilder(in.schema, in.kind, in.duration)});
  } else if (runs_[used_].port != port) {
    runs_[used_] = {port, RowBatchBuilder(in.schema, in.kind, in.duration)};
  }
  return runs_[used_++];
}

void BatchAdapter::Push(int port, const Row& row, RowEmitter&) {
  RunFor(port).rows.Append(row);
  first_ = std::min(first_, row.sync);
}

void BatchAdapter::PushEnd(int port, HolderId id, Time end, RowEmitter& out) {
  for (size_t k = 0; k < used_; ++k)
    if (runs_[k].port == port && runs_[k].rows.FixEnd(id, end)) return;
  // Its row went in already.
  EndBatch e;
  e.length = 1;
  e.holders = Buffer::Allocate(sizeof(HolderId));
  e.holders.as<HolderId>()[0] = id;
  e.ends = MakeTimeColumn({end});
  to_rows_.set(&out);
  op_->PushEnds(port, e, to_rows_);
}

void BatchAdapter::Flush(RowEmitter& out) {
  to_rows_.set(&out);
  // Taken out first: what the operator emits may come back into this adapter through a loop.
  std::vector<std::pair<int, Batch>> batches;
  for (size_t k = 0; k < used_; ++k) batches.emplace_back(runs_[k].port, runs_[k].rows.Finish());
  used_ = 0;
  first_ = Time::Infinity();
  for (auto& [port, b] : batches)
    if (b.length) op_->Push(port, b, to_rows_);
}

void BatchAdapter::AdvanceTo(Time progress, RowEmitter& out) {
  Flush(out);
  to_rows_.set(&out);
  op_->AdvanceTo(progress, to_rows_);
}

Time BatchAdapter::next_firing(int64_t last_tick) const { return std::min(first_, op_->next_firing(last_tick)); }

void BatchAdapter::Snapshot(SnapshotWriter& w) const {
  w.U64(used_);
  for (size_t k = 0; k < used_; ++k) {
    w.I64(runs_[k].port);
    // Finish empties the builder, so a copy is written (snapshots are taken between calls, where
    // nothing usually waits here).
    RowBatchBuilder copy = runs_[k].rows;
    w.WriteBatch(copy.Finish());
  }
}

void BatchAdapter::Restore(SnapshotReader& r) {
  used_ = 0;
  first_ = Time::Infinity();
  for (size_t n = r.Count(8); n > 0; --n) {
    const int64_t port = r.I64();
    CQ_SNAPSHOT_CHECK(port >= 0 && static_cast<size_t>(port) < inputs_.size(), "a waiting run names no input");
    const Input& in = inputs_[static_cast<size_t>(port)];
    Batch b = r.ReadBatch(*in.schema, in.kind);
    Run& run = RunFor(static_cast<int>(port));
    ForEachRow(b, [&](const Row& row) {
      run.rows.Append(row);
      first_ = std::min(first_, row.sync);
    });
  }
}

}  // namespace cq
