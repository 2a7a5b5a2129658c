#include "lifetime/instant_tracker.h"

#include <algorithm>
#include <span>

#include "base/errors.h"
#include "base/few_on_stack.h"
#include "lifetime/negative_tracker.h"
#include "lifetime/relation_tracker.h"

namespace cq {

uint32_t InstantTracker::Retain(Batch compact, int64_t live) {
  if (!equal_) equal_ = std::make_unique<RowEqual>(*compact.schema);
  const uint32_t seq = next_seq_++;
  const bool plain = equal_->IsPlain(compact.columns);
  retained_.push_back({seq, std::move(compact), live, plain});
  return seq;
}

void InstantTracker::FlushReleases() {
  while (!retained_.empty() && retained_.front().live == 0) retained_.pop_front();
}

int64_t InstantTracker::retained_rows() const {
  int64_t n = 0;
  for (const Retained& r : retained_) n += r.live;
  return n;
}

void InstantTracker::Collect(Time progress, Changes& out) {
  out.clear();
  AdvanceTo(progress, [&](Time t, const std::vector<RowRef>& s, const std::vector<RowRef>& e) {
    for (const RowRef& r : s) {
      out.starts.push_back(r);
      out.start_at.push_back(t);
    }
    for (const RowRef& r : e) {
      out.ends.push_back(r);
      out.end_at.push_back(t);
    }
  });
}

void InstantTracker::AppendBagDifferences(const Changes& c, bool starts_minus_ends, List<RowRef>& out,
                                          List<Time>& ts) const {
  const RowRef* a = (starts_minus_ends ? c.starts : c.ends).data();
  const RowRef* b = (starts_minus_ends ? c.ends : c.starts).data();
  const Time* at = (starts_minus_ends ? c.start_at : c.end_at).data();
  const Time* bt = (starts_minus_ends ? c.end_at : c.start_at).data();
  const size_t na = (starts_minus_ends ? c.starts : c.ends).size();
  const size_t nb = (starts_minus_ends ? c.ends : c.starts).size();
  if (na == 0) return;
  // At most every row of `a` goes out: room is made once, and what is not used given back.
  const size_t out_base = out.size(), ts_base = ts.size();
  RowRef* o = out.Append(na);
  Time* ot = ts.Append(na);
  size_t m = 0;
  const RowEqual& eq = *equal_;
  // A row finds its batch's columns, and whether they are plain numbers (asked once, as the batch
  // was retained), by its number (ColsOf).
  ColsOf of{this, nullptr, retained_.front().seq};  // (rows to compare: something is retained)
  if (retained_.size() <= 2 * (na + nb) + 16) {
    batch_cols_.resize(retained_.size());
    for (size_t r = 0; r < retained_.size(); ++r) batch_cols_[r] = {retained_[r].batch.columns, retained_[r].plain};
    of.table = batch_cols_.data();
  }
  auto cols = [&](RowRef r) { return of(r.seq); };
  auto same = [&](const BatchCols& x, uint32_t i, const BatchCols& y, uint32_t j) {
    return x.plain && y.plain ? eq.Plain(x.cols, i, y.cols, j) : eq(x.cols, i, y.cols, j);
  };
  size_t j = 0;
  for (size_t i = 0; i < na;) {
    const Time t = at[i];
    size_t i2 = i + 1;
    while (i2 < na && at[i2] == t) ++i2;
    while (j < nb && bt[j] < t) ++j;
    size_t j2 = j;
    while (j2 < nb && bt[j2] == t) ++j2;
    if (j2 - j >= 2 && PlainInstants({a + i, i2 - i}, {b + j, j2 - j}, t, of, o, ot, m)) {
      // Several rows taken away, all plain numbers (an instant of a batch of many): done there.
    } else if (j2 - j == 1) {
      // One row taken away, the commonest meeting: it cancels the first equal row, if any.
      const BatchCols cy = cols(b[j]);
      bool cancelled = false;
      for (size_t x = i; x < i2; ++x) {
        if (!cancelled && same(cy, b[j].row, cols(a[x]), a[x].row)) {
          cancelled = true;
          continue;
        }
        o[m] = a[x];
        ot[m++] = t;
      }
    } else if (j2 > j) {
      // Many against many, not all plain numbers: each row of `a` against the unused rows of `b`.
      const size_t ny = j2 - j;
      FewOnStack<uint8_t, 64> used(ny, 0);
      for (size_t x = i; x < i2; ++x) {
        const BatchCols cx = cols(a[x]);
        bool cancelled = false;
        for (size_t k = 0; k < ny && !cancelled; ++k)
          if (!used[k] && same(cols(b[j + k]), b[j + k].row, cx, a[x].row)) used[k] = cancelled = true;
        if (!cancelled) {
          o[m] = a[x];
          ot[m++] = t;
        }
      }
    } else {
      // Nothing taken away at t: the instant's rows go out as they are.
      for (size_t x = i; x < i2; ++x) {
        o[m] = a[x];
        ot[m++] = t;
      }
    }
    i = i2;
    j = j2;
  }
  out.Truncate(out_base + m);
  ts.Truncate(ts_base + m);
}

bool InstantTracker::PlainInstants(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const ColsOf& cols,
                                   RowRef* o, Time* ot, size_t& m) const {
  if (cols.table) {
    const BatchCols* table = cols.table;
    const uint32_t base = cols.base;
    return PlainPieces(
        a, b, t, [table, base](uint32_t seq) -> const BatchCols& { return table[seq - base]; }, o, ot, m);
  }
  return PlainPieces(a, b, t, cols, o, ot, m);
}

template <typename Lookup>
bool InstantTracker::PlainPieces(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const Lookup& cols,
                                 RowRef* o, Time* ot, size_t& m) const {
  // `b` in pieces of at most 64 rows, as a − (b1 + b2) = (a − b1) − b2: what is left of `a` after a
  // piece is in o from m on, and the next piece takes it from there.
  const size_t m0 = m;
  for (size_t k = 0; k < b.size(); k += 64) {
    const std::span<const RowRef> rows = k == 0 ? a : std::span<const RowRef>(o + m0, m - m0);
    m = m0;  // (a piece that fails leaves it there)
    if (!PlainInstant(rows, b.subspan(k, std::min<size_t>(64, b.size() - k)), t, cols, o, ot, m)) return false;
  }
  return true;
}

template <typename Lookup>
bool InstantTracker::PlainInstant(std::span<const RowRef> a, std::span<const RowRef> b, Time t, const Lookup& cols,
                                  RowRef* o, Time* ot, size_t& m) const {
  // Each row of `b` with its columns and its hash, the rows not used up yet as bits, and a 64-bit
  // filter with one bit set per hash of `b`. Most starts of an instant match no end (ISTREAM's new
  // rows rarely equal the ones ending): the filter turns those away with a hash and a bit test,
  // and only the others look through `b`, comparing hashes before rows.
  const RowEqual& eq = *equal_;
  const size_t width = eq.width(), nb = b.size();
  const Column* bc[64];
  uint64_t bh[64];
  uint64_t filter = 0;
  for (size_t k = 0; k < nb; ++k) {
    const auto& x = cols(b[k].seq);
    if (!x.plain) return false;
    bc[k] = x.cols.data();
    bh[k] = eq.PlainHash({bc[k], width}, b[k].row);
    filter |= uint64_t{1} << (bh[k] >> 58);
  }
  uint64_t left = nb == 64 ? ~uint64_t{0} : (uint64_t{1} << nb) - 1;
  // Rows of `a` are written from m on, unconditionally (a cancelled one is overwritten by the
  // next), and may be read from there too (a later piece of `b`); m moves only once every row has
  // been seen plain, so a fallback starts afresh.
  size_t w = m;
  for (const RowRef& r : a) {
    const auto& x = cols(r.seq);
    if (!x.plain) return false;
    const Column* ac = x.cols.data();
    const uint64_t h = eq.PlainHash({ac, width}, r.row);
    bool cancelled = false;
    if (filter >> (h >> 58) & 1) {
      for (size_t k = 0; k < nb; ++k) {
        if (bh[k] == h && (left >> k & 1) && eq.Plain({bc[k], width}, b[k].row, {ac, width}, r.row)) {
          left &= ~(uint64_t{1} << k);
          cancelled = true;
          break;
        }
      }
    }
    o[w] = r;  // (r may be o[w] itself, or a later row of o)
    ot[w] = t;
    w += !cancelled;
  }
  m = w;
  return true;
}

Batch InstantTracker::Gather(const List<RowRef>& rows, const List<Time>& ts,
                             const std::shared_ptr<const Schema>& schema) const {
  Batch out;
  out.kind = BatchKind::kStream;
  out.schema = schema;
  const int64_t n = static_cast<int64_t>(rows.size());
  out.length = n;
  CQ_CHECK(n > 0, "gathering no rows");
  // The rows' batches are retained ones, numbered consecutively: a row's source is its number less
  // the lowest, with no lookup; the times are written in the same pass.
  uint32_t lo = rows[0].seq, hi = lo;
  for (const RowRef& r : rows) {
    lo = std::min(lo, r.seq);
    hi = std::max(hi, r.seq);
  }
  // Each row's source and row: on the stack for the row or two of a loop's instant, else on the
  // heap without zero-filling (every slot is written below).
  uint32_t few[32];
  ScratchList<uint32_t> many;
  uint32_t* which = n <= 16 ? few : many.Append(2 * static_cast<size_t>(n));
  uint32_t* idx = which + n;
  out.sync.ticks = Buffer::Allocate(n * 8);
  int64_t* ticks = out.sync.ticks.as<int64_t>();
  bool steps = false;
  for (int64_t k = 0; k < n; ++k) {
    which[k] = rows[k].seq - lo;
    idx[k] = rows[k].row;
    ticks[k] = ts[k].tick;
    steps |= ts[k].step != 0;
  }
  if (steps) {
    int64_t* st = (out.sync.steps = Buffer::Allocate(n * 8)).as<int64_t>();
    for (int64_t k = 0; k < n; ++k) st[k] = ts[k].step;
  }
  const size_t width = schema->size(), nsrc = hi - lo + size_t{1};
  FewOnStack<const Column*, 8> sources(nsrc);
  for (uint32_t s = 0; s < nsrc; ++s) sources[s] = batch(lo + s).columns.data();
  out.columns.resize(width);
  GatherColumns(sources.data(), nsrc, width, which, idx, n, out.columns.data());
  return out;
}

std::unique_ptr<InstantTracker> MakeInstantTracker(bool negative, int policy, bool track_alive) {
  if (negative) return std::make_unique<NegativeTracker>(track_alive);
  return std::make_unique<RelationTracker>(static_cast<ExpirationPolicy>(policy), track_alive);
}

void InstantTracker::SnapshotRetained(SnapshotWriter& w) const {
  w.U32(next_seq_);
  WriteNumberedBatches(w, retained_);
}

void InstantTracker::RestoreRetained(SnapshotReader& r, const Schema& expect) {
  next_seq_ = r.U32();
  ReadNumberedBatches(r, expect, BatchKind::kLifetime, next_seq_, true, retained_, "a tracker's retained batches");
  // Numbers go to retained batches only, in order: the last retained has the last number.
  bool ok = retained_.empty() || retained_.back().seq + 1 == next_seq_;
  CQ_SNAPSHOT_CHECK(ok, "a tracker's batch numbers are out of sequence");
  equal_ = retained_.empty() ? nullptr : std::make_unique<RowEqual>(*retained_.front().batch.schema);
  for (Retained& k : retained_) k.plain = equal_->IsPlain(k.batch.columns);
}
}  // namespace cq
