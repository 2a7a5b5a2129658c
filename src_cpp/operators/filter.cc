#include "operators/filter.h"

#include <cstring>

#include "base/errors.h"
#include "operators/registry.h"
#include "rows/row_expression.h"

namespace cq {

Filter::Filter(std::unique_ptr<Expression> predicate, const Schema& input, BatchKind kind)
    : predicate_(std::move(predicate)), schema_(input), kind_(kind) {}

void Filter::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  Column pred = predicate_->Evaluate(batch);
  // TRUE and not NULL, a word at a time: counted first, so that a batch every row passes (or
  // none) costs no selection buffer.
  const int64_t words = bitmap::Words(n);
  const uint8_t* vals = pred.bits();
  const uint8_t* valid = pred.has_nulls() ? pred.validity.data : nullptr;
  auto word_at = [&](int64_t w) {
    uint64_t word = 0, v = ~0ull;
    const int64_t nbytes = std::min<int64_t>(8, bitmap::Bytes(n) - w * 8);
    std::memcpy(&word, vals + w * 8, static_cast<size_t>(nbytes));
    if (valid) std::memcpy(&v, valid + w * 8, static_cast<size_t>(nbytes));
    word &= v;
    if (w == words - 1 && n % 64) word &= (1ull << (n % 64)) - 1;
    return word;
  };
  int64_t count = 0;
  for (int64_t w = 0; w < words; ++w) count += __builtin_popcountll(word_at(w));
  if (count == 0) return;
  if (count == n) {
    out.Forward(batch);  // every row passed: the selection stays as it was
    return;
  }
  Buffer sel = Buffer::Allocate(count * 4);
  uint32_t* s = sel.as<uint32_t>();
  const uint32_t* old = batch.has_selection ? batch.sel() : nullptr;
  int64_t k = 0;
  for (int64_t w = 0; w < words; ++w) {
    for (uint64_t word = word_at(w); word; word &= word - 1) {
      const int64_t i = w * 64 + __builtin_ctzll(word);
      s[k++] = old ? old[i] : static_cast<uint32_t>(i);
    }
  }
  Batch b = batch;
  b.has_selection = true;
  b.selection = sel;
  b.selection_count = count;
  out.Emit(std::move(b));
}

namespace {
class FilterRows final : public RowOperator {
 public:
  explicit FilterRows(std::unique_ptr<RowExpression> p) : predicate_(std::move(p)) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    if (predicate_->IsTrue(in.values)) out.Emit(in);
  }
  bool stateful() const override { return false; }

 private:
  std::unique_ptr<RowExpression> predicate_;
};
}  // namespace

namespace {
bool ReadsStart(const Expression& e) {
  if (e.is_start()) return true;
  for (size_t i = 0; i < e.arg_count(); ++i)
    if (ReadsStart(e.arg(i))) return true;
  return false;
}
}  // namespace

// A predicate on a row's start (a shared MASTER part's member windows, planner/master_sharing.py)
// has no row form: inside a loop such a filter runs through a BatchAdapter.
std::unique_ptr<RowOperator> Filter::ToRows() {
  if (ReadsStart(*predicate_)) return nullptr;
  return std::make_unique<FilterRows>(RowExpression::From(*predicate_));
}

std::string Filter::Explain() const { return "Filter " + predicate_->ToString(schema_); }

void RegisterFilter(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "filter", .description = "WHERE", .lifetimes = D::Lifetimes::kFirstInput, .keeps_identity = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext&) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "filter takes one input");
               auto pred = Expression::Compile(s.params["predicate"], *in[0].schema);
               CQ_CHECK(pred->type() == TypeId::kBool, "filter predicate must be boolean");
               return std::make_unique<Filter>(std::move(pred), *in[0].schema, in[0].kind);
             });
}

}  // namespace cq
