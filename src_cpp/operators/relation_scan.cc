#include "operators/relation_scan.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "plan/plan_util.h"

namespace cq {

RelationScan::RelationScan(std::string relation, Schema schema, bool negative, HolderTable* holders)
    : relation_(std::move(relation)), schema_(std::make_shared<const Schema>(std::move(schema))), negative_(negative),
      holders_(holders) {}

const Column* RelationScan::Ops(const Batch& changes) const {
  return changes.columns.size() > schema_->size() ? &changes.columns[schema_->size()] : nullptr;
}

void RelationScan::Key(const Batch& changes, int64_t row, std::string* out) const {
  out->clear();
  for (size_t c = 0; c < schema_->size(); ++c) AppendKey(changes.columns[c], row, out);
}

RelationScan::Copy RelationScan::TakeOldest(const std::string& key) {
  auto it = alive_.find(key);
  CQ_CHECK(it != alive_.end() && it->second.size() > 0,
           "relation '" + relation_ + "': a delete without an alive copy reached the scan");
  Copies& q = it->second;
  const Copy c = q.items[q.head++];
  if (q.size() == 0) {
    alive_.erase(it);
  } else if (q.head > 32 && q.head * 2 > q.items.size()) {
    q.items.erase(q.items.begin(), q.items.begin() + static_cast<std::ptrdiff_t>(q.head));
    q.head = 0;
  }
  --alive_count_;
  return c;
}

int64_t RelationScan::FirstMissingDelete(const std::vector<Batch>& changes) const {
  bool any_delete = false;
  for (const Batch& b : changes) {
    const Column* ops = Ops(b);
    for (int64_t i = 0; ops && !any_delete && i < b.length; ++i) any_delete = IsDelete(ops, i);
  }
  if (!any_delete) return -1;
  // Simulate the alive multiset by value: copies alive now, plus the push's changes so far.
  std::unordered_map<std::string, int64_t> delta;
  std::string key;
  int64_t base = 0;
  for (const Batch& b : changes) {
    CQ_CHECK(!b.has_selection, "changes reach a relation compact");
    const Column* ops = Ops(b);
    for (int64_t i = 0; i < b.length; ++i) {
      Key(b, i, &key);
      int64_t& d = delta[key];
      if (!IsDelete(ops, i)) {
        ++d;
        continue;
      }
      auto it = alive_.find(key);
      if ((it == alive_.end() ? 0 : static_cast<int64_t>(it->second.size())) + d <= 0) return base + i;
      --d;
    }
    base += b.length;
  }
  return -1;
}

void RelationScan::Push(int, const Batch& in, Emitter& out) {
  const Batch b = in.Compact();
  const int64_t n = b.length;
  if (n == 0) return;
  const Column* ops = Ops(b);
  const uint32_t seq = batch_seq_++;
  const size_t width = schema_->size();
  Batch o;
  o.kind = BatchKind::kLifetime;
  o.schema = schema_;
  o.length = n;
  o.columns.assign(b.columns.begin(), b.columns.begin() + static_cast<std::ptrdiff_t>(width));
  o.sync = b.sync;
  std::string key;

  if (negative_) {
    // Every change goes out in input order: an insert as a positive (its end open), a delete as a
    // negative ending the oldest alive copy (`other` = that copy's start).
    std::vector<Time> other(static_cast<size_t>(n), Time::Infinity());
    for (int64_t i = 0; i < n; ++i) {
      Key(b, i, &key);
      if (IsDelete(ops, i)) {
        other[i] = TakeOldest(key).start;
      } else {
        Copies& q = alive_[key];
        q.items.push_back({b.sync.At(i), kNoHolder, seq, static_cast<uint32_t>(i)});
        ++alive_count_;
      }
    }
    o.other = MakeTimeColumn(other);
    out.Emit(std::move(o));
    return;
  }

  // Direct: every insert gets a holder; a delete ends the oldest copy — a copy of an earlier batch
  // through an EndBatch, a copy of this batch by setting its end here (its holder never leaves).
  int64_t inserts = 0;
  for (int64_t i = 0; i < n; ++i) inserts += !IsDelete(ops, i);
  std::vector<HolderId> ids(static_cast<size_t>(inserts));
  holders_->Allocate(inserts, ids.data());
  o.holders = Buffer::Allocate(n * sizeof(HolderId));
  HolderId* h = o.holders.as<HolderId>();
  o.other.ticks = Buffer::Allocate(n * 8);
  int64_t* et = o.other.ticks.as<int64_t>();
  const bool steps = b.sync.has_steps();
  if (steps) o.other.steps = Buffer::AllocateZeroed(n * 8);
  std::vector<uint8_t> keep(static_cast<size_t>(n), 0);
  std::vector<HolderId> ended_ids, unused;
  std::vector<uint32_t> ended_by;  // the row whose delete fixes the end
  int64_t next_id = 0;
  for (int64_t i = 0; i < n; ++i) {
    Key(b, i, &key);
    et[i] = Time::kInfTick;  // pending (see `holders`) or, for a delete row, never emitted
    if (!IsDelete(ops, i)) {
      h[i] = ids[next_id++];
      keep[i] = 1;
      alive_[key].items.push_back({b.sync.At(i), h[i], seq, static_cast<uint32_t>(i)});
      ++alive_count_;
      continue;
    }
    h[i] = kNoHolder;
    const Copy c = TakeOldest(key);
    if (c.batch != seq) {
      ended_ids.push_back(c.holder);
      ended_by.push_back(static_cast<uint32_t>(i));
      continue;
    }
    et[c.row] = b.sync.tick_data()[i];
    if (steps) o.other.steps.as<int64_t>()[c.row] = b.sync.step_data()[i];
    unused.push_back(h[c.row]);
    h[c.row] = kNoHolder;
    keep[c.row] = b.sync.At(c.row) < b.sync.At(i);  // a ghost need not go out at all
  }
  holders_->Release(unused.data(), static_cast<int64_t>(unused.size()));
  if (!ended_ids.empty()) {
    EndBatch ends;
    ends.length = static_cast<int64_t>(ended_ids.size());
    ends.holders = Buffer::Allocate(ends.length * sizeof(HolderId));
    std::copy(ended_ids.begin(), ended_ids.end(), ends.holders.as<HolderId>());
    ends.ends = GatherTime(b.sync, ended_by.data(), ends.length);
    out.EmitEnds(ends);
    holders_->Release(ended_ids.data(), ends.length);  // every consumer has seen the ends
  }
  std::vector<uint32_t> rows;
  for (int64_t i = 0; i < n; ++i)
    if (keep[i]) rows.push_back(static_cast<uint32_t>(i));
  if (rows.empty()) return;
  if (static_cast<int64_t>(rows.size()) != n) {  // deletes and ghosts are deselected, not copied
    o.has_selection = true;
    o.selection_count = static_cast<int64_t>(rows.size());
    o.selection = Buffer::Allocate(o.selection_count * 4);
    std::copy(rows.begin(), rows.end(), o.selection.as<uint32_t>());
  }
  out.Emit(std::move(o));
}

void RelationScan::AdvanceTo(Time progress, Emitter& out) {
  // At close the tuples still alive never end: their pending ends become final as ∞.
  if (!progress.IsInfinite() || alive_.empty()) return;
  if (!negative_) {
    EndBatch ends;
    ends.length = alive_count_;
    ends.holders = Buffer::Allocate(ends.length * sizeof(HolderId));
    ends.ends.ticks = Buffer::Allocate(ends.length * 8);
    int64_t k = 0;
    for (const auto& [key, q] : alive_) {
      for (size_t j = q.head; j < q.items.size(); ++j, ++k) {
        ends.holders.as<HolderId>()[k] = q.items[j].holder;
        ends.ends.ticks.as<int64_t>()[k] = Time::kInfTick;
      }
    }
    out.EmitEnds(ends);
    holders_->Release(ends.holders.as<HolderId>(), ends.length);
  }
  alive_.clear();
  alive_count_ = 0;
}

namespace {

// Reads back the values AppendKey wrote for one row: column by column, a tag (0 NULL, 1 a value)
// and the value's bytes.
class KeyReader {
 public:
  explicit KeyReader(const std::string& key) : p_(key.data()), end_(key.data() + key.size()) {}
  bool Valid() { return Take(1)[0] != '\0'; }
  template <typename T>
  T Pod() {
    T v;
    std::memcpy(&v, Take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string_view Str() {
    const auto n = Pod<uint32_t>();
    return {Take(n), n};
  }

 private:
  const char* Take(size_t n) {
    CQ_CHECK(static_cast<size_t>(end_ - p_) >= n, "a relation's value key is shorter than its columns");
    const char* at = p_;
    p_ += n;
    return at;
  }
  const char* p_;
  const char* end_;
};

}  // namespace

Batch RelationScan::AliveFrom(Time p) const {
  struct Alive {
    Time start;
    const std::string* key;
    HolderId holder;
  };
  std::vector<Alive> rows;
  rows.reserve(static_cast<size_t>(alive_count_));
  for (const auto& [key, q] : alive_)
    for (size_t j = q.head; j < q.items.size(); ++j)
      rows.push_back({std::max(q.items[j].start, p), &key, q.items[j].holder});
  std::stable_sort(rows.begin(), rows.end(), [](const Alive& a, const Alive& b) { return a.start < b.start; });
  const int64_t n = static_cast<int64_t>(rows.size());
  Batch o;
  o.kind = BatchKind::kLifetime;
  o.schema = schema_;
  o.length = n;
  if (n == 0) return o;
  // The values, a column at a time (each key is read once per column it holds).
  const size_t width = schema_->size();
  std::vector<KeyReader> readers;
  readers.reserve(rows.size());
  for (const Alive& a : rows) readers.emplace_back(*a.key);
  for (size_t c = 0; c < width; ++c) {
    const TypeId type = (*schema_)[c].type;
    Column col;
    col.type = type;
    col.length = n;
    if (type == TypeId::kNull) {
      for (KeyReader& r : readers) r.Valid();
      col.null_count = n;
      o.columns.push_back(std::move(col));
      continue;
    }
    std::vector<uint8_t> valid(static_cast<size_t>(n));
    std::vector<std::string_view> strings;
    if (type == TypeId::kUtf8) strings.resize(static_cast<size_t>(n));
    else col.values = Buffer::AllocateZeroed(type == TypeId::kBool ? bitmap::Bytes(n) : n * 8);
    for (int64_t i = 0; i < n; ++i) {
      KeyReader& r = readers[static_cast<size_t>(i)];
      valid[static_cast<size_t>(i)] = r.Valid();
      if (!valid[static_cast<size_t>(i)]) {
        ++col.null_count;
        continue;
      }
      switch (type) {
        case TypeId::kInt64: col.values.as<int64_t>()[i] = r.Pod<int64_t>(); break;
        case TypeId::kFloat64: {
          const uint64_t bits = r.Pod<uint64_t>();
          std::memcpy(col.values.as<double>() + i, &bits, 8);
          break;
        }
        case TypeId::kBool:
          if (r.Pod<char>() != '\0') bitmap::Set(col.values.as<uint8_t>(), i);
          break;
        case TypeId::kUtf8: strings[static_cast<size_t>(i)] = r.Str(); break;
        case TypeId::kNull: break;
      }
    }
    if (type == TypeId::kUtf8) FillStrings(col, n, [&](int64_t k) { return strings[static_cast<size_t>(k)]; });
    if (col.null_count > 0) {
      col.validity = Buffer::AllocateZeroed(bitmap::Bytes(n));
      for (int64_t i = 0; i < n; ++i)
        if (valid[static_cast<size_t>(i)]) bitmap::Set(col.validity.as<uint8_t>(), i);
    }
    o.columns.push_back(std::move(col));
  }
  std::vector<Time> starts(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) starts[i] = rows[i].start;
  o.sync = MakeTimeColumn(starts);
  if (negative_) {  // positives: their ends open
    o.other = MakeTimeColumn(std::vector<Time>(rows.size(), Time::Infinity()));
    return o;
  }
  o.other.ticks = Buffer::Allocate(n * 8);
  o.holders = Buffer::Allocate(n * static_cast<int64_t>(sizeof(HolderId)));
  for (int64_t i = 0; i < n; ++i) {
    o.other.ticks.as<int64_t>()[i] = Time::kInfTick;  // pending: `holders` says whose
    o.holders.as<HolderId>()[i] = rows[static_cast<size_t>(i)].holder;
  }
  return o;
}

std::vector<Batch> RelationScan::Backlog(Time p) {
  Batch alive = AliveFrom(p);
  if (alive.length == 0) return {};
  return {std::move(alive)};
}

std::string RelationScan::Explain() const {
  return "RelationScan " + relation_ + SchemaToString(*schema_) + (negative_ ? " (negative tuples)" : "");
}

void RelationSince::Push(int, const Batch& batch, Emitter& out) {
  if (!negative_) return out.Forward(batch);
  // A negative ending a tuple that started before p ends the tuple this query saw start at p.
  const Batch b = batch.Compact();
  bool before = false;
  for (int64_t i = 0; i < b.length && !before; ++i) before = !b.other.At(i).IsInfinite() && b.other.At(i) < since_;
  if (!before) return out.Forward(batch);
  std::vector<Time> other(static_cast<size_t>(b.length));
  for (int64_t i = 0; i < b.length; ++i) {
    const Time o = b.other.At(i);
    other[static_cast<size_t>(i)] = !o.IsInfinite() && o < since_ ? since_ : o;
  }
  Batch moved = b;
  moved.other = MakeTimeColumn(other);
  out.Emit(std::move(moved));
}

namespace {
// (It reads p from the operator, which outlives it: a restored snapshot sets p there.)
class RelationSinceRows final : public RowOperator {
 public:
  RelationSinceRows(const Time* since, bool negative) : since_(since), negative_(negative) {}
  void Push(int, const Row& row, RowEmitter& out) override {
    if (!negative_ || row.other.IsInfinite() || !(row.other < *since_)) return out.Emit(row);
    Row moved = row;
    moved.other = *since_;
    out.Emit(moved);
  }
  bool stateful() const override { return false; }

