#include "operators/slide_window.h"

#include "base/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

SlideWindow::SlideWindow(int64_t range, int64_t slide, const Schema& input)
    : range_(range), slide_(slide), constant_(range > 0 && slide > 0 && range % slide == 0), schema_(input) {
  CQ_CHECK(slide_ > 0 && range_ >= 0, "a sliding window needs a positive slide");
}

void SlideWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  Buffer start = Buffer::Allocate(n * 8);
  int64_t* s = start.as<int64_t>();
  // Both ends sit on boundaries, at step 0: a tuple at an ε-step of a boundary tick is after it.
  for (int64_t i = 0; i < n; ++i) s[i] = CeilToBoundary(b.sync.At(i), slide_).tick;
  b.other = {};
  b.constant_duration.reset();
  if (constant_) {
    b.constant_duration = Duration::Ticks(range_);
  } else {
    Buffer end = Buffer::Allocate(n * 8);
    int64_t* e = end.as<int64_t>();
    for (int64_t i = 0; i < n; ++i) e[i] = CeilToBoundary(b.sync.At(i) + Duration::Ticks(range_), slide_).tick;
    b.other.ticks = end;
  }
  b.sync = {};
  b.sync.ticks = start;
  b.kind = BatchKind::kLifetime;
  out.Emit(std::move(b));
}

namespace {
class SlideWindowRows final : public RowOperator {
 public:
  SlideWindowRows(int64_t range, int64_t slide) : range_(range), slide_(slide) {}
  void Push(int, const Row& in, RowEmitter& out) override {
    Row r = in;
    r.sync = CeilToBoundary(in.sync, slide_);
    r.other = CeilToBoundary(in.sync + Duration::Ticks(range_), slide_);
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
  using D = OperatorDescriptor;
  r.Register({.name = "slide_window",
              .description = "the window [Range d Slide d]",
              .output = D::Output::kRelation,
              .firing = D::Firing::kExpirations},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext&) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
               return std::make_unique<SlideWindow>(DurationFromJson(s.params["range"]).ticks,
                                                    DurationFromJson(s.params["slide"]).ticks, *in[0].schema);
             });
}

}  // namespace cq
