#pragma once
// The join of two relations (SEMANTICS.md §4.2: at every t, the SQL join of R1(t) and R2(t)): a
// symmetric hash join on the equi-join keys the planner extracted (none: every pair is a candidate,
// i.e. nested loops), with a residual predicate over the joined row. Joins of three or more sources
// are left-deep chains of this operator.
//
// The two inputs are merged in time order (each waits until the other's progress has caught up),
// so a tuple meets every tuple of the other side that started before it.
//  * direct: a result lives on the intersection [max(s1, s2), min(e1, e2)). When an input's end is
//    pending the result's end is pending too (paper 003 §4.1); it is fixed when both ends are
//    known, or when one is known (e) and the other input's progress has reached e — a pending end
//    is never below its input's progress (§4.3), so the minimum is then e.
//  * negative: a positive tuple probes the other side and yields positive results; a negative
//    tuple leaves its side's table and yields the negative results of the pairs still alive.
// Inside loops the row form (Rows, hash_join_rows.cc) does the same a row at a time.
#include <memory>
#include <unordered_map>

#include "base/hash_multimap.h"
#include "batch/row_equal.h"
#include "kernels/expression.h"
#include "lifetime/expiration_set.h"
#include "operators/operator.h"

namespace cq {

class HashJoin final : public Operator {
 public:
  HashJoin(const Schema& left, const Schema& right, std::vector<std::unique_ptr<Expression>> left_keys,
           std::vector<std::unique_ptr<Expression>> right_keys, std::unique_ptr<Expression> residual,
           bool negative, HolderTable* holders, ExpirationPolicy policy = ExpirationPolicy::kLazy);
  void Push(int port, const Batch& batch, Emitter& out) override;
  void PushEnds(int port, const EndBatch& ends, Emitter& out) override;
  void AdvanceTo(Time progress, Emitter& out) override;
  std::unique_ptr<RowOperator> ToRows() override;
  Time next_firing(int64_t last_tick) const override;
  const Schema& output_schema() const override { return schema_; }
  BatchKind output_kind() const override { return BatchKind::kLifetime; }
  std::string Explain() const override;
  void Snapshot(SnapshotWriter& w) const override;
  void Restore(SnapshotReader& r) override;

 private:
  class Rows;
  struct Ref {
    uint32_t seq;
    uint32_t row;
  };
  struct Kept {
    uint32_t seq;
    Batch batch;                  // compact
    std::vector<uint64_t> keys;   // hash of the join key per row
    std::vector<Column> key_cols;
    std::vector<Time> ends;       // direct: known end, MinusInfinity while pending
    std::vector<uint64_t> rows;   // negative: hash of (values, start) to find a positive again
    int64_t live;
  };
  struct Side {
    std::vector<std::unique_ptr<Expression>> keys;
    // Kept batches by sequence number, oldest first: a vector of pointers indexed from the
    // first number it holds (a lookup per probe, so no deque arithmetic).
    struct Batches {
      std::vector<std::unique_ptr<Kept>> slots;
      size_t head = 0;         // slots[head] is the oldest kept
      uint32_t first_seq = 0;  // the number of slots[0]
      bool empty() const { return head == slots.size(); }
      size_t size() const { return slots.size() - head; }
      Kept& front() const { return *slots[head]; }
      Kept& at(uint32_t seq) const { return *slots[seq - first_seq]; }
      void push_back(Kept&& k) {
        if (slots.empty()) first_seq = k.seq;
        slots.push_back(std::make_unique<Kept>(std::move(k)));
      }
      void pop_front() {
        slots[head++].reset();
        if (head >= 64 && head * 2 >= slots.size()) {
          slots.erase(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(head));
          first_seq += static_cast<uint32_t>(head);
          head = 0;
        }
      }
    };
    Batches kept;
    uint32_t next_seq = 0;
    size_t cursor_batch = 0;  // next row to process: kept[cursor_batch], row cursor_row
    int64_t cursor_row = 0;
    // The cursor's batch unpacked (null when every kept row is processed), so that choosing the
    // side to go next, once per row, is two loads.
    const int64_t* cursor_ticks = nullptr;
    const int64_t* cursor_steps = nullptr;
    int64_t cursor_length = 0;
    void LoadCursor();
    HashMultimap<Ref> table;                       // rows that can still join, by key hash
    std::unordered_map<HolderId, Ref> pending;     // direct: rows whose end is not known yet
    struct Expiry {
      Time end;
      Ref ref;
    };
    ExpirationSet<Expiry> expiring;  // direct: table rows by known end
    Kept& at(uint32_t seq) { return kept.at(seq); }
  };
  // A direct result whose end is still pending.
  struct Open {
    Ref l, r;
    HolderId lh, rh;  // input holders (kNoHolder when that end is known)
    Time start;
    uint64_t serial;  // result ids are recycled: waiting entries check they still mean this one
  };
  struct Result {  // a pair of rows of one processing round, gathered with the others into a batch
    Ref l, r;
    Time start, end;
    bool open;  // direct: end pending
  };
  using Emitted = std::vector<Result>;

  Time NextStart(int side) const;
  void Process(Time progress, Emitter& out);
  void ProcessRow(int side, Ref x, Emitted& em);
  void RemoveFromTable(Side& s, uint64_t hash, Ref ref);
  void Expire(int side, Time t);
  bool KeysEqual(const Kept& a, uint32_t i, const Kept& b, uint32_t j) const;
  void EmitResults(Emitted& em, Emitter& out);
  void ResolveOpen(Time progress, std::vector<std::pair<HolderId, Time>>& fixed);
  void EmitFixed(const std::vector<std::pair<HolderId, Time>>& fixed, Emitter& out);
  void Trim(Side& s);

  Schema left_, right_, schema_;
  std::shared_ptr<const Schema> shared_;
  std::unique_ptr<Expression> residual_;
  std::unique_ptr<RowEqual> key_equal_, row_equal_, row_equal_right_;
  bool int64_key_ = false;
  bool negative_;
  HolderTable* holders_;
  ExpirationPolicy policy_;
  Side sides_[2];
  Time progress_ = Time::MinusInfinity();
  // direct: open results by their holder id, the ids by input holder, and those whose end is
  // known on one side and wait for the other side's progress (by that end).
  // Holder ids are small and recycled, so both are flat arrays indexed by id (an input's list of
  // results keeps its capacity when the id comes back): no node per result.
  std::vector<Open> open_;          // by result holder id; live when `live` is set
  std::vector<uint8_t> open_live_;
  std::vector<std::vector<HolderId>> open_by_input_[2];  // by input holder id
  std::vector<HolderId> scratch_;
  bool IsOpen(HolderId r) const { return r < open_live_.size() && open_live_[r]; }
  struct Waiting {
    Time end;
    HolderId result;
    uint64_t serial;
  };
  uint64_t next_serial_ = 0;
  ExpirationSet<Waiting> waiting_;
};

}  // namespace cq
