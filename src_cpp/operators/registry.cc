#include "operators/registry.h"

#include "base/errors.h"

namespace cq {

const OperatorRegistry& OperatorRegistry::Global() {
  static const OperatorRegistry registry = [] {
    OperatorRegistry r;
    RegisterStreamScan(r);
    RegisterRelationScan(r);
    RegisterWindow(r);
    RegisterFilter(r);
    RegisterProject(r);
    RegisterIStream(r);
    RegisterQuerySink(r);
    RegisterRowWindow(r);
    RegisterDStream(r);
    RegisterRStream(r);
    RegisterSlideWindow(r);
    RegisterPartitionRowWindow(r);
    RegisterNegativeTimeWindow(r);
    RegisterNegativeRowWindow(r);
    RegisterUnionAll(r);
    RegisterHashJoin(r);
    RegisterAggregate(r);
    RegisterDelay(r);
    RegisterReissueHolders(r);
    return r;
  }();
  return registry;
}

void OperatorRegistry::Register(const std::string& name, OperatorFactory factory) {
  factories_[name] = std::move(factory);
}

std::vector<std::string> OperatorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_)
    if (name.rfind("negative:", 0) != 0) out.push_back(name);
  return out;
}

std::unique_ptr<Operator> OperatorRegistry::Create(const OperatorSpec& spec, const std::vector<OperatorInput>& inputs,
                                                   const OperatorContext& ctx) const {
  // The Negative Tuple method replaces the operators whose lifetimes it represents differently
  // (windows, and whatever reads ends); the others serve both methods.
  auto it = ctx.negative ? factories_.find("negative:" + spec.op) : factories_.end();
  if (it == factories_.end()) it = factories_.find(spec.op);
  CQ_CHECK(it != factories_.end(), "unknown operator '" + spec.op + "' in plan");
  return it->second(spec, inputs, ctx);
}

}  // namespace cq
