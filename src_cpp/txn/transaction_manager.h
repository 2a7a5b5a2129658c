#pragma once
// The transaction manager of one redo area (paper 002 §3.5): the reads the area's reference
// operators make between two commits of its commit operator form one transaction, and at most
// one is open at a time. It begins at the area's first read and ends when the executor asks the
// commit operator's instant to commit (executors/scheduled/). The strategy decides what a read does:
//
// - none: reads what is current, no control.
// - 2pl (§4.1.1): the resource's shared lock is taken at its first read in the transaction and held
//   to the commit (a writer of the store waits, then times out naming the resource and the query).
// - snapshot (§4.1.2): at the transaction's first read every resource of the area is locked, pinned
//   at its version (Resource::Pin), and released at once; every read of the transaction reads the
//   pinned copy, so a writer waits only while the copy is made.
// - optimistic (§4.2.1): no lock; the area's last-update stamps are recorded when the transaction
//   begins and checked at its commit: a resource read since with a later stamp fails the
//   validation, and the transaction is aborted (its output discarded, its instant redone).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "time/time.h"
#include "txn/resource.h"

namespace cq::txn {

enum class Strategy : uint8_t { kNone, kTwoPhase, kSnapshot, kOptimistic };
// kInput naming the accepted ones for another name.
Strategy StrategyFromName(const std::string& name);
const char* StrategyName(Strategy s);
// The system clock now, ns since the epoch (the store's update log's clock).
int64_t SystemNs();

struct TxnOptions {
  Strategy strategy = Strategy::kNone;
  std::chrono::nanoseconds lock_timeout = std::chrono::seconds(10);
};

// One end of a transaction: the query and redo area, the instant its commit operator committed
// (the latest instant of the rows it released), the outcome, the evaluations of each operator of
// the area since the previous commit, and the version of each resource read (the first read's; a
// 2PL or snapshot transaction reads one version of each).
struct CommitRecord {
  std::string query;
  int64_t area = 0;
  Time instant;
  bool committed = true;
  // When its first read was made and when it ended (system clock, ns since the epoch, as the
  // store's update log): what cq_py.txn.check compares the versions' lifetimes with.
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  std::vector<std::pair<int, int64_t>> evaluations;
  std::vector<std::pair<std::string, uint64_t>> versions;
};

// The commit log as columns, for cq_py's Engine.commit_log() and read_versions(): up to 2^20
// records cross to Python as a few Arrow arrays, not as a Python object per record. A table of
// `length` rows of named columns:
struct LogColumns {
  std::vector<std::string> names;
  Columns columns;
  int64_t length = 0;
};
struct CommitLogColumns {
  // One row per record, in the log's order: query, area, instant (tick), outcome ("commit" or
  // "abort"), begin and end (ns).
  LogColumns records;
  // records.length + 1 rows: where each record's entries begin in `evaluations` and in
  // `versions`, the last row their ends (the offsets of Arrow's map arrays).
  LogColumns offsets;
  // One row per (record, operator of its area): operator, evaluations.
  LogColumns evaluations;
  // One row per (record, resource read): record (its row in `records`), resource, version.
  LogColumns versions;
};
CommitLogColumns CommitLogAsColumns(const std::deque<CommitRecord>& log);

class TransactionManager {
 public:
  // `holder`: the query, named in a writer's lock timeout.
  TransactionManager(int64_t area, std::string holder, TxnOptions options);
  ~TransactionManager();
  TransactionManager(const TransactionManager&) = delete;
  TransactionManager& operator=(const TransactionManager&) = delete;

  // A resource or model of the area, by name (snapshot locks and pins them all at the
  // transaction's first read; optimistic records their stamps then). Adding one again changes
  // nothing.
  void Add(const std::string& name, const std::shared_ptr<Controlled>& source);
  void Add(const std::shared_ptr<Resource>& resource) { Add(resource->spec().name, resource); }
  // Model `name`'s call (as a read: locked, pinned or stamped as the strategy says).
  ModelResult Apply(const std::string& name, Model& model, const Columns& args, const Schema& arg_schema, int64_t n,
                    Time instant);
  // The resource's reads, within the open transaction (begun by the first one).
  // `instant`: the time of the rows the read is for.
  ResourceRead Lookup(Resource& resource, const Columns& keys, int64_t n, Time instant);
  ResourceRead Scan(Resource& resource, Time instant);
  // The latest instant read for in the open transaction.
  Time last_read() const { return last_read_; }