 private:
  const Time* since_;
  bool negative_;
};
}  // namespace

std::unique_ptr<RowOperator> RelationSince::ToRows() { return std::make_unique<RelationSinceRows>(&since_, negative_); }

void RelationSince::Snapshot(SnapshotWriter& w) const { w.Pod(since_); }

void RelationSince::Restore(SnapshotReader& r) { since_ = r.Pod<Time>(); }

void RegisterRelationScan(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "relation_scan",
              .description = "reading a relation (REGISTER RELATION)",
              .output = D::Output::kRelation,
              .firing = D::Firing::kInput,
              .columns = D::Columns::kSource,
              .role = D::Role::kRelationSource,
              .shareable = false},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.empty(), "a relation scan reads no operator");
               return std::make_unique<RelationScan>(s.params["relation"].str(), SchemaFromJson(s.params["schema"]),
                                                     ctx.negative, ctx.holders);
             });
  r.Register({.name = "relation_since",
              .description = "a relation as a query registered while the engine runs sees it",
              .output = D::Output::kRelation,
              .keeps_identity = true},
             [](const OperatorSpec&, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kLifetime,
                        "a relation as of a registration reads a relation");
               return std::make_unique<RelationSince>(*in[0].schema, ctx.registered_at, ctx.negative);
             });
}

