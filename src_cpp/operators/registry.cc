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
    RegisterMasterTrigger(r);
    RegisterSlideWindow(r);
    RegisterPartitionRowWindow(r);
    RegisterNegativeTimeWindow(r);
    RegisterNegativeRowWindow(r);
    RegisterUnionAll(r);
    RegisterHashJoin(r);
    RegisterIStreamJoin(r);
    RegisterSharedWindowJoin(r);
    RegisterSwjRoute(r);
    RegisterSwjRouteIStream(r);
    RegisterAggregate(r);
    RegisterDelay(r);
    RegisterReissueHolders(r);
    RegisterReferenceJoin(r);
    RegisterModelApply(r);
    return r;
  }();
  return registry;
}

void OperatorRegistry::Register(OperatorDescriptor descriptor, OperatorFactory factory) {
  CQ_CHECK(!entries_.count(descriptor.name), "operator '" + descriptor.name + "' registered twice");
  std::string name = descriptor.name;
  entries_.emplace(std::move(name), Entry{std::move(descriptor), std::move(factory)});
}

void OperatorRegistry::RegisterNegative(const std::string& name, OperatorFactory factory) {
  CQ_CHECK(entries_.count(name), "a negative form of '" + name + "', which is not registered (register it first)");
  negative_[name] = std::move(factory);
}

const OperatorDescriptor& OperatorRegistry::descriptor(const std::string& name) const {
  auto it = entries_.find(name);
  CQ_CHECK(it != entries_.end(), "unknown operator '" + name + "' in plan");
  return it->second.descriptor;
}

std::vector<const OperatorDescriptor*> OperatorRegistry::descriptors() const {
  std::vector<const OperatorDescriptor*> out;
  for (const auto& [name, e] : entries_) out.push_back(&e.descriptor);
  return out;
}

std::unique_ptr<Operator> OperatorRegistry::Create(const OperatorSpec& spec, const std::vector<OperatorInput>& inputs,
                                                   const OperatorContext& ctx) const {
  auto it = entries_.find(spec.op);
  CQ_CHECK(it != entries_.end(), "unknown operator '" + spec.op + "' in plan");
  // The Negative Tuple method replaces the operators whose lifetimes it represents differently
  // (windows, and whatever reads ends); the others serve both methods.
  auto neg = ctx.negative ? negative_.find(spec.op) : negative_.end();
  std::unique_ptr<Operator> op =
      neg != negative_.end() ? neg->second(spec, inputs, ctx) : it->second.factory(spec, inputs, ctx);
  const OperatorDescriptor& d = it->second.descriptor;
  const BatchKind want = d.output == OperatorDescriptor::Output::kStream     ? BatchKind::kStream
                         : d.output == OperatorDescriptor::Output::kRelation ? BatchKind::kLifetime
                         : inputs.empty()                                    ? op->output_kind()
                                                                             : inputs[0].kind;
  CQ_CHECK(op->output_kind() == want, "operator '" + spec.op + "' emits another kind than its descriptor says");
  return op;
}

const char* Name(OperatorDescriptor::Output v) {
  using O = OperatorDescriptor::Output;
  switch (v) {
    case O::kAsInput: return "as input";
    case O::kStream: return "stream";
    case O::kRelation: return "relation";
  }
  return "";
}

const char* Name(OperatorDescriptor::Firing v) {
  using F = OperatorDescriptor::Firing;
  switch (v) {
    case F::kNone: return "";
    case F::kInput: return "input";
    case F::kExpirations: return "expirations";
    case F::kEveryTick: return "every tick";
    case F::kDelayedOutput: return "delayed output";
  }
  return "";
}

const char* Name(OperatorDescriptor::Lifetimes v) {
  using L = OperatorDescriptor::Lifetimes;
  switch (v) {
    case L::kOwn: return "own";
    case L::kFirstInput: return "first input";
    case L::kJoin: return "join";
    case L::kUnion: return "union";
  }
  return "";
}

const char* Name(OperatorDescriptor::Partition v) {
  using P = OperatorDescriptor::Partition;
  switch (v) {
    case P::kPerRow: return "per row";
    case P::kNever: return "never";
    case P::kOnPartitionKeys: return "partition keys";
    case P::kOnJoinKeys: return "join keys";
    case P::kOnGroupKeys: return "group keys";
    case P::kOnWholeRows: return "whole rows";
  }
  return "";
}

const char* Name(OperatorDescriptor::Columns v) {
  using C = OperatorDescriptor::Columns;
  switch (v) {
    case C::kSource: return "source";
    case C::kPass: return "pass";
    case C::kProject: return "project";
    case C::kGroupKeys: return "group keys";
    case C::kConcat: return "concat";
    case C::kMerge: return "merge";
    case C::kExtend: return "extend";
  }
  return "";
}

const char* Name(OperatorDescriptor::Role v) {
  using R = OperatorDescriptor::Role;
  switch (v) {
    case R::kNone: return "";
    case R::kStreamSource: return "stream source";
    case R::kRelationSource: return "relation source";
    case R::kOutput: return "output";
  }
  return "";
}

}  // namespace cq
