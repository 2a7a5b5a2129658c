#include "operators/hash_join_state.h"

#include <cstring>

#include "batch/row_hash.h"
#include "rows/batch_rows.h"

namespace cq {

// ---- open results ------------------------------------------------------------------------------

HolderId JoinOpenResults::Open(const JoinMeta& l, const JoinMeta& r, HolderTable* holders) {
  HolderId h;
  holders->Allocate(1, &h);
  if (h >= open_.size()) open_.resize(std::max<size_t>(h + 1, open_.size() * 2), Result{});
  Result& op = open_[h];
  op.serial = next_serial_++;
  for (int k = 0; k < 2; ++k) {
    const JoinMeta& in = k == 0 ? l : r;
    op.in[k] = in.holder;
    op.end[k] = in.other;
    if (in.holder != kNoHolder) {
      auto& by = by_input_[k];
      if (in.holder >= by.size()) by.resize(std::max<size_t>(in.holder + 1, by.size() * 2));
      by[in.holder].push_back({op.serial, h});
    } else if (!in.other.IsInfinite()) {  // (an end of Infinity is the result's only at close)
      waiting_.Insert({in.other, op.serial, h});
    }
  }
  return h;
}

void JoinOpenResults::InputEnd(int port, HolderId id, Time end, Time progress, std::vector<Link>& links,
                               std::vector<Fixed>& fixed) {
  // The list is taken out (its vector gets the scratch's, so both keep a capacity).
  links.clear();
  if (id < by_input_[port].size()) links.swap(by_input_[port][id]);
  for (const Link& l : links) {
    Result& op = open_[l.result];
    if (op.serial != l.serial) continue;  // fixed already, by the other end's progress
    op.in[port] = kNoHolder;
    op.end[port] = end;
    if (op.in[1 - port] == kNoHolder) {
      fixed.push_back({l.result, std::min(op.end[0], op.end[1])});
      op.serial = 0;
    } else if (!end.IsInfinite() || progress.IsInfinite()) {
      waiting_.Insert({end, op.serial, l.result});
    }
  }
}

void JoinOpenResults::Resolve(Time progress, std::vector<Fixed>& fixed) {
  waiting_.ExpireThrough(progress, [&](const Waiting& w) {
    Result& op = open_[w.result];
    if (op.serial != w.serial) return;
    fixed.push_back({w.result, w.end});
    op.serial = 0;
  });
  if (!progress.IsInfinite()) return;
  for (HolderId h = 0; h < open_.size(); ++h) {
    Result& op = open_[h];
    if (op.serial == 0 || (op.in[0] != kNoHolder && op.in[1] != kNoHolder)) continue;
    fixed.push_back({h, op.in[0] == kNoHolder ? op.end[0] : op.end[1]});
    op.serial = 0;
  }
}

void JoinOpenResults::Write(SnapshotWriter& w) const {
  w.PodVec(open_);
  for (const auto& by : by_input_) {
    w.U64(by.size());
    for (const auto& links : by) w.PodVec(links);
  }
  w.U64(next_serial_);
  waiting_.Snapshot(w);
}

void JoinOpenResults::Read(SnapshotReader& r, bool negative) {
  bool ok = true;
  r.PodVec(open_);
  // Open results are indexed by their holder id.
  for (size_t h = 0; h < open_.size(); ++h)
    if (open_[h].serial != 0)
      ok &= !negative && (open_[h].in[0] != kNoHolder || open_[h].in[1] != kNoHolder) &&
            r.ValidHolder(static_cast<HolderId>(h)) && SnapshotReader::ValidTime(open_[h].end[0]) &&
            SnapshotReader::ValidTime(open_[h].end[1]);
  for (auto& by : by_input_) {
    by.assign(r.Count(8), {});
    for (auto& links : by) {
      r.PodVec(links);
      for (const Link& l : links) ok &= l.result < open_.size();
    }
  }
  // An open result's pending input ends index the lists of results by input holder.
  for (const Result& op : open_)
    for (int k = 0; k < 2 && op.serial != 0; ++k) ok &= op.in[k] == kNoHolder || op.in[k] < by_input_[k].size();
  next_serial_ = r.U64();
  waiting_.Restore(r);
  r.CheckToCome(waiting_.next_end(), "a join's next result end");
  waiting_.ForEach([&](const Waiting& w) { ok &= w.result < open_.size(); });
  for (const Result& op : open_) ok &= op.serial < next_serial_;
  CQ_SNAPSHOT_CHECK(ok, "a join's open results are inconsistent");
}

// ---- the batch form's store --------------------------------------------------------------------

JoinBatchStore::JoinBatchStore(const JoinSpec& spec, int side) : spec_(&spec), side_(side) {
  Schema key_types;
  for (TypeId t : spec.key_types) key_types.push_back({"", t});
  key_equal_ = std::make_unique<RowEqual>(key_types);
  int64_key_ = spec.key_types.size() == 1 && spec.key_types[0] == TypeId::kInt64;
  row_equal_ = std::make_unique<RowEqual>(spec.input[side]);
}

JoinBatchStore::Chunk& JoinBatchStore::Add(Batch b) {
  auto k = std::make_unique<Chunk>();
  k->seq = next_seq_++;
  k->batch = std::move(b);
  const int64_t n = k->batch.length;
  for (const Expression* e : spec_->keys[side_]) k->key_cols.push_back(e->Evaluate(k->batch));
  hashes_.clear();
  HashRows(k->key_cols, n, hashes_.Append(static_cast<size_t>(n)));
  JoinMeta* meta = k->meta.Append(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    meta[i].key = hashes_[static_cast<size_t>(i)];
    meta[i].state = kJoinWaiting;
  }
  if (spec_->negative) {
    HashRows(k->batch.columns, n, k->values.Append(static_cast<size_t>(n)));
  } else if (spec_->hash_values) {
    std::vector<Column> cols;
    for (int c : spec_->value_cols[side_]) cols.push_back(k->batch.columns[c]);
    HashRows(cols, n, k->values.Append(static_cast<size_t>(n)));
  }
  k->live = n;
  if (empty()) {
    slots_.clear();
    head_ = 0;
    first_seq_ = k->seq;
    cursor_seq_ = k->seq;
    cursor_row_ = 0;
  }
  slots_.push_back(std::move(k));
  return *slots_.back();
}

void JoinBatchStore::LoadCursor() {
  // Past batches with no row left (the cursor may stand on an empty batch's number).
  cursor_meta_ = nullptr;
  while (!empty() && cursor_seq_ - first_seq_ < slots_.size()) {
    const Chunk& c = at(cursor_seq_);
    if (cursor_row_ < c.batch.length) {
      cursor_meta_ = c.meta.data();
      cursor_length_ = c.batch.length;
      return;
    }
    ++cursor_seq_;
    cursor_row_ = 0;
  }
}

bool JoinBatchStore::SameValues(Handle p, Handle x) const {
  const Chunk& cp = at(Seq(p));
  const Chunk& cx = at(Seq(x));
  return cp.values[Row(p)] == cx.values[Row(x)] && (*row_equal_)(cp.batch.columns, Row(p), cx.batch.columns, Row(x));
}

void JoinBatchStore::Trim() {
  while (!empty() && slots_[head_]->live == 0 && slots_[head_]->seq < cursor_seq_) {
    slots_[head_++].reset();
    if (head_ >= 64 && head_ * 2 >= slots_.size()) {
      slots_.erase(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(head_));
      first_seq_ += static_cast<uint32_t>(head_);
      head_ = 0;
    }
  }
}

Batch JoinBatchStore::Values(const std::vector<Handle>& rows) const {
  std::vector<BatchRow> at_rows;
  for (Handle h : rows) at_rows.push_back({Seq(h), Row(h)});
  Batch b;
  b.kind = BatchKind::kStream;
  b.schema = std::make_shared<const Schema>(spec_->input[side_]);
  b.length = static_cast<int64_t>(rows.size());
  b.columns = GatherRows([&](uint32_t seq) -> const Batch& { return at(seq).batch; }, at_rows, b.schema->size());
  b.sync = MakeTimeColumn(std::vector<Time>(rows.size(), Time{0, 0}));
  return b;
}

bool JoinBatchStore::Import(const Batch& values, const std::vector<JoinKeptRow>& rows, std::vector<Handle>& handles) {
  handles.assign(rows.size(), kNone);
  if (rows.empty()) return true;
  Batch b = values;
  b.kind = BatchKind::kStream;
  Chunk& k = Add(b.Compact());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const Column& c : k.key_cols)
      if (!c.IsValid(static_cast<int64_t>(i))) return false;
    JoinMeta& m = k.meta[i];
    m.sync = rows[i].sync;
    m.other = rows[i].other;
    m.holder = rows[i].holder;
    m.state = rows[i].state;
    handles[i] = Make(k.seq, static_cast<uint32_t>(i));
  }
  // The waiting rows follow the joined ones (JoinCore::Read checked it): the cursor is at the first.
  cursor_row_ = 0;
  while (cursor_row_ < k.batch.length && k.meta[cursor_row_].state == kJoinJoined) ++cursor_row_;
  LoadCursor();
  return true;
}

