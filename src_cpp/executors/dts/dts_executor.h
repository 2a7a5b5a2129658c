#pragma once
// Delay-based Time-Splitting (paper 000 §3.2), run as a hybrid (SPEC §5): outside strongly
// connected parts of the graph an operator consumes whole multi-timestamp batches in time order,
// handed on depth-first as soon as they are produced, and progress (AdvanceTo) runs through the
// operators in topological order. Splitting execution per instant inside loops comes with the
// recursive-query issue; a plan with a cycle is rejected here until then.
#include <map>
#include <memory>
#include <vector>

#include "operators/operator.h"

namespace cq {

class DtsExecutor {
 public:
  // Adds operators (ids must be new; inputs must name existing or newly added operators). Either
  // every operator is added or, on an exception, none is.
  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops);

  // Rows entering at source operator `source`.
  void Push(int source, const Batch& batch);
  // Source `source` will not produce anything below `progress` any more.
  void AdvanceTo(const std::map<int, Time>& source_progress);

  Operator* op(int id) const;
  const std::vector<int>& order() const { return order_; }
  const std::vector<int>& inputs(int id) const { return nodes_.at(id).inputs; }

 private:
  struct Consumer {
    int node;
    int port;
  };
  struct Node;
  class NodeEmitter final : public Emitter {
   public:
    NodeEmitter(DtsExecutor* ex, int node) : ex_(ex), node_(node) {}
    void Emit(Batch batch) override;
    void EmitEnds(EndBatch ends) override;

   private:
    DtsExecutor* ex_;
    int node_;
  };
  struct Node {
    std::unique_ptr<Operator> op;
    std::vector<int> inputs;
    std::vector<Consumer> consumers;
    std::unique_ptr<NodeEmitter> emitter;
    Time progress = Time::MinusInfinity();
  };

  void Deliver(const Consumer& c, const Batch& batch);
  void DeliverEnds(const Consumer& c, const EndBatch& ends);
  std::vector<int> TopologicalOrder() const;

  std::map<int, Node> nodes_;
  std::vector<int> order_;
};

}  // namespace cq
