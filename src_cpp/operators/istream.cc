#include "operators/istream.h"

#include <algorithm>

#include "engine/errors.h"
#include "operators/registry.h"

namespace cq {

namespace {
struct LaterEnd {
  template <typename E>
  bool operator()(const E& a, const E& b) const { return a.end > b.end; }
};
}  // namespace

IStream::IStream(const Schema& input) : schema_(input), equal_(input) {}

IStream::Retained& IStream::Find(uint64_t seq) {
  CQ_CHECK(!retained_.empty() && seq >= retained_.front().seq, "istream lost a retained batch");
  return retained_[seq - retained_.front().seq];
}

void IStream::Release(const Entry& e) { --Find(e.seq).live; }

void IStream::Trim() {
  while (!retained_.empty() && retained_.front().live == 0) retained_.pop_front();
}

bool IStream::PopBefore(Time t, Entry* e) {
  if (fifo_mode_) {
    if (fifo_.empty() || !(fifo_.front().end < t)) return false;
    *e = fifo_.front();
    fifo_.pop_front();
    return true;
  }
  if (heap_.empty() || !(heap_.front().end < t)) return false;
  std::pop_heap(heap_.begin(), heap_.end(), LaterEnd{});
  *e = heap_.back();
  heap_.pop_back();
  return true;
}

bool IStream::PopAt(Time t, Entry* e) {
  if (fifo_mode_) {
    if (fifo_.empty() || fifo_.front().end != t) return false;
    *e = fifo_.front();
    fifo_.pop_front();
    return true;
  }
  if (heap_.empty() || heap_.front().end != t) return false;
  std::pop_heap(heap_.begin(), heap_.end(), LaterEnd{});
  *e = heap_.back();
  heap_.pop_back();
  return true;
}

void IStream::BeginInstant(Time t) {
  for (const Entry& e : ending_now_) Release(e);
  ending_now_.clear();
  consumed_.clear();
  current_ = t;
  Entry e;
  while (PopBefore(t, &e)) Release(e);
  while (PopAt(t, &e)) {
    ending_now_.push_back(e);
    consumed_.push_back(false);
  }
}

void IStream::AddEntry(const Entry& e, const Batch& batch) {
  if (fifo_mode_) {
    // Ends arrive in order only while every lifetime has the same constant duration.
    if (!fifo_duration_ && fifo_.empty()) fifo_duration_ = batch.constant_duration;
    if (batch.constant_duration && fifo_duration_ && *batch.constant_duration == *fifo_duration_) {
      fifo_.push_back(e);
      return;
    }
    fifo_mode_ = false;
    heap_.assign(fifo_.begin(), fifo_.end());
    fifo_.clear();
    std::make_heap(heap_.begin(), heap_.end(), LaterEnd{});
  }
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), LaterEnd{});
}

void IStream::Push(int, const Batch& batch, Emitter& out) {
  const int64_t n = batch.num_rows();
  if (n == 0) return;
  CQ_CHECK(batch.kind == BatchKind::kLifetime, "ISTREAM expects a relation");
  CQ_CHECK(batch.holders.empty(), "ISTREAM over pending ends arrives with the lifetime operators");
  const uint64_t seq = next_seq_++;
  retained_.push_back({seq, batch, 0});
  // Rows of this batch may end inside it ([Range 1] with consecutive ticks): they are looked up
  // through `retained_` like older rows, so the batch is registered before its rows are processed.
  const bool constant = batch.constant_duration.has_value();
  const Duration d = constant ? *batch.constant_duration : Duration{};
  std::vector<uint32_t> keep;
  bool dropped = false;
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t p = static_cast<uint32_t>(batch.Physical(k));
    const Time t = batch.StartAt(p);
    if (t != current_) BeginInstant(t);
    bool emit = true;
    for (size_t x = 0; x < ending_now_.size(); ++x) {
      if (consumed_[x]) continue;
      const Entry& e = ending_now_[x];
      const Batch& other = e.seq == seq ? batch : Find(e.seq).batch;
      if (equal_(other.columns, e.row, batch.columns, p)) {
        consumed_[x] = true;
        emit = false;
        break;
      }
    }
    if (emit) {
      if (dropped) keep.push_back(p);
    } else if (!dropped) {
      dropped = true;
      keep.reserve(n);
      for (int64_t j = 0; j < k; ++j) keep.push_back(static_cast<uint32_t>(batch.Physical(j)));
    }
    const Time end = constant ? t + d : batch.EndAt(p);
    if (t < end && !end.IsInfinite()) {
      ++Find(seq).live;
      AddEntry({end, seq, p}, batch);
    }
  }
  Trim();

  Batch o = batch;
  o.kind = BatchKind::kStream;
  o.schema = batch.schema;
  o.other = {};
  o.constant_duration.reset();
  if (dropped) {
    if (keep.empty()) return;
    o.has_selection = true;
    o.selection = Buffer::Allocate(static_cast<int64_t>(keep.size()) * 4);
    std::copy(keep.begin(), keep.end(), o.selection.as<uint32_t>());
    o.selection_count = static_cast<int64_t>(keep.size());
  }
  out.Emit(std::move(o));
}

void IStream::AdvanceTo(Time progress, Emitter&) {
  // No start below `progress` can come any more, so ends below it can cancel nothing.
  if (current_ < progress) {
    for (const Entry& e : ending_now_) Release(e);
    ending_now_.clear();
    consumed_.clear();
  }
  Entry e;
  while (PopBefore(progress, &e)) Release(e);
  Trim();
}

std::string IStream::Explain() const {
  return "IStream (bag difference R(t) − R(t⁻); expiring rows kept in a FIFO for constant durations, a heap otherwise)";
}

void RegisterIStream(OperatorRegistry& r) {
  r.Register("istream", [](const OperatorSpec&, const std::vector<OperatorInput>& in) -> std::unique_ptr<Operator> {
    CQ_CHECK(in.size() == 1, "istream takes one input");
    CQ_CHECK(in[0].kind == BatchKind::kLifetime, "ISTREAM's input must be a relation");
    return std::make_unique<IStream>(*in[0].schema);
  });
}

}  // namespace cq
