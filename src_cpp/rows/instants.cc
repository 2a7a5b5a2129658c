#include "rows/instants.h"

#include <algorithm>
#include <vector>

#include "rows/batch_rows.h"

namespace cq {

Instants::Instants(const Schema& stored, bool negative, ExpirationPolicy policy, bool track_alive, bool starts_only)
    : schema_(std::make_shared<const Schema>(stored)), negative_(negative), policy_(policy), track_alive_(track_alive),
      starts_only_(starts_only), batch_(NewBatch()) {}

std::unique_ptr<InstantTracker> Instants::NewBatch() const {
  return MakeInstantTracker(negative_, static_cast<int>(policy_), track_alive_);
}

std::unique_ptr<RowTracker> Instants::NewRows() const {
  return MakeRowTracker(negative_, policy_, track_alive_, *schema_, starts_only_);
}

namespace {
// A started row to move over: adopted in end order, so that ends that came in order (a FIFO of
// constant durations) stay in order.
template <typename Ref>
struct Started {
  Ref ref;
  Time end;
  HolderId holder;
};
template <typename Ref>
void SortByEnd(std::vector<Started<Ref>>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Started<Ref>& a, const Started<Ref>& b) { return a.end < b.end; });
}
}  // namespace

void Instants::ToRowStore() {
  rows_ = NewRows();
  const InstantTracker& from = *batch_;
  std::vector<Started<InstantTracker::RowRef>> started;
  // Held rows go in as they come (in start order per instant, as pushed); started ones after.
  from.ForEachKept([&](InstantTracker::RowRef r, Time start, Time end, HolderId holder, bool is_started) {
    if (is_started) {
      started.push_back({r, end, holder});
      return;
    }
    WithRow(from.batch(r.seq), r.row, [&](const Row& row) {
      Row x = row;
      x.sync = start;
      x.other = end;
      x.holder = holder;
      rows_->Push(x);
    });
  });
  SortByEnd(started);
  for (const auto& s : started) {
    WithRow(from.batch(s.ref.seq), s.ref.row, [&](const Row& row) {
      Row x = row;
      x.other = s.end;
      x.holder = s.holder;
      rows_->Adopt(x);
    });
  }
  batch_ = NewBatch();
  in_rows_ = true;
}

std::unique_ptr<InstantTracker> Instants::BatchFromRows(Time passed) const {
  struct Held {
    uint32_t slot;
    Time start, end;
    HolderId holder;
  };
  std::vector<Held> held;
  std::vector<Started<uint32_t>> started;
  rows_->ForEachKept([&](uint32_t slot, Time start, Time end, HolderId holder, bool is_started) {
    // starts_only: an end at an instant handed over had no start beside it (the row form lets
    // it go when it next visits an instant); the batch form would see an instant of the past.
    if (is_started && starts_only_ && end < passed) return;
    if (is_started) started.push_back({slot, end, holder});
    else held.push_back({slot, start, end, holder});
  });
  // (Late starts come after the FIFO's: the batch goes in in start order.)
  std::stable_sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.start < b.start; });
  SortByEnd(started);
  RowBatchBuilder hb(schema_, BatchKind::kLifetime, std::nullopt), sb(schema_, BatchKind::kLifetime, std::nullopt);
  for (const Held& h : held) {
    Row x;
    x.values = rows_->values(h.slot);
    x.sync = h.start;
    x.other = h.end;
    x.holder = h.holder;
    hb.Append(x);
  }
  for (const auto& s : started) {
    Row x;
    x.values = rows_->values(s.ref);
    x.sync = Time::MinusInfinity();  // (not read)
    x.other = s.end;
    x.holder = s.holder;
    sb.Append(x);
  }
  std::unique_ptr<InstantTracker> out = NewBatch();
  if (!hb.empty()) out->Push(hb.Finish());
  if (!sb.empty()) out->Adopt(sb.Finish());
  return out;
}

void Instants::ToBatch() {
  batch_ = BatchFromRows(Time::MinusInfinity());
  rows_ = NewRows();
  in_rows_ = false;
}

// One format, the batch representation's: rows the row form holds are written as the batch form
// would hold them, and a restore brings them back there (the row form takes them over when first
// asked, as after any switch).
void Instants::Snapshot(SnapshotWriter& w) const {
  if (in_rows_) BatchFromRows(w.progress())->Snapshot(w);
  else batch_->Snapshot(w);
}

void Instants::Restore(SnapshotReader& r) {
  batch_ = NewBatch();
  batch_->Restore(r, *schema_);
  rows_.reset();
  in_rows_ = false;
}

}  // namespace cq
