#include "operators/negative_time_window.h"

#include "engine/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {
int64_t CeilTo(int64_t x, int64_t s) {
  int64_t q = x / s;
  if (q * s < x) ++q;
  int64_t r;
  return __builtin_mul_overflow(q, s, &r) ? Time::kInfTick : r;
}
}  // namespace

NegativeTimeWindow::NegativeTimeWindow(std::string kind, int64_t range, int64_t slide, const Schema& input)
    : kind_(std::move(kind)), range_(range), slide_(slide), schema_(input) {}

void NegativeTimeWindow::Push(int, const Batch& in, Emitter& out) {
  Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  const Time last = b.sync.At(n - 1);
  // Starts and ends of the lifetimes.
  TimeColumn start = b.sync, end;
  if (kind_ != "unbounded") {
    end.ticks = Buffer::Allocate(n * 8);
    int64_t* et = end.ticks.as<int64_t>();
    const int64_t* t = b.sync.tick_data();
    if (kind_ == "now") {
      std::copy(t, t + n, et);
      end.steps = Buffer::Allocate(n * 8);
      for (int64_t i = 0; i < n; ++i) end.steps.as<int64_t>()[i] = b.sync.At(i).step + 1;
    } else if (kind_ == "range") {
      for (int64_t i = 0; i < n; ++i) et[i] = (b.sync.At(i) + Duration::Ticks(range_)).tick;
      end.steps = b.sync.steps;
    } else {  // slide
      start.ticks = Buffer::Allocate(n * 8);
      start.steps = {};
      for (int64_t i = 0; i < n; ++i) {
        start.ticks.as<int64_t>()[i] = CeilTo(t[i], slide_);
        int64_t te;
        et[i] = __builtin_add_overflow(t[i], range_, &te) ? Time::kInfTick : CeilTo(te, slide_);
      }
    }
  }
  // Positives: the tuples themselves, their ends open.
  Batch pos = b;
  pos.kind = BatchKind::kLifetime;
  pos.sync = start;
  pos.other = {};
  pos.constant_duration = Duration::Infinite();
  out.Emit(pos);
  if (kind_ != "unbounded") {
    Batch kept = b;
    kept.sync = start;
    kept.other = end;
    kept_.push_back({std::move(kept)});
  }
  EmitNegatives(last, out);
}

void NegativeTimeWindow::AdvanceTo(Time progress, Emitter& out) { EmitNegatives(progress, out); }

void NegativeTimeWindow::EmitNegatives(Time through, Emitter& out) {
  while (!kept_.empty()) {
    const Batch& b = kept_.front().batch;
    std::vector<uint32_t> rows;
    int64_t k = cursor_;
    while (k < b.length && !(through < b.other.At(k))) rows.push_back(static_cast<uint32_t>(k++));
    if (!rows.empty()) {
      const int64_t m = static_cast<int64_t>(rows.size());
      Batch neg;
      neg.kind = BatchKind::kLifetime;
      neg.schema = b.schema;
      neg.length = m;
      // The negative copies the values: the paper's overhead of the method.
      for (const Column& c : b.columns) neg.columns.push_back(Gather(c, rows.data(), m));
      neg.sync = GatherTime(b.other, rows.data(), m);   // at its end
      neg.other = GatherTime(b.sync, rows.data(), m);   // the start it ends
      out.Emit(std::move(neg));
    }
    if (k < b.length) {
      cursor_ = k;
      return;
    }
    kept_.pop_front();
    cursor_ = 0;
  }
}

void RegisterNegativeTimeWindow(OperatorRegistry& r) {
  r.Register("negative:window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                   const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    const std::string& kind = s.params["kind"].str();
    const int64_t range = kind == "range" ? DurationFromJson(s.params["range"]).ticks : 0;
    return std::make_unique<NegativeTimeWindow>(kind, range, 1, *in[0].schema);
  });
  r.Register("negative:slide_window", [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                                         const OperatorContext&) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
    return std::make_unique<NegativeTimeWindow>("slide", DurationFromJson(s.params["range"]).ticks,
                                                DurationFromJson(s.params["slide"]).ticks, *in[0].schema);
  });
}

}  // namespace cq
