#include "txn/resource_store.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "base/errors.h"
#include "batch/row_hash.h"

namespace cq::txn {
namespace {

[[noreturn]] void InputError(const std::string& message) { throw CqError(ErrorKind::kInput, message); }

std::string Describe(const Schema& s) {
  std::string out;
  for (const Field& f : s) out += (out.empty() ? "" : ", ") + f.name + " " + CqlTypeName(f.type);
  return "(" + out + ")";
}

// The columns a change of `kind` must have: every column, or the key's.
Schema Expected(const ResourceSpec& spec, ChangeKind kind) {
  if (kind != ChangeKind::kDelete) return spec.columns;
  Schema key;
  for (int k : spec.key) key.push_back(spec.columns[k]);
  return key;
}

std::string KeyOf(const Columns& cols, const std::vector<int>& which, int64_t row) {
  std::string key;
  for (int c : which) AppendKey(cols[c], row, &key);
  return key;
}

bool KeyHasNull(const Columns& cols, const std::vector<int>& which, int64_t row) {
  for (int c : which)
    if (!cols[c].IsValid(row)) return true;
  return false;
}

}  // namespace

std::shared_ptr<ResourceVersion> ApplyChanges(const ResourceSpec& spec, const ResourceVersion& base,
                                              const std::vector<const ResourceChange*>& changes, uint64_t version) {
  // Rows as (source, row): source 0 is the base, k > 0 the k-th change. Dead rows stay in place
  // (a later gather skips them), so positions never move.
  std::vector<const Columns*> sources{&base.columns};
  std::vector<uint32_t> which, rows;
  std::vector<bool> alive;
  std::unordered_map<std::string, uint32_t> where;  // key -> position, alive rows only
  for (int64_t r = 0; r < base.length; ++r) {
    where.emplace(KeyOf(base.columns, spec.key, r), static_cast<uint32_t>(which.size()));
    which.push_back(0);
    rows.push_back(static_cast<uint32_t>(r));
    alive.push_back(true);
  }
  std::vector<int> key_positions(spec.key.size());
  for (size_t k = 0; k < spec.key.size(); ++k) key_positions[k] = static_cast<int>(k);
  for (const ResourceChange* c : changes) {
    if (c->kind == ChangeKind::kReplace) {
      std::fill(alive.begin(), alive.end(), false);
      where.clear();
    }
    if (c->kind == ChangeKind::kDelete) {
      for (int64_t r = 0; r < c->length; ++r) {
        const auto it = where.find(KeyOf(c->columns, key_positions, r));
        if (it == where.end())
          InputError("resource '" + spec.name + "': delete of a key it does not hold (row " + std::to_string(r) +
                     " of the delete)");
        alive[it->second] = false;
        where.erase(it);
      }
      continue;
    }
    const auto source = static_cast<uint32_t>(sources.size());
    sources.push_back(&c->columns);
    std::unordered_set<std::string> seen;
    for (int64_t r = 0; r < c->length; ++r) {
      if (KeyHasNull(c->columns, spec.key, r))
        InputError("resource '" + spec.name + "': a NULL in the key (row " + std::to_string(r) + ")");
      std::string key = KeyOf(c->columns, spec.key, r);
      if (!seen.insert(key).second)
        InputError("resource '" + spec.name + "': two rows with one key in one change (row " + std::to_string(r) + ")");
      const auto pos = static_cast<uint32_t>(which.size());
      if (auto it = where.find(key); it != where.end()) {
        alive[it->second] = false;
        it->second = pos;
      } else {
        where.emplace(std::move(key), pos);
      }
      which.push_back(source);
      rows.push_back(static_cast<uint32_t>(r));
      alive.push_back(true);
    }
  }
  std::vector<uint32_t> keep_which, keep_rows;
  for (size_t p = 0; p < alive.size(); ++p)
    if (alive[p]) {
      keep_which.push_back(which[p]);
      keep_rows.push_back(rows[p]);
    }
  auto next = std::make_shared<ResourceVersion>();
  next->version = version;
  next->length = static_cast<int64_t>(keep_rows.size());
  for (size_t col = 0; col < spec.columns.size(); ++col) {
    std::vector<const Column*> srcs;
    for (const Columns* s : sources) srcs.push_back(&(*s)[col]);
    next->columns.push_back(GatherMulti(srcs, keep_which.data(), keep_rows.data(), next->length));
  }
  next->index.reserve(keep_rows.size());
  for (int64_t r = 0; r < next->length; ++r)
    next->index.emplace(KeyOf(next->columns, spec.key, r), static_cast<uint32_t>(r));
  return next;
}

ResourceStore::Entry& ResourceStore::At(const std::string& name) {
  const auto it = resources_.find(name);
  if (it == resources_.end()) InputError("no resource '" + name + "' in the store");
  return it->second;
}

const ResourceStore::Entry& ResourceStore::At(const std::string& name) const {
  return const_cast<ResourceStore*>(this)->At(name);
}

void ResourceStore::Define(ResourceSpec spec) {
  if (spec.key.empty()) InputError("resource '" + spec.name + "': a key of one column or more is needed");
  std::set<std::string> names;
  for (const Field& f : spec.columns)
    if (!names.insert(f.name).second) InputError("resource '" + spec.name + "': column '" + f.name + "' twice");
  std::set<int> keys;
  for (int k : spec.key) {
    if (k < 0 || k >= static_cast<int>(spec.columns.size())) InputError("resource '" + spec.name + "': bad key");
    if (!keys.insert(k).second)
      InputError("resource '" + spec.name + "': key column '" + spec.columns[k].name + "' twice");
  }
  std::lock_guard l(mu_);
  if (const auto it = resources_.find(spec.name); it != resources_.end()) {
    if (it->second.model) InputError("'" + spec.name + "' is a model of the store, not a resource");
    const ResourceSpec& old = it->second.spec;
    const bool same = old.key == spec.key && old.columns.size() == spec.columns.size() &&
                      std::equal(old.columns.begin(), old.columns.end(), spec.columns.begin(),
                                 [](const Field& a, const Field& b) { return a.name == b.name && a.type == b.type; });
    if (!same)
      InputError("resource '" + spec.name + "' is defined with columns " + Describe(old.columns) + "; found " +
                 Describe(spec.columns) + " (or another key)");
    return;
  }
  auto empty = std::make_shared<ResourceVersion>();
  for (const Field& f : spec.columns) empty->columns.push_back(Column::Nulls(f.type, 0));
  Entry e;
  e.spec = std::move(spec);
  e.current = std::move(empty);
  const std::string name = e.spec.name;
  resources_.emplace(name, std::move(e));
}

bool ResourceStore::Undefine(const std::string& name) {
  std::lock_guard l(mu_);
  const auto it = resources_.find(name);
  if (it == resources_.end()) return false;
  const Entry& e = it->second;
  if (e.model || e.current->version != 0 || e.reader_count != 0 || e.writing || e.writers_waiting != 0 || e.writes != 0)
    return false;
  resources_.erase(it);
  return true;
}

bool ResourceStore::Has(const std::string& name) const {
  std::lock_guard l(mu_);
  return resources_.count(name) != 0;
}

ResourceSpec ResourceStore::Spec(const std::string& name) const {
  std::lock_guard l(mu_);
  return At(name).spec;
}

std::vector<std::string> ResourceStore::Names() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (const auto& [name, _] : resources_) out.push_back(name);
  return out;
}

