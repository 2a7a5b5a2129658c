#pragma once
// Probe operators for driving an executor by hand (heartbeat_test, scheduled_test): each logs what
// reaches it into a shared log and passes its input on.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "operators/operator.h"
#include "tests/test_util.h"

namespace cq::test {

inline const Schema kProbeSchema = {{"v", TypeId::kInt64}};

// Logs "<name>:<port>@<tick>" for every data item and "<name>:advance@<tick>" for every progress
// step into a shared log, and passes its input on.
class Probe final : public Operator {
 public:
  Probe(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  void Push(int port, const Batch& batch, Emitter& out) override {
    std::string ticks;
    for (int64_t k = 0; k < batch.num_rows(); ++k)
      ticks += (k ? "," : "") + std::to_string(batch.StartAt(batch.Physical(k)).tick);
    log_->push_back(name_ + ":" + std::to_string(port) + "@" + ticks);
    out.Emit(batch);
  }
  void AdvanceTo(Time progress, Emitter&) override {
    log_->push_back(name_ + ":advance@" + (progress.IsInfinite() ? "inf" : std::to_string(progress.tick)));
  }
  const Schema& output_schema() const override { return kProbeSchema; }
  BatchKind output_kind() const override { return BatchKind::kStream; }
  std::string Explain() const override { return "Probe " + name_; }
  void Snapshot(SnapshotWriter&) const override {}  // logs to the test, keeps nothing
  void Restore(SnapshotReader&) override {}

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

// A stream batch of values at the given ticks.
inline Batch Rows(const std::vector<int64_t>& ticks) {
  Batch b;
  b.kind = BatchKind::kStream;
  b.schema = std::make_shared<const Schema>(kProbeSchema);
  b.length = static_cast<int64_t>(ticks.size());
  I64s v, t;
  for (int64_t x : ticks) v.push_back(x * 10), t.push_back(x);
  b.columns = {I64(v)};
  b.sync.ticks = I64(t).values;
  return b;
}

using Ops = std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>>;

struct ProbeSpec {
  int id;
  std::vector<int> inputs;
  std::string name;
};

inline Ops Probes(const std::vector<ProbeSpec>& specs, std::vector<std::string>* log) {
  Ops ops;
  for (const ProbeSpec& p : specs) {
    OperatorSpec spec;
    spec.id = p.id;
    spec.op = "probe";
    spec.inputs = p.inputs;
    ops.emplace_back(std::move(spec), std::make_unique<Probe>(p.name, log));
  }
  return ops;
}

// The entries of `log` that start with `prefix`.
inline std::vector<std::string> Of(const std::vector<std::string>& log, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& e : log)
    if (e.rfind(prefix, 0) == 0) out.push_back(e);
  return out;
}

}  // namespace cq::test
