// txn/resource.h: KeyIndex matches each probe to the row holding its key among rows in any order
// (what a database returns, a copy of its table), once built; MatchProbes is one KeyIndex per read.
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "txn/resource.h"

namespace cq::test {
namespace {

// A key of two columns (a BIGINT, b VARCHAR) and a value, rows out of key order.
txn::ResourceSpec PairSpec() {
  return {"pairs", {{"v", TypeId::kFloat64}, {"a", TypeId::kInt64}, {"b", TypeId::kUtf8}}, {1, 2}};
}

Columns PairRows(const I64s& a, const Strs& b) {
  Columns rows;
  F64s v;
  for (size_t i = 0; i < a.size(); ++i) v.push_back(static_cast<double>(i));
  rows.push_back(F64(v));
  rows.push_back(I64(a));
  rows.push_back(Str(b));
  return rows;
}

CQ_TEST(key_index_matches_each_probe_to_the_row_holding_its_key) {
  const txn::KeyIndex index(PairSpec(), PairRows({3, 1, 2, 1}, {"p", "q", "p", "p"}), 4);
  CQ_EXPECT(index.resource() == "pairs");
  CQ_EXPECT((index.types() == std::vector<TypeId>{TypeId::kInt64, TypeId::kUtf8}));
  Columns probes;
  probes.push_back(I64({2, 2, 1, std::nullopt, 1, 9}));
  probes.push_back(Str({"p", "p", "q", "p", std::nullopt, "p"}));
  std::vector<int64_t> match;
  // Repeated probes find one row; a NULL in a probe's key and a key no row holds find none.
  CQ_EXPECT(index.Match(probes, 6, match) == 3);
  CQ_EXPECT((match == std::vector<int64_t>{2, 2, 1, -1, -1, -1}));
  CQ_EXPECT(index.Match(probes, 0, match) == 0 && match.empty());
}

CQ_TEST(match_probes_is_one_key_index_over_the_rows_read) {
  txn::ResourceRead read;
  read.columns = PairRows({1, 2}, {"p", "p"});
  read.length = 2;
  Columns probes;
  probes.push_back(I64({2, 5}));
  probes.push_back(Str({"p", "p"}));
  txn::MatchProbes(PairSpec(), probes, 2, read);
  CQ_EXPECT((read.match == std::vector<int64_t>{1, -1}) && read.rows_read == 1);

  read.columns = PairRows({1, 2, 1}, {"p", "p", "p"});
  read.length = 3;
  const auto e = CQ_CATCH(txn::MatchProbes(PairSpec(), probes, 2, read));
  CQ_EXPECT(e && e->kind() == ErrorKind::kInput);
  CQ_EXPECT(e && std::string(e->what()).find("resource 'pairs' returned two rows with one key") != std::string::npos);
}

}  // namespace
}  // namespace cq::test
