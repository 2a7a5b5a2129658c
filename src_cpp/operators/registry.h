#pragma once
// Operators are created by name from their spec (ARCHITECTURE.md §3.6: registries, not switch
// statements).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
  void Register(const std::string& name, OperatorFactory factory);
  std::unique_ptr<Operator> Create(const OperatorSpec& spec, const std::vector<OperatorInput>& inputs,
                                   const OperatorContext& ctx) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, OperatorFactory> factories_;
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
void RegisterSlideWindow(OperatorRegistry& r);
void RegisterPartitionRowWindow(OperatorRegistry& r);
void RegisterNegativeTimeWindow(OperatorRegistry& r);
void RegisterNegativeRowWindow(OperatorRegistry& r);
void RegisterUnionAll(OperatorRegistry& r);
void RegisterHashJoin(OperatorRegistry& r);
void RegisterAggregate(OperatorRegistry& r);
void RegisterDelay(OperatorRegistry& r);
void RegisterReissueHolders(OperatorRegistry& r);

}  // namespace cq
