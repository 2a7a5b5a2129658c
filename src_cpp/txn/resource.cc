#include "txn/resource.h"

#include <unordered_map>

#include "base/errors.h"
#include "batch/row_hash.h"

namespace cq::txn {
namespace {

// A probe's key in the store's index encoding (AppendKey over the key's columns); false when the
// key holds a NULL, which equals nothing.
bool ProbeKey(const Columns& keys, int64_t row, std::string* out) {
  out->clear();
  for (const Column& c : keys) {
    if (!c.IsValid(row)) return false;
    AppendKey(c, row, out);
  }
  return true;
}

}  // namespace

StoreResource::StoreResource(ResourceStore* store, const std::string& name,
                             std::shared_ptr<const ResourceVersion> pinned)
    : Resource(store->Spec(name)), store_(store), pinned_(std::move(pinned)) {}

std::shared_ptr<const ResourceVersion> StoreResource::Version() const {
  return pinned_ ? pinned_ : store_->Current(spec_.name);
}

bool StoreResource::LockShared(const std::string& holder, std::chrono::nanoseconds timeout) {
  return store_->LockShared(spec_.name, holder, timeout);
}

void StoreResource::UnlockShared(const std::string& holder) { store_->UnlockShared(spec_.name, holder); }

std::shared_ptr<Resource> StoreResource::Pin(const std::string&, std::chrono::nanoseconds) {
  // Holding the version's pointer is the copy: versions are immutable, a commit publishes another.
  return std::make_shared<StoreResource>(store_, spec_.name, store_->Current(spec_.name));
}

uint64_t StoreResource::Stamp() { return Version()->version; }

ResourceRead StoreResource::Lookup(const Columns& keys, int64_t n) {
  // The version is pinned for the read: a commit meanwhile publishes another and leaves this one.
  const std::shared_ptr<const ResourceVersion> v = Version();
  ResourceRead read;
  read.version = v->version;
  read.columns = v->columns;
  read.length = v->length;
  read.match.assign(static_cast<size_t>(n), -1);
  std::string key;
  for (int64_t i = 0; i < n; ++i)
    if (ProbeKey(keys, i, &key) && (read.match[i] = v->Find(key)) >= 0) ++read.rows_read;
  return read;
}

ResourceRead StoreResource::Scan() {
  const std::shared_ptr<const ResourceVersion> v = Version();
  ResourceRead read;
  read.version = v->version;
  read.columns = v->columns;
  read.length = read.rows_read = v->length;
  return read;
}

KeyIndex::KeyIndex(const ResourceSpec& spec, const Columns& columns, int64_t length) : resource_(spec.name) {
  for (int k : spec.key) types_.push_back(columns[k].type);
  at_.reserve(static_cast<size_t>(length));
  std::string key;
  for (int64_t r = 0; r < length; ++r) {
    key.clear();
    for (int k : spec.key) AppendKey(columns[k], r, &key);
    if (!at_.emplace(key, r).second)
      throw CqError(ErrorKind::kInput, "resource '" + spec.name + "' returned two rows with one key " +
                                           "(its KEY must be unique in the table it reads)");
  }
}

int64_t KeyIndex::Match(const Columns& keys, int64_t n, std::vector<int64_t>& match) const {
  match.assign(static_cast<size_t>(n), -1);
  int64_t found = 0;
  std::string key;
  for (int64_t i = 0; i < n; ++i) {
    if (!ProbeKey(keys, i, &key)) continue;
    if (const auto it = at_.find(key); it != at_.end()) {
      match[i] = it->second;
      ++found;
    }
  }
  return found;
}

void MatchProbes(const ResourceSpec& spec, const Columns& keys, int64_t n, ResourceRead& read) {
  read.rows_read = KeyIndex(spec, read.columns, read.length).Match(keys, n, read.match);
}

}  // namespace cq::txn
