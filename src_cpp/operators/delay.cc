#include "operators/delay.h"

#include "engine/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

DelayOperator::DelayOperator(Duration d, const Schema& input) : delay_(d), schema_(input) {
  CQ_CHECK(!d.infinite && !d.IsZero(), "a delay moves time forward by a finite amount");
}

void DelayOperator::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  TimeColumn t;
  if (delay_.ticks == 0) {
    // <Now> (ε steps only, the delay of every loop): the ticks stay, only the steps move.
    t.ticks = b.sync.ticks;
    t.steps = Buffer::Allocate(n * 8);
    const int64_t* ticks = b.sync.tick_data();
    for (int64_t i = 0; i < n; ++i)
      t.steps.as<int64_t>()[i] = ticks[i] == Time::kInfTick ? 0 : b.sync.At(i).step + delay_.steps;
    b.sync = t;
    out.Emit(std::move(b));
    return;
  }
  t.ticks = Buffer::Allocate(n * 8);
  const bool steps = b.sync.has_steps() || delay_.steps != 0;
  if (steps) t.steps = Buffer::Allocate(n * 8);
  for (int64_t i = 0; i < n; ++i) {
    const Time shifted = b.sync.At(i) + delay_;
    t.ticks.as<int64_t>()[i] = shifted.tick;
    if (steps) t.steps.as<int64_t>()[i] = shifted.step;
  }
  b.sync = t;
  out.Emit(std::move(b));
}

namespace {
class DelayRows final : public RowOperator {
 public:
  explicit DelayRows(Duration d) : d_(d) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    Row r = in;
    r.sync = in.sync + d_;
    out.Emit(r);
  }
  bool stateful() const override { return false; }

 private:
  Duration d_;
};
}  // namespace

std::unique_ptr<RowOperator> DelayOperator::ToRows() { return std::make_unique<DelayRows>(delay_); }

void RegisterDelay(OperatorRegistry& r) {
  r.Register("delay", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                         const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a delay applies to a stream");
    return std::make_unique<DelayOperator>(DurationFromJson(s.params["duration"]), *in[0].schema);
  });
}

}  // namespace cq
