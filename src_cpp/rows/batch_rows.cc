#include "rows/batch_rows.h"

#include "batch/snapshot.h"

namespace cq {

RowBatchBuilder::RowBatchBuilder(std::shared_ptr<const Schema> schema, BatchKind kind, std::optional<Duration> duration)
    : schema_(std::move(schema)), kind_(kind), duration_(kind == BatchKind::kLifetime ? duration : std::nullopt) {
  for (const Field& f : *schema_) cols_.emplace_back(f.type);
}

void RowBatchBuilder::Append(const Row& row) {
  if (n_ == 0 && hint_ > 0) {
    // Batches of an exit are alike in size from one region run to the next: growing each one
    // from nothing copied its columns over and over.
    for (ValueStore& s : cols_) s.Reserve(hint_);
    sync_.Reserve(hint_);
    if (kind_ == BatchKind::kLifetime) {
      other_.Reserve(hint_);
      holders_.reserve(static_cast<size_t>(hint_));
    }
  }
  const Value* v = row.values;
  for (size_t c = 0; c < cols_.size(); ++c) {
    ValueStore& s = cols_[c];
    if (s.type() == TypeId::kUtf8) s.AppendString(v[c].valid ? v[c].s->view() : std::string_view(), v[c].valid);
    else s.AppendBits(static_cast<uint64_t>(v[c].i), v[c].valid && s.type() != TypeId::kNull);
  }
  sync_.Append(row.sync);
  if (kind_ == BatchKind::kLifetime) {
    other_.Append(row.pending() ? Time::Infinity() : row.other);
    holders_.push_back(row.holder);
    if (row.pending()) {
      ++pending_;
      uniform_ = false;
      if (row.holder >= row_of_.size()) row_of_.resize(std::max<size_t>(row.holder + 1, row_of_.size() * 2), -1);
      row_of_[row.holder] = static_cast<int32_t>(n_);
    } else if (uniform_ && duration_) {
      uniform_ = row.other == row.sync + *duration_;
    }
  }
  ++n_;
}

bool RowBatchBuilder::FixEnd(HolderId id, Time end) {
  if (id >= row_of_.size() || row_of_[id] < 0) return false;
  const int32_t r = row_of_[id];
  row_of_[id] = -1;
  other_.Set(r, end);
  holders_[r] = kNoHolder;
  --pending_;
  return true;
}

Batch RowBatchBuilder::Finish() {
  Batch b;
  b.kind = kind_;
  b.schema = schema_;
  b.length = n_;
  if (n_ == 0) return b;
  hint_ = n_ + n_ / 4;
  for (ValueStore& s : cols_) b.columns.push_back(s.Take());
  b.sync = sync_.Finish();
  if (kind_ == BatchKind::kLifetime) {
    TimeColumn other = other_.Finish();
    if (duration_ && uniform_) {
      b.constant_duration = duration_;
    } else {
      b.other = std::move(other);
      if (pending_) {
        b.holders = Buffer::Allocate(n_ * static_cast<int64_t>(sizeof(HolderId)));
        std::memcpy(b.holders.data, holders_.data(), holders_.size() * sizeof(HolderId));
      }
    }
    for (HolderId h : holders_)
      if (h != kNoHolder) row_of_[h] = -1;
    holders_.clear();
  }
  pending_ = 0;
  uniform_ = true;
  n_ = 0;
  return b;
}

}  // namespace cq

namespace cq {

void RowStore::Snapshot(SnapshotWriter& w, const std::shared_ptr<const Schema>& schema) const {
  w.PodVec(live_);
  w.PodVec(free_);
  RowBatchBuilder rows(schema, BatchKind::kStream, std::nullopt);
  ForEach([&](uint32_t s) {
    Row r;
    r.values = Get(s);
    rows.Append(r);
  });
  w.I64(rows.size());
  if (rows.size()) w.WriteBatch(rows.Finish());
}

void RowStore::Restore(SnapshotReader& r, const Schema& schema) {
  // Read aside and checked first: the store is destroyed if the restore fails, and releases the
  // strings of the slots it thinks in use.
  Clear();
  std::vector<uint8_t> live_flags;
  std::vector<uint32_t> free_slots;
  r.PodVec(live_flags, "a row store's slots in use");
  r.PodVec(free_slots, "a row store's free slots");
  const int64_t n = r.I64();
  Batch b;
  if (n) b = r.ReadBatch(&schema);
  int64_t live = 0;
  bool ok = b.length == n && !b.has_selection && schema.size() == layout_.width();
  for (uint8_t x : live_flags) {
    ok &= x <= 1;
    live += x;
  }
  // Every slot not in use is free exactly once (a slot listed twice would be handed out twice).
  std::vector<uint8_t> listed(live_flags.size(), 0);
  for (uint32_t s : free_slots) {
    ok = ok && s < live_flags.size() && !live_flags[s] && !listed[s];
    if (ok) listed[s] = 1;
  }
  ok &= live == n && static_cast<size_t>(live) + free_slots.size() == live_flags.size();
  SnapshotReader::Check(ok, "a row store's slots are inconsistent");
  if (!live_flags.empty()) Place(static_cast<uint32_t>(live_flags.size() - 1));  // free slots are reused in place
  uint32_t slot = 0;
  ForEachRow(b, [&](const Row& row) {
    while (!live_flags[slot]) ++slot;
    Value* dst = Place(slot++);
    if (layout_.width()) std::memcpy(static_cast<void*>(dst), row.values, layout_.width() * sizeof(Value));
    layout_.Retain(dst);
  });
  live_ = std::move(live_flags);
  free_ = std::move(free_slots);
  live_count_ = static_cast<size_t>(live);
}

}  // namespace cq
