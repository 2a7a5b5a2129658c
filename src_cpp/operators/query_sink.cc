#include "operators/query_sink.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "batch/row_equal.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "rows/batch_rows.h"

namespace cq {

namespace {

Column Int64Column(const Buffer& values, int64_t n) {
  Column c;
  c.type = TypeId::kInt64;
  c.length = n;
  c.values = values;
  return c;
}

Column StepsColumn(const TimeColumn& t, int64_t n) {
  if (t.has_steps()) return Int64Column(t.steps, n);
  return Int64Column(Buffer::AllocateZeroed(n * 8), n);
}

// End ticks with NULL where the tuple never ends.
Column EndColumn(const TimeColumn& ends, int64_t n) {
  Column end = Int64Column(ends.ticks, n);
  const int64_t* et = ends.tick_data();
  int64_t inf = 0;
  for (int64_t i = 0; i < n; ++i) inf += et[i] == Time::kInfTick;
  if (inf) {
    end.validity = Buffer::Allocate(bitmap::Bytes(n));
    for (int64_t i = 0; i < n; ++i) bitmap::SetTo(end.validity.data, i, et[i] != Time::kInfTick);
    end.null_count = inf;
  }
  return end;
}

}  // namespace

QuerySink::QuerySink(std::string query, BatchKind kind, const Schema& input, bool expose_steps, bool negative)
    : query_(std::move(query)), kind_(kind), input_(input), output_(input), expose_steps_(expose_steps),
      negative_(negative && kind == BatchKind::kLifetime), equal_(input),
      schema_(std::make_shared<const Schema>(input)), store_(RowLayout(input)) {
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

void QuerySink::Append(OutputChunk chunk) {
  FlushSmall();
  queued_rows_ += chunk.length;
  queue_.push_back(std::move(chunk));
}

void QuerySink::ColumnBuilder::AddInt(int64_t v, bool is_valid) {
  i64.push_back(is_valid ? v : 0);
  valid.push_back(is_valid);
  nulls += !is_valid;
}

void QuerySink::ColumnBuilder::AddValue(const Value& v) {
  const bool ok = v.valid && type != TypeId::kNull;
  valid.push_back(ok);
  nulls += !ok;
  switch (type) {
    case TypeId::kInt64:
    case TypeId::kBool: i64.push_back(ok ? v.i : 0); break;
    case TypeId::kFloat64: f64.push_back(ok ? v.d : 0.0); break;
    case TypeId::kUtf8:
      if (ok) bytes.append(v.s->view());
      offsets.push_back(static_cast<int32_t>(bytes.size()));
      break;
    case TypeId::kNull: break;
  }
}

void QuerySink::ColumnBuilder::Add(const Column& c, int64_t row) {
  const bool ok = c.type != TypeId::kNull && c.IsValid(row);
  valid.push_back(ok);
  nulls += !ok;
  switch (type) {
    case TypeId::kInt64: i64.push_back(ok ? c.i64()[row] : 0); break;
    case TypeId::kFloat64: f64.push_back(ok ? c.f64()[row] : 0.0); break;
    case TypeId::kBool: i64.push_back(ok && c.BoolAt(row)); break;
    case TypeId::kUtf8:
      if (ok) bytes.append(c.StrAt(row));
      offsets.push_back(static_cast<int32_t>(bytes.size()));
      break;
    case TypeId::kNull: break;
  }
}

void QuerySink::ColumnBuilder::Truncate(int64_t n) {
  const auto rows = static_cast<size_t>(n);
  if (valid.size() <= rows) return;
  nulls -= static_cast<int64_t>(std::count(valid.begin() + n, valid.end(), uint8_t{0}));
  valid.resize(rows);
  if (i64.size() > rows) i64.resize(rows);
  if (f64.size() > rows) f64.resize(rows);
  if (offsets.size() > rows + 1) {
    offsets.resize(rows + 1);
    bytes.resize(static_cast<size_t>(offsets.back()));
  }
}

Column QuerySink::ColumnBuilder::Finish() {
  const int64_t n = static_cast<int64_t>(valid.size());
  Column c;
  c.type = type;
  c.length = n;
  c.null_count = nulls;
  if (type == TypeId::kNull) {
    c.null_count = n;
  } else if (nulls) {
    c.validity = Buffer::Allocate(bitmap::Bytes(n));
    for (int64_t i = 0; i < n; ++i) bitmap::SetTo(c.validity.data, i, valid[i]);
  }
  switch (type) {
    case TypeId::kInt64:
      c.values = Buffer::Allocate(n * 8);
      std::memcpy(c.values.data, i64.data(), static_cast<size_t>(n * 8));
      break;
    case TypeId::kFloat64:
      c.values = Buffer::Allocate(n * 8);
      std::memcpy(c.values.data, f64.data(), static_cast<size_t>(n * 8));
      break;
    case TypeId::kBool:
      c.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
      for (int64_t i = 0; i < n; ++i) bitmap::SetTo(c.values.data, i, i64[i] != 0);
      break;
    case TypeId::kUtf8:
      c.offsets = Buffer::Allocate(static_cast<int64_t>(offsets.size()) * 4);
      std::memcpy(c.offsets.data, offsets.data(), offsets.size() * 4);
      c.values = Buffer::Allocate(static_cast<int64_t>(bytes.size()));
      std::memcpy(c.values.data, bytes.data(), bytes.size());
      break;
    case TypeId::kNull: break;
  }
  i64.clear();
  f64.clear();
  bytes.clear();
  offsets.assign(1, 0);
  valid.clear();
  nulls = 0;
  return c;
}

void QuerySink::FlushSmall() {
  if (small_rows_ == 0) return;
  OutputChunk chunk;
  chunk.length = small_rows_;
  for (ColumnBuilder& b : small_) chunk.columns.push_back(b.Finish());
  queue_.push_back(std::move(chunk));
  small_rows_ = 0;
}

void QuerySink::Output(const Batch& b, const uint32_t* rows, int64_t n, const TimeColumn* ends) {
  if (n < 64) {
    if (small_.empty())
      for (const Field& f : output_) small_.push_back({f.type});
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = rows ? rows[k] : k;
      size_t c = 0;
      for (; c < b.columns.size(); ++c) small_[c].Add(b.columns[c], row);
      const Time start = b.sync.At(row);
      small_[c++].AddInt(start.tick, true);
      if (kind_ == BatchKind::kStream) {
        if (expose_steps_) small_[c++].AddInt(start.step, true);
        continue;
      }
      const Time end = ends ? ends->At(k) : b.EndAt(row);
      small_[c++].AddInt(end.tick, !end.IsInfinite());
      if (expose_steps_) {
        small_[c++].AddInt(start.step, true);
        small_[c++].AddInt(end.step, !end.IsInfinite());
      }
    }
    small_rows_ += n;
    queued_rows_ += n;
    if (small_rows_ >= kSmallChunk) FlushSmall();
    return;
  }
  OutputChunk chunk;
  chunk.length = n;
  TimeColumn start, end;
  if (rows) {
    for (const Column& c : b.columns) chunk.columns.push_back(Gather(c, rows, n));
    start = GatherTime(b.sync, rows, n);
  } else {
    chunk.columns = b.columns;
    start = b.sync;
  }
  chunk.columns.push_back(Int64Column(start.ticks, n));
  if (kind_ == BatchKind::kStream) {
    if (expose_steps_) chunk.columns.push_back(StepsColumn(start, n));
    Append(std::move(chunk));
    return;
  }
  if (ends) {
    end = *ends;
  } else {
    Batch m = b.WithMaterializedEnd();
    end = rows ? GatherTime(m.other, rows, n) : m.other;
  }
  const Column end_ticks = EndColumn(end, n);
  chunk.columns.push_back(end_ticks);
  if (expose_steps_) {
    chunk.columns.push_back(StepsColumn(start, n));
    Column end_steps = StepsColumn(end, n);
    end_steps.validity = end_ticks.validity;  // NULL where `end` is
    end_steps.null_count = end_ticks.null_count;
    chunk.columns.push_back(end_steps);
  }
  Append(std::move(chunk));
}

void QuerySink::Push(int, const Batch& in, Emitter&) {
  if (in.num_rows() == 0) return;
  CQ_CHECK(in.kind == kind_, "query sink got the wrong kind of batch");
  Batch storage;
  const Batch& b = in.CompactInto(storage);
  const int64_t n = b.length;
  if (negative_) {
    if (RowsHold()) TakeFromRows();
    PushNegative(b);
    return;
  }
  if (kind_ == BatchKind::kStream || b.holders.empty()) {
    Output(b, nullptr, n, nullptr);
    return;
  }
  // Rows whose end is known go out now; the others wait for their holder's end. The rows before
  // the first that waits go out as they are, without a copy: producers fix most ends within the
  // batch (an aggregate's results but each group's last), so that is usually most of the batch.
  const HolderId* h = b.holders.as<const HolderId>();
  int64_t first = 0;
  while (first < n && h[first] == kNoHolder) ++first;
  if (first > 0) Output(b.Slice(0, first), nullptr, first, nullptr);
  std::vector<uint32_t> now, wait;
  for (int64_t i = first; i < n; ++i) (h[i] == kNoHolder ? now : wait).push_back(static_cast<uint32_t>(i));
  if (!now.empty()) Output(b, now.data(), static_cast<int64_t>(now.size()), nullptr);
  if (wait.empty()) return;
  if (RowsHold()) TakeFromRows();
  Batches& k = batches_;
  const uint32_t seq = k.next_seq++;
  for (uint32_t i : wait) {
    if (h[i] >= k.slots.size()) k.slots.resize(std::max<size_t>(h[i] + 1, k.slots.size() * 2));
    CQ_CHECK(k.slots[h[i]].row == Slot::kEmpty, "expiration holder " + std::to_string(h[i]) + " in use twice");
    k.slots[h[i]] = {seq, i};
  }
  k.waiting += static_cast<int64_t>(wait.size());
  k.retained.push_back({seq, b, static_cast<int64_t>(wait.size())});
}

void QuerySink::PushEnds(int, const EndBatch& ends, Emitter&) {
  // The rows that wait here, sorted back into arrival order (batch, row) whatever order the ends
  // came in (a partitioned window fixes them key by key, all over the batches).
  if (RowsHold()) TakeFromRows();
  struct Hit {
    uint32_t seq, row, k;
  };
  std::vector<Hit> hits;
  std::vector<Slot>& slots = batches_.slots;
  const HolderId* ids = ends.ids();
  for (int64_t k = 0; k < ends.length; ++k) {
    const HolderId id = ids[k];
    if (id >= slots.size() || slots[id].row == Slot::kEmpty) continue;  // never reached this query
    hits.push_back({slots[id].seq, slots[id].row, static_cast<uint32_t>(k)});
    slots[id].row = Slot::kEmpty;
  }
  if (hits.empty()) return;
  std::sort(hits.begin(), hits.end(),
            [](const Hit& a, const Hit& b) { return a.seq != b.seq ? a.seq < b.seq : a.row < b.row; });
  // One output chunk per batch the rows came from: sorted, so chunks are as few as batches.
  std::vector<uint32_t> rows, which;
  size_t i = 0;
  while (i < hits.size()) {
    const uint32_t seq = hits[i].seq;
    rows.clear();
    which.clear();
    for (; i < hits.size() && hits[i].seq == seq; ++i) {
      rows.push_back(hits[i].row);
      which.push_back(hits[i].k);
    }
    Retained& r = batches_.at(seq);
    const int64_t m = static_cast<int64_t>(rows.size());
    TimeColumn e = GatherTime(ends.ends, which.data(), m);
    Output(r.batch, rows.data(), m, &e);
    r.live -= m;
    batches_.waiting -= m;
  }
  while (batches_.holds() && batches_.retained.front().live == 0) batches_.retained.pop_front();
}

void QuerySink::PushNegative(const Batch& b) {
  const std::vector<uint32_t> neg = Pair(batches_, b);
  if (neg.empty()) return;
  // Rows of the negatives: values and start (other) from them, end = their instant (sync).
  Batch rows;
  rows.kind = BatchKind::kLifetime;
  rows.schema = b.schema;
  rows.length = static_cast<int64_t>(neg.size());
  for (const Column& c : b.columns) rows.columns.push_back(Gather(c, neg.data(), rows.length));
  rows.sync = GatherTime(b.other, neg.data(), rows.length);
  TimeColumn ends = GatherTime(b.sync, neg.data(), rows.length);
  Output(rows, nullptr, rows.length, &ends);
}

std::vector<uint32_t> QuerySink::Pair(Batches& k, const Batch& b) const {
  const int64_t n = b.length;
  // Positives wait; each negative finds its positive by value and start (the lookup the direct
  // method avoids) and makes the row final: values and start from the negative, end its instant.
  // Rows are taken in order, as the method guarantees a negative comes after its positive: the
  // table then holds only the positives still alive, not a whole batch of them.
  std::vector<uint64_t> h(static_cast<size_t>(n));
  HashRows(b.columns, n, h.data());
  const uint32_t seq = k.next_seq++;
  k.retained.push_back({seq, b, 0});
  std::vector<uint32_t> neg;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t row = static_cast<uint32_t>(i);
    if (b.EndAt(i).IsInfinite()) {
      k.positives.Insert(PositiveKey(h[i], b.StartAt(i)), {seq, row});
      ++k.retained.back().live;
      continue;
    }
    const Time start = b.other.At(i);
    Positive p;
    const bool found = k.positives.Take(
        PositiveKey(h[i], start),
        [&](const Positive& q) {
          const Batch& pb = k.at(q.seq).batch;
          return pb.StartAt(q.row) == start && equal_(pb.columns, q.row, b.columns, i);
        },
        &p);
    CQ_CHECK(found, "a negative tuple without its positive");
    --k.at(p.seq).live;
    neg.push_back(row);
  }
  if (k.retained.back().live == 0) {  // no positive of it waits: forget it, and its number
    k.retained.pop_back();
    --k.next_seq;
  }
  while (k.holds() && k.retained.front().live == 0) k.retained.pop_front();
  return neg;
}

