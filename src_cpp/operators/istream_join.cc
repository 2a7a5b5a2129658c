// ISTREAM fused with the join of two constant-duration windows (operators/istream_join.h): the
// join's batch form with a sink that writes each pair's start as a stream row, and cancels a start
// against an equal pair ending at its instant.
#include "operators/istream_join.h"

#include <algorithm>

#include "base/errors.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

namespace {

Schema Picked(const Schema& s, const std::vector<int>& cols) {
  Schema out;
  for (int c : cols) out.push_back(s[c]);
  return out;
}

// The compared columns of one side: the joined row's, less the left input's width for the right.
std::vector<int> SideColumns(const std::vector<int>& compared, size_t left_width, int side) {
  std::vector<int> out;
  for (int c : compared) {
    const bool left = static_cast<size_t>(c) < left_width;
    if (left == (side == 0)) out.push_back(left ? c : c - static_cast<int>(left_width));
  }
  return out;
}

}  // namespace

IStreamJoin::IStreamJoin(const Schema& left, const Schema& right, Duration left_duration, Duration right_duration,
                         std::vector<std::unique_ptr<Expression>> left_keys,
                         std::vector<std::unique_ptr<Expression>> right_keys, const std::vector<int>& compared,
                         ExpirationPolicy policy)
    : duration_{left_duration, right_duration}, equal_{RowEqual(Picked(left, SideColumns(compared, left.size(), 0))),
                                                       RowEqual(Picked(right, SideColumns(compared, left.size(), 1)))} {
  schema_ = left;
  schema_.insert(schema_.end(), right.begin(), right.end());
  shared_ = std::make_shared<const Schema>(schema_);
  keys_[0] = std::move(left_keys);
  keys_[1] = std::move(right_keys);
  CQ_CHECK(keys_[0].size() == keys_[1].size(), "join keys differ in number");
  spec_.input[0] = left;
  spec_.input[1] = right;
  for (size_t c = 0; c < keys_[0].size(); ++c) {
    CQ_CHECK(keys_[0][c]->type() == keys_[1][c]->type(), "join keys differ in type");
    spec_.key_types.push_back(keys_[0][c]->type());
  }
  for (int side = 0; side < 2; ++side) {
    for (const auto& k : keys_[side]) spec_.keys[side].push_back(k.get());
    spec_.value_cols[side] = SideColumns(compared, left.size(), side);
  }
  for (int c : compared) CQ_CHECK(c >= 0 && static_cast<size_t>(c) < schema_.size(), "compared column out of range");
  spec_.policy = policy;
  spec_.hash_values = true;
  core_ = std::make_unique<Core>(spec_);
}

IStreamJoin::~IStreamJoin() = default;

// The pairs of a round, gathered into one stream batch when the round ends or they grow many.
class IStreamJoin::Sink {
 public:
  using H = JoinBatchStore::Handle;
  Sink(IStreamJoin& j, Emitter& out) : j_(j), core_(*j.core_), out_(out) {}
  void Begin(int, H) {}
  // R(t⁻)'s pairs that end at t, by the hash of their compared columns: the starts of t they
  // cancel. (Taken before any row of t joins; most instants have none or a few.)
  void Instant(Time t) {
    ends_.clear();
    core_.EndingPairs(t, [&](H l, H r) { ends_.push_back({Hash(l, r), l, r, false}); });
    if (ends_.size() > 1)
      std::sort(ends_.begin(), ends_.end(), [](const End& a, const End& b) { return a.hash < b.hash; });
  }
  [[gnu::always_inline]] void Pair(int side, H x, H y, const JoinMeta& xm, const JoinMeta& ym) {
    // x, joined now, is the later row: the pair starts at its start (a ghost, start = end, is in
    // neither R(t) nor R(t⁻)).
    if (!(xm.sync < std::min(xm.other, ym.other))) return;
    const H l = side == 0 ? x : y, r = side == 0 ? y : x;
    if (!ends_.empty() && Cancelled(l, r)) [[unlikely]]
      return;
    em_.push_back({l, r, xm.sync});
    if (em_.size() >= 65536) Flush();
  }
  void Flush();

 private:
  struct End {
    uint64_t hash;
    H l, r;
    bool used;  // cancelled a start already (a bag difference: one start each)
  };
  struct Result {
    H l, r;
    Time start;
  };
  uint64_t Hash(H l, H r) const {
    return core_.store(0).value_hash(l) * 0x9E3779B97F4A7C15ULL ^ core_.store(1).value_hash(r);
  }
  bool Same(int side, H a, H b) const {
    const JoinBatchStore& s = core_.store(side);
    Columns ca, cb;
    for (int c : j_.spec_.value_cols[side]) {
      ca.push_back(s.batch(JoinBatchStore::Seq(a)).columns[c]);
      cb.push_back(s.batch(JoinBatchStore::Seq(b)).columns[c]);
    }
    return j_.equal_[side](ca, JoinBatchStore::Row(a), cb, JoinBatchStore::Row(b));
  }
  bool Cancelled(H l, H r) {
    const uint64_t h = Hash(l, r);
    auto at = std::lower_bound(ends_.begin(), ends_.end(), h, [](const End& e, uint64_t v) { return e.hash < v; });
    for (; at != ends_.end() && at->hash == h; ++at) {
      if (at->used || !Same(0, l, at->l) || !Same(1, r, at->r)) continue;
      at->used = true;
      return true;
    }
    return false;
  }

