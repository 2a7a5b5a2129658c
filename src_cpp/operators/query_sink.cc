#include "operators/query_sink.h"

#include "engine/errors.h"
#include "operators/registry.h"

namespace cq {

namespace {

Column TicksColumn(const Buffer& ticks, int64_t n) {
  Column c;
  c.type = TypeId::kInt64;
  c.length = n;
  c.values = ticks;
  return c;
}

Column StepsColumn(const TimeColumn& t, int64_t n) {
  if (t.has_steps()) return TicksColumn(t.steps, n);
  Column c;
  c.type = TypeId::kInt64;
  c.length = n;
  c.values = Buffer::AllocateZeroed(n * 8);
  return c;
}

}  // namespace

QuerySink::QuerySink(std::string query, BatchKind kind, const Schema& input, bool expose_steps)
    : query_(std::move(query)), kind_(kind), input_(input), output_(input), expose_steps_(expose_steps) {
  if (kind_ == BatchKind::kStream) {
    output_.push_back({"ts", TypeId::kInt64});
    if (expose_steps_) output_.push_back({"ts_step", TypeId::kInt64});
  } else {
    output_.push_back({"start", TypeId::kInt64});
    output_.push_back({"end", TypeId::kInt64});
    if (expose_steps_) {
      output_.push_back({"start_step", TypeId::kInt64});
      output_.push_back({"end_step", TypeId::kInt64});
    }
  }
}

void QuerySink::Push(int, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  CQ_CHECK(in.kind == kind_, "query sink got the wrong kind of batch");
  Batch b = in.Compact();
  const int64_t n = b.length;
  OutputChunk chunk;
  chunk.length = n;
  chunk.columns = std::move(b.columns);
  chunk.columns.push_back(TicksColumn(b.sync.ticks, n));
  if (kind_ == BatchKind::kStream) {
    if (expose_steps_) chunk.columns.push_back(StepsColumn(b.sync, n));
  } else {
    CQ_CHECK(b.holders.empty(), "relation output with pending ends arrives with the lifetime operators");
    Batch m = b.WithMaterializedEnd();
    // Tuples that never end are reported with a NULL end ("still alive at close").
    Column end = TicksColumn(m.other.ticks, n);
    const int64_t* et = m.other.tick_data();
    int64_t inf = 0;
    for (int64_t i = 0; i < n; ++i) inf += et[i] == Time::kInfTick;
    if (inf) {
      end.validity = Buffer::Allocate(bitmap::Bytes(n));
      for (int64_t i = 0; i < n; ++i) bitmap::SetTo(end.validity.data, i, et[i] != Time::kInfTick);
      end.null_count = inf;
    }
    chunk.columns.push_back(end);
    if (expose_steps_) {
      chunk.columns.push_back(StepsColumn(m.sync, n));
      chunk.columns.push_back(StepsColumn(m.other, n));
    }
  }
  queued_rows_ += n;
  queue_.push_back(std::move(chunk));
}

std::vector<OutputChunk> QuerySink::Drain() {
  std::vector<OutputChunk> out(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  queued_rows_ = 0;
  return out;
}

std::string QuerySink::Explain() const {
  return "Output " + query_ + (kind_ == BatchKind::kStream ? " (stream)" : " (relation)");
}

void RegisterQuerySink(OperatorRegistry& r) {
  r.Register("sink", [](const OperatorSpec& s, const std::vector<OperatorInput>& in) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1, "sink takes one input");
    bool steps = false;
    if (const json::Value* e = s.params.find("expose_steps")) steps = e->boolean();
    return std::make_unique<QuerySink>(s.params["query"].str(), in[0].kind, *in[0].schema, steps);
  });
}

}  // namespace cq