void QuerySink::AdvanceTo(Time progress, Emitter&) {
  if (!negative_ || !progress.IsInfinite()) return;
  if (RowsHold()) TakeFromRows();
  Batches& kept = batches_;
  if (kept.positives.empty()) return;
  // Close: the positives still waiting never end.
  std::vector<std::pair<uint32_t, uint32_t>> left;
  kept.positives.ForEach([&](const Positive& p) { left.emplace_back(p.seq, p.row); });
  kept.positives.clear();
  std::sort(left.begin(), left.end());
  size_t k = 0;
  while (k < left.size()) {
    const uint32_t seq = left[k].first;
    std::vector<uint32_t> rows;
    while (k < left.size() && left[k].first == seq) rows.push_back(left[k++].second);
    const Batch& b = kept.at(seq).batch;
    const int64_t m = static_cast<int64_t>(rows.size());
    TimeColumn never;
    never.ticks = Buffer::Allocate(m * 8);
    for (int64_t i = 0; i < m; ++i) never.ticks.as<int64_t>()[i] = Time::kInfTick;
    Output(b, rows.data(), m, &never);
  }
  kept.retained.clear();
}

std::vector<OutputChunk> QuerySink::Drain() {
  FlushSmall();
  // Runs of small chunks (the heartbeat executor's output comes one timestamp at a time) go out
  // concatenated, up to kDrainRows rows, so that a reader is not handed thousands of tiny
  // batches; a chunk that stands alone goes out as it is (zero-copy).
  constexpr int64_t kDrainRows = 65536;
  std::vector<OutputChunk> out;
  size_t first = 0;
  while (first < queue_.size()) {
    size_t last = first + 1;
    int64_t rows = queue_[first].length;
    while (last < queue_.size() && rows + queue_[last].length <= kDrainRows) rows += queue_[last++].length;
    if (last == first + 1) {
      out.push_back(std::move(queue_[first]));
    } else {
      OutputChunk merged;
      merged.length = rows;
      std::vector<const Column*> parts(last - first);
      for (size_t c = 0; c < queue_[first].columns.size(); ++c) {
        for (size_t k = first; k < last; ++k) parts[k - first] = &queue_[k].columns[c];
        merged.columns.push_back(Concat(parts.data(), static_cast<int64_t>(parts.size())));
      }
      out.push_back(std::move(merged));
    }
    first = last;
  }
  queue_.clear();
  queued_rows_ = 0;
  return out;
}

