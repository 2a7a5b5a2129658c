#pragma once
// Equality of whole rows across two batches of one schema, for the bag differences of
// ISTREAM/DSTREAM (and later set operations). NULL equals NULL here, as in SQL's set operations
// ("not distinct"). The per-column comparisons are chosen once per schema, not per row.
#include <span>
#include <vector>

#include "batch/column.h"
#include "batch/types.h"

namespace cq {

class RowEqual {
 public:
  explicit RowEqual(const Schema& schema);
  bool operator()(std::span<const Column> a, int64_t i, std::span<const Column> b, int64_t j) const {
    for (size_t c = 0; c < fns_.size(); ++c)
      if (!fns_[c](a[c], i, b[c], j)) return false;
    return true;
  }

 private:
  using Fn = bool (*)(const Column&, int64_t, const Column&, int64_t);
  std::vector<Fn> fns_;
};

}  // namespace cq