  bool open() const { return open_; }
  // When the open transaction began (system clock ns).
  int64_t begin_ns() const { return begin_ns_; }
  // Ends the open transaction: true when it commits; false when the optimistic validation fails (a
  // resource read has a later stamp than when the transaction began): it is aborted. Either way its
  // locks and pins are released; `versions` gets the versions read.
  // One read of the transaction: the instant it was for, the resource and the version read.
  struct Read {
    Time instant;
    std::string resource;
    uint64_t version;
  };
  //
  // `kept`: the (resource, version) reads of earlier transactions whose rows a window keeps into
  // this commit's output (redo="on_change" did not read them again). Their rows and this
  // transaction's derive the output together, so it fails too when the transaction sees another
  // version of one of those resources (the one it read, pinned, or the current one): a write
  // came between the two commits, and the kept rows must be read again (a reset and replay).
  bool Commit(std::vector<std::pair<std::string, uint64_t>>* versions, std::vector<Read>* reads = nullptr,
              const std::vector<std::pair<std::string, uint64_t>>& kept = {});
  // Resource `name`'s last-update stamp now (redo="on_change" compares it with what was read).
  uint64_t Stamp(const std::string& name);
  // The redo of the area (the executor counts what it did).
  void CountReset() { ++resets_; }
  void CountReplayed(int64_t rows) { replayed_ += rows; }
  int64_t resets() const { return resets_; }
  int64_t replayed() const { return replayed_; }
  // Ends the open transaction without committing (the area is reset): locks and pins released.
  void Abort();

  int64_t area() const { return area_; }
  const std::string& holder() const { return holder_; }
  Strategy strategy() const { return options_.strategy; }
  // Times a lock was not granted at once (2PL, snapshot's copy).
  int64_t lock_waits() const { return lock_waits_; }
  // Optimistic: after this many aborts in a row the area's next transaction locks its resources
  // at its begin (as 2PL) and so commits. A transaction that takes longer than the writers' period
  // (a replay of a wide window) would otherwise abort again and again and never commit.
  static constexpr int kAbortsBeforeLocking = 3;
  // Transactions that locked after kAbortsBeforeLocking aborts.
  int64_t locked_after_aborts() const { return locked_after_aborts_; }

 private:
  struct Held {
    std::shared_ptr<Controlled> resource;
    std::shared_ptr<Controlled> pinned;  // snapshot: the copy read
    bool locked = false;                 // 2PL: held to the commit
    uint64_t start = 0;                  // optimistic: its stamp when the transaction began
    bool read = false;
    uint64_t version = 0;  // the first read's
  };
  void Begin();
  // What a read of `name` (`source`) reads (its copy under snapshot), after taking what the
  // strategy takes at a first read.
  Controlled& Reading(const std::string& name, Controlled& source);
  void Lock(const std::string& name, Held& h);
  // Every resource of the area locked, held to Release (which a failure runs at once).
  void LockAll();
  void Release();
  void Record(const std::string& name, uint64_t version, Time instant);

  int64_t area_;
  std::string holder_;
  TxnOptions options_;
  std::map<std::string, Held> held_;  // by resource name
  bool open_ = false;
  int64_t begin_ns_ = 0;
  Time last_read_ = Time::MinusInfinity();
  std::vector<Read> reads_;  // of the open transaction
  int64_t lock_waits_ = 0;
  int aborts_in_a_row_ = 0;
  int64_t locked_after_aborts_ = 0;
  int64_t resets_ = 0;
  int64_t replayed_ = 0;
};

// The managers of an engine's redo areas and their commit log (Bindings::txn).
class TransactionManagers {
 public:
  void set_options(TxnOptions options) { options_ = options; }
  const TxnOptions& options() const { return options_; }
  // Area `area`'s manager, made at the first call (`holder`: its query).
  TransactionManager& Get(int64_t area, const std::string& holder);
  TransactionManager* Find(int64_t area);
  const TransactionManager* Find(int64_t area) const { return const_cast<TransactionManagers*>(this)->Find(area); }
  void Forget(int64_t area) { managers_.erase(area); }
  // Every open transaction aborted, its locks and pins released: an engine stopped by an error
  // (Engine::Run) commits nothing again, and its locks would keep the store's writers out.
  void AbortAll() {
    for (auto& [_, m] : managers_) m->Abort();
  }
  // The latest ReadLog::kLogLimit ends of transactions (older ones dropped and counted), and
  // every area's numbers of commits and aborts, all of them.
  void Log(CommitRecord record) {
    std::lock_guard l(mu_);
    auto& [commits, aborts] = outcomes_[record.area];
    ++(record.committed ? commits : aborts);
    log_.push_back(std::move(record));
    if (log_.size() > ReadLog::kLogLimit) {
      log_.pop_front();
      ++dropped_;
    }
  }
  std::vector<CommitRecord> log() const {
    std::lock_guard l(mu_);
    return {log_.begin(), log_.end()};
  }
  // The log as columns, built from the log itself under its lock: a copy of the records first
  // (log()) would cost more than the columns (a million records' strings and vectors).
  CommitLogColumns log_columns() const {
    std::lock_guard l(mu_);
    return CommitLogAsColumns(log_);
  }
  // area -> (commits, aborts)
  std::map<int64_t, std::pair<int64_t, int64_t>> outcomes() const {
    std::lock_guard l(mu_);
    return outcomes_;
  }
  uint64_t dropped() const {
    std::lock_guard l(mu_);
    return dropped_;
  }
  std::vector<int64_t> areas() const;

 private:
  TxnOptions options_;
  std::map<int64_t, std::unique_ptr<TransactionManager>> managers_;
  mutable std::mutex mu_;
  std::deque<CommitRecord> log_;
  std::map<int64_t, std::pair<int64_t, int64_t>> outcomes_;
  uint64_t dropped_ = 0;
};

}  // namespace cq::txn
