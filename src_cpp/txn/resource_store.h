#pragma once
// The in-process store of updatable resources (paper 002 §2.3.2, §4): keyed tables that other
// threads update in transactions while queries read them.
//
// - Versions (MVCC). Each committed state of a resource is immutable: a reader pins one by holding
//   its shared_ptr, and a commit publishes the next. A version carries its last-update stamp (the
//   store's commit number that made it), what the optimistic strategy validates against (§4.2.1).
// - Locks. One lock per resource, shared by readers (the 2PL strategy holds it from a query's
//   first read to its commit, §4.1.1; the snapshot strategy while it copies, §4.1.2), exclusive for
//   a writer's commit. A writer takes the locks of all the resources it changes at once or none
//   (it never holds some while waiting for others), so a reader holding one lock and asking for
//   another can never wait on a writer that waits on it. Readers' names are kept: a writer that
//   times out names the resource and the queries holding it.
// - Fairness. A reader on a thread that holds no lock of the store (an engine between
//   transactions) does not take a resource a writer waits for until a commit has changed it:
//   queries re-lock right after each commit, and without this a waiting writer would never find
//   the resource free. A thread already holding a lock goes on: it may hold what the writer waits
//   for (an engine runs every query's transactions on its thread, so this is per thread, not per
//   query). A reader waits for one writer at most: a writer does not take a resource while a
//   reader that has seen a writer go by waits for it, so a stream of writers does not starve
//   readers either.
// - Commits are atomic across resources: every change is checked (shape, types, keys, missing
//   keys of deletes) against the state it applies to before anything is published.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "batch/batch.h"

namespace cq::txn {

struct ResourceSpec {
  std::string name;
  Schema columns;
  std::vector<int> key;  // indexes into columns
};

// One committed state: its rows as compact columns and an index from the key's encoding
// (AppendKey) to the row.
struct ResourceVersion {
  uint64_t version = 0;  // the commit that made it (0: the state it was defined with)
  Columns columns;
  int64_t length = 0;
  std::unordered_map<std::string, uint32_t> index;
  // The row holding `key` (AppendKey's encoding of the key columns), or -1.
  int64_t Find(const std::string& key) const {
    const auto it = index.find(key);
    return it == index.end() ? int64_t{-1} : static_cast<int64_t>(it->second);
  }
};

// One change of a commit, applied in order: upsert rows (every column), delete keys (the key
// columns, in the key's order) or replace the whole content (every column; a load).
enum class ChangeKind : uint8_t { kUpsert, kDelete, kReplace };
struct ResourceChange {
  std::string resource;
  ChangeKind kind = ChangeKind::kUpsert;
  Columns columns;
  int64_t length = 0;
};

struct UpdateRecord {
  uint64_t version;  // the commit's number
  int64_t at_ns;     // when it was published (system clock)
  std::string writer;
  std::vector<std::string> resources;
  int64_t upserted = 0;
  int64_t deleted = 0;
};

class ResourceStore {
 public:
  // Defines `spec.name`, empty. Defining a name again is kInput unless the columns and key are
  // the same (then nothing changes). Rows come in by commits (a load is a kReplace change).
  void Define(ResourceSpec spec);
  // Defines `name` as a model (paper 002's models: no rows, its callable kept by the caller): a
  // lock and versions only. Defining it again changes nothing; a resource of that name is kInput.
  void DefineModel(const std::string& name);
  // Takes back a Define whose resource no commit has touched and no one holds (an engine's script
  // that defined it was refused); false, changing nothing, otherwise.
  bool Undefine(const std::string& name);
  bool Has(const std::string& name) const;
  ResourceSpec Spec(const std::string& name) const;
  std::vector<std::string> Names() const;

  // The resource's committed state now (pinned for as long as it is held).
  std::shared_ptr<const ResourceVersion> Current(const std::string& name) const;

  // A reader's shared lock on `name`, waiting up to `timeout` for a writer's commit to end (and,
  // when the calling thread holds no lock of the store, for a waiting writer's commit: Fairness
  // above); false when it timed out. `holder` names the reader (a query) for a writer's timeout message.
  bool LockShared(const std::string& name, const std::string& holder, std::chrono::nanoseconds timeout);
  void UnlockShared(const std::string& name, const std::string& holder);
  std::vector<std::string> Holders(const std::string& name) const;

  // Applies every change as one commit, after waiting up to `timeout` for no reader and no other
  // writer on any resource it touches. Returns the commit's number. Throws kInput (nothing
  // applied) for a change that does not fit, and kLockTimeout naming the resource and its holders.
  uint64_t Commit(const std::vector<ResourceChange>& changes, std::chrono::nanoseconds timeout,
                  const std::string& writer);

  // A writer's exclusive locks on `names` for a change made outside the store (a model's callable
  // swapped): taken all at once after waiting up to `timeout` (kLockTimeout as Commit), released
  // by EndExclusive, which publishes a new version of each (one commit) when `changed`.
  void BeginExclusive(const std::vector<std::string>& names, std::chrono::nanoseconds timeout);
  uint64_t EndExclusive(const std::vector<std::string>& names, const std::string& writer, bool changed);

  uint64_t version() const;
  std::vector<UpdateRecord> UpdateLog() const;

 private:
  struct Entry {
    ResourceSpec spec;
    std::shared_ptr<const ResourceVersion> current;
    // holder -> the thread that took the lock (one entry per lock taken)
    std::multimap<std::string, std::thread::id> readers;
    int reader_count = 0;
    bool writing = false;
    int writers_waiting = 0;
    uint64_t writes = 0;                   // writers' locks released so far (commits, exclusive ends)
    std::multiset<uint64_t> reader_waits;  // each waiting reader's `writes` when it began to wait
    bool model = false;
  };
  Entry& At(const std::string& name);
  const Entry& At(const std::string& name) const;
  // Waits (lock held in `l`) until no reader or writer holds any of `names`, then marks them
  // written; kLockTimeout naming the first still held at the deadline.
  void AcquireAll(std::unique_lock<std::mutex>& l, const std::vector<std::string>& names,
                  std::chrono::steady_clock::time_point deadline);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> resources_;
  std::map<std::thread::id, int> locks_of_thread_;  // shared locks held, by the thread that took them
  uint64_t version_ = 0;
  std::vector<UpdateRecord> log_;
};

// The next state of a resource: `base` with `changes` (all of this resource) applied in order.
// Throws kInput naming the resource for a duplicate or NULL key, or a delete of a missing key.
std::shared_ptr<ResourceVersion> ApplyChanges(const ResourceSpec& spec, const ResourceVersion& base,
                                              const std::vector<const ResourceChange*>& changes, uint64_t version);

}  // namespace cq::txn