// ---- the row form's store ----------------------------------------------------------------------

JoinRowStore::JoinRowStore(const JoinSpec& spec, int side) : spec_(&spec) {
  const Schema& schema = spec.input[side];
  width_ = schema.size();
  Schema stored = schema;
  for (const Expression* k : spec.keys[side]) {
    if (k->is_column()) {
      key_cols_.push_back(k->column_index());
      continue;
    }
    key_cols_.push_back(static_cast<int>(stored.size()));
    stored.push_back({"key", k->type()});
    computed_.push_back(RowExpression::From(*k));
  }
  int64_key_ = spec.key_types.size() == 1 && spec.key_types[0] == TypeId::kInt64;
  input_ = std::make_shared<const Schema>(schema);
  layout_ = RowLayout(schema);
  store_ = RowStore(RowLayout(stored));
}

bool JoinRowStore::KeyHash(const Value* v, uint64_t* h) const {
  for (int c : key_cols_)
    if (!v[c].valid) return false;
  *h = store_.layout().HashOn(key_cols_, v);  // (no keys, nested loops: one hash for every row)
  return true;
}

JoinRowStore::Handle JoinRowStore::Add(const Row& row) {
  const size_t nc = computed_.size();
  ValueBuffer buf(nc ? width_ + nc : 0);
  const Value* v = row.values;
  if (nc) {
    std::memcpy(static_cast<void*>(buf.data()), row.values, width_ * sizeof(Value));
    for (size_t k = 0; k < nc; ++k) buf[width_ + k] = computed_[k]->Evaluate(row.values);
    v = buf.data();
  }
  uint64_t h;
  Handle slot = kNone;
  if (KeyHash(v, &h)) {
    slot = store_.Add(v);
    if (slot >= kept_.size()) kept_.resize(std::max<size_t>(slot + 1, kept_.size() * 2));
    kept_[slot] = {row.sync, row.pending() ? Time::MinusInfinity() : row.other, h, row.holder, kJoinWaiting};
    queue_.push_back(slot);
  }
  for (size_t k = 0; k < nc; ++k)
    if (buf[width_ + k].valid && computed_[k]->type() == TypeId::kUtf8) ReleaseString(buf[width_ + k].s);
  return slot;
}

