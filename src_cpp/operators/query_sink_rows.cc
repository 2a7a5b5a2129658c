// The query output's row form (rows/ROWS.md): under hybrid=False every operator below the sources
// runs in a loop region, the outputs too. Final rows are written straight into the columns of the
// chunk they will go out in; a relation row whose end is not final waits in the query output's one
// state (query_sink.h), taken over from the batch layout first if the batch form left rows there.
#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "base/hash_multimap.h"
#include "batch/bitmap.h"
#include "batch/buffer.h"
#include "batch/column.h"
#include "batch/row_hash.h"
#include "batch/value_store.h"
#include "operators/query_sink.h"
#include "rows/batch_rows.h"

namespace cq {

// Specialized on the query's kind and on expose_steps, so that a row writes only the time columns
// its chunk has, without testing for them (11 output rows per input tuple in the paper's query).
template <bool kRelation, bool kSteps>
class QuerySink::Rows final : public RowOperator {
 public:
  explicit Rows(QuerySink* sink)
      : s_(sink), layout_(sink->input_), width_(sink->input_.size()), nulls_(sink->input_.size()) {
    strings_ = layout_.has_strings();
    negative_ = sink->negative_;
  }
  ~Rows() override { ReleaseStaged(); }

  void Push(int, const Row& row, RowEmitter&) override {
    Time end = Time::Infinity();
    if constexpr (kRelation) {
      if (negative_) [[unlikely]]
        return PushNegative(row);
      if (row.pending()) return Wait(row);
      end = row.other;
    }
    Output(row.values, row.sync, end);
  }
  // A relation row whose end is pending waits for it.
  [[gnu::noinline]] void Wait(const Row& row) {
    QuerySink& s = *s_;
    if (s.batches_.holds()) [[unlikely]]
      s.TakeFromBatches();
    std::vector<Held>& held = s.held_;
    if (row.holder >= held.size()) held.resize(std::max<size_t>(row.holder + 1, held.size() * 2), kNotHeld);
    CQ_CHECK(held[row.holder].slot == kNotHeld.slot,
             "expiration holder " + std::to_string(row.holder) + " in use twice");
    held[row.holder] = {s.store_.Add(row.values), row.sync};
  }

  void PushEnd(int, HolderId id, Time end, RowEmitter&) override {
    QuerySink& s = *s_;
    if (s.batches_.holds()) [[unlikely]]
      s.TakeFromBatches();
    std::vector<Held>& held = s.held_;
    if (id >= held.size() || held[id].slot == kNotHeld.slot) return;  // never reached this query
    const Held w = held[id];
    held[id] = kNotHeld;
    Output(s.store_.Get(w.slot), w.start, end);
    s.store_.Remove(w.slot);
  }

  void AdvanceTo(Time progress, RowEmitter&) override {
    if (!negative_ || !progress.IsInfinite()) return;
    QuerySink& s = *s_;
    if (s.batches_.holds()) s.TakeFromBatches();
    // Close: the positives still waiting never end.
    s.held_positives_.ForEach([&](const Held& p) { Output(s.store_.Get(p.slot), p.start, Time::Infinity()); });
    s.ClearRows();
  }
  bool stateful() const override { return negative_; }
  bool gathers() const override { return true; }
  // The rows staged since the last flush go to the query's queue as one chunk, their columns
  // handed over as they are.
  void Flush() override {
    const int64_t n = static_cast<int64_t>(n_);
    if (n == 0) return;
    OutputChunk chunk;
    chunk.length = n;
    for (size_t c = 0; c < width_; ++c) chunk.columns.push_back(UserColumn(c, n));
    chunk.columns.push_back(WordColumn(width_ + kStartTick, n, nullptr));
    if (kRelation) chunk.columns.push_back(WordColumn(width_ + kEndTick, n, &never_ends_));
    if (kSteps) {
      chunk.columns.push_back(WordColumn(width_ + kStartStep, n, nullptr));
      if (kRelation) chunk.columns.push_back(WordColumn(width_ + kEndStep, n, &never_ends_));
    }
    ReleaseStaged();
    for (auto& x : nulls_) x.clear();
    never_ends_.clear();
    buffers_.clear();
    words_.clear();
    // The next chunk's room: what this one needed, twice over, so that a region's rows mostly fit
    // in one chunk without moving.
    next_cap_ = std::clamp<size_t>(n_ == cap_ ? cap_ * 2 : n_ * 2, 1024, kChunk);
    n_ = cap_ = 0;
    s_->Append(std::move(chunk));
  }
  bool advances_when_due() const override { return true; }  // (at close only)
  bool fires() const override { return false; }