void QuerySink::Rollback(Position mark) {
  // The rows gathered at the mark are still being gathered, or went out at the head of the first
  // chunk queued after it (whatever queues a chunk flushes the gathered rows first).
  if (queue_.size() == mark.chunks) {
    for (ColumnBuilder& b : small_) b.Truncate(mark.small_rows);
    small_rows_ = mark.small_rows;
  } else {
    if (mark.small_rows) {  // (they stay a chunk of their own)
      OutputChunk& head = queue_[mark.chunks];
      for (Column& c : head.columns) c = SliceColumn(c, 0, mark.small_rows);
      head.length = mark.small_rows;
    }
    queue_.resize(mark.chunks + (mark.small_rows ? 1 : 0));
    for (ColumnBuilder& b : small_) b.Truncate(0);
    small_rows_ = 0;
  }
  queued_rows_ = mark.queued_rows;
}

std::string QuerySink::Explain() const {
  return "Output " + query_ + (kind_ == BatchKind::kStream ? " (stream)" : " (relation)");
}

void RegisterQuerySink(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "sink",
              .description = "a query output",
              .lifetimes = D::Lifetimes::kFirstInput,
              .role = D::Role::kOutput,
              .shareable = false},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1, "sink takes one input");
               bool steps = false;
               if (const json::Value* e = s.params.find("expose_steps")) steps = e->boolean();
               return std::make_unique<QuerySink>(s.params["query"].str(), in[0].kind, *in[0].schema, steps,
                                                  ctx.negative);
             });
}

