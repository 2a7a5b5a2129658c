#include "lifetime/negative_tracker.h"

#include <unordered_map>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"

namespace cq {

void NegativeTracker::Push(const Batch& in) {
  FlushReleases();
  if (in.num_rows() == 0) return;
  const int64_t n = in.num_rows();
  const uint32_t seq = Retain(in.Compact(), n);
  const Batch& b = batch(seq);
  std::vector<uint64_t> h;
  if (track_alive_) {
    h.resize(static_cast<size_t>(n));
    HashRows(b.columns, n, h.data());
  }
  for (int64_t i = 0; i < n; ++i) {
    // Every tuple is stamped with its instant (`sync`): a positive's end is open (infinite), a
    // negative's `other` holds the start it ends.
    const bool positive = b.EndAt(i).IsInfinite();
    Instant& at = pending_[b.StartAt(i)];
    (positive ? at.positives : at.negatives).push_back({seq, static_cast<uint32_t>(i)});
    if (track_alive_) (positive ? at.positive_hashes : at.negative_hashes).push_back(h[i]);
  }
}

Time NegativeTracker::next_instant() const { return pending_.empty() ? Time::Infinity() : pending_.begin()->first; }

void NegativeTracker::AdvanceTo(Time progress, const Visitor& visit) {
  FlushReleases();
  while (!pending_.empty() && pending_.begin()->first < progress) {
    auto node = pending_.extract(pending_.begin());
    const Time t = node.key();
    Instant& at = node.mapped();
    if (track_alive_) {
      // R(t): positives join, then negatives leave (a ghost's positive and negative are both at t).
      for (size_t k = 0; k < at.positives.size(); ++k) alive_.Insert(at.positive_hashes[k], at.positives[k]);
      for (size_t k = 0; k < at.negatives.size(); ++k) {
        const RowRef& q = at.negatives[k];
        RowRef p;
        const bool found = alive_.Take(at.negative_hashes[k], [&](const RowRef& r) { return RowsEqual(r, q); }, &p);
        CQ_CHECK(found, "a negative tuple without its positive");
        Release(p);
      }
    }
    visit(t, at.positives, at.negatives);
    for (const RowRef& q : at.negatives) Release(q);
    if (!track_alive_)
      for (const RowRef& p : at.positives) Release(p);
  }
}

std::vector<InstantTracker::RowRef> NegativeTracker::alive() const {
  std::vector<RowRef> out;
  out.reserve(alive_.size());
  alive_.ForEach([&](const RowRef& r) { out.push_back(r); });
  return out;
}

void NegativeTracker::ForEachKept(const KeptVisitor& f) const {
  for (const auto& [t, at] : pending_) {
    for (const RowRef& r : at.positives) f(r, t, Time::Infinity(), kNoHolder, false);
    for (const RowRef& r : at.negatives) f(r, t, batch(r.seq).EndAt(r.row), kNoHolder, false);
  }
  alive_.ForEach([&](const RowRef& r) { f(r, batch(r.seq).StartAt(r.row), Time::Infinity(), kNoHolder, true); });
}

void NegativeTracker::Adopt(const Batch& in) {
  FlushReleases();
  if (in.num_rows() == 0 || !track_alive_) return;  // (positives alive are kept only to be tracked)
  const int64_t n = in.num_rows();
  const uint32_t seq = Retain(in.Compact(), n);
  std::vector<uint64_t> h(static_cast<size_t>(n));
  HashRows(batch(seq).columns, n, h.data());
  for (int64_t i = 0; i < n; ++i) alive_.Insert(h[static_cast<size_t>(i)], {seq, static_cast<uint32_t>(i)});
}

void NegativeTracker::Snapshot(SnapshotWriter& w) const {
  SnapshotRetained(w);
  w.U64(pending_.size());
  for (const auto& [t, at] : pending_) {
    w.Pod(t);
    w.PodVec(at.positives);
    w.PodVec(at.negatives);
    w.PodVec(at.positive_hashes);
    w.PodVec(at.negative_hashes);
  }
  alive_.Snapshot(w);
}

void NegativeTracker::Restore(SnapshotReader& r, const Schema& expect) {
  RestoreRetained(r, expect);
  pending_.clear();
  bool ok = true;
  for (size_t n = r.Count(16, "a negative tracker's instants"); n > 0; --n) {
    const Time t = r.TimeValue("an instant");
    CQ_SNAPSHOT_CHECK(pending_.empty() || pending_.rbegin()->first < t,
                      "a negative tracker's instants are out of order");
    Instant& at = pending_[t];
    r.PodVec(at.positives);
    r.PodVec(at.negatives);
    r.PodVec(at.positive_hashes);
    r.PodVec(at.negative_hashes);
    for (const RowRef& x : at.positives) ok &= Holds(x);
    for (const RowRef& x : at.negatives) ok &= Holds(x);
    if (track_alive_)
      ok &= at.positive_hashes.size() == at.positives.size() && at.negative_hashes.size() == at.negatives.size();
  }
  CQ_SNAPSHOT_CHECK(ok, "a negative tracker refers to rows it does not hold");
  if (!track_alive_) {
    alive_.Restore(r, [&](const RowRef& x) { return Holds(x); });
    return;
  }
  // Hashes are of the rows' values: the ones kept with pending rows and the alive table's keys must
  // be their rows' (lookups go by them), and every negative to come must find its positive.
  std::unordered_map<uint32_t, std::vector<uint64_t>> hashes;  // by batch number, computed once
  auto hash_of = [&](const RowRef& x) {
    auto [it, fresh] = hashes.try_emplace(x.seq);
    if (fresh) {
      const Batch& b = batch(x.seq);
      it->second.resize(static_cast<size_t>(b.length));
      HashRows(b.columns, b.length, it->second.data());
    }
    return it->second[x.row];
  };
  for (const auto& [t, at] : pending_) {
    for (size_t k = 0; k < at.positives.size(); ++k) ok &= at.positive_hashes[k] == hash_of(at.positives[k]);
    for (size_t k = 0; k < at.negatives.size(); ++k) ok &= at.negative_hashes[k] == hash_of(at.negatives[k]);
  }
  CQ_SNAPSHOT_CHECK(ok, "a negative tracker's hashes are not its rows'");
  alive_.Restore(r, [&](const RowRef& x) { return Holds(x); }, hash_of);
  std::vector<uint64_t> alive;
  alive_.ForEach([&](const RowRef& x) { alive.push_back(hash_of(x)); });
  CQ_SNAPSHOT_CHECK(NegativesFindPositives(std::move(alive),
                                           [&](auto&& visit) {
                                             for (const auto& [t, at] : pending_)
                                               visit(at.positive_hashes, at.negative_hashes);
                                           }),
                    "a negative tracker holds a negative tuple that no positive is alive for");
}
}  // namespace cq