void JoinRowStore::Collect() {
  for (Handle slot : released_) {
    store_.Remove(slot);
    kept_[slot].state = kJoinFree;
  }
  released_.clear();
}

Batch JoinRowStore::Values(const std::vector<Handle>& rows) const {
  CQ_CHECK(released_.empty(), "a join's state taken inside a call");
  RowBatchBuilder b(input_, BatchKind::kStream, std::nullopt);
  for (Handle h : rows) {
    Row r;
    r.values = store_.Get(h);
    b.Append(r);
  }
  return b.Finish();
}

bool JoinRowStore::Import(const Batch& values, const std::vector<JoinKeptRow>& rows, std::vector<Handle>& handles) {
  handles.clear();
  bool ok = true;
  size_t i = 0;
  ForEachRow(values, [&](const Row& in) {
    Row row = in;
    row.sync = rows[i].sync;
    row.other = rows[i].other;
    row.holder = rows[i].holder;
    const Handle h = ok ? Add(row) : kNone;
    ok &= h != kNone;
    if (ok) {
      // Add queued it: the joined rows leave the queue again (they come first).
      kept_[h].state = rows[i].state;
      if (rows[i].state == kJoinJoined) queue_.pop_back();
    }
    handles.push_back(h);
    ++i;
  });
  return ok;
}

}  // namespace cq
