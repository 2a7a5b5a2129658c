#include "txn/transaction_manager.h"

#include <algorithm>

#include "base/errors.h"

namespace cq::txn {

Strategy StrategyFromName(const std::string& name) {
  if (name == "none") return Strategy::kNone;
  if (name == "2pl") return Strategy::kTwoPhase;
  if (name == "snapshot") return Strategy::kSnapshot;
  if (name == "optimistic") return Strategy::kOptimistic;
  throw CqError(ErrorKind::kInput, "txn='" + name + "': expected one of 'none', '2pl', 'snapshot', 'optimistic'");
}

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kNone: return "none";
    case Strategy::kTwoPhase: return "2pl";
    case Strategy::kSnapshot: return "snapshot";
    case Strategy::kOptimistic: return "optimistic";
  }
  return "?";
}

TransactionManager::TransactionManager(int64_t area, std::string holder, TxnOptions options)
    : area_(area), holder_(std::move(holder)), options_(options) {}

TransactionManager::~TransactionManager() {
  try {
    Release();
  } catch (...) {  // (a destructor must not throw; the store is gone with the engine)
  }
}

void TransactionManager::Add(const std::string& name, const std::shared_ptr<Controlled>& source) {
  Held& h = held_[name];
  if (!h.resource) h.resource = source;
}

void TransactionManager::Lock(const std::string& name, Held& h) {
  // A lock granted at once is no wait; otherwise the wait is counted and bounded by the timeout.
  if (h.resource->LockShared(holder_, std::chrono::nanoseconds(0))) return;
  ++lock_waits_;
  if (!h.resource->LockShared(holder_, options_.lock_timeout))
    throw CqError(ErrorKind::kLockTimeout,
                  "query '" + holder_ + "' could not lock resource '" + name + "' for reading within " +
                      std::to_string(options_.lock_timeout.count() / 1000000) + " ms (a writer holds it)");
}

int64_t SystemNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void TransactionManager::LockAll() {
  try {
    for (auto& [name, h] : held_) {
      Lock(name, h);
      h.locked = true;
    }
  } catch (...) {
    Release();
    throw;
  }
}

void TransactionManager::Begin() {
  open_ = true;
  begin_ns_ = SystemNs();
  if (options_.strategy == Strategy::kSnapshot) {
    // Every resource of the area locked at once, copied (pinned), released: one consistent state.
    LockAll();
    try {
      for (auto& [_, h] : held_) h.pinned = h.resource->PinState(holder_, options_.lock_timeout);
    } catch (...) {
      Release();
      throw;
    }
    for (auto& [_, h] : held_) {
      h.resource->UnlockShared(holder_);
      h.locked = false;
    }
  } else if (options_.strategy == Strategy::kOptimistic) {
    if (aborts_in_a_row_ >= kAbortsBeforeLocking) {
      // Every resource locked before the stamps are taken: no writer commits until the end.
      ++locked_after_aborts_;
      LockAll();
    }
    for (auto& [_, h] : held_) h.start = h.resource->Stamp();
  }
}

Controlled& TransactionManager::Reading(const std::string& name, Controlled& source) {
  auto found = held_.find(name);
  CQ_CHECK(found != held_.end(), "a read of '" + name + "' outside its redo area");
  if (!open_) Begin();
  Held& h = found->second;
  if (options_.strategy == Strategy::kTwoPhase && !h.locked) {
    Lock(name, h);
    h.locked = true;
  }
  if (h.pinned) return *h.pinned;
  return source;
}

void TransactionManager::Record(const std::string& name, uint64_t version, Time instant) {
  last_read_ = std::max(last_read_, instant);
  reads_.push_back({instant, name, version});
  Held& h = held_.at(name);
  if (!h.read) h.version = version;
  h.read = true;
}

ResourceRead TransactionManager::Lookup(Resource& resource, const Columns& keys, int64_t n, Time instant) {
  const std::string& name = resource.spec().name;
  ResourceRead read = static_cast<Resource&>(Reading(name, resource)).Lookup(keys, n);
  Record(name, read.version, instant);
  return read;
}

ResourceRead TransactionManager::Scan(Resource& resource, Time instant) {
  const std::string& name = resource.spec().name;
  ResourceRead read = static_cast<Resource&>(Reading(name, resource)).Scan();
  Record(name, read.version, instant);
  return read;
}

ModelResult TransactionManager::Apply(const std::string& name, Model& model, const Columns& args,
                                      const Schema& arg_schema, int64_t n, Time instant) {
  ModelResult r = static_cast<Model&>(Reading(name, model)).Apply(name, args, arg_schema, n);
  Record(name, r.version, instant);
  return r;
}

void TransactionManager::Release() {
  for (auto& [_, h] : held_) {
    if (h.locked) h.resource->UnlockShared(holder_);
    h.locked = false;
    h.pinned.reset();
    h.read = false;
  }
  open_ = false;
  last_read_ = Time::MinusInfinity();
  reads_.clear();
}

uint64_t TransactionManager::Stamp(const std::string& name) { return held_.at(name).resource->Stamp(); }

