#pragma once
// A reference join (paper 002 §2.3.2, §7): each row of a windowed stream joined with the rows of a
// resource as it stands when the row is processed. ACCESS KEY looks up the resource's KEY columns
// with the row's values of the equated expressions (§7's index access); SCAN runs over all the
// resource's rows (§7's nested loop). A residual predicate over both sides' columns decides which
// pairs are results. A result lives as its stream row does (the window above decides): lifetimes,
// holders and the row's time pass through, so a key lookup, which finds at most one row, keeps the
// stream row's identity.
//
// Every read is one call of the resource interface (txn/resource.h) and goes into the engine's
// read log with the version read; under executor="scheduled" a read is one row's evaluation.
// State: none of its own (the resource is read afresh for every batch).
#include <memory>
#include <string>
#include <vector>

#include "kernels/expression.h"
#include "operators/operator.h"
#include "txn/resource.h"

namespace cq {

class ReferenceJoin final : public Operator {
 public:
  ReferenceJoin(int id, std::shared_ptr<txn::Resource> resource, bool scan,
                std::vector<std::unique_ptr<Expression>> keys, std::unique_ptr<Expression> residual,
                const Schema& input, BatchKind kind, txn::ReadLog* log);
  void Push(int port, const Batch& batch, Emitter& out) override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override;
  // Stateless: a row's results depend on the row and the resource's state when it is read.
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}

 private:
  int id_;
  std::shared_ptr<txn::Resource> resource_;
  bool scan_;
  std::vector<std::unique_ptr<Expression>> keys_;
  std::unique_ptr<Expression> residual_;
  Schema input_;
  std::shared_ptr<const Schema> schema_;
  BatchKind kind_;
  txn::ReadLog* log_;
};

}  // namespace cq
