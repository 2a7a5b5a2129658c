#include "operators/stream_scan.h"

#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

StreamScan::StreamScan(std::string stream, Schema schema)
    : stream_(std::move(stream)), schema_(std::make_shared<const Schema>(std::move(schema))) {}

void StreamScan::Push(int, const Batch& batch, Emitter& out) {
  if (batch.num_rows() > 0) out.Forward(batch);
}

std::string StreamScan::Explain() const { return "StreamScan " + stream_ + SchemaToString(*schema_); }

void RegisterStreamScan(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "stream_scan",
              .description = "reading a stream",
              .output = D::Output::kStream,
              .firing = D::Firing::kInput,
              .columns = D::Columns::kSource,
              .role = D::Role::kStreamSource,
              .shareable = false},
             [](const OperatorSpec& s, const std::vector<OperatorInput>&, const OperatorContext&) {
               return std::make_unique<StreamScan>(s.params["stream"].str(), SchemaFromJson(s.params["schema"]));
             });
}

}  // namespace cq
