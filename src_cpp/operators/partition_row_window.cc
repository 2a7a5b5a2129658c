#include "operators/partition_row_window.h"

#include <cstring>

#include "base/errors.h"
#include "base/hash_multimap.h"
#include "batch/row_hash.h"
#include "batch/snapshot.h"
#include "operators/registry.h"
#include "operators/rows_from_batches.h"

namespace cq {

PartitionRowWindow::PartitionRowWindow(int64_t rows, std::vector<int> keys, const Schema& input, HolderTable* holders)
    : rows_(rows), keys_(std::move(keys)), schema_(input), holders_(holders), key_types_([&] {
        std::vector<TypeId> t;
        for (int k : keys_) t.push_back(input[k].type);
        return t;
      }()),
      index_(key_types_) {
  CQ_CHECK(rows_ > 0, "a row window holds at least one row");
}

void PartitionRowWindow::EncodeKey(const Batch& b, int64_t row, std::string* out) const {
  out->clear();
  for (int k : keys_) AppendKey(b.columns[k], row, out);
}

void PartitionRowWindow::Push(int, const Batch& in, Emitter& out) {
  Batch storage;
  const Batch& batch = in.CompactInto(storage);
  const int64_t n = batch.length;
  if (n == 0) return;
  const uint32_t seq = batch_seq_++;
  Batch o = batch;
  o.kind = BatchKind::kLifetime;
  o.constant_duration.reset();
  o.other.ticks = Buffer::Allocate(n * 8);
  const bool steps = batch.sync.has_steps();
  if (steps) o.other.steps = Buffer::AllocateZeroed(n * 8);
  int64_t* et = o.other.ticks.as<int64_t>();
  o.holders = Buffer::Allocate(n * sizeof(HolderId));
  HolderId* h = o.holders.as<HolderId>();
  holders_->Allocate(n, h);

  Columns keys;
  for (int k : keys_) keys.push_back(batch.columns[k]);
  ids_.resize(static_cast<size_t>(n));
  index_.Map(std::span<const Column>(keys.data(), keys.size()), n, ids_.data());
  if (slot_of_id_.size() < index_.size()) slot_of_id_.resize(index_.size(), kNoSlot);

  ended_ids_.clear();
  ended_by_.clear();
  unused_.clear();
  for (int64_t i = 0; i < n; ++i) {
    et[i] = Time::kInfTick;
    uint32_t& slot = slot_of_id_[ids_[i]];
    if (slot == kNoSlot) {
      EncodeKey(batch, i, &key_);
      auto [it, fresh] = slot_of_.try_emplace(key_, static_cast<uint32_t>(queues_.size()));
      if (fresh) queues_.emplace_back();
      slot = it->second;
    }
    Queue& q = queues_[slot];
    if (static_cast<int64_t>(q.size()) == rows_) {
      const Pending old = q.items[q.head++];
      if (old.batch == seq) {
        // Its N-th successor is in the same batch: it leaves with its end set.
        et[old.row] = batch.sync.tick_data()[i];
        if (steps) o.other.steps.as<int64_t>()[old.row] = batch.sync.step_data()[i];
        unused_.push_back(h[old.row]);
        h[old.row] = kNoHolder;
      } else {
        ended_ids_.push_back(old.id);
        ended_by_.push_back(static_cast<uint32_t>(i));
      }
      if (q.head > 32 && q.head * 2 > q.items.size()) {
        q.items.erase(q.items.begin(), q.items.begin() + q.head);
        q.head = 0;
      }
    }
    q.items.push_back({h[i], seq, static_cast<uint32_t>(i)});
  }
  // Queue entries keep the id of a row that ended inside the batch no more: it went out without a
  // holder. (They were popped above; only still-queued entries can carry this batch's seq.)
  holders_->Release(unused_.data(), static_cast<int64_t>(unused_.size()));
  if (!ended_ids_.empty()) {
    EndBatch ends;
    ends.length = static_cast<int64_t>(ended_ids_.size());
    ends.holders = Buffer::Allocate(ends.length * sizeof(HolderId));
    std::memcpy(ends.holders.data, ended_ids_.data(), ended_ids_.size() * sizeof(HolderId));
    ends.ends = GatherTime(batch.sync, ended_by_.data(), ends.length);
    out.EmitEnds(ends);
    holders_->Release(ended_ids_.data(), ends.length);
  }
  out.Emit(std::move(o));
}

void PartitionRowWindow::AdvanceTo(Time progress, Emitter& out) {
  if (!progress.IsInfinite()) return;
  // At close the tuples still in their partitions never end.
  std::vector<HolderId> ids;
  for (Queue& q : queues_) {
    for (size_t k = q.head; k < q.items.size(); ++k) ids.push_back(q.items[k].id);
    q.items.clear();
    q.head = 0;
  }
  if (ids.empty()) return;
  EndBatch ends;
  ends.length = static_cast<int64_t>(ids.size());
  ends.holders = Buffer::Allocate(ends.length * sizeof(HolderId));
  std::memcpy(ends.holders.data, ids.data(), ids.size() * sizeof(HolderId));
  ends.ends.ticks = Buffer::Allocate(ends.length * 8);
  for (int64_t k = 0; k < ends.length; ++k) ends.ends.ticks.as<int64_t>()[k] = Time::kInfTick;
  out.EmitEnds(ends);
  holders_->Release(ids.data(), ends.length);
}

// The row form works on the same queues, keyed by the same bytes (so that a snapshot of the batch
// form holds it all); each row is a push of its own. A row finds its queue through a cache keyed
// by a hash of its key values, not by building the key's bytes and hashing those.
class PartitionRowWindow::Rows final : public RowOperator {
 public:
  Rows(PartitionRowWindow* w, std::vector<TypeId> types) : w_(w), types_(std::move(types)) {
    Schema key_schema;
    for (int k : w->keys_) key_schema.push_back({"k", types_[k]});
    key_layout_ = RowLayout(key_schema);
    keys_ = RowStore(key_layout_);
    direct_ = DirectIntKeys(key_layout_);
  }
  void Push(int, const Row& in, RowEmitter& out) override {
    PartitionRowWindow& w = *w_;
    const uint32_t seq = w.batch_seq_++;
    const uint32_t queue = QueueOf(in.values);
    Queue& q = w.queues_[queue];
    Row r = in;
    r.holder = w.holders_->AllocateOne();  // before the ended id is let go, as the batch form does
    if (static_cast<int64_t>(q.size()) == w.rows_) {
      const HolderId old = q.items[q.head++].id;
      if (q.head > 32 && q.head * 2 > q.items.size()) {
        q.items.erase(q.items.begin(), q.items.begin() + q.head);
        q.head = 0;
      }
      out.EmitEnd(old, in.sync);
      w.holders_->ReleaseOne(old);
    }
    w.queues_[queue].items.push_back({r.holder, seq, 0});
    out.Emit(r);
  }
  uint32_t QueueOf(const Value* row) {
    return direct_.FindOr(row[w_->keys_[0]], [&] { return FindOrAddQueue(row); });
  }
  uint32_t FindOrAddQueue(const Value* row) {
    PartitionRowWindow& w = *w_;
    ValueBuffer key(w.keys_.size());
    for (size_t k = 0; k < w.keys_.size(); ++k) key[k] = row[w.keys_[k]];
    const uint64_t h = key_layout_.Hash(key.data());
    uint32_t found = kNone;
    cache_.ForEachWith(h, [&](uint32_t s) {
      if (found == kNone && key_layout_.Equal(keys_.Get(s), key.data())) found = queue_of_[s];
    });
    if (found != kNone) return found;
    // Not seen by this form yet (a new key, or one from before a restore): by its bytes.
    key_.clear();
    for (int k : w.keys_) AppendKeyValue(types_[k], row[k], &key_);
    auto [it, fresh] = w.slot_of_.try_emplace(key_, static_cast<uint32_t>(w.queues_.size()));
    if (fresh) w.queues_.emplace_back();
    const uint32_t s = keys_.Add(key.data());
    if (s >= queue_of_.size()) queue_of_.resize(s + 1);
    queue_of_[s] = it->second;
    cache_.Insert(h, s);
    return it->second;
  }
  bool advances_when_due() const override { return true; }  // (at close only)
  bool fires() const override { return false; }
  void AdvanceTo(Time progress, RowEmitter& out) override {
    if (!progress.IsInfinite()) return;
    RowsFromBatches ends(&out);
    w_->AdvanceTo(progress, ends);
  }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  PartitionRowWindow* w_;
  std::vector<TypeId> types_;
  std::string key_;
  RowLayout key_layout_;
  RowStore keys_;                   // the key values seen, a slot each
  std::vector<uint32_t> queue_of_;  // by slot of keys_: its queue
  HashMultimap<uint32_t> cache_;    // key hash -> slot of keys_
  DirectIntKeys direct_;            // key -> queue, in front of cache_
};

std::unique_ptr<RowOperator> PartitionRowWindow::ToRows() {
  std::vector<TypeId> types;
  for (const Field& f : schema_) types.push_back(f.type);
  return std::make_unique<Rows>(this, std::move(types));
}

std::string PartitionRowWindow::Explain() const {
  std::string k;
  for (int c : keys_) k += (k.empty() ? "" : ", ") + schema_[c].name;
  return "Window [Partition By " + k + " Rows " + std::to_string(rows_) + "]";
}

void RegisterPartitionRowWindow(OperatorRegistry& r) {
  using D = OperatorDescriptor;
  r.Register({.name = "partition_row_window",
              .description = "the window [Partition By ... Rows n]",
              .output = D::Output::kRelation,
              .partition = D::Partition::kOnPartitionKeys,
              .arrival_order = true},
             [](const OperatorSpec& s, const std::vector<OperatorInput>& in,
                const OperatorContext& ctx) -> std::unique_ptr<Operator> {
               CQ_CHECK(in.size() == 1 && in[0].kind == BatchKind::kStream, "a window reads one stream");
               std::vector<int> keys;
               for (const json::Value& k : s.params["keys"].array()) keys.push_back(static_cast<int>(k.integer()));
               return std::make_unique<PartitionRowWindow>(s.params["rows"].integer(), std::move(keys), *in[0].schema,
                                                           ctx.holders);
             });
}

// Each partition's pending rows (holder, and which push and row made them), by partition key.
void PartitionRowWindow::Snapshot(SnapshotWriter& w) const {
  w.U32(batch_seq_);
  w.U64(slot_of_.size());
  for (const auto* e : SortedEntries(slot_of_)) {
    w.Str(e->first);
    w.U32(e->second);
  }
  w.U64(queues_.size());
  for (const Queue& q : queues_) w.PodVec(q.items.data() + q.head, q.size());
}

void PartitionRowWindow::Restore(SnapshotReader& r) {
  batch_seq_ = r.U32();
  slot_of_.clear();
  for (size_t n = r.Count(12, "the partitions"); n > 0; --n) {
    std::string key = r.Str();
    CQ_SNAPSHOT_CHECK(slot_of_.try_emplace(std::move(key), r.U32()).second, "a partition appears twice");
  }
  queues_.assign(r.Count(8, "the partitions' queues"), Queue{});
  bool ok = slot_of_.size() == queues_.size();
  // Each pending row: a holder handed out, and made by an earlier push (Push compares the number).
  for (Queue& q : queues_) {
    r.PodVec(q.items, "a partition's pending rows",
             [&](const Pending& p) { return r.ValidHolder(p.id) && p.batch < batch_seq_; });
    ok &= static_cast<int64_t>(q.items.size()) <= rows_;
  }
  std::vector<uint8_t> used(queues_.size(), 0);
  for (const auto& [key, slot] : slot_of_) ok = ok && slot < queues_.size() && !used[slot]++;
  CQ_SNAPSHOT_CHECK(ok, "a partitioned row window's queues are inconsistent");
  index_ = GroupIndex(key_types_);
  slot_of_id_.clear();
}
}  // namespace cq
