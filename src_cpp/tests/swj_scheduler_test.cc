// The schedulers of a shared window join (schedulers/swj_scheduler.h, paper 004): the MQT matrix
// and its segments (the orders §6.2 lists for P1–P8, read from benchmarks/papers/004/patterns.json),
// adMandF's eight cases of §5.3 and the combinations it leaves open, MandF's rule in every period,
// MQT, FIFO, MandF and adMandF on backlogs, snapshots, and the checks of the Engine(swj_...) options.
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/errors.h"
#include "base/json.h"
#include "schedulers/swj_scheduler.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

using swj::AdaptiveState;
using swj::Decide;
using swj::Job;
using swj::Load;
using swj::Method;
using swj::MqtMatrix;
using swj::PeriodRecord;
using swj::Policy;
using swj::Side;
using swj::SwjScheduler;

json::Value Patterns() {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "../../benchmarks/papers/004/patterns.json";
  std::ifstream in(path);
  CQ_ASSERT(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return json::Parse(text.str());
}

std::vector<int64_t> Windows(const json::Value& patterns, const std::string& name) {
  std::vector<int64_t> w;
  for (const auto& v : patterns["patterns"][name]["windows_ms"].array()) w.push_back(v.integer());
  return w;
}

CQ_TEST(mqt_orders_of_p1_to_p8_are_those_of_section_6_2) {
  // §6.2's list, as printed (the file's own copy is checked against it too).
  const std::pair<const char*, const char*> orders[] = {{"P1", "1,2,3,4,5,6,7,8,9,10"},
                                                        {"P2", "1-10"},
                                                        {"P3", "1,2,3,4,5,6-10"},
                                                        {"P4", "1-5,6-10"},
                                                        {"P5", "1,2,3-10"},
                                                        {"P6", "1-10"},
                                                        {"P7", "1,2,3,4,5,6,7,8,9-10"},
                                                        {"P8", "1-8,9-10"}};
  const json::Value patterns = Patterns();
  for (const auto& [name, order] : orders) {
    const std::vector<int64_t> w = Windows(patterns, name);
    CQ_EXPECT_EQ(w.size(), size_t{10});
    CQ_EXPECT_EQ(w.back(), int64_t{3000});
    CQ_EXPECT_EQ(patterns["patterns"][name]["mqt_order"].str(), std::string(order));
    CQ_EXPECT_EQ(MqtMatrix(w).SegmentsText(), std::string(order));
  }
}

CQ_TEST(mqt_matrix_rates_weights_and_equal_windows) {
  // w = 2, 3, 10: R[0][1] = 1/2, R[0][2] = 2/3 (best from 0), then R[2][3] = 1/7.
  const MqtMatrix m({2, 3, 10});
  CQ_EXPECT_EQ(m.R(0, 1), 0.5);
  CQ_EXPECT_EQ(m.R(0, 2), 2.0 / 3);
  CQ_EXPECT_EQ(m.R(1, 3), 0.25);
  CQ_EXPECT_EQ(m.Next(0), 2);
  CQ_EXPECT_EQ(m.Next(1), 2);  // R[1][2] = 1 beats R[1][3] = 2/7
  CQ_EXPECT_EQ(m.Next(2), 3);
  CQ_EXPECT_EQ(m.SegmentsText(), std::string("1-2,3"));
  CQ_EXPECT_EQ(m.Weight(1), 2.0 / 3);
  CQ_EXPECT_EQ(m.Weight(2), 2.0 / 3);
  CQ_EXPECT_EQ(m.Weight(3), 1.0 / 7);
  CQ_EXPECT_EQ(m.SumWeights(), 2.0 / 3 + 2.0 / 3 + 1.0 / 7);
  CQ_EXPECT(m.Less(2, 3, 0, 1));
  CQ_EXPECT(!m.Less(0, 1, 0, 1));
  // Ties go to the larger k: equal gaps make one segment.
  CQ_EXPECT_EQ(MqtMatrix({5, 10, 15}).SegmentsText(), std::string("1-3"));
  // Equal windows share a slice: they never split a segment, and cost nothing from each other.
  CQ_EXPECT_EQ(MqtMatrix({1, 100, 200, 200, 1000}).SegmentsText(), std::string("1,2-4,5"));
  const MqtMatrix eq({1, 100, 100, 200, 1000});  // (from 1: R[1][3] = 2/99 beats 3/199)
  CQ_EXPECT_EQ(eq.SegmentsText(), std::string("1,2-3,4,5"));
  CQ_EXPECT(std::isinf(eq.R(2, 3)));
  CQ_EXPECT_EQ(eq.Next(2), 3);
  CQ_EXPECT_EQ(MqtMatrix({7, 7, 7}).SegmentsText(), std::string("1-3"));
  // One query: one segment of weight 1/w.
  CQ_EXPECT_EQ(MqtMatrix({4}).SumWeights(), 0.25);
  // Windows must be ≥ 1 and in order.
  CQ_EXPECT_THROWS(MqtMatrix({}), CqError);
  CQ_EXPECT_THROWS(MqtMatrix({0, 5}), CqError);
  CQ_EXPECT_THROWS(MqtMatrix({5, 4}), CqError);
  try {
    MqtMatrix({5, 4});
  } catch (const CqError& e) {
    CQ_EXPECT_EQ(e.kind(), ErrorKind::kInput);
    CQ_EXPECT(std::string(e.what()).find("query 2 has 4 after 5") != std::string::npos);
  }
}

// ---- §5.3: the eight cases and the open combinations -----------------------------------------

// A state with every rate seen at `rate_prev` (rate_MQT = rate_FIFO = it too).
AdaptiveState State(Method method, double beta, double beta_prev, double rate_prev) {
  AdaptiveState st;
  st.method = method;
  st.beta = beta;
  st.beta_prev = beta_prev;
  st.rate_prev = st.rate_mqt = st.rate_fifo = rate_prev;
  st.seen_rate = true;
  return st;
}

struct Case {
  const char* what;
  AdaptiveState st;
  int64_t rate;
  double load;  // Σw = 1, so β_now = load / rate
  Method method;
  bool high;
  uint8_t case_no;
  bool open;
  double beta_after;
};

CQ_TEST(admandf_eight_cases_and_open_combinations) {
  // rate 10 after 10: rate_next = 10 ≥ (10 + 10) / 2, high; after 20: rate_next = 0, low.
  const Case cases[] = {
      // β_now = 0.3. FIFO when β_now ≥ β; β_next = β_prev + 2 (β_now − β_prev).
      {"1: FIFO, high, rising", State(Method::kMqt, 0.1, 0.2, 10), 10, 3, Method::kFifo, true, 1, false, 0.3},
      {"3: FIFO, low, falling", State(Method::kMqt, 0.1, 0.5, 20), 10, 3, Method::kFifo, false, 3, false, 0.3},
      {"5: MQT, high, rising", State(Method::kMqt, 0.5, 0.1, 10), 10, 3, Method::kMqt, true, 5, false, 0.3},
      {"7: MQT, low, falling", State(Method::kMqt, 0.5, 0.4, 20), 10, 3, Method::kMqt, false, 7, false, 0.3},
      // β_now = 0.
      {"2: FIFO, high, none left", State(Method::kFifo, 0, 0.1, 10), 10, 0, Method::kFifo, true, 2, false, 0},
      {"4: FIFO, low, none left: to MQT", State(Method::kFifo, 0, 0.1, 20), 10, 0, Method::kMqt, false, 4, false, 0.01},
      {"6: MQT, high, none left", State(Method::kMqt, 0.05, 0.1, 10), 10, 0, Method::kMqt, true, 6, false, 0.02},
      {"8: MQT, low, none left", State(Method::kMqt, 0.05, 0.1, 20), 10, 0, Method::kMqt, false, 8, false, 0.03},
      // Open: β_now, flagged.
      {"FIFO, high, falling", State(Method::kFifo, 0.1, 0.5, 10), 10, 3, Method::kFifo, true, 0, true, 0.3},
      {"FIFO, low, rising", State(Method::kFifo, 0.1, 0.2, 20), 10, 3, Method::kFifo, false, 0, true, 0.3},
      {"MQT, high, falling", State(Method::kMqt, 0.5, 0.4, 10), 10, 3, Method::kMqt, true, 0, true, 0.3},
      {"MQT, low, rising", State(Method::kMqt, 0.5, 0.1, 20), 10, 3, Method::kMqt, false, 0, true, 0.3},
      {"FIFO, high, level", State(Method::kFifo, 0.1, 0.3, 10), 10, 3, Method::kFifo, true, 0, true, 0.3},
      {"MQT, low, level", State(Method::kMqt, 0.5, 0.3, 20), 10, 3, Method::kMqt, false, 0, true, 0.3},
  };
  for (const Case& c : cases) {
    AdaptiveState st = c.st;
    const PeriodRecord rec = Decide(Policy::kAdMandF, st, 1.5, c.rate, c.load, 1.0);
    const std::string what = c.what;
    CQ_EXPECT_EQ(what + " method " + swj::MethodName(rec.method), what + " method " + swj::MethodName(c.method));
    CQ_EXPECT_EQ(what + " high " + std::to_string(rec.high), what + " high " + std::to_string(c.high));
    CQ_EXPECT_EQ(what + " case " + std::to_string(rec.case_no), what + " case " + std::to_string(c.case_no));
    CQ_EXPECT_EQ(what + " open " + std::to_string(rec.open), what + " open " + std::to_string(c.open));
    CQ_EXPECT(std::abs(st.beta - c.beta_after) < 1e-12);
    CQ_EXPECT_EQ(st.method, c.method);
    CQ_EXPECT_EQ(rec.beta, c.st.beta);  // the record shows the β the method was decided with
    CQ_EXPECT(std::abs(rec.alpha - c.st.beta * static_cast<double>(c.rate)) < 1e-12);
    CQ_EXPECT(std::abs(rec.beta_now - c.load / static_cast<double>(c.rate)) < 1e-12);
    CQ_EXPECT(std::abs(st.beta_prev - rec.beta_now) < 1e-12);  // the next period's trend starts here
    CQ_EXPECT_EQ(st.rate_prev, static_cast<double>(c.rate));
  }
}

CQ_TEST(admandf_first_period_clamp_switch_rates_and_idle_periods) {
  // The first period: rate_prev, rate_MQT and rate_FIFO start at its rate, so rate_next = rate
  // and the rate is high; β_prev starts at β0.
  AdaptiveState st;
  st.beta = st.beta_prev = 0.05;
  PeriodRecord rec = Decide(Policy::kAdMandF, st, 0.5, 40, 0.8 * 40, 1.0);
  CQ_EXPECT_EQ(rec.rate_next, 40.0);
  CQ_EXPECT(rec.high);
  CQ_EXPECT_EQ(rec.method, Method::kFifo);  // S = 32 ≥ α = 0.05 · 40
  CQ_EXPECT_EQ(rec.beta_next, 1.0);         // 0.05 + 2 (0.8 − 0.05) = 1.55, clamped
  CQ_EXPECT_EQ(rec.case_no, 1);
  CQ_EXPECT_EQ(st.rate_mqt, 40.0);
  CQ_EXPECT_EQ(st.rate_fifo, 40.0);  // the switch to FIFO happened at 40
  // A period without arrivals changes nothing.
  const AdaptiveState before = st;
  rec = Decide(Policy::kAdMandF, st, 1.0, 0, 0, 1.0);
  CQ_EXPECT_EQ(rec.rate, int64_t{0});
  CQ_EXPECT_EQ(rec.method, Method::kFifo);
  CQ_EXPECT_EQ(rec.case_no, 0);
  CQ_EXPECT(!rec.open);
  CQ_EXPECT(std::isnan(rec.alpha) && std::isnan(rec.beta_now) && std::isnan(rec.beta_next));
  CQ_EXPECT(st.beta == before.beta && st.beta_prev == before.beta_prev && st.rate_prev == before.rate_prev &&
            st.method == before.method);
  // A switch to MQT records its rate; high is judged against the switches' mean.
  st = State(Method::kFifo, 0.5, 0.5, 100);
  st.rate_fifo = 100;
  st.rate_mqt = 20;
  rec = Decide(Policy::kAdMandF, st, 2.0, 50, 0.1 * 50, 1.0);  // β_now 0.1 < 0.5: MQT
  CQ_EXPECT_EQ(rec.method, Method::kMqt);
  CQ_EXPECT_EQ(st.rate_mqt, 50.0);
  CQ_EXPECT_EQ(rec.rate_next, 0.0);  // 100 + 2 (50 − 100)
  CQ_EXPECT(!rec.high);              // 0 < (50 + 100) / 2
  // MandF: β never moves, no case.
  AdaptiveState m;
  m.beta = m.beta_prev = 0.05;
  rec = Decide(Policy::kMandF, m, 0.5, 10, 0.0, 1.0);
  CQ_EXPECT_EQ(rec.method, Method::kMqt);
  rec = Decide(Policy::kMandF, m, 1.0, 10, 0.5, 1.0);  // S = α exactly: FIFO
  CQ_EXPECT_EQ(rec.method, Method::kFifo);
  CQ_EXPECT_EQ(m.beta, 0.05);
  CQ_EXPECT_EQ(rec.case_no, 0);
  CQ_EXPECT(std::isnan(rec.beta_next));
  // MQT and FIFO: no α, no β; the method never changes.
  AdaptiveState f;
  f.method = Method::kFifo;
  rec = Decide(Policy::kFifo, f, 0.5, 10, 0.0, 1.0);
  CQ_EXPECT_EQ(rec.method, Method::kFifo);
  CQ_EXPECT(std::isnan(rec.alpha) && std::isnan(rec.beta));
  CQ_EXPECT_EQ(rec.beta_now, 0.0);
}

// ---- the scheduler on backlogs ---------------------------------------------------------------

// A synthetic run: each period `arrivals` tuples arrive, alternating sides, one tick apart (a side
// holding `buffer` tuples evicts its oldest for each); then jobs run while the period's work budget
// lasts, a job costing `job_cost` plus the width it scans (w_k − w_j); then the period ends.
struct Sim {
  SwjScheduler s;
  int64_t buffer;
  std::deque<uint64_t> side[2];
  std::vector<Job> jobs;
  std::vector<PeriodRecord> periods;
  int64_t t = 0;
  int64_t dropped = 0, processed = 0;
  double carry = 0;  // budget left over from a job that did not fit (idle time is lost)

  Sim(std::vector<int64_t> windows, swj::Options o, int64_t b) : s(std::move(windows), o), buffer(b) {}

  void Arrive(int n) {
    for (int i = 0; i < n; ++i) {
      const int k = static_cast<int>(t % 2);
      if (static_cast<int64_t>(side[k].size()) == buffer) {
        dropped += s.matrix().n() - s.Evict(side[k].front());
        side[k].pop_front();
      }
      side[k].push_back(s.Arrive(static_cast<Side>(k), t++));
    }
  }
  void Work(double budget, double job_cost) {
    budget += carry;
    carry = 0;
    const auto& w = s.matrix().windows();
    while (auto job = s.Next()) {
      const double cost = job_cost + static_cast<double>(w[job->to - 1] - (job->from ? w[job->from - 1] : 0));
      if (cost > budget) {
        carry = budget;
        break;
      }
      budget -= cost;
      s.Done(job->tuple, job->to);
      processed += job->to - job->from;
      jobs.push_back(*job);
    }
  }
  // Arrivals spread over the period, the work between them.
  void Period(int arrivals, double budget, double job_cost = 50) {
    if (arrivals == 0) Work(budget, job_cost);
    for (int i = 0; i < arrivals; ++i) {
      Arrive(1);
      Work(budget / arrivals, job_cost);
    }
    periods.push_back(s.EndPeriod(static_cast<double>(periods.size() + 1) * 0.5));
  }
};

CQ_TEST(mqt_on_p1_completes_query_1_of_every_buffered_tuple_before_any_query_2) {
  const std::vector<int64_t> p1 = Windows(Patterns(), "P1");
  Sim sim(p1, {Policy::kMqt, Load::kArrived, 0.05}, 100);
  sim.Arrive(150);  // a backlog: 100 on each side would fit, 75 each arrived
  CQ_EXPECT_EQ(sim.s.buffered(), size_t{150});
  sim.Work(1e12, 1);
  CQ_EXPECT_EQ(sim.jobs.size(), size_t{150 * 10});
  size_t first_q2 = sim.jobs.size(), last_q1 = 0;
  for (size_t i = 0; i < sim.jobs.size(); ++i) {
    CQ_EXPECT_EQ(sim.jobs[i].to, sim.jobs[i].from + 1);  // P1: every query its own segment
    if (sim.jobs[i].to == 1) last_q1 = i;
    if (sim.jobs[i].to == 2 && first_q2 == sim.jobs.size()) first_q2 = i;
  }
  CQ_EXPECT_EQ(last_q1, size_t{149});
  CQ_EXPECT_EQ(first_q2, size_t{150});
  // Oldest first within a level.
  for (size_t i = 1; i < 150; ++i) CQ_EXPECT(sim.jobs[i - 1].tuple < sim.jobs[i].tuple);
  // FIFO on the same backlog: all ten queries of the oldest tuple first.
  Sim fifo(p1, {Policy::kFifo, Load::kArrived, 0.05}, 100);
  fifo.Arrive(150);
  fifo.Work(1e12, 1);
  CQ_EXPECT_EQ(fifo.jobs.size(), size_t{150});
  CQ_EXPECT((fifo.jobs[0] == Job{0, 0, 10}));
  CQ_EXPECT((fifo.jobs[1] == Job{1, 0, 10}));
  // An arrival in the middle of the backlog goes first under MQT (its first query has the top R).
  Sim mid(p1, {Policy::kMqt, Load::kArrived, 0.05}, 100);
  mid.Arrive(4);
  mid.Work(p1[0] * 4 + 4 + p1[1] - p1[0], 1);  // four first queries and one second one
  mid.Arrive(1);
  const auto next = mid.s.Next();
  CQ_ASSERT(next.has_value());
  CQ_EXPECT((*next == Job{4, 0, 1}));
}

// A run in stages on one distribution: light, a burst that even first segments cannot keep up
// with, a moderate overload, light, just below FIFO's capacity, then 14 to 25 arrivals a period
// at 19 tuples' work, about FIFO's capacity (budgets in multiples of FIFO's work per tuple).
Sim Staged(const std::vector<int64_t>& windows, Policy policy, Load load = Load::kArrived) {
  Sim sim(windows, {policy, load, 0.05}, 60);
  const double capacity = 50 + static_cast<double>(windows.back());
  for (int p = 0; p < 10; ++p) sim.Period(10, capacity * 11);
  for (int p = 0; p < 4; ++p) sim.Period(200, capacity * 3);
  for (int p = 0; p < 16; ++p) sim.Period(30, capacity * 14);
  for (int p = 0; p < 10; ++p) sim.Period(10, capacity * 30);
  for (int p = 0; p < 10; ++p) sim.Period(20, capacity * 19);
  std::mt19937_64 rng(30);
  for (int p = 0; p < 20; ++p) sim.Period(14 + static_cast<int>(rng() % 12), capacity * 19);
  return sim;
}

CQ_TEST(the_four_schedulers_differ_on_p1_and_p4) {
  const json::Value patterns = Patterns();
  for (const char* name : {"P1", "P4"}) {
    const std::vector<int64_t> w = Windows(patterns, name);
    const Policy all[] = {Policy::kMqt, Policy::kFifo, Policy::kMandF, Policy::kAdMandF};
    std::vector<std::vector<Job>> runs;
    for (Policy p : all) {
      Sim sim = Staged(w, p);
      // processed + dropped + pending = queries × arrivals.
      int64_t pending = 0;
      for (int k = 0; k < 2; ++k)
        for (uint64_t id : sim.side[k]) pending += sim.s.matrix().n() - sim.s.View(id).level;
      CQ_EXPECT_EQ(sim.processed + sim.dropped + pending, sim.t * 10);
      runs.push_back(sim.jobs);
    }
    for (size_t a = 0; a < runs.size(); ++a)
      for (size_t b = a + 1; b < runs.size(); ++b)
        CQ_EXPECT_EQ(std::string(name) + " " + swj::PolicyName(all[a]) + " vs " + swj::PolicyName(all[b]) + ": " +
                         std::to_string(runs[a] == runs[b]),
                     std::string(name) + " " + swj::PolicyName(all[a]) + " vs " + swj::PolicyName(all[b]) + ": 0");
  }
}

CQ_TEST(mandf_uses_fifo_exactly_when_s_reaches_alpha) {
  std::mt19937_64 rng(4);
  const json::Value patterns = Patterns();
  for (Load load : {Load::kArrived, Load::kOldest}) {
    for (const char* name : {"P1", "P3", "P4", "P8"}) {
      Sim sim(Windows(patterns, name), {Policy::kMandF, load, 0.05}, 40);
      int fifo = 0, mqt = 0;
      for (int p = 0; p < 120; ++p) {
        const Method in_force = sim.s.method();
        const size_t before = sim.jobs.size();
        // Light and heavy periods mixed: up to twice FIFO's need, or a tenth of a first segment's.
        const int n = static_cast<int>(rng() % 40);
        const double need = n * (50.0 + 3000);
        sim.Period(n, rng() % 3 == 0 ? n * 5.0 : need * static_cast<double>(rng() % 200) / 100);
        // The jobs of the period follow the method in force.
        for (size_t i = before; i < sim.jobs.size(); ++i)
          if (in_force == Method::kFifo) CQ_EXPECT_EQ(sim.jobs[i].to, 10);
        const PeriodRecord& rec = sim.periods.back();
        if (rec.rate == 0) {
          CQ_EXPECT_EQ(rec.method, in_force);
          continue;
        }
        CQ_EXPECT_EQ(rec.alpha, sim.s.matrix().SumWeights() * 0.05 * static_cast<double>(rec.rate));
        CQ_EXPECT_EQ(rec.method, swj::LoadReaches(rec.load, rec.alpha) ? Method::kFifo : Method::kMqt);
        if (std::abs(rec.load - rec.alpha) > 1e-9)
          CQ_EXPECT_EQ(rec.method, rec.load >= rec.alpha ? Method::kFifo : Method::kMqt);
        CQ_EXPECT_EQ(rec.beta, 0.05);
        (rec.method == Method::kFifo ? fifo : mqt)++;
      }
      CQ_EXPECT_EQ(std::string(name) + (fifo > 0 && mqt > 0 ? " both" : " one"), std::string(name) + " both");
    }
  }
}

CQ_TEST(load_s_counts_the_arrived_or_the_oldest_tuples_unprocessed_weight) {
  // w = 10, 20: one segment "1-2" (R = 2/20), each query weighs 0.1, Σw = 0.2.
  SwjScheduler s({10, 20}, {Policy::kMandF, Load::kArrived, 0.5});
  const uint64_t a = s.Arrive(Side::kLeft, 1), b = s.Arrive(Side::kRight, 1);
  s.Arrive(Side::kLeft, 2);
  s.Done(a, 2);
  s.Done(b, 2, false);  // given up: its weight stays in S
  PeriodRecord rec = s.EndPeriod(0.5);
  CQ_EXPECT_EQ(rec.rate, int64_t{3});
  CQ_EXPECT(std::abs(rec.load - 0.4) < 1e-12);  // b and c
  CQ_EXPECT(std::abs(rec.beta_now - 0.4 / 0.6) < 1e-12);
  // Next period: one arrival, evicted before it ran: its weight counts still.
  const uint64_t d = s.Arrive(Side::kRight, 3);
  CQ_EXPECT_EQ(s.Evict(d), 0);
  rec = s.EndPeriod(1.0);
  CQ_EXPECT_EQ(rec.rate, int64_t{1});
  CQ_EXPECT(std::abs(rec.load - 0.2) < 1e-12);
  // Everything processed: S is exactly 0.
  const uint64_t e = s.Arrive(Side::kLeft, 4);
  s.Done(e, 2);
  CQ_EXPECT_EQ(s.EndPeriod(1.5).load, 0.0);

  // "oldest": the `rate` oldest buffered tuples, done or not.
  SwjScheduler o({10, 20}, {Policy::kMandF, Load::kOldest, 0.5});
  const uint64_t x = o.Arrive(Side::kLeft, 1);
  o.Arrive(Side::kRight, 2);
  o.Done(x, 2);
  o.EndPeriod(0.5);
  o.Arrive(Side::kLeft, 3);
  rec = o.EndPeriod(1.0);  // rate 1: the oldest is x, complete
  CQ_EXPECT_EQ(rec.load, 0.0);
  o.Arrive(Side::kLeft, 4);
  o.Arrive(Side::kLeft, 5);
  rec = o.EndPeriod(1.5);  // rate 2: x (0) and the tuple at 2 (0.2)
  CQ_EXPECT(std::abs(rec.load - 0.2) < 1e-12);
  // Ages order by time, then by arrival: a side taken in late is still older.
  const uint64_t late = o.Arrive(Side::kRight, 0);
  CQ_EXPECT_EQ(o.Next()->tuple, late);
}

// ---- snapshots -------------------------------------------------------------------------------

std::string Bytes(const SwjScheduler& s) {
  ByteWriter w;
  s.Write(w);
  return w.bytes();
}

CQ_TEST(scheduler_snapshot_round_trips_and_continues_the_same) {
  const json::Value patterns = Patterns();
  for (Policy p : {Policy::kMqt, Policy::kFifo, Policy::kMandF, Policy::kAdMandF}) {
    const std::vector<int64_t> w = Windows(patterns, "P4");
    Sim a = Staged(w, p, Load::kOldest);
    a.s.Arrive(Side::kLeft, a.t);  // mid-period: an arrival not yet in a record
    const std::string bytes = Bytes(a.s);
    SwjScheduler b(w, {p, Load::kOldest, 0.05});
    ByteReader r(bytes.data(), bytes.size());
    b.Read(r);
    CQ_EXPECT_EQ(r.left(), size_t{0});
    CQ_EXPECT(Bytes(b) == bytes);  // restore, then snapshot: the same bytes
    CQ_EXPECT_EQ(b.buffered(), a.s.buffered());
    CQ_EXPECT_EQ(b.buffered(Side::kLeft), a.s.buffered(Side::kLeft));
    CQ_EXPECT_EQ(b.method(), a.s.method());
    // Both go on alike.
    for (int i = 0; i < 50; ++i) {
      const auto ja = a.s.Next(), jb = b.Next();
      CQ_ASSERT(ja.has_value() == jb.has_value());
      if (!ja) break;
      CQ_EXPECT((*ja == *jb));
      a.s.Done(ja->tuple, ja->to);
      b.Done(jb->tuple, jb->to);
    }
    CQ_EXPECT((a.s.EndPeriod(99) == b.EndPeriod(99)));
    CQ_EXPECT(Bytes(a.s) == Bytes(b));

    // Damaged or foreign bytes are refused, and leave the scheduler as it was.
    const std::string kept = Bytes(b);
    for (size_t cut : {size_t{0}, size_t{9}, bytes.size() / 2, bytes.size() - 1}) {
      ByteReader t(bytes.data(), cut);
      CQ_EXPECT_THROWS(b.Read(t), CqError);
    }
    SwjScheduler other(Windows(patterns, "P1"), {p, Load::kOldest, 0.05});
    ByteReader f(bytes.data(), bytes.size());
    CQ_EXPECT_THROWS(other.Read(f), CqError);
    SwjScheduler other_load(w, {p, Load::kArrived, 0.05});
    ByteReader g(bytes.data(), bytes.size());
    CQ_EXPECT_THROWS(other_load.Read(g), CqError);
    CQ_EXPECT(Bytes(b) == kept);
  }
}

CQ_TEST(scheduler_snapshot_damage_is_a_snapshot_error) {
  SwjScheduler s({10, 20, 30}, {Policy::kAdMandF, Load::kArrived, 0.05});
  const uint64_t a = s.Arrive(Side::kLeft, 1);
  s.Arrive(Side::kRight, 2);
  s.Done(a, 1);
  const std::string bytes = Bytes(s);
  // Every single-byte change is either refused with kSnapshot or restores a consistent scheduler
  // (one that snapshots to what it read).
  int refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    SwjScheduler t({10, 20, 30}, {Policy::kAdMandF, Load::kArrived, 0.05});
    ByteReader r(bad.data(), bad.size());
    try {
      t.Read(r);
      CQ_EXPECT(Bytes(t) == bad);
    } catch (const CqError& e) {
      CQ_EXPECT_EQ(e.kind(), ErrorKind::kSnapshot);
      ++refused;
    }
  }
  CQ_EXPECT(refused > 0);
}