  // (Snapshot and Restore: nothing of its own. The rows waiting are the query output's state,
  // which writes them; the chunk being built is empty between calls, flushed at the end of each.)

 private:
  // A final row: its values (a word each: int64, double bits, bool 0/1, or a retained string)
  // and times go straight into the buffers that will be the chunk's columns (SEMANTICS.md §6). A
  // full chunk goes out at once.
  [[gnu::always_inline]] void Output(const Value* v, Time start, Time end) {
    if (n_ == cap_) Full();
    const size_t row = n_;
    int64_t* const* w = words_.data();
    const size_t width = width_;
    bool nulls = false;  // noted apart: a call inside this loop would cost every row a stack frame
    for (size_t c = 0; c < width; ++c) {
      const Value& x = v[c];
      w[c][row] = x.valid ? x.i : 0;
      nulls |= !x.valid;
    }
    if (nulls) [[unlikely]]
      AddNulls(v, row);
    if (strings_) [[unlikely]]
      RetainStrings(v);
    w += width;
    const bool never = end.IsInfinite();  // a never-ending end is NULL
    w[kStartTick][row] = start.tick;
    if constexpr (kRelation) {
      w[kEndTick][row] = never ? 0 : end.tick;
      if (never) [[unlikely]]
        never_ends_.push_back(static_cast<int64_t>(row));
    }
    if constexpr (kSteps) {
      w[kStartStep][row] = start.step;
      if constexpr (kRelation) w[kEndStep][row] = never ? 0 : end.step;
    }
    ++n_;
  }
  [[gnu::noinline]] void AddNulls(const Value* v, size_t row) {
    for (size_t c = 0; c < width_; ++c)
      if (!v[c].valid) nulls_[c].push_back(static_cast<int64_t>(row));
  }
  // Out of line, so that Output stays small where no column holds strings.
  [[gnu::noinline]] void RetainStrings(const Value* v) const { layout_.Retain(v); }
  [[gnu::noinline]] void Full() {
    Flush();
    cap_ = next_cap_;
    for (size_t c = 0; c < width_ + kTimes; ++c) {
      buffers_.push_back(Buffer::Allocate(static_cast<int64_t>(cap_) * 8));
      words_.push_back(buffers_.back().as<int64_t>());
    }
  }
  void ReleaseStaged() {
    if (!strings_) return;
    for (size_t c = 0; c < width_; ++c)
      if (types()[c] == TypeId::kUtf8)
        for (size_t i = 0; i < n_; ++i)
          if (const int64_t x = words_[c][i]) ReleaseString(reinterpret_cast<const StrBlock*>(x));
  }
  static constexpr size_t kChunk = 65536;
  // The time columns, after the user columns.
  static constexpr size_t kStartTick = 0, kEndTick = 1, kStartStep = 2, kEndStep = 3, kTimes = 4;

