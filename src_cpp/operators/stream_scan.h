#pragma once
// The source of a registered stream: a firing point (paper 000 §3.2) that emits what is pushed.
// Inputs reach it already validated by the engine (schema, non-null and non-decreasing times).
#include "operators/operator.h"

namespace cq {

class StreamScan final : public Operator {
 public:
  StreamScan(std::string stream, Schema schema);
  void Push(int port, const Batch& batch, Emitter& out) override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override;
  // Stateless: its output depends on the row in hand only.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}
  const std::string& stream() const { return stream_; }
  const std::shared_ptr<const Schema>& shared_schema() const { return schema_; }

 private:
  std::string stream_;
  std::shared_ptr<const Schema> schema_;
};

}  // namespace cq
