#include "operators/registry.h"

#include "engine/errors.h"

namespace cq {

const OperatorRegistry& OperatorRegistry::Global() {
  static const OperatorRegistry registry = [] {
    OperatorRegistry r;
    RegisterStreamScan(r);
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
    return r;
  }();
  return registry;
}

void OperatorRegistry::Register(const std::string& name, OperatorFactory factory) {
  factories_[name] = std::move(factory);
}

std::vector<std::string> OperatorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

std::unique_ptr<Operator> OperatorRegistry::Create(const OperatorSpec& spec,
                                                   const std::vector<OperatorInput>& inputs,
                                                   const OperatorContext& ctx) const {
  auto it = factories_.find(spec.op);
  CQ_CHECK(it != factories_.end(), "unknown operator '" + spec.op + "' in plan");
  return it->second(spec, inputs, ctx);
}

}  // namespace cq
