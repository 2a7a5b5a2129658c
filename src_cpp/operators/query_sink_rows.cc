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
      : s_(sink), schema_(std::make_shared<const Schema>(sink->input_)), store_(RowLayout(sink->input_)),
        layout_(sink->input_), width_(sink->input_.size()) {}
  ~Rows() override {
    if (layout_.has_strings())
      for (size_t k = 0; k < n_; ++k) layout_.Release(&staged_[k * width_]);
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
  // The rows staged since the last flush go to the query's queue as one chunk, built a column at
  // a time.
  void Flush() override {
    const int64_t n = static_cast<int64_t>(n_);
    if (n == 0) return;
    OutputChunk chunk;
    chunk.length = n;
    for (size_t c = 0; c < width_; ++c)
      chunk.columns.push_back(UserColumn(layout_.types()[c], n, [&](int64_t i) -> const Value& { return staged_[i * width_ + c]; }));
    chunk.columns.push_back(IntColumn(n, [&](int64_t i) { return times_[i].start.tick; }, [](int64_t) { return true; }));
    auto ends = [&](int64_t i) { return !times_[i].end.IsInfinite(); };  // a never-ending end is NULL
    if (s_->kind_ == BatchKind::kStream) {
      if (s_->expose_steps_)
        chunk.columns.push_back(IntColumn(n, [&](int64_t i) { return times_[i].start.step; }, [](int64_t) { return true; }));
    } else {
      chunk.columns.push_back(IntColumn(n, [&](int64_t i) { return times_[i].end.tick; }, ends));
      if (s_->expose_steps_) {
        chunk.columns.push_back(IntColumn(n, [&](int64_t i) { return times_[i].start.step; }, [](int64_t) { return true; }));
        chunk.columns.push_back(IntColumn(n, [&](int64_t i) { return times_[i].end.step; }, ends));
      }
    }
    if (layout_.has_strings())
      for (int64_t k = 0; k < n; ++k) layout_.Release(&staged_[k * width_]);
    n_ = 0;
    s_->Append(std::move(chunk));
  }
  bool advances_when_due() const override { return true; }  // (at close only)
  bool fires() const override { return false; }

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

  // A final row: its values and times staged as they are (a copy of a few words), to become the
  // output columns (SPEC §6) at the next Flush.
  void Output(const Value* v, Time start, Time end) {
    if (n_ == cap_) Grow();
    Value* dst = staged_.get() + n_ * width_;
    for (size_t c = 0; c < width_; ++c) dst[c] = v[c];
    layout_.Retain(v);
    times_[n_++] = {start, end};
    if (n_ >= static_cast<size_t>(kChunk)) Flush();
  }
  [[gnu::noinline]] void Grow() {
    const size_t cap = std::max<size_t>(1024, cap_ * 2);
    std::unique_ptr<Value[]> values(new Value[cap * width_ + 1]);
    std::unique_ptr<Times[]> times(new Times[cap]);
    std::copy(staged_.get(), staged_.get() + n_ * width_, values.get());
    std::copy(times_.get(), times_.get() + n_, times.get());
    staged_ = std::move(values);
    times_ = std::move(times);
    cap_ = cap;
  }
  static constexpr int64_t kChunk = 65536;

  // An int64 column of n values, NULL where !valid(i).
  template <typename V, typename Ok>
  static Column IntColumn(int64_t n, V value, Ok valid) {
    Column c;
    c.type = TypeId::kInt64;
    c.length = n;
    c.values = Buffer::Allocate(n * 8);
    int64_t* o = c.values.as<int64_t>();
    int64_t nulls = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool ok = valid(i);
      o[i] = ok ? value(i) : 0;
      nulls += !ok;
    }
    if (nulls) SetValidity(c, n, nulls, valid);
    return c;
  }
  template <typename Ok>
  static void SetValidity(Column& c, int64_t n, int64_t nulls, Ok valid) {
    c.null_count = nulls;
    c.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
    for (int64_t i = 0; i < n; ++i)
      if (valid(i)) bitmap::Set(c.validity.data, i);
  }
  // The column of a user column's staged values.
  template <typename At>
  static Column UserColumn(TypeId type, int64_t n, At at) {
    if (type == TypeId::kNull) return Column::Nulls(type, n);
    Column c;
    c.type = type;
    c.length = n;
    int64_t nulls = 0;
    switch (type) {
      case TypeId::kInt64:
      case TypeId::kFloat64: {
        c.values = Buffer::Allocate(n * 8);
        int64_t* o = c.values.as<int64_t>();
        for (int64_t i = 0; i < n; ++i) {
          const Value& v = at(i);
          o[i] = v.valid ? v.i : 0;
          nulls += !v.valid;
        }
        break;
      }
      case TypeId::kBool:
        c.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
        for (int64_t i = 0; i < n; ++i) {
          if (at(i).valid && at(i).i) bitmap::Set(c.values.data, i);
          nulls += !at(i).valid;
        }
        break;
      case TypeId::kUtf8:
        FillStrings(c, n, [&](int64_t i) { return at(i).valid ? at(i).s->view() : std::string_view(); });
        for (int64_t i = 0; i < n; ++i) nulls += !at(i).valid;
        break;
      case TypeId::kNull: break;
    }
    if (nulls) SetValidity(c, n, nulls, [&](int64_t i) { return at(i).valid; });
    return c;
  }

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
  // Final rows not handed to the query's queue yet: values (width_ a row, strings retained), times.
  struct Times {
    Time start, end;
  };
  RowLayout layout_;
  size_t width_;
  std::unique_ptr<Value[]> staged_;  // n_ rows of width_ values
  std::unique_ptr<Times[]> times_;
  size_t n_ = 0, cap_ = 0;
};

std::unique_ptr<RowOperator> QuerySink::ToRows() { return std::make_unique<Rows>(this); }

}  // namespace cq
