#pragma once
// What an operator is, told once, beside its factory (ADDING_AN_OPERATOR.md): the planner, explain,
// the engine and the Spark runner read these facts from here (Python through
// cq_core.operator_descriptors()) instead of keeping tables of operator names of their own, so a new
// operator is described in one place. DuckDB keeps such facts on its operator types
// (PhysicalOperatorType, Cast<T> by type), Velox on its plan nodes.
#include <string>

namespace cq {

struct OperatorDescriptor {
  // What the operator emits: a stream, a relation, or the kind of its (first) input.
  enum class Output { kAsInput, kStream, kRelation };
  // Where it creates tuples by itself: the DTS executor's firing points (paper 000 §3.2).
  enum class Firing { kNone, kInput, kExpirations, kEveryTick, kDelayedOutput };
  // The lifetime property (LIFETIMES.md) of its output: set by the operator itself (the planner
  // says which), its first input's, a join's (pending if an input's are pending, else known), a
  // bag union's (never constant: inputs interleave out of time order).
  enum class Lifetimes { kOwn, kFirstInput, kJoin, kUnion };
  // What Spark's partitioning must prove of it (SEMANTICS.md §7): nothing (it acts per row), that
  // it cannot be split, or that the key is among its partition keys, equi-join keys, GROUP BY keys
  // or compared whole-row columns.
  enum class Partition { kPerRow, kNever, kOnPartitionKeys, kOnJoinKeys, kOnGroupKeys, kOnWholeRows };
  // Where its output columns come from, for tracing a key through a plan: an input named by the
  // spec, the first input unchanged, its expressions, its GROUP BY keys (then computed aggregates),
  // its inputs side by side, every input at the same position, or its first input's followed by
  // columns of its own that trace to no input (a resource's read by a reference join).
  enum class Columns { kSource, kPass, kProject, kGroupKeys, kConcat, kMerge, kExtend };
  // What the engine does with it besides running it: the source of a stream or a relation pushed
  // to by name, or a query's output read by name.
  enum class Role { kNone, kStreamSource, kRelationSource, kOutput };

  std::string name;         // the plan's op
  std::string description;  // how errors and explain name it to a user
  Output output = Output::kAsInput;
  Firing firing = Firing::kNone;
  Lifetimes lifetimes = Lifetimes::kOwn;
  Partition partition = Partition::kPerRow;
  Columns columns = Columns::kPass;
  Role role = Role::kNone;
  // Its output carries its input's holder ids (a tuple's identity) unchanged: filters, projections,
  // bag unions. Two reads of one relation through such operators must be told apart.
  bool keeps_identity = false;
  // Identical operators of one script may be planned once (sub-plan reuse).
  bool shareable = true;
  // Reads its input's lifetimes through a tracker: the planner gives it the lifetime kind it
  // specializes on and the expiration policy.
  bool tracks_lifetimes = false;
  // Its result depends on the arrival order of rows with equal timestamps (a row window counts
  // them in that order).
  bool arrival_order = false;
};

// Names for the values above, as Python reads them.
const char* Name(OperatorDescriptor::Output v);
const char* Name(OperatorDescriptor::Firing v);
const char* Name(OperatorDescriptor::Lifetimes v);
const char* Name(OperatorDescriptor::Partition v);
const char* Name(OperatorDescriptor::Columns v);
const char* Name(OperatorDescriptor::Role v);

}  // namespace cq
