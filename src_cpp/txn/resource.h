#pragma once
// What a reference operator reads (paper 002 §2.3.2, §7): a resource — a keyed table that other
// programs update while queries run — and a model. Every read is one call here, which returns the
// rows read together with the version (the in-process store's commit number, a database's
// last-update stamp) they were read at: a transaction manager (2PL, snapshot, optimistic) wraps
// these calls, and the read log records them. With txn="none" the calls read whatever is current.
//
// Implementations: StoreResource (the in-process store, txn/resource_store.h) here; a database
// resource and models are Python objects the binding wraps (the core holds no database client).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/batch.h"
#include "time/time.h"
#include "txn/resource_store.h"

namespace cq::txn {

// One read: the rows read (compact columns of the resource's schema) and the version read. For a
// lookup, `match[i]` is the row of `columns` holding probe i's key, or -1 when none does.
struct ResourceRead {
  uint64_t version = 0;
  Columns columns;
  int64_t length = 0;
  std::vector<int64_t> match;
  // Rows of the resource the read touched (a lookup: the probes that found a row; a scan: all).
  int64_t rows_read = 0;
};

// What a transaction manager (txn/transaction_manager.h) controls: a resource or a model. Its
// shared lock for reader `holder` (a query), waiting up to `timeout` for a writer: false when it
// timed out (2PL holds it from the first read to the commit; a writer waits for it); its state
// now, frozen (the snapshot strategy reads it; its manager holds the lock while it pins); its
// last-update stamp now (the optimistic strategy validates against it).
class Controlled {
 public:
  virtual ~Controlled() = default;
  virtual bool LockShared(const std::string& holder, std::chrono::nanoseconds timeout) = 0;
  virtual void UnlockShared(const std::string& holder) = 0;
  virtual std::shared_ptr<Controlled> PinState(const std::string& holder, std::chrono::nanoseconds timeout) = 0;
  virtual uint64_t Stamp() = 0;
};

class Resource : public Controlled {
 public:
  const ResourceSpec& spec() const { return spec_; }
  // The rows holding each of `n` probe keys: `keys` are columns of the key's types, in the key's
  // order. A probe with a NULL in its key matches nothing.
  virtual ResourceRead Lookup(const Columns& keys, int64_t n) = 0;
  // Every row.
  virtual ResourceRead Scan() = 0;

  // The resource frozen at its state now: a resource whose reads all see that one state.
  virtual std::shared_ptr<Resource> Pin(const std::string& holder, std::chrono::nanoseconds timeout) = 0;
  std::shared_ptr<Controlled> PinState(const std::string& holder, std::chrono::nanoseconds timeout) override {
    return Pin(holder, timeout);
  }

 protected:
  explicit Resource(ResourceSpec spec) : spec_(std::move(spec)) {}
  ResourceSpec spec_;
};

// Resource `name` of an in-process store, read at its current version, or at one version when
// `pinned` (what Pin returns). The store outlives it.
class StoreResource final : public Resource {
 public:
  StoreResource(ResourceStore* store, const std::string& name, std::shared_ptr<const ResourceVersion> pinned = nullptr);
  ResourceRead Lookup(const Columns& keys, int64_t n) override;
  ResourceRead Scan() override;
  bool LockShared(const std::string& holder, std::chrono::nanoseconds timeout) override;
  void UnlockShared(const std::string& holder) override;
  std::shared_ptr<Resource> Pin(const std::string& holder, std::chrono::nanoseconds timeout) override;
  uint64_t Stamp() override;

 private:
  std::shared_ptr<const ResourceVersion> Version() const;
  ResourceStore* store_;
  std::shared_ptr<const ResourceVersion> pinned_;
};

// The rows of columns that may hold any subset of a resource's rows in any order (what a
// database returns for a lookup, a copy of its table), by their key (AppendKey over spec.key):
// what a lookup's probes are matched against. kInput naming the resource when two rows share a key.
class KeyIndex {
 public:
  KeyIndex(const ResourceSpec& spec, const Columns& columns, int64_t length);
  // `match[i]`: the row holding the key of probe i of the n probe `keys` (the key's columns in
  // spec.key's order, of its types), -1 when none does or the probe's key holds a NULL; returns
  // how many found one.
  int64_t Match(const Columns& keys, int64_t n, std::vector<int64_t>& match) const;
  // The resource's name and its key's columns' types, in spec.key's order.
  const std::string& resource() const { return resource_; }
  const std::vector<TypeId>& types() const { return types_; }

 private:
  std::string resource_;
  std::vector<TypeId> types_;
  std::unordered_map<std::string, int64_t> at_;
};

// `read.match` for `n` probe `keys` over rows `read.columns` (KeyIndex); also sets rows_read.
void MatchProbes(const ResourceSpec& spec, const Columns& keys, int64_t n, ResourceRead& read);

// A model (REGISTER MODEL): a function applied to a batch of argument columns at once, returning
// its result columns and the model's version (the store's commit that set it).
struct ModelResult {
  uint64_t version = 0;
  Columns columns;
};
class Model : public Controlled {
 public:
  virtual ModelResult Apply(const std::string& name, const Columns& args, const Schema& arg_schema, int64_t n) = 0;
  // The model frozen at its callable now (set_model publishes another).
  virtual std::shared_ptr<Model> Pin(const std::string& holder, std::chrono::nanoseconds timeout) = 0;
  std::shared_ptr<Controlled> PinState(const std::string& holder, std::chrono::nanoseconds timeout) override {
    return Pin(holder, timeout);
  }
};

// One read a reference operator made: by which operator, of what, at which version, for the
// instant (the timestamp of the row it was processing), and how many of the resource's rows.
struct ReadRecord {
  int op;
  std::string resource;
  uint64_t version;
  Time instant;
  int64_t rows;
};

// The latest kLogLimit reads (older ones are dropped and counted: a continuous query must not
// grow without bound), and every operator's number of reads, all of them.
class ReadLog {
 public:
  static constexpr size_t kLogLimit = size_t{1} << 20;
  void Add(ReadRecord r) {
    std::lock_guard l(mu_);
    ++reads_[r.op];
    records_.push_back(std::move(r));
    if (records_.size() > kLogLimit) {
      records_.pop_front();
      ++dropped_;
    }
  }
  std::vector<ReadRecord> records() const {
    std::lock_guard l(mu_);
    return {records_.begin(), records_.end()};
  }
  std::map<int, int64_t> reads() const {
    std::lock_guard l(mu_);
    return reads_;
  }
  uint64_t dropped() const {
    std::lock_guard l(mu_);
    return dropped_;
  }

 private:
  mutable std::mutex mu_;
  std::deque<ReadRecord> records_;
  std::map<int, int64_t> reads_;  // operator id -> reads
  uint64_t dropped_ = 0;
};

class TransactionManagers;  // txn/transaction_manager.h

// What an engine's reference operators read: resources and models by name, the log of reads,
// and the transaction managers of the redo areas (made by the reference operators' factories
// from their spec's "redo_area"; null: the engine controls no transactions, txn="none").
struct Bindings {
  std::map<std::string, std::shared_ptr<Resource>> resources;
  std::map<std::string, std::shared_ptr<Model>> models;
  ReadLog log;
  std::shared_ptr<TransactionManagers> managers;
};

}  // namespace cq::txn
