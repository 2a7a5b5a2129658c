#pragma once
// GROUP BY with COUNT(*), COUNT, SUM, AVG, MIN, MAX (optionally DISTINCT): at every instant t, the
// SQL aggregate of R(t) per group (SPEC §4; no row for an empty group, so an aggregate without
// GROUP BY over an empty relation yields nothing).
//
// Incremental: an InstantTracker hands over each complete instant's inserted and expired tuples,
// which update the groups' accumulators (MIN/MAX keep an ordered multiset, so they stay right when
// the extreme expires). A group whose value changed ends its current result tuple at t and starts a
// new one. The result's end is not known when it starts — it is the group's next change — so under
// the direct method it leaves with an expiration holder (paper 003 §4.1), fixed at that change;
// under the negative method the old value leaves as a negative tuple.
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "kernels/datum.h"
#include "kernels/expression.h"
#include "lifetime/instant_tracker.h"
#include "operators/operator.h"

namespace cq {

class Aggregate final : public Operator {
 public:
  struct Spec {
    std::string fn;  // count_star | count | sum | avg | min | max
    bool distinct;
    TypeId type;     // of the result
    std::unique_ptr<Expression> arg;  // null for count_star
  };
  Aggregate(const Schema& input, std::vector<std::unique_ptr<Expression>> keys, std::vector<Spec> aggs,
            Schema output, std::unique_ptr<InstantTracker> tracker, bool negative, HolderTable* holders);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return output_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override { return negative_ ? "Aggregate (negative tuples)" : "Aggregate"; }

 private:
  using Key = std::variant<int64_t, double, std::string, bool>;
  struct Acc {
    int64_t count = 0;      // rows (count_star) or non-null values
    int64_t isum = 0;       // sum of int64 values (wraps)
    double dsum = 0;        // sum of float64 values (avg: of all values)
    std::map<Key, int64_t> values;  // min/max, and every DISTINCT aggregate: value -> copies
  };
  struct Group {
    std::vector<Scalar> keys;
    int64_t rows = 0;
    std::vector<Acc> accs;
    bool open = false;           // a result tuple is alive
    std::vector<Scalar> result;  // its values
    Time start;
    HolderId holder = kNoHolder;
  };
  void Apply(const Batch& b, uint32_t row, int sign);
  std::vector<Scalar> Result(const Group& g) const;

  Schema input_, output_;
  std::shared_ptr<const Schema> shared_output_;
  std::vector<std::unique_ptr<Expression>> keys_;
  std::vector<Spec> aggs_;
  std::unique_ptr<InstantTracker> tracker_;
  bool negative_;
  HolderTable* holders_;
  std::shared_ptr<const Schema> derived_schema_;  // keys, then aggregate arguments
  std::unordered_map<std::string, uint32_t> group_of_;
  std::vector<Group> groups_;
  std::vector<uint32_t> touched_;
  std::vector<uint8_t> is_touched_;
};

}  // namespace cq