// ---- option checks (Engine(swj_...)) ----------------------------------------------------------

std::string InputMessage(void (*f)()) {
  try {
    f();
  } catch (const CqError& e) {
    if (e.kind() == ErrorKind::kInput) return e.what();
    return std::string("wrong kind: ") + e.what();
  }
  return "no error";
}

CQ_TEST(swj_option_names_and_ranges_are_checked) {
  CQ_EXPECT_EQ(swj::ParsePolicy("mqt"), Policy::kMqt);
  CQ_EXPECT_EQ(swj::ParsePolicy("fifo"), Policy::kFifo);
  CQ_EXPECT_EQ(swj::ParsePolicy("mandf"), Policy::kMandF);
  CQ_EXPECT_EQ(swj::ParsePolicy("admandf"), Policy::kAdMandF);
  CQ_EXPECT_EQ(swj::ParseLoad("arrived"), Load::kArrived);
  CQ_EXPECT_EQ(swj::ParseLoad("oldest"), Load::kOldest);
  CQ_EXPECT_EQ(swj::ParseClock("work"), swj::Clock::kWork);
  CQ_EXPECT_EQ(swj::ParseClock("wall"), swj::Clock::kWall);
  CQ_EXPECT_EQ(
      InputMessage([] { swj::ParsePolicy("MQT"); }),
      std::string("Engine option swj_scheduler must be one of 'mqt', 'fifo', 'mandf', 'admandf'; found 'MQT'"));
  CQ_EXPECT_EQ(InputMessage([] { swj::ParseLoad("newest"); }),
               std::string("Engine option swj_load must be one of 'arrived', 'oldest'; found 'newest'"));
  CQ_EXPECT_EQ(InputMessage([] { swj::ParseClock(""); }),
               std::string("Engine option swj_clock must be one of 'work', 'wall'; found ''"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckBuffer(0); }),
               std::string("Engine option swj_buffer must be at least 1 (tuples per side); found 0"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckPeriod(0); }),
               std::string("Engine option swj_period_ms must be a finite number above 0; found 0"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckPeriod(-2.5); }),
               std::string("Engine option swj_period_ms must be a finite number above 0; found -2.5"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckPeriod(std::nan("")); }).substr(0, 46),
               std::string("Engine option swj_period_ms must be a finite n"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckBeta0(1.5); }),
               std::string("Engine option swj_beta0 must be in [0, 1]; found 1.5"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckBeta0(-0.01); }),
               std::string("Engine option swj_beta0 must be in [0, 1]; found -0.01"));
  CQ_EXPECT_EQ(InputMessage([] { swj::CheckBeta0(std::nan("")); }).substr(0, 42),
               std::string("Engine option swj_beta0 must be in [0, 1];"));
  swj::CheckBuffer(1);
  swj::CheckPeriod(0.001);
  swj::CheckBeta0(0);
  swj::CheckBeta0(1);
  CQ_EXPECT_THROWS((SwjScheduler({10}, {Policy::kMqt, Load::kArrived, 2.0})), CqError);
}

}  // namespace
}  // namespace cq::test