  // A validity bitmap of n rows, all valid but `nulls`.
  static void SetValidity(Column& c, int64_t n, const std::vector<int64_t>& nulls) {
    c.null_count = static_cast<int64_t>(nulls.size());
    c.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
    std::memset(c.validity.data, 0xFF, static_cast<size_t>(n / 8));
    for (int64_t i = n / 8 * 8; i < n; ++i) bitmap::Set(c.validity.data, i);
    for (int64_t i : nulls) bitmap::Clear(c.validity.data, i);
  }
  // Column c's n words as an int64 (or float64) column: its buffer, cut to n values, the tail
  // zeroed up to 64 bytes as Buffer::Allocate promises.
  Column WordColumn(size_t c, int64_t n, const std::vector<int64_t>* nulls) const {
    Column col;
    col.type = TypeId::kInt64;
    col.length = n;
    col.values = buffers_[c];
    col.values.size = n * 8;
    const int64_t end = std::min<int64_t>((n * 8 / 64 + 1) * 64, static_cast<int64_t>(cap_) * 8);
    std::memset(col.values.data + n * 8, 0, static_cast<size_t>(end - n * 8));
    if (nulls && !nulls->empty()) SetValidity(col, n, *nulls);
    return col;
  }
  Column UserColumn(size_t c, int64_t n) const {
    const TypeId type = types()[c];
    if (type == TypeId::kNull) return Column::Nulls(type, n);
    Column col;
    const int64_t* w = words_[c];
    switch (type) {
      case TypeId::kInt64:
      case TypeId::kFloat64: col = WordColumn(c, n, nullptr); break;
      case TypeId::kBool:
        col.values = Buffer::AllocateZeroed(bitmap::Bytes(n));
        for (int64_t i = 0; i < n; ++i)
          if (w[i]) bitmap::Set(col.values.data, i);
        break;
      case TypeId::kUtf8:
        FillStrings(col, n, [&](int64_t i) {
          return w[i] ? reinterpret_cast<const StrBlock*>(w[i])->view() : std::string_view();
        });
        break;
      case TypeId::kNull: break;
    }
    col.type = type;
    col.length = n;
    if (!nulls_[c].empty()) SetValidity(col, n, nulls_[c]);
    return col;
  }

  // The negative method: a relation row is final when its negative tuple arrives.
  void PushNegative(const Row& row) {
    QuerySink& s = *s_;
    if (s.batches_.holds()) [[unlikely]]
      s.TakeFromBatches();
    const RowLayout& l = layout_;
    RowStore& store = s.store_;
    if (row.other.IsInfinite()) {
      s.held_positives_.Insert(PositiveKey(l.Hash(row.values), row.sync), {store.Add(row.values), row.sync});
      return;
    }
    const Time start = row.other;  // a negative tuple: `other` is the start it ends
    Held p;
    const bool found = s.held_positives_.Take(
        PositiveKey(l.Hash(row.values), start),
        [&](const Held& q) { return q.start == start && l.Equal(store.Get(q.slot), row.values); }, &p);
    CQ_CHECK(found, "a negative tuple without its positive");
    Output(row.values, start, row.sync);
    store.Remove(p.slot);
  }

  QuerySink* s_;
  RowLayout layout_;  // the user columns'
  // Final rows not handed to the query's queue yet: n_ rows of the chunk being built, in
  // buffers_ (room for cap_ rows; the user columns, then the times), words_ their values; the NULLs
  // of each user column and the rows that never end, by row number.
  size_t width_;
  const std::vector<TypeId>& types() const { return layout_.types(); }  // the user columns
  bool strings_, negative_;  // (kept as flags: Output reads them for every row)
  std::vector<Buffer> buffers_;
  std::vector<int64_t*> words_;
  size_t n_ = 0, cap_ = 0, next_cap_ = 1024;
  std::vector<std::vector<int64_t>> nulls_;
  std::vector<int64_t> never_ends_;
};

std::unique_ptr<RowOperator> QuerySink::ToRows() {
  const bool relation = kind_ != BatchKind::kStream;
  if (relation) {
    if (expose_steps_) return std::make_unique<Rows<true, true>>(this);
    return std::make_unique<Rows<true, false>>(this);
  }
  if (expose_steps_) return std::make_unique<Rows<false, true>>(this);
  return std::make_unique<Rows<false, false>>(this);
}

}  // namespace cq
