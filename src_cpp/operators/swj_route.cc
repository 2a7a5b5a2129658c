#include "operators/swj_route.h"

#include "base/errors.h"
#include "operators/registry.h"

namespace cq {

SwjRoute::SwjRoute(const Schema& input, int64_t slice, int64_t shrink, bool upto)
    : slice_(slice), shrink_(shrink), upto_(upto) {
  schema_ = std::make_shared<const Schema>(input.begin(), input.end() - (upto ? 2 : 1));
}

void SwjRoute::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  CQ_CHECK(!batch.constant_duration && batch.holders.empty(), "a route reads a shared join's results");
  const int64_t* slice = batch.columns[schema_->size()].i64();
  const int64_t* upto = upto_ ? batch.columns.back().i64() : nullptr;
  // The rows of this query, as a selection over the physical rows (no row is copied).
  Buffer sel = Buffer::Allocate(n * 4);
  uint32_t* s = sel.as<uint32_t>();
  int64_t count = 0;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t i = static_cast<uint32_t>(batch.Physical(k));
    s[count] = i;
    count += slice[i] <= slice_ && (!upto || slice_ <= upto[i]);
  }
  if (count == 0) return;
  Batch b;
  b.kind = BatchKind::kLifetime;
  b.schema = schema_;
  b.columns = batch.columns;
  b.columns.pop_back();
  if (upto_) b.columns.pop_back();
  b.length = batch.length;
  b.sync = batch.sync;
  b.other = batch.other;
  if (shrink_ != 0) {
    // t_y + wn becomes t_y + wi (steps unchanged: windows are whole ticks).
    b.other.ticks = Buffer::Allocate(batch.length * 8);
    const int64_t* from = batch.other.tick_data();
    int64_t* to = b.other.ticks.as<int64_t>();
    for (int64_t i = 0; i < batch.length; ++i) to[i] = from[i] - shrink_;
  }
  if (count < batch.length) {
    b.has_selection = true;
    b.selection = sel;
    b.selection_count = count;
  }
  out.Emit(std::move(b));
}

namespace {
class SwjRouteRows final : public RowOperator {
 public:
  SwjRouteRows(size_t slice_col, int64_t slice, int64_t shrink, bool upto)
      : col_(slice_col), slice_(slice), shrink_(shrink), upto_(upto) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    if (in.values[col_].i > slice_ || (upto_ && in.values[col_ + 1].i < slice_)) return;
    Row r = in;  // (its values' first columns are the output's)
    r.other.tick -= shrink_;
    out.Emit(r);
  }
  bool stateful() const override { return false; }

 private:
  size_t col_;
  int64_t slice_;
  int64_t shrink_;
  bool upto_;
};
}  // namespace

std::unique_ptr<RowOperator> SwjRoute::ToRows() {
  return std::make_unique<SwjRouteRows>(schema_->size(), slice_, shrink_, upto_);
}

std::string SwjRoute::Explain() const {
  return "Route slices 1.." + std::to_string(slice_) + ", ends " + std::to_string(shrink_) + " earlier";
}

void RegisterSwjRoute(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "swj_route",
              .description = "a query's results of a shared window join",
              .output = D::Output::kRelation,
              .lifetimes = D::Lifetimes::kFirstInput},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(!ctx.negative, "a shared window join runs under the direct method only");
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime && !in[0].schema->empty() &&
                            in[0].schema->back().type == TypeId::kInt64,
                        "a route reads a shared window join's results");
               const int64_t slice = s.params["slice"].integer(), shrink = s.params["shrink"].integer();
               CQ_CHECK(slice >= 1 && shrink >= 0, "a route's slice is at least 1 and its shrink not negative");
               const json::Value* upto = s.params.find("upto");
               const bool bounded = upto && upto->boolean();
               CQ_CHECK(!bounded || in[0].schema->size() >= 2, "a bounded route reads two tags");
               return std::make_unique<SwjRoute>(*in[0].schema, slice, shrink, bounded);
             });
}

}  // namespace cq