// The output not drained yet (chunks, and the small rows being gathered into one) and the rows
// still waiting for their end (direct: by holder id; negative: positives by value and start).
void QuerySink::Snapshot(SnapshotWriter& w) const {
  w.U64(queue_.size());
  for (const OutputChunk& c : queue_) {
    w.I64(c.length);
    w.Cols(c.columns);
  }
  w.I64(queued_rows_);
  w.I64(small_rows_);
  w.U64(small_.size());
  for (const ColumnBuilder& b : small_) {
    w.Pod(b.type);
    w.PodVec(b.i64);
    w.PodVec(b.f64);
    w.Str(b.bytes);
    w.PodVec(b.offsets);
    w.PodVec(b.valid);
    w.I64(b.nulls);
  }
  if (RowsHold()) WriteBatches(w, BatchesOfRows());
  else WriteBatches(w, batches_);
}

// A kept batch is a whole output batch of its producer, kept for the few rows that wait (an
// aggregate's open results): only the waiting rows are written, and references renumbered.
void QuerySink::WriteBatches(SnapshotWriter& w, const Batches& k) {
  std::vector<std::vector<uint32_t>> rows(k.retained.size());
  const uint32_t front = k.holds() ? k.retained.front().seq : 0;
  for (const Slot& s : k.slots)
    if (s.row != Slot::kEmpty) rows[s.seq - front].push_back(s.row);
  k.positives.ForEach([&](const Positive& p) { rows[p.seq - front].push_back(p.row); });
  std::vector<uint8_t> compacted(k.retained.size(), 0);
  w.U32(k.next_seq);
  w.U64(k.retained.size());
  for (size_t i = 0; i < k.retained.size(); ++i) {
    const Retained& r = k.retained[i];
    std::sort(rows[i].begin(), rows[i].end());
    w.U32(r.seq);
    if (static_cast<int64_t>(rows[i].size()) * 2 < r.batch.length) {
      compacted[i] = 1;
      Batch waiting = r.batch;
      waiting.has_selection = true;
      waiting.selection = Buffer::Allocate(static_cast<int64_t>(rows[i].size()) * 4);
      std::copy(rows[i].begin(), rows[i].end(), waiting.selection.as<uint32_t>());
      waiting.selection_count = static_cast<int64_t>(rows[i].size());
      w.WriteBatch(waiting.Compact());
    } else {
      w.WriteBatch(r.batch);
    }
    w.I64(r.live);
  }
  auto renumber = [&](uint32_t seq, uint32_t row) -> uint32_t {
    const auto& rs = rows[seq - front];
    return compacted[seq - front] ? static_cast<uint32_t>(std::lower_bound(rs.begin(), rs.end(), row) - rs.begin())
                                  : row;
  };
  std::vector<Slot> slots = k.slots;
  for (Slot& s : slots)
    if (s.row != Slot::kEmpty) s.row = renumber(s.seq, s.row);
  w.PodVec(slots);
  k.positives.Snapshot(w, [&](const Positive& p) { return Positive{p.seq, renumber(p.seq, p.row)}; });
  w.I64(k.waiting);
}