std::shared_ptr<const ResourceVersion> ResourceStore::Current(const std::string& name) const {
  std::lock_guard l(mu_);
  return At(name).current;
}

bool ResourceStore::LockShared(const std::string& name, const std::string& holder, std::chrono::nanoseconds timeout) {
  std::unique_lock l(mu_);
  Entry& e = At(name);
  const std::thread::id me = std::this_thread::get_id();
  const auto mine = locks_of_thread_.find(me);
  const bool holds = mine != locks_of_thread_.end() && mine->second > 0;
  const uint64_t seen = e.writes;
  const auto free = [&] { return !e.writing && (holds || e.writers_waiting == 0 || e.writes != seen); };
  if (!free()) {
    const auto wait = e.reader_waits.insert(seen);
    const bool got = cv_.wait_for(l, timeout, free);
    e.reader_waits.erase(wait);
    cv_.notify_all();  // (a writer may wait for this reader to go first)
    if (!got) return false;
  }
  e.readers.emplace(holder, me);
  ++locks_of_thread_[me];
  ++e.reader_count;
  return true;
}

void ResourceStore::UnlockShared(const std::string& name, const std::string& holder) {
  std::lock_guard l(mu_);
  Entry& e = At(name);
  const auto it = e.readers.find(holder);
  CQ_CHECK(it != e.readers.end(), "a shared lock released that was not held");
  if (const auto t = locks_of_thread_.find(it->second); t != locks_of_thread_.end() && --t->second == 0)
    locks_of_thread_.erase(t);
  e.readers.erase(it);
  --e.reader_count;
  cv_.notify_all();
}