bool TransactionManager::Commit(std::vector<std::pair<std::string, uint64_t>>* versions, std::vector<Read>* reads,
                                const std::vector<std::pair<std::string, uint64_t>>& kept) {
  if (reads) *reads = reads_;
  if (versions)
    for (const Read& r : reads_)
      if (std::find(versions->begin(), versions->end(), std::make_pair(r.resource, r.version)) == versions->end())
        versions->emplace_back(r.resource, r.version);
  bool valid = true;
  for (auto& [name, h] : held_) {
    if (!h.read) continue;
    // §4.2.1: a resource read that changed since the transaction began (its stamp is later) may
    // have given this transaction two states, or one not current at the commit.
    if (options_.strategy == Strategy::kOptimistic && h.resource->Stamp() > h.start) valid = false;
  }
  for (const auto& [name, version] : kept) {
    const auto found = held_.find(name);
    if (found == held_.end()) continue;
    const Held& h = found->second;
    const uint64_t seen = h.read ? h.version : h.pinned ? h.pinned->Stamp() : h.resource->Stamp();
    if (seen != version) valid = false;
  }
  Release();
  aborts_in_a_row_ = valid ? 0 : aborts_in_a_row_ + 1;
  return valid;
}

void TransactionManager::Abort() { Release(); }

TransactionManager& TransactionManagers::Get(int64_t area, const std::string& holder) {
  auto& m = managers_[area];
  if (!m) m = std::make_unique<TransactionManager>(area, holder, options_);
  return *m;
}

TransactionManager* TransactionManagers::Find(int64_t area) {
  const auto it = managers_.find(area);
  return it == managers_.end() ? nullptr : it->second.get();
}

std::vector<int64_t> TransactionManagers::areas() const {
  std::vector<int64_t> out;
  for (const auto& [a, _] : managers_) out.push_back(a);
  return out;
}

namespace {

// An int64 column of n values, to be filled.
Column Int64Column(int64_t n) {
  Column c;
  c.type = TypeId::kInt64;
  c.length = n;
  c.values = Buffer::Allocate(n * 8);
  return c;
}

// An int64 column of n values, value k being at(k).
template <typename At>
Column Int64Column(int64_t n, At at) {
  Column c = Int64Column(n);
  int64_t* v = c.values.as<int64_t>();
  for (int64_t k = 0; k < n; ++k) v[k] = at(k);
  return c;
}

// A utf8 column of n values, value k being at(k).
template <typename At>
Column Utf8Column(int64_t n, At at) {
  Column c;
  c.type = TypeId::kUtf8;
  c.length = n;
  FillStrings(c, n, at);
  return c;
}

}  // namespace

CommitLogColumns CommitLogAsColumns(const std::deque<CommitRecord>& log) {
  const auto n = static_cast<int64_t>(log.size());
  const auto at = [&](int64_t k) -> const CommitRecord& { return log[static_cast<size_t>(k)]; };
  CommitLogColumns out;
  out.records = {{"query", "area", "instant", "outcome", "begin", "end"}, {}, n};
  auto& r = out.records.columns;
  r.push_back(Utf8Column(n, [&](int64_t k) { return std::string_view(at(k).query); }));
  r.push_back(Int64Column(n, [&](int64_t k) { return at(k).area; }));
  r.push_back(Int64Column(n, [&](int64_t k) { return at(k).instant.tick; }));
  r.push_back(Utf8Column(n, [&](int64_t k) { return std::string_view(at(k).committed ? "commit" : "abort"); }));
  r.push_back(Int64Column(n, [&](int64_t k) { return at(k).begin_ns; }));
  r.push_back(Int64Column(n, [&](int64_t k) { return at(k).end_ns; }));

  // The offsets first: they size the entries' columns, and place each record's entries.
  Column eval_at = Int64Column(n + 1), version_at = Int64Column(n + 1);
  int64_t* ev = eval_at.values.as<int64_t>();
  int64_t* vv = version_at.values.as<int64_t>();
  ev[0] = vv[0] = 0;
  for (int64_t k = 0; k < n; ++k) {
    ev[k + 1] = ev[k] + static_cast<int64_t>(at(k).evaluations.size());
    vv[k + 1] = vv[k] + static_cast<int64_t>(at(k).versions.size());
  }
  out.offsets = {{"evaluations", "versions"}, {}, n + 1};

  Column op = Int64Column(ev[n]), evaluations = Int64Column(ev[n]);
  Column record = Int64Column(vv[n]), version = Int64Column(vv[n]);
  for (int64_t k = 0; k < n; ++k) {
    int64_t e = ev[k];
    for (const auto& [o, count] : at(k).evaluations) {
      op.values.as<int64_t>()[e] = o;
      evaluations.values.as<int64_t>()[e++] = count;
    }
    e = vv[k];
    for (const auto& [name, v] : at(k).versions) {
      record.values.as<int64_t>()[e] = k;
      version.values.as<int64_t>()[e++] = static_cast<int64_t>(v);
    }
  }
  // Version entry e is entry e - vv[k] of its record k.
  const int64_t* owner = record.values.as<int64_t>();
  Column resource = Utf8Column(vv[n], [&](int64_t e) {
    const int64_t k = owner[e];
    return std::string_view(at(k).versions[static_cast<size_t>(e - vv[k])].first);
  });
  const int64_t ne = ev[n], nv = vv[n];
  out.offsets.columns.push_back(std::move(eval_at));
  out.offsets.columns.push_back(std::move(version_at));
  out.evaluations = {{"operator", "evaluations"}, {}, ne};
  out.evaluations.columns.push_back(std::move(op));
  out.evaluations.columns.push_back(std::move(evaluations));
  out.versions = {{"record", "resource", "version"}, {}, nv};
  out.versions.columns.push_back(std::move(record));
  out.versions.columns.push_back(std::move(resource));
  out.versions.columns.push_back(std::move(version));
  return out;
}

}  // namespace cq::txn
