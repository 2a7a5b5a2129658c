#include "operators/shared_window_join.h"

#include "base/errors.h"
#include "operators/swj_bounded.h"
#include "plan/plan_util.h"

namespace cq {

SharedWindowJoin::SharedWindowJoin(const Schema& left, const Schema& right,
                                   std::vector<std::unique_ptr<Expression>> left_keys,
                                   std::vector<std::unique_ptr<Expression>> right_keys,
                                   std::unique_ptr<Expression> residual, HolderTable* holders, ExpirationPolicy policy,
                                   std::vector<int64_t> windows)
    : HashJoin(left, right, std::move(left_keys), std::move(right_keys), std::move(residual), false, holders, policy,
               windows),
      windows_(std::move(windows)) {}

void SharedWindowJoin::Push(int port, const Batch& batch, Emitter& out) {
  // A planner bug otherwise: the slices assume every input tuple lives exactly wn.
  const Duration wn = Duration::Ticks(windows_.back());
  bool ok = batch.holders.empty();
  if (batch.constant_duration) {
    ok &= *batch.constant_duration == wn;
  } else {
    for (int64_t k = 0; k < batch.num_rows() && ok; ++k) {
      const int64_t i = batch.Physical(k);
      ok &= batch.EndAt(i) == batch.StartAt(i) + wn;
    }
  }
  CQ_CHECK(ok, "a shared window join's input " + std::to_string(port) + " is not a [Range " +
                   std::to_string(windows_.back()) + "] window");
  HashJoin::Push(port, batch, out);
}

std::string SharedWindowJoin::Explain() const {
  std::string w;
  for (int64_t x : windows_) w += (w.empty() ? "" : ", ") + std::to_string(x);
  return "SharedWindowJoin windows [" + w + "]";
}

namespace {

// Bounded mode (operators/swj_bounded.h): the options as the planner wrote them, checked again.
std::unique_ptr<Operator> Bounded(const json::Value& b, const std::vector<OperatorInput>& in, JoinExpressions e,
                                  std::vector<int64_t> windows) {
  SwjBoundedOptions o;
  o.buffer = b["buffer"].integer();
  swj::CheckBuffer(o.buffer);
  o.scheduler.policy = swj::ParsePolicy(b["scheduler"].str());
  o.scheduler.load = swj::ParseLoad(b["load"].str());
  o.scheduler.beta0 = b["beta0"].number();
  swj::CheckBeta0(o.scheduler.beta0);
  o.period = b["period"].number();
  swj::CheckPeriod(o.period);
  o.clock = swj::ParseClock(b["clock"].str());
  o.trace = b["trace"].boolean();
  o.tick_ns = b["tick_ns"].number();
  return std::make_unique<SwjBounded>(*in[0].schema, *in[1].schema, std::move(e), std::move(windows), o);
}

}  // namespace

void RegisterSharedWindowJoin(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "shared_window_join",
              .description = "a shared window join (queries over one join with different windows)",
              .output = D::Output::kRelation,
              .lifetimes = D::Lifetimes::kJoin,
              .partition = D::Partition::kOnJoinKeys,
              .columns = D::Columns::kConcat},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(!ctx.negative, "a shared window join runs under the direct method only");
               std::vector<int64_t> windows;
               for (const json::Value& w : s.params["windows"].array()) {
                 CQ_CHECK(w.is_int() && w.integer() >= 0 && (windows.empty() || w.integer() >= windows.back()),
                          "a shared window join's windows are ticks in non-decreasing order");
                 windows.push_back(w.integer());
               }
               CQ_CHECK(!windows.empty() && windows.back() >= 1,
                        "a shared window join needs a window of a tick or more");
               JoinExpressions e = CompileJoinSpec(s, in);
               if (const json::Value* b = s.params.find("bounded")) return Bounded(*b, in, std::move(e), windows);
               return std::make_unique<SharedWindowJoin>(*in[0].schema, *in[1].schema, std::move(e.keys[0]),
                                                         std::move(e.keys[1]), std::move(e.residual), ctx.holders,
                                                         PlannedPolicy(s.params), std::move(windows));
             });
}

}  // namespace cq
