#include "operators/slide_window.h"

#include "engine/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {
// ⌈x / s⌉ · s for any sign of x, saturating at "never" on overflow.
int64_t CeilTo(int64_t x, int64_t s) {
  int64_t q = x / s;
  if (q * s < x) ++q;  // C++ division truncates toward zero
  int64_t r;
  if (__builtin_mul_overflow(q, s, &r)) return Time::kInfTick;
  return r;
}
}  // namespace

SlideWindow::SlideWindow(int64_t range, int64_t slide, const Schema& input)
    : range_(range), slide_(slide), schema_(input) {
  CQ_CHECK(slide_ > 0 && range_ >= 0, "a sliding window needs a positive slide");
}

void SlideWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  const int64_t* t = b.sync.tick_data();
  Buffer start = Buffer::Allocate(n * 8), end = Buffer::Allocate(n * 8);
  int64_t* s = start.as<int64_t>();
  int64_t* e = end.as<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    s[i] = CeilTo(t[i], slide_);
    int64_t te;
    e[i] = __builtin_add_overflow(t[i], range_, &te) ? Time::kInfTick : CeilTo(te, slide_);
  }
  b.other.steps = {};
  if (b.sync.has_steps()) {
    // A tuple exactly on a boundary keeps its ε-step; one moved to the next boundary starts at step 0.
    // Its end is the boundary's step 0, or with [Range 0] its start: a ghost, never an end before
    // its start (as the negative method's window has it).
    Buffer st = Buffer::Allocate(n * 8), es = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) {
      st.as<int64_t>()[i] = s[i] == t[i] ? b.sync.step_data()[i] : 0;
      es.as<int64_t>()[i] = e[i] == s[i] ? st.as<int64_t>()[i] : 0;
    }
    b.sync.steps = st;
    b.other.steps = es;
  }
  b.sync.ticks = start;
  b.other.ticks = end;
  b.kind = BatchKind::kLifetime;
  b.constant_duration.reset();
  out.Emit(std::move(b));
}

namespace {
class SlideWindowRows final : public RowOperator {
 public:
  SlideWindowRows(int64_t range, int64_t slide) : range_(range), slide_(slide) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    const int64_t t = in.sync.tick;
    const int64_t s = CeilTo(t, slide_);
    int64_t te;
    const int64_t e = __builtin_add_overflow(t, range_, &te) ? Time::kInfTick : CeilTo(te, slide_);
    Row r = in;
    // A tuple exactly on a boundary keeps its ε-step; one moved to the next boundary starts at step 0.
    // Its end is the boundary's step 0, or with [Range 0] its start (a ghost).
    r.sync = {s, s == t ? in.sync.step : 0};
    r.other = {e, e == s ? r.sync.step : 0};
    out.Emit(r);
  }
  bool stateful() const override { return false; }

 private:
  int64_t range_, slide_;
};
}  // namespace

std::unique_ptr<RowOperator> SlideWindow::ToRows() { return std::make_unique<SlideWindowRows>(range_, slide_); }

std::string SlideWindow::Explain() const {
  return "Window [Range " + std::to_string(range_) + " Slide " + std::to_string(slide_) + "]";
}

void RegisterSlideWindow(OperatorRegistry& r) {
  r.Register("slide_window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    return std::make_unique<SlideWindow>(DurationFromJson(s.params["range"]).ticks,
                                         DurationFromJson(s.params["slide"]).ticks, *in[0].schema);
  });
}

}  // namespace cq
