#include "executors/dts/dts_executor.h"

#include <algorithm>

#include "engine/errors.h"

namespace cq {

void DtsExecutor::NodeEmitter::Emit(Batch batch) {
  const Node& n = ex_->nodes_.at(node_);
  for (const Consumer& c : n.consumers) ex_->Deliver(c, batch);
}

void DtsExecutor::NodeEmitter::EmitEnds(EndBatch ends) {
  if (ends.length == 0) return;
  const Node& n = ex_->nodes_.at(node_);
  for (const Consumer& c : n.consumers) ex_->DeliverEnds(c, ends);
}

void DtsExecutor::DeliverEnds(const Consumer& c, const EndBatch& ends) {
  Node& n = nodes_.at(c.node);
  n.op->PushEnds(c.port, ends, *n.emitter);
}

void DtsExecutor::Deliver(const Consumer& c, const Batch& batch) {
  Node& n = nodes_.at(c.node);
  n.op->Push(c.port, batch, *n.emitter);
}

Operator* DtsExecutor::op(int id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second.op.get();
}

void DtsExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  // Validate everything before touching the graph.
  std::map<int, bool> fresh;
  for (auto& [spec, op] : ops) {
    CQ_CHECK(!nodes_.count(spec.id) && !fresh.count(spec.id), "duplicate operator id " + std::to_string(spec.id));
    fresh[spec.id] = true;
  }
  for (auto& [spec, op] : ops)
    for (int in : spec.inputs)
      CQ_CHECK(nodes_.count(in) || fresh.count(in), "operator " + std::to_string(spec.id) + " reads unknown operator " + std::to_string(in));

  auto saved_order = order_;
  std::vector<int> added;
  for (auto& [spec, op] : ops) {
    Node n;
    n.op = std::move(op);
    n.inputs = spec.inputs;
    n.emitter = std::make_unique<NodeEmitter>(this, spec.id);
    nodes_.emplace(spec.id, std::move(n));
    added.push_back(spec.id);
  }
  for (int id : added) {
    const auto& ins = nodes_.at(id).inputs;
    for (size_t port = 0; port < ins.size(); ++port)
      nodes_.at(ins[port]).consumers.push_back({id, static_cast<int>(port)});
  }
  try {
    order_ = TopologicalOrder();
  } catch (...) {
    for (int id : added) {
      for (int in : nodes_.at(id).inputs) {
        auto& cs = nodes_.at(in).consumers;
        cs.erase(std::remove_if(cs.begin(), cs.end(), [&](const Consumer& c) { return c.node == id; }), cs.end());
      }
    }
    for (int id : added) nodes_.erase(id);
    order_ = saved_order;
    throw;
  }
}

std::vector<int> DtsExecutor::TopologicalOrder() const {
  std::map<int, int> indegree;
  for (const auto& [id, n] : nodes_) indegree[id] = static_cast<int>(n.inputs.size());
  std::vector<int> ready, order;
  for (const auto& [id, d] : indegree)
    if (d == 0) ready.push_back(id);
  while (!ready.empty()) {
    // Smallest id first: a stable order that follows registration, which explain() shows.
    auto it = std::min_element(ready.begin(), ready.end());
    int id = *it;
    ready.erase(it);
    order.push_back(id);
    for (const Consumer& c : nodes_.at(id).consumers)
      if (--indegree[c.node] == 0) ready.push_back(c.node);
  }
  CQ_CHECK(order.size() == nodes_.size(), "the plan has a cycle; recursive queries need the DTS loop executor");
  return order;
}

void DtsExecutor::Push(int source, const Batch& batch) {
  Node& n = nodes_.at(source);
  n.op->Push(0, batch, *n.emitter);
}

void DtsExecutor::AdvanceTo(const std::map<int, Time>& source_progress) {
  for (int id : order_) {
    Node& n = nodes_.at(id);
    Time p;
    if (n.inputs.empty()) {
      auto it = source_progress.find(id);
      p = it == source_progress.end() ? n.progress : it->second;
    } else {
      // An input's progress is its producer's, moved forward by the producer's delay: a delay's
      // output holds nothing below its input's progress plus the delay.
      p = Time::Infinity();
      for (int in : n.inputs) {
        const Node& i = nodes_.at(in);
        p = std::min(p, i.progress == Time::MinusInfinity() ? i.progress : i.progress + i.op->delay());
      }
    }
    if (p > n.progress) {
      n.progress = p;
      n.op->AdvanceTo(p, *n.emitter);
    }
  }
}

}  // namespace cq