void QuerySink::Restore(SnapshotReader& r) {
  queue_.clear();
  int64_t rows = 0;
  bool ok = true;
  for (size_t n = r.Count(16); n > 0; --n) {
    OutputChunk c;
    c.length = r.I64();
    c.columns = r.Cols();
    ok &= c.length >= 0 && c.columns.size() == output_.size();
    for (size_t k = 0; ok && k < c.columns.size(); ++k)
      ok &= c.columns[k].length == c.length && c.columns[k].type == output_[k].type;
    if (ok) rows += c.length;  // bounded: the columns' buffers hold that many values
    queue_.push_back(std::move(c));
  }
  queued_rows_ = r.I64();
  small_rows_ = r.I64();
  small_.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    ColumnBuilder b{r.Enum(TypeId::kUtf8, "an output column's type")};
    r.PodVec(b.i64);
    r.PodVec(b.f64);
    b.bytes = r.Str();
    r.PodVec(b.offsets);
    r.PodVec(b.valid);
    b.nulls = r.I64();
    int64_t nulls = 0;
    for (uint8_t v : b.valid) nulls += v == 0, ok &= v <= 1;
    ok &= small_.size() < output_.size() && b.type == output_[small_.size()].type &&
          static_cast<int64_t>(b.valid.size()) == small_rows_ && b.nulls == nulls;
    switch (b.type) {
      case TypeId::kInt64:
      case TypeId::kBool: ok &= b.i64.size() == b.valid.size(); break;
      case TypeId::kFloat64: ok &= b.f64.size() == b.valid.size(); break;
      case TypeId::kUtf8:
        ok &= b.offsets.size() == b.valid.size() + 1 && b.offsets.front() == 0 &&
              std::is_sorted(b.offsets.begin(), b.offsets.end()) &&
              static_cast<size_t>(b.offsets.back()) == b.bytes.size();
        break;
      case TypeId::kNull: break;
    }
    small_.push_back(std::move(b));
  }
  ok &= small_.empty() ? small_rows_ == 0 : small_.size() == output_.size();
  if (ok) ok = queued_rows_ == rows + small_rows_;
  CQ_SNAPSHOT_CHECK(ok, "a query's undrained output does not fit its schema");
  ClearRows();
  Batches& k = batches_;
  k.next_seq = r.U32();
  k.retained.clear();
  for (size_t n = r.Count(1); n > 0; --n) {
    const uint32_t seq = r.U32();
    Batch b = r.ReadBatch(input_, kind_);
    const int64_t live = r.I64();
    CQ_SNAPSHOT_CHECK(!b.has_selection && seq < k.next_seq && (!k.holds() || seq == k.retained.back().seq + 1) &&
                          b.columns.size() == input_.size(),
                      "a query's waiting rows are out of sequence");
    k.retained.push_back({seq, std::move(b), live});
  }
  // Numbers are handed out in order and only to kept batches: the last kept has the last number.
  ok &= !k.holds() || k.retained.back().seq + 1 == k.next_seq;
  auto holds = [&](uint32_t seq, uint32_t row) {
    return k.holds() && seq >= k.retained.front().seq && seq - k.retained.front().seq < k.retained.size() &&
           row < static_cast<uint64_t>(k.at(seq).batch.length);
  };
  r.PodVec(k.slots);
  // Each kept batch is kept for exactly the rows that still refer to it.
  std::vector<int64_t> refs(k.retained.size(), 0);
  int64_t waiting = 0;
  for (const Slot& s : k.slots) {
    if (s.row == Slot::kEmpty) continue;
    ok &= holds(s.seq, s.row);
    if (ok) ++refs[s.seq - k.retained.front().seq], ++waiting;
  }
  // (negative) A positive waits under the hash of its values and start, which a negative looks up.
  std::vector<std::vector<uint64_t>> hashes(k.retained.size());
  auto hash_of = [&](const Positive& p) {
    const Batch& b = k.at(p.seq).batch;
    std::vector<uint64_t>& h = hashes[p.seq - k.retained.front().seq];
    if (h.empty()) {
      h.resize(static_cast<size_t>(b.length));
      HashRows(b.columns, b.length, h.data());
    }
    return PositiveKey(h[p.row], b.StartAt(p.row));
  };
  k.positives.Restore(
      r,
      [&](const Positive& p) {
        if (!holds(p.seq, p.row)) return false;
        ++refs[p.seq - k.retained.front().seq];
        return true;
      },
      hash_of);
  k.waiting = r.I64();
  ok &= negative_ ? waiting == 0 : waiting == k.waiting;
  for (size_t i = 0; i < k.retained.size(); ++i) ok &= k.retained[i].live == refs[i];
  CQ_SNAPSHOT_CHECK(ok, "a query's waiting rows refer to batches it does not keep");
}

