#pragma once
// The source of a registered relation (REGISTER RELATION; SEMANTICS.md §3, §6): a table changed by
// timestamped inserts and deletes, turned into lifetime tuples. A firing point (paper 000 §3.2).
//
// Input (from the engine, already validated): stream batches of changes in time order — the
// relation's columns, optionally followed by the op column (utf8 "+" insert, "-" delete; without it
// every row is an insert). Output: the relation, as lifetime batches.
//  * direct: an insert at t starts a tuple [t, ?) with an expiration holder (paper 003 §4.1); a
//    delete at t of values v fixes the end of one alive copy of v to t (an EndBatch, emitted
//    before the batch's rows) and releases its holder. A copy inserted and deleted inside one
//    batch leaves with its end set, or not at all when it is a ghost (start = end).
//  * negative: an insert is a positive tuple, a delete a negative tuple (sync = t, other = the
//    start of the copy it ends), both in input order.
// Copies of equal values (bag semantics; NULL equals NULL, -0.0 equals 0.0) end oldest first, in
// both methods, so both report the same lifetimes. A delete with no alive copy is the user's
// error: the engine asks FirstMissingDelete before it runs a push, so the push is refused whole.
// Tuples still alive at close never end.
//
// State: per distinct value alive, the FIFO of its alive copies (start and holder id).
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "operators/operator.h"

namespace cq {

class RelationScan final : public Operator {
 public:
  RelationScan(std::string relation, Schema schema, bool negative, HolderTable* holders);
  void Push(int port, const Batch& changes, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  const Schema& output_schema() const override { return *schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

  const std::string& relation() const { return relation_; }
  const std::shared_ptr<const Schema>& shared_schema() const { return schema_; }
  // The first row, counted over all rows of `changes` in order, that deletes values with no alive
  // copy (given the copies alive now and the changes before it); -1 when every delete finds one.
  // Changes nothing.
  int64_t FirstMissingDelete(const std::vector<Batch>& changes) const;
  int64_t alive() const { return alive_count_; }
  // The tuples alive now, as a query registered now at progress `p` sees them (SEMANTICS.md §4.5):
  // each as [max(its start, p), its end), the end pending (direct: the copy's holder, fixed by a
  // later delete; negative: a positive, ended by a later negative). In start order. Copies of one
  // value come with the value all of them compare equal to (-0.0 as 0.0, every NaN as one NaN).
  Batch AliveFrom(Time p) const;
  std::vector<Batch> Backlog(Time p) override;

 private:
  struct Copy {
    Time start;
    HolderId holder;  // direct: the pending end's holder
    uint32_t batch;   // the input batch it arrived in, and its row there
    uint32_t row;
  };
  struct Copies {  // a FIFO: oldest first
    std::vector<Copy> items;
    size_t head = 0;
    size_t size() const { return items.size() - head; }
  };
  // The op column of a batch of changes, or null when every row is an insert.
  const Column* Ops(const Batch& changes) const;
  static bool IsDelete(const Column* ops, int64_t row) { return ops && ops->StrAt(row)[0] == '-'; }
  void Key(const Batch& changes, int64_t row, std::string* out) const;
  // Takes the oldest copy of `key` out of the alive set (it must be there).
  Copy TakeOldest(const std::string& key);

  std::string relation_;
  std::shared_ptr<const Schema> schema_;
  bool negative_;
  HolderTable* holders_;
  std::unordered_map<std::string, Copies> alive_;  // by value (AppendKey of every column)
  int64_t alive_count_ = 0;
  uint32_t batch_seq_ = 0;
};

// The relation as a query registered while the engine runs sees it (SEMANTICS.md §4.5): whole, as
// it stood at the registration's progress p — every tuple alive then as [max(its start, p), its
// end), which the engine hands this operator once it is added (RelationScan::AliveFrom) — and then
// every change as it comes. The planner puts one between a relation and the operators of such a
// query. Under the negative method a negative names the start it ends, which for a tuple alive at p
// is p here.
class RelationSince final : public Operator {
 public:
  RelationSince(const Schema& schema, Time since, bool negative)
      : schema_(schema), since_(since), negative_(negative) {}
  void Push(int port, const Batch& batch, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  bool passes_through() const override { return !negative_; }
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  // (Without p: a snapshot's operators are matched by this line, and p is the snapshot's state.)
  std::string Explain() const override { return "Relation as of its query's registration"; }
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  Schema schema_;
  Time since_;
  bool negative_;
};

}  // namespace cq