std::vector<std::string> ResourceStore::Holders(const std::string& name) const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (const auto& [holder, _] : At(name).readers)
    if (out.empty() || out.back() != holder) out.push_back(holder);
  return out;
}

void ResourceStore::AcquireAll(std::unique_lock<std::mutex>& l, const std::vector<std::string>& names,
                               std::chrono::steady_clock::time_point deadline) {
  for (const auto& name : names) At(name);  // every one exists
  for (const auto& name : names) ++resources_.at(name).writers_waiting;
  const auto done_waiting = [&] {
    for (const auto& name : names) --resources_.at(name).writers_waiting;
    cv_.notify_all();  // (readers let a waiting writer go first)
  };
  const auto free = [&] {
    for (const auto& name : names) {
      const Entry& e = resources_.at(name);
      if (e.writing || e.reader_count) return false;
      // A reader that waited while another writer went by goes first (Fairness).
      if (!e.reader_waits.empty() && *e.reader_waits.begin() < e.writes) return false;
    }
    return true;
  };
  const bool got = cv_.wait_until(l, deadline, free);
  done_waiting();
  if (!got) {
    for (const auto& name : names) {
      const Entry& e = resources_.at(name);
      if (!e.writing && !e.reader_count) continue;
      std::string who;
      for (const auto& [holder, _] : e.readers)
        if (who.find("'" + holder + "'") == std::string::npos) who += (who.empty() ? "" : ", ") + ("'" + holder + "'");
      throw CqError(ErrorKind::kLockTimeout, "resource '" + name + "' stayed locked past the timeout by " +
                                                 (e.writing ? std::string("another writer") : "query " + who));
    }
  }
  for (const auto& name : names) resources_.at(name).writing = true;
}

void ResourceStore::DefineModel(const std::string& name) {
  std::lock_guard l(mu_);
  if (const auto it = resources_.find(name); it != resources_.end()) {
    if (!it->second.model) InputError("'" + name + "' is a resource of the store, not a model");
    return;
  }
  Entry e;
  e.spec.name = name;
  e.model = true;
  e.current = std::make_shared<ResourceVersion>();
  resources_.emplace(name, std::move(e));
}

void ResourceStore::BeginExclusive(const std::vector<std::string>& names, std::chrono::nanoseconds timeout) {
  std::unique_lock l(mu_);
  AcquireAll(l, names, std::chrono::steady_clock::now() + timeout);
}

