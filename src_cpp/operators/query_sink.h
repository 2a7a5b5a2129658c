#pragma once
// The output of a registered query: turns what reaches it into the rows users see (SPEC §6) and
// queues them until the engine drains them (fetch / subscribe).
//   stream-valued query:   user columns + ts            (+ ts_step with expose_steps)
//   relation-valued query: user columns + start + end    (+ start_step, end_step); end is NULL for
//                          a tuple that never ends (still alive at close).
#include <deque>

#include "operators/operator.h"

namespace cq {

struct OutputChunk {
  std::vector<Column> columns;
  int64_t length = 0;
};

class QuerySink final : public Operator {
 public:
  QuerySink(std::string query, BatchKind kind, const Schema& input, bool expose_steps);
  void Push(int port, const Batch& batch, Emitter& out) override;
  const Schema& output_schema() const override { return output_; }
  BatchKind output_kind() const override { return kind_; }
  std::string Explain() const override;

  const std::string& query() const { return query_; }
  std::vector<OutputChunk> Drain();
  int64_t queued_rows() const { return queued_rows_; }

 private:
  std::string query_;
  BatchKind kind_;
  Schema input_;
  Schema output_;
  bool expose_steps_;
  std::deque<OutputChunk> queue_;
  int64_t queued_rows_ = 0;
};

}  // namespace cq
