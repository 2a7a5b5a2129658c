#include "operators/window.h"

#include "base/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

ConstantDurationWindow::ConstantDurationWindow(std::string kind, Duration d, const Schema& input)
    : kind_(std::move(kind)), duration_(d), schema_(input) {}

void ConstantDurationWindow::Push(int, const Batch& batch, Emitter& out) {
  Batch b = batch;
  b.kind = BatchKind::kLifetime;
  b.constant_duration = duration_;
  out.Emit(std::move(b));
}

namespace {
// ⟨v, t⟩ becomes ⟨v, t, t + d⟩.
class ConstantDurationWindowRows final : public RowOperator {
 public:
  explicit ConstantDurationWindowRows(Duration d) : d_(d) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    Row r = in;
    r.other = in.sync + d_;
    out.Emit(r);
  }
  bool stateful() const override { return false; }

 private:
  Duration d_;
};
}  // namespace

std::unique_ptr<RowOperator> ConstantDurationWindow::ToRows() {
  return std::make_unique<ConstantDurationWindowRows>(duration_);
}

std::string ConstantDurationWindow::Explain() const {
  if (kind_ == "now") return "Window [Now] (lifetime ε)";
  if (kind_ == "unbounded") return "Window [Range Unbounded] (lifetime ∞)";
  return "Window [Range " + duration_.ToString() + "] (constant duration " + duration_.ToString() + ")";
}

void RegisterWindow(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "window",
              .description = "the window",
              .output = D::Output::kRelation,
              .firing = D::Firing::kExpirations},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext&) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "window takes one input");
               CQ_CHECK(in[0].kind == BatchKind::kStream, "a window's input must be a stream");
               const std::string& kind = s.params["kind"].str();
               Duration d;
               if (kind == "now") d = Duration::Epsilon();
               else if (kind == "unbounded") d = Duration::Infinite();
               else if (kind == "range") d = DurationFromJson(s.params["range"]);
               else CQ_CHECK(false, "window kind '" + kind + "' is not available in this build");
               return std::make_unique<ConstantDurationWindow>(kind, d, *in[0].schema);
             });
}

}  // namespace cq
