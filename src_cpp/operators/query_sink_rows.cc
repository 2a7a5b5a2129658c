// The query output's row form (rows/ROWS.md): under hybrid=False every operator below the sources
// runs in a loop region, the outputs too. Rows go into the same growing columns as the batch
// form's small batches do, and leave as the same chunks; a relation row waits here for its end.
#include "batch/hash_multimap.h"
#include "batch/row_hash.h"
#include "engine/errors.h"
#include "engine/snapshot.h"
#include "operators/query_sink.h"
#include "batch/value_store.h"
#include "rows/batch_rows.h"

namespace cq {

class QuerySink::Rows final : public RowOperator {
 public:
  explicit Rows(QuerySink* sink)
      : s_(sink), schema_(std::make_shared<const Schema>(sink->input_)), store_(RowLayout(sink->input_)) {
    for (const Field& f : sink->output_) out_.emplace_back(f.type);
  }

  void Push(int, const Row& row, RowEmitter&) override {
    if (s_->kind_ == BatchKind::kStream) {
      Output(row.values, row.sync, Time::Infinity());
      return;
    }
    if (s_->negative_) {
      PushNegative(row);
      return;
    }
    if (!row.pending()) {
      Output(row.values, row.sync, row.other);
      return;
    }
    if (row.holder >= waiting_.size()) waiting_.resize(std::max<size_t>(row.holder + 1, waiting_.size() * 2), kNone);
    CQ_CHECK(waiting_[row.holder].slot == kNone.slot,
             "expiration holder " + std::to_string(row.holder) + " in use twice");
    waiting_[row.holder] = {store_.Add(row.values), row.sync};
  }

  void PushEnd(int, HolderId id, Time end, RowEmitter&) override {
    if (id >= waiting_.size() || waiting_[id].slot == kNone.slot) return;  // never reached this query
    const Waiting w = waiting_[id];
    waiting_[id] = kNone;
    Output(store_.Get(w.slot), w.start, end);
    store_.Remove(w.slot);
  }

  void AdvanceTo(Time progress, RowEmitter&) override {
    if (!s_->negative_ || !progress.IsInfinite() || positives_.empty()) return;
    // Close: the positives still waiting never end.
    positives_.ForEach([&](const Positive& p) { Output(store_.Get(p.slot), p.start, Time::Infinity()); });
    positives_.ForEach([&](const Positive& p) { store_.Remove(p.slot); });
    positives_.clear();
  }
  bool stateful() const override { return s_->negative_; }
  bool gathers() const override { return true; }
  // The rows gathered since the last flush go to the query's queue as one chunk.
  void Flush() override {
    if (rows_ == 0) return;
    OutputChunk chunk;
    chunk.length = rows_;
    for (ValueStore& c : out_) chunk.columns.push_back(c.Take());
    hint_ = rows_ + rows_ / 4;
    rows_ = 0;
    s_->Append(std::move(chunk));
  }
  bool advances_when_due() const override { return true; }  // (at close only)

  void Snapshot(SnapshotWriter& w) const override {
    store_.Snapshot(w, schema_);
    w.PodVec(waiting_);
    positives_.Snapshot(w);
  }
  void Restore(SnapshotReader& r) override {
    store_.Restore(r, *schema_);
    r.PodVec(waiting_);
    size_t n = 0;
    bool ok = true;
    for (const Waiting& x : waiting_)
      if (x.slot != kNone.slot) ok &= store_.live(x.slot), ++n;
    positives_.Restore(r, [&](const Positive& p) { return ++n, store_.live(p.slot); });
    CQ_SNAPSHOT_CHECK(ok && n == store_.size(), "a query's waiting rows are inconsistent");
  }

 private:
  struct Waiting {
    uint32_t slot;
    Time start;
  };
  struct Positive {
    uint32_t slot;
    Time start;
  };
  static constexpr Waiting kNone{0xFFFFFFFFu, {}};

  // A final row, straight into the output columns (SPEC §6: the user columns, then ts or start and
  // end, then with expose_steps the steps; a never-ending end is NULL).
  void Output(const Value* v, Time start, Time end) {
    if (rows_ == 0 && hint_ > 0)
      for (ValueStore& c : out_) c.Reserve(hint_);
    const size_t w = s_->input_.size();
    size_t c = 0;
    for (; c < w; ++c) {
      ValueStore& s = out_[c];
      if (s.type() == TypeId::kUtf8) s.AppendString(v[c].valid ? v[c].s->view() : std::string_view(), v[c].valid);
      else s.AppendBits(static_cast<uint64_t>(v[c].i), v[c].valid && s.type() != TypeId::kNull);
    }
    out_[c++].AppendBits(static_cast<uint64_t>(start.tick), true);
    if (s_->kind_ == BatchKind::kStream) {
      if (s_->expose_steps_) out_[c++].AppendBits(static_cast<uint64_t>(start.step), true);
    } else {
      const bool ends = !end.IsInfinite();
      out_[c++].AppendBits(ends ? static_cast<uint64_t>(end.tick) : 0, ends);
      if (s_->expose_steps_) {
        out_[c++].AppendBits(static_cast<uint64_t>(start.step), true);
        out_[c++].AppendBits(ends ? static_cast<uint64_t>(end.step) : 0, ends);
      }
    }
    if (++rows_ >= kChunk) Flush();
  }
  static constexpr int64_t kChunk = 65536;

  // The negative method: a relation row is final when its negative tuple arrives.
  static uint64_t Key(const RowLayout& l, const Value* v, Time start) {
    return MixHash(l.Hash(v) ^ MixHash(static_cast<uint64_t>(start.tick) * 31 + static_cast<uint64_t>(start.step)));
  }
  void PushNegative(const Row& row) {
    const RowLayout& l = store_.layout();
    if (row.other.IsInfinite()) {
      positives_.Insert(Key(l, row.values, row.sync), {store_.Add(row.values), row.sync});
      return;
    }
    const Time start = row.other;  // a negative tuple: `other` is the start it ends
    Positive p;
    const bool found = positives_.Take(Key(l, row.values, start), [&](const Positive& q) {
      return q.start == start && l.Equal(store_.Get(q.slot), row.values);
    }, &p);
    CQ_CHECK(found, "a negative tuple without its positive");
    Output(row.values, start, row.sync);
    store_.Remove(p.slot);
  }

  QuerySink* s_;
  std::shared_ptr<const Schema> schema_;
  RowStore store_;
  std::vector<Waiting> waiting_;  // direct: by holder id
  HashMultimap<Positive> positives_;  // negative: by hash of values and start
  std::vector<ValueStore> out_;  // final rows not handed to the query's queue yet, by output column
  int64_t rows_ = 0;
  int64_t hint_ = 0;  // rows of the last chunk: room made for the next
};

std::unique_ptr<RowOperator> QuerySink::ToRows() { return std::make_unique<Rows>(this); }

}  // namespace cq
