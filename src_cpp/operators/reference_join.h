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
#include "operators/descriptor.h"
#include "operators/operator.h"
#include "txn/resource.h"
#include "txn/transaction_manager.h"

namespace cq {

// What the reference operators (paper 002: reference_join, model_apply) share: their input's
// columns followed by columns they read, the input's kind and lifetimes, the engine's read log,
// and no state of their own (a row's results depend on the row and on what is read for it).
class ReferenceOperator : public Operator {
 public:
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return kind_; }
  void Snapshot(SnapshotWriter&) const override {}
  void Restore(SnapshotReader&) override {}
  // Reads go through its redo area's transaction manager (null: read directly, txn="none").
  void set_manager(txn::TransactionManager* m) { manager_ = m; }

 protected:
  ReferenceOperator(int id, const Schema& input, const Schema& read, BatchKind kind, txn::ReadLog* log);
  int id_;
  Schema input_;
  std::shared_ptr<const Schema> schema_;
  BatchKind kind_;
  txn::ReadLog* log_;
  txn::TransactionManager* manager_ = nullptr;
};

// The transaction manager of the redo area spec `s` is in (its "redo_area", its query "txn_query"),
// with `source` (the resource or model `name` the operator reads) added to the area; null when
// the operator is in no area or the engine controls no transactions.
txn::TransactionManager* AreaManager(const OperatorSpec& s, txn::Bindings& b, const std::string& name,
                                     const std::shared_ptr<txn::Controlled>& source);

// Their descriptor: the first input's lifetimes, never split (Spark refuses resources), the input's
// columns then their own, at most one output row per input row for a lookup or a call (so the
// holder id stays the row's identity), and not shared (each query reads for itself).
OperatorDescriptor ReferenceDescriptor(std::string name, std::string description);

class ReferenceJoin final : public ReferenceOperator {
 public:
  ReferenceJoin(int id, std::shared_ptr<txn::Resource> resource, bool scan,
                std::vector<std::unique_ptr<Expression>> keys, std::unique_ptr<Expression> residual,
                const Schema& input, BatchKind kind, txn::ReadLog* log);
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::string Explain() const override;

 private:
  std::shared_ptr<txn::Resource> resource_;
  bool scan_;
  std::vector<std::unique_ptr<Expression>> keys_;
  std::unique_ptr<Expression> residual_;
};

}  // namespace cq