// The alive copies of each value (start, holder, where they arrived), oldest first.
void RelationScan::Snapshot(SnapshotWriter& w) const {
  w.U32(batch_seq_);
  w.I64(alive_count_);
  w.U64(alive_.size());
  for (const auto* e : SortedEntries(alive_)) {
    const auto& [key, copies] = *e;
    w.Str(key);
    w.PodVec(copies.items.data() + copies.head, copies.size());
  }
}

void RelationScan::Restore(SnapshotReader& r) {
  batch_seq_ = r.U32();
  alive_count_ = r.I64();
  alive_.clear();
  int64_t count = 0;
  // Each copy: a start, a holder handed out (direct) or none (negative), made by an earlier push
  // (Push compares the number to find the copies of the batch it processes).
  auto valid = [&](const Copy& c) {
    return SnapshotReader::ValidTime(c.start) && c.batch < batch_seq_ &&
           (negative_ ? c.holder == kNoHolder : r.ValidHolder(c.holder));
  };
  for (size_t n = r.Count(16, "a relation's values"); n > 0; --n) {
    auto [it, fresh] = alive_.try_emplace(r.Str());
    CQ_SNAPSHOT_CHECK(fresh, "a relation's value appears twice");
    r.PodVec(it->second.items, "a relation's alive copies", valid);
    CQ_SNAPSHOT_CHECK(!it->second.items.empty(), "a relation's value has no alive copy");
    count += static_cast<int64_t>(it->second.items.size());
  }
  CQ_SNAPSHOT_CHECK(count == alive_count_, "a relation's alive count does not match its copies");
}
}  // namespace cq
