#pragma once
// The one state of what ISTREAM, DSTREAM and RSTREAM see of their input relation (rows/ROWS.md):
// the tuples whose instants have not come yet (and, for RSTREAM, those alive), fed and read by the
// operator's batch form and by its row form alike.
//
// Its rows are kept in the representation of the form that feeds it: by reference to the batches
// they came in (InstantTracker: the batch form reads them a column at a time, with no copy), or in
// a RowStore (RowTracker: a loop's instant carries a row or two, and a batch per instant cost ten
// times the work). Each representation is the fastest for its form, and only one holds rows at a
// time: when the other form is asked for it, the rows move over (ForEachKept, then Push for those
// whose instants have not come and Adopt for those started), so that no instant ever merges two
// sets of rows. A form can be chosen at any time, and chosen again; a snapshot has one format (the
// batch representation's) whichever holds the rows, and a restore brings them back in it.
#include <memory>

#include "batch/snapshot.h"
#include "lifetime/expiration_set.h"
#include "lifetime/instant_tracker.h"
#include "rows/row_tracker.h"

namespace cq {

class Instants {
 public:
  // `stored`: the schema of the rows pushed. `negative`: the lifetime method; `track_alive`: keep
  // R(t) itself (RSTREAM); `starts_only`: the row form visits only instants where a tuple starts
  // (ISTREAM: RowRelationTracker says why).
  Instants(const Schema& stored, bool negative, ExpirationPolicy policy, bool track_alive, bool starts_only);

  // The state for the batch form: the rows moved into batches if the row form holds them.
  InstantTracker& batch() {
    if (in_rows_) ToBatch();
    return *batch_;
  }
  // The state for the row form: the rows moved into a RowStore if the batch form holds them.
  RowTracker& rows() {
    if (!in_rows_) ToRowStore();
    return *rows_;
  }
  bool in_rows() const { return in_rows_; }
  // Read without moving anything: whichever holds the rows answers.
  Time next_instant() const { return in_rows_ ? rows_->next_instant() : batch_->next_instant(); }
  bool any_alive() const { return in_rows_ ? rows_->any_alive() : batch_->any_alive(); }
  // Rows kept (for tests, and for owners that keep a state of their own beside this one).
  int64_t kept_rows() const { return in_rows_ ? static_cast<int64_t>(rows_->kept_rows()) : batch_->retained_rows(); }

  // One format whichever representation holds the rows: the batch form's.
  void Snapshot(SnapshotWriter& w) const;
  void Restore(SnapshotReader& r);

 private:
  std::unique_ptr<InstantTracker> NewBatch() const;
  std::unique_ptr<RowTracker> NewRows() const;
  // The rows the row form holds, as the batch form holds them; every instant below `passed` has
  // been handed over.
  std::unique_ptr<InstantTracker> BatchFromRows(Time passed) const;
  void ToBatch();
  void ToRowStore();

  std::shared_ptr<const Schema> schema_;
  bool negative_;
  ExpirationPolicy policy_;
  bool track_alive_;
  bool starts_only_;
  std::unique_ptr<InstantTracker> batch_;  // always there: empty while the row form holds the rows
  std::unique_ptr<RowTracker> rows_;       // made when the row form is first asked for
  bool in_rows_ = false;
};

}  // namespace cq
