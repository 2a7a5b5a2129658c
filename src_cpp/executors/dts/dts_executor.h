#pragma once
// Delay-based Time-Splitting (paper 000 §3.2), run as a hybrid (SPEC §5): outside strongly
// connected parts of the graph an operator consumes whole multi-timestamp batches in time order,
// handed on depth-first as soon as they are produced, and progress (AdvanceTo) runs through the
// operators in topological order. Splitting execution per instant inside loops comes with the
// recursive-query issue; a plan with a cycle is rejected here until then.
#include <map>
#include <memory>
#include <vector>

#include "executors/executor.h"

namespace cq {

class DtsExecutor final : public Executor {
 public:
  // `hybrid`: split time per instant only inside loops; `max_loop_steps`: ε steps a loop may take
  // inside one tick before it is a runaway.
  explicit DtsExecutor(bool hybrid = true, int64_t max_loop_steps = 1000000)
      : hybrid_(hybrid), max_loop_steps_(max_loop_steps) {}
  void Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) override;
  void Push(int source, const Batch& batch) override;
  void AdvanceTo(const std::map<int, Time>& source_progress) override;

  Operator* op(int id) const override;
  const std::vector<int>& order() const override { return order_; }
  const std::vector<int>& inputs(int id) const override { return nodes_.at(id).inputs; }

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

  bool hybrid_;
  int64_t max_loop_steps_;
  std::map<int, Node> nodes_;
  std::vector<int> order_;
};

}  // namespace cq