uint64_t ResourceStore::EndExclusive(const std::vector<std::string>& names, const std::string& writer, bool changed) {
  std::lock_guard l(mu_);
  for (const auto& name : names) CQ_CHECK(At(name).writing, "an exclusive lock released that was not held");
  uint64_t v = version_;
  if (changed) {
    v = ++version_;
    UpdateRecord record{v, 0, writer, {}, 0, 0};
    record.at_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (const auto& name : names) {
      Entry& e = resources_.at(name);
      auto next = std::make_shared<ResourceVersion>(*e.current);
      next->version = v;
      e.current = std::move(next);
      record.resources.push_back(name);
    }
    log_.push_back(std::move(record));
  }
  for (const auto& name : names) {
    resources_.at(name).writing = false;
    ++resources_.at(name).writes;
  }
  cv_.notify_all();
  return v;
}

uint64_t ResourceStore::Commit(const std::vector<ResourceChange>& given, std::chrono::nanoseconds timeout,
                               const std::string& writer) {
  // A column of NULLs may come untyped (Arrow's null type): it takes its column's type.
  std::vector<ResourceChange> changes = given;
  std::map<std::string, std::vector<const ResourceChange*>> by;
  std::map<std::string, ResourceSpec> specs;
  {
    std::lock_guard l(mu_);
    for (ResourceChange& c : changes) {
      const Entry& entry = At(c.resource);
      if (entry.model) InputError("'" + c.resource + "' is a model: set_model changes it, not rows");
      const ResourceSpec& spec = entry.spec;
      const Schema want = Expected(spec, c.kind);
      bool fits = c.columns.size() == want.size();
      for (size_t k = 0; fits && k < want.size(); ++k)
        fits = c.columns[k].type == want[k].type || c.columns[k].type == TypeId::kNull;
      for (size_t k = 0; fits && k < want.size(); ++k) fits = c.columns[k].length == c.length;
      if (!fits)
        InputError("resource '" + c.resource + "': " +
                   (c.kind == ChangeKind::kDelete ? "a delete takes the key columns " : "rows must have columns ") +
                   Describe(want));
      for (size_t k = 0; k < want.size(); ++k)
        if (c.columns[k].type == TypeId::kNull) c.columns[k] = Column::Nulls(want[k].type, c.length);
      by[c.resource].push_back(&c);
      specs.emplace(c.resource, spec);
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, _] : by) names.push_back(name);
  std::map<std::string, std::shared_ptr<const ResourceVersion>> bases;
  {
    std::unique_lock l(mu_);
    AcquireAll(l, names, std::chrono::steady_clock::now() + timeout);
    for (const auto& name : names) bases[name] = resources_.at(name).current;
  }
  std::map<std::string, std::shared_ptr<ResourceVersion>> next;
  int64_t upserted = 0, deleted = 0;
  try {
    for (const auto& [name, cs] : by) {
      next[name] = ApplyChanges(specs.at(name), *bases.at(name), cs, 0);
      for (const ResourceChange* c : cs) (c->kind == ChangeKind::kDelete ? deleted : upserted) += c->length;
    }
  } catch (...) {
    std::lock_guard l(mu_);
    for (const auto& [name, _] : by) {
      resources_.at(name).writing = false;
      ++resources_.at(name).writes;
    }
    cv_.notify_all();
    throw;
  }
  std::lock_guard l(mu_);
  const uint64_t v = ++version_;
  UpdateRecord record{v, 0, writer, {}, upserted, deleted};
  record.at_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto& [name, version] : next) {
    version->version = v;
    Entry& e = resources_.at(name);
    e.current = std::move(version);
    e.writing = false;
    ++e.writes;
    record.resources.push_back(name);
  }
  log_.push_back(std::move(record));
  cv_.notify_all();
  return v;
}

uint64_t ResourceStore::version() const {
  std::lock_guard l(mu_);
  return version_;
}

std::vector<UpdateRecord> ResourceStore::UpdateLog() const {
  std::lock_guard l(mu_);
  return log_;
}

}  // namespace cq::txn