// ---- taking the rows over ----------------------------------------------------------------------

QuerySink::Batches QuerySink::BatchesOfRows() const {
  Batches k;
  k.next_seq = batches_.next_seq;
  if (!RowsHold()) return k;
  // One batch of the rows, in start order (a batch's is): the rows waiting by their holder
  // (direct), or the positives, which wait as a batch of positives that just came does.
  std::vector<std::pair<Held, HolderId>> kept;
  for (size_t id = 0; id < held_.size(); ++id)
    if (held_[id].slot != kNotHeld.slot) kept.push_back({held_[id], static_cast<HolderId>(id)});
  held_positives_.ForEach([&](const Held& p) { kept.push_back({p, kNoHolder}); });
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.first.start != b.first.start ? a.first.start < b.first.start : a.first.slot < b.first.slot;
  });
  RowBatchBuilder rows(schema_, BatchKind::kLifetime, std::nullopt);
  for (const auto& [x, holder] : kept) {
    Row r;
    r.values = store_.Get(x.slot);
    r.sync = x.start;
    rows.Append(r);
  }
  Batch b = rows.Finish();
  if (negative_) {
    Pair(k, b);
    return k;
  }
  const uint32_t seq = k.next_seq++;
  k.slots.resize(held_.size());
  for (size_t i = 0; i < kept.size(); ++i) k.slots[kept[i].second] = {seq, static_cast<uint32_t>(i)};
  k.waiting = static_cast<int64_t>(kept.size());
  k.retained.push_back({seq, std::move(b), k.waiting});
  return k;
}

void QuerySink::TakeFromRows() {
  batches_ = BatchesOfRows();
  ClearRows();
}

void QuerySink::ClearRows() {
  store_.Clear();
  held_.clear();
  held_positives_.clear();
}

void QuerySink::TakeFromBatches() {
  Batches& k = batches_;
  const RowLayout& l = store_.layout();
  for (size_t id = 0; id < k.slots.size(); ++id) {
    const Slot& s = k.slots[id];
    if (s.row == Slot::kEmpty) continue;
    if (id >= held_.size()) held_.resize(k.slots.size(), kNotHeld);
    WithRow(k.at(s.seq).batch, s.row, [&](const Row& r) { held_[id] = {store_.Add(r.values), r.sync}; });
  }
  k.positives.ForEach([&](const Positive& p) {
    WithRow(k.at(p.seq).batch, p.row, [&](const Row& r) {
      held_positives_.Insert(PositiveKey(l.Hash(r.values), r.sync), {store_.Add(r.values), r.sync});
    });
  });
  k.retained.clear();
  k.slots.clear();
  k.positives.clear();
  k.waiting = 0;
}
}  // namespace cq