  IStreamJoin& j_;
  Core& core_;
  Emitter& out_;
  std::vector<End> ends_;
  std::vector<Result> em_;
};

void IStreamJoin::Sink::Flush() {
  const int64_t n = static_cast<int64_t>(em_.size());
  if (n == 0) return;
  Batch o;
  o.kind = BatchKind::kStream;
  o.schema = j_.shared_;
  o.length = n;
  std::vector<BatchRow> rows(em_.size());
  for (int side = 0; side < 2; ++side) {
    const JoinBatchStore& s = core_.store(side);
    for (size_t k = 0; k < em_.size(); ++k) {
      const H h = side == 0 ? em_[k].l : em_[k].r;
      rows[k] = {JoinBatchStore::Seq(h), JoinBatchStore::Row(h)};
    }
    auto cols =
        GatherRows([&](uint32_t seq) -> const Batch& { return s.batch(seq); }, rows, j_.spec_.input[side].size());
    for (Column& c : cols) o.columns.push_back(std::move(c));
  }
  o.sync.ticks = Buffer::Allocate(n * 8);
  int64_t* ticks = o.sync.ticks.as<int64_t>();
  bool steps = false;
  for (int64_t i = 0; i < n; ++i) {
    ticks[i] = em_[i].start.tick;
    steps |= em_[i].start.step != 0;
  }
  if (steps) {
    o.sync.steps = Buffer::Allocate(n * 8);
    for (int64_t i = 0; i < n; ++i) o.sync.steps.as<int64_t>()[i] = em_[i].start.step;
  }
  out_.Emit(std::move(o));
  em_.clear();
}

void IStreamJoin::Push(int port, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  // The window: each row ⟨v, t⟩ lives on [t, t + d) (operators/window.h).
  Batch b = in;
  b.kind = BatchKind::kLifetime;
  b.constant_duration = duration_[port];
  core_->store(port).Push(b, [](JoinBatchStore::Handle) {});  // (no end is pending)
}

void IStreamJoin::AdvanceTo(Time progress, Emitter& out) {
  Core& core = *core_;
  core.set_progress(progress);
  Sink sink(*this, out);
  // Only instants below progress: rows at progress itself may still come, and an instant's starts
  // are checked against its ending pairs once, when all of them are in (drained twice, an ending
  // pair would cancel a second start, or be gone). For the same reason rows ending at progress
  // stay in the index until their instant has been drained; (tick, step - 1) is the last time
  // before progress, steps being non-negative.
  core.Drain(progress, false, sink);
  sink.Flush();
  const Time before{progress.tick, progress.step - 1};
  core.Expire(0, before);
  core.Expire(1, before);
  core.store(0).Trim();
  core.store(1).Trim();
}

std::string IStreamJoin::Explain() const {
  return std::string(keys_[0].empty() ? "Join (nested loops)" : "HashJoin") + " of windows lasting " +
         duration_[0].ToString() + " and " + duration_[1].ToString() +
         ", fused with ISTREAM (pairs emitted at their start, checked only against pairs ending there)";
}

void IStreamJoin::Restore(SnapshotReader& r) {
  auto core = std::make_unique<Core>(spec_);
  core->Read(r);
  core_ = std::move(core);
}

namespace {

Duration WindowDuration(const json::Value& w) {
  const std::string& kind = w["kind"].str();
  if (kind == "now") return Duration::Epsilon();
  if (kind == "unbounded") return Duration::Infinite();
  CQ_CHECK(kind == "range", "an ISTREAM of a join reads windows of constant duration, not '" + kind + "'");
  return DurationFromJson(w["range"]);
}

}  // namespace

void RegisterIStreamJoin(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "istream_join",
              .description = "ISTREAM of a join of windows (fused)",
              .output = D::Output::kStream,
              .partition = D::Partition::kOnJoinKeys,
              .columns = D::Columns::kConcat},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext&) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 2 && in[0].kind == BatchKind::kStream && in[1].kind == BatchKind::kStream,
                        "an ISTREAM of a join of windows reads two streams");
               std::vector<std::unique_ptr<Expression>> lk, rk;
               for (const json::Value& e : s.params["left_keys"].array())
                 lk.push_back(Expression::Compile(e, *in[0].schema));
               for (const json::Value& e : s.params["right_keys"].array())
                 rk.push_back(Expression::Compile(e, *in[1].schema));
               const json::Value& w = s.params["windows"];
               CQ_CHECK(w.array().size() == 2, "an ISTREAM of a join reads two windows");
               std::vector<int> compared;
               for (const json::Value& c : s.params["compare"].array())
                 compared.push_back(static_cast<int>(c.integer()));
               return std::make_unique<IStreamJoin>(*in[0].schema, *in[1].schema, WindowDuration(w.array()[0]),
                                                    WindowDuration(w.array()[1]), std::move(lk), std::move(rk),
                                                    compared, PlannedPolicy(s.params));
             });
}

}  // namespace cq
