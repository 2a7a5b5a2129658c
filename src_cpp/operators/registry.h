#pragma once
// Operators are created by name from their spec (ARCHITECTURE.md §3.6: registries, not switch
// statements).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "operators/descriptor.h"
#include "operators/operator.h"

namespace cq {

struct OperatorInput {
  const Schema* schema;
  BatchKind kind;
};

using OperatorFactory = std::function<std::unique_ptr<Operator>(const OperatorSpec&, const std::vector<OperatorInput>&,
                                                                const OperatorContext&)>;

class OperatorRegistry {
 public:
  static const OperatorRegistry& Global();
  // An operator: what it is, and how to build it from its spec.
  void Register(OperatorDescriptor descriptor, OperatorFactory factory);
  // The Negative Tuple method's form of a registered operator (paper 003 §2): built instead of it
  // when the engine runs that method; it is the same operator to everything else.
  void RegisterNegative(const std::string& name, OperatorFactory factory);
  // Builds the operator of `spec`, and checks that it emits what its descriptor says.
  std::unique_ptr<Operator> Create(const OperatorSpec& spec, const std::vector<OperatorInput>& inputs,
                                   const OperatorContext& ctx) const;
  const OperatorDescriptor& descriptor(const std::string& name) const;
  std::vector<const OperatorDescriptor*> descriptors() const;
  bool has_negative(const std::string& name) const { return negative_.count(name) > 0; }

 private:
  struct Entry {
    OperatorDescriptor descriptor;
    OperatorFactory factory;
  };
  std::map<std::string, Entry> entries_;
  std::map<std::string, OperatorFactory> negative_;
};

// One per operator file.
void RegisterStreamScan(OperatorRegistry& r);
void RegisterRelationScan(OperatorRegistry& r);
void RegisterWindow(OperatorRegistry& r);
void RegisterFilter(OperatorRegistry& r);
void RegisterProject(OperatorRegistry& r);
void RegisterIStream(OperatorRegistry& r);
void RegisterQuerySink(OperatorRegistry& r);
void RegisterRowWindow(OperatorRegistry& r);
void RegisterDStream(OperatorRegistry& r);
void RegisterRStream(OperatorRegistry& r);
void RegisterMasterTrigger(OperatorRegistry& r);
void RegisterSlideWindow(OperatorRegistry& r);
void RegisterPartitionRowWindow(OperatorRegistry& r);
void RegisterNegativeTimeWindow(OperatorRegistry& r);
void RegisterNegativeRowWindow(OperatorRegistry& r);
void RegisterUnionAll(OperatorRegistry& r);
void RegisterHashJoin(OperatorRegistry& r);
void RegisterIStreamJoin(OperatorRegistry& r);
void RegisterSharedWindowJoin(OperatorRegistry& r);
void RegisterSwjRoute(OperatorRegistry& r);
void RegisterSwjRouteIStream(OperatorRegistry& r);
void RegisterAggregate(OperatorRegistry& r);
void RegisterDelay(OperatorRegistry& r);
void RegisterReissueHolders(OperatorRegistry& r);
void RegisterReferenceJoin(OperatorRegistry& r);
void RegisterModelApply(OperatorRegistry& r);

}  // namespace cq
