#include "executors/scheduled/scheduled_executor.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "base/errors.h"
#include "base/hash_multimap.h"
#include "base/json.h"
#include "batch/row_hash.h"
#include "operators/registry.h"

namespace cq {

namespace {

// How many leading rows of `b` (in time order) lie at or before tick `t`: those of instants
// committed already.
int64_t RowsUpTo(const Batch& b, int64_t t) {
  int64_t k = 0;
  while (k < b.num_rows() && b.StartAt(b.Physical(k)).tick <= t) ++k;
  return k;
}

}  // namespace

ScheduledExecutor::ScheduledExecutor(const sched::Options& options, HolderTable* holders, txn::Bindings* txn,
                                     const OperatorContext& base, bool redo_always)
    : QueuedExecutor("scheduled", true, holders), scheduler_(sched::MakeScheduler(options)), txn_(txn), base_(base),
      redo_always_(redo_always) {
  holds_ = managers() != nullptr;
}

const QueuedExecutor::Node* ScheduledExecutor::AreaProducer(const Node& n, size_t port) const {
  if (n.inputs.empty()) return nullptr;
  const auto mine = area_of_.find(n.id);
  const auto theirs = area_of_.find(n.inputs[port]);
  if (mine == area_of_.end() || theirs == area_of_.end() || mine->second.first != theirs->second.first) return nullptr;
  return &nodes_[index_.at(n.inputs[port])];
}

Time ScheduledExecutor::Delivered(const Node& n, size_t port) const {
  const Time seen = n.ports[port].seen;
  const Node* producer = holds_ ? AreaProducer(n, port) : nullptr;
  return producer ? std::max(seen, producer->op->OutputProgress(producer->progress)) : seen;
}

txn::TransactionManagers* ScheduledExecutor::managers() const {
  if (!txn_ || !txn_->managers || txn_->managers->options().strategy == txn::Strategy::kNone) return nullptr;
  return txn_->managers.get();
}

void ScheduledExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  std::map<int, std::pair<int64_t, bool>> areas;
  std::map<int64_t, Area> fresh;
  for (const auto& [spec, op] : ops) {
    if (!spec.params.is_object()) continue;
    const json::Value* area = spec.params.find("redo_area");
    if (area == nullptr || area->is_null()) continue;
    const json::Value* gate = spec.params.find("gatekeeper");
    areas[spec.id] = {area->integer(), gate != nullptr && !gate->is_null() && gate->boolean()};
    if (const json::Value* top = spec.params.find("top_window");
        holds_ && top != nullptr && !top->is_null() && top->boolean())
      top_windows_[spec.id] = area->integer();
    if (const json::Value* exit = spec.params.find("held_exit");
        holds_ && exit != nullptr && !exit->is_null() && exit->boolean())
      held_exits_.insert(spec.id);
    const json::Value* commit = spec.params.find("commit");
    if (!holds_ || commit == nullptr || commit->is_null() || !commit->boolean()) continue;
    Area& a = fresh[area->integer()];
    a.commit = spec.id;
    if (const json::Value* diff = spec.params.find("diff"); diff != nullptr && !diff->is_null())
      a.diff = diff->str() == "dstream" ? Area::Diff::kDStream : Area::Diff::kIStream;
    const json::Value* overlapping = spec.params.find("overlapping");
    a.overlapping = overlapping != nullptr && !overlapping->is_null() && overlapping->boolean();
    if (const json::Value* replay = spec.params.find("replay"); replay != nullptr && !replay->is_null()) {
      const auto integer = [&](const char* key) {
        const json::Value* v = replay->find(key);
        return v == nullptr || v->is_null() ? int64_t{0} : v->integer();
      };
      a.range = integer("range");
      a.slide = integer("slide");
      a.rows = integer("rows");
      a.lookback = integer("lookback");
      const json::Value* current = replay->find("current");
      a.current = current != nullptr && !current->is_null() && current->boolean();
    } else if (a.overlapping) {
      const json::Value* query = spec.params.find("txn_query");
      const json::Value* why = spec.params.find("replay_refused");
      throw CqError(ErrorKind::kSemantic,
                    "query '" + (query && !query->is_null() ? query->str() : std::to_string(spec.id)) +
                        "': its redo area (committed by #" + std::to_string(spec.id) + ") cannot be reset: " +
                        (why && !why->is_null() ? why->str()
                                                : "it holds an overlapping window of a shape a replay does not "
                                                  "rebuild yet (several top windows, or an unbounded or row "
                                                  "window below the top one)") +
                        "; or use txn='none'");
    }
  }
  std::map<int, OperatorSpec> specs;
  for (const auto& [spec, op] : ops)
    if (holds_ && areas.count(spec.id)) specs.emplace(spec.id, spec);
  QueuedExecutor::Add(std::move(ops));
  area_of_.merge(areas);
  txn_areas_.merge(fresh);
  for (auto& [id, spec] : specs) registered_[id] = base_.least ? *base_.least : Time::MinusInfinity();
  specs_.merge(specs);
  scheduler_->SetOperators(order_);
  SetAreas();
}

void ScheduledExecutor::Remove(const std::vector<int>& ids) {
  QueuedExecutor::Remove(ids);
  for (int id : ids) {
    area_of_.erase(id);
    specs_.erase(id);
    registered_.erase(id);
    top_windows_.erase(id);
  }
  for (auto it = txn_areas_.begin(); it != txn_areas_.end();) {
    if (std::find(ids.begin(), ids.end(), it->second.commit) == ids.end()) {
      ++it;
      continue;
    }
    for (Item& item : it->second.held)
      if (item.kind == Item::Kind::kEnds) holders_->Unpin(item.ends.ids(), item.ends.length);
    if (txn::TransactionManagers* m = managers()) m->Forget(it->first);
    it = txn_areas_.erase(it);
  }
  scheduler_->SetOperators(order_);
  SetAreas();
}

ScheduledExecutor::Area* ScheduledExecutor::AreaOf(int id) {
  const auto found = area_of_.find(id);
  if (found == area_of_.end()) return nullptr;
  const auto a = txn_areas_.find(found->second.first);
  return a == txn_areas_.end() ? nullptr : &a->second;
}

std::vector<int> ScheduledExecutor::Members(int64_t area) const {
  std::vector<int> out;
  for (int id : order_)
    if (const auto found = area_of_.find(id); found != area_of_.end() && found->second.first == area) out.push_back(id);
  return out;
}

bool ScheduledExecutor::Redone(const Area& a, int64_t area, int id, int port) const {
  const auto found = area_of_.find(id);
  if (found == area_of_.end() || found->second.first != area) return false;
  // (An area without gatekeepers commits a row at a time: whatever enters it is kept.)
  if (a.gated && !found->second.second) return false;
  return AreaProducer(nodes_[index_.at(id)], static_cast<size_t>(port)) == nullptr;
}

bool ScheduledExecutor::Hold(int node, const Item& item) {
  const int id = nodes_[node].id;
  if (const auto w = top_windows_.find(id); w != top_windows_.end()) {
    // The instants at which the area's top window changes: where its transactions end. (The
    // window may be the commit operator itself, whose output is then held below.)
    if (const auto found = txn_areas_.find(w->second); found != txn_areas_.end()) {
      Area& area = found->second;
      const auto note = [&](Time t) {
        if (t.tick > area.committed.tick) area.changed.insert(t.tick);
      };
      if (item.kind == Item::Kind::kEnds) {
        for (int64_t k = 0; k < item.ends.length; ++k) note(item.ends.ends.At(k));
      } else {
        const Batch& b = item.batch;
        // A diff commit compares whole results, so an instant where rows only leave the window is
        // one too (DSTREAM emits them); their known ends say when.
        const bool ends = area.diff != Area::Diff::kNone && b.kind == BatchKind::kLifetime &&
                          (b.constant_duration || !b.other.empty());
        for (int64_t k = 0; k < b.num_rows(); ++k) {
          const Time t = b.StartAt(b.Physical(k));
          note(t);
          if (ends && !b.EndPending(b.Physical(k)))
            if (const Time e = b.EndAt(b.Physical(k)); !e.IsInfinite()) note(e);
          if (area.rows > 0) area.ticks.push_back(t.tick);
        }
      }
    }
  }
  Area* a = AreaOf(id);
  if (a == nullptr || a->commit != id) return false;
  if (item.kind == Item::Kind::kEnds) {
    holders_->Pin(item.ends.ids(), item.ends.length);  // (its producer may release the ids now)
    a->held.push_back(item);
    return true;
  }
  // Held per instant (a batch may hold several), and an instant already committed, emitted again
  // by the operators rebuilt at a reset, is not held: it went out once.
  const Batch& b = item.batch;
  for (int64_t start = 0, n = b.num_rows(); start < n;) {
    const Time t = b.StartAt(b.Physical(start));
    int64_t end = start + 1;
    while (end < n && b.StartAt(b.Physical(end)).tick == t.tick) ++end;
    if (t.tick > a->committed.tick)
      a->held.push_back({Item::Kind::kData, t, start == 0 && end == n ? b : b.Slice(start, end - start), {}});
    start = end;
  }
  return true;
}

void ScheduledExecutor::Entered(int node, int port, size_t first) {
  const int id = nodes_[node].id;
  const auto found = area_of_.find(id);
  if (found == area_of_.end()) return;
  Area* a = AreaOf(id);
  if (a == nullptr || !Redone(*a, found->second.first, id, port)) return;
  Port& p = nodes_[node].ports[static_cast<size_t>(port)];
  std::deque<RedoRow>& rows = a->redo[{id, port}];
  size_t k = 0;
  for (auto it = p.queue.begin(); it != p.queue.end(); ++it, ++k)
    if (k >= first && it->kind == Item::Kind::kData) rows.push_back({p.taken + k, *it});
}

int64_t ScheduledExecutor::Duplicates(int node, int consumer, const Batch& batch) {
  const int id = nodes_[node].id;
  Area* a = AreaOf(id);
  if (a == nullptr || AreaOf(nodes_[consumer].id) == a) return 0;
  const int64_t n = batch.num_rows();
  if (held_exits_.count(id)) {
    // Held until the area commits their instant; rows of instants committed already went out
    // at that commit (a replay makes them again).
    const int64_t k = RowsUpTo(batch, a->committed.tick);
    if (k < n) a->exits[{node, consumer}].push_back(k == 0 ? batch : batch.Slice(k, n - k));
    return n;
  }
  // A member's output leaving the area (the commit operator's is held): a replay emits again, in
  // the same order, what the member sent before the reset; those rows are not sent twice.
  const std::pair<int, int> key{id, nodes_[consumer].id};
  int64_t had = 0;
  if (const auto r = a->resent.find(key); r != a->resent.end()) {
    for (; had < n; ++had) {
      const int64_t tick = batch.StartAt(batch.Physical(had)).tick;
      if (tick > r->second.tick || (tick == r->second.tick && r->second.rows == 0)) break;
      if (tick == r->second.tick) --r->second.rows;
    }
    if (had < n) a->resent.erase(r);  // the replay has caught up
  }
  Area::Sent& sent = a->sent[key];
  for (int64_t k = had; k < n; ++k) {
    const int64_t tick = batch.StartAt(batch.Physical(k)).tick;
    if (tick > sent.tick) sent = {tick, 0};
    ++sent.rows;
  }
  return had;
}

void ScheduledExecutor::RetainedReads::Add(Time instant, const std::string& resource, uint64_t version) {
  const auto it = count_.try_emplace({resource, version}, 0).first;
  ++it->second;
  by_instant_.emplace(instant, it);
}

void ScheduledExecutor::RetainedReads::DropBefore(Time t) {
  const auto end = by_instant_.lower_bound(t);
  for (auto it = by_instant_.begin(); it != end; ++it)
    if (--it->second->second == 0) count_.erase(it->second);
  by_instant_.erase(by_instant_.begin(), end);
}

void ScheduledExecutor::RetainedReads::Clear() {
  by_instant_.clear();
  count_.clear();
}

Time ScheduledExecutor::ReplayPoint(Area& a, Time tau) const {
  if (a.rows > 0) {
    // The window's current rows (it changes with every row): from the oldest of the last n at
    // or before tau. While it has held fewer than n, from the start: rows a replay makes at
    // instants its lookback does not cover would stay in a window that is not full.
    auto end = std::upper_bound(a.ticks.begin(), a.ticks.end(), tau.tick);
    const auto held = std::distance(a.ticks.begin(), end);
    if (held < a.rows) return Time::MinusInfinity();
    a.ticks.erase(a.ticks.begin(), end - a.rows);
    return Time{a.ticks.front() - a.lookback, 0};
  }
  // Without a window, what follows tau. Else the window's contents at the last slide boundary
  // at or before tau (`current`) or at the next one after it: rows in (b - range, b], less the
  // lookback of the windows below.
  if (a.range <= 0) return Time{tau.tick + 1, 0};
  int64_t b = tau.tick - (((tau.tick % a.slide) + a.slide) % a.slide);
  if (!a.current) b += a.slide;
  return Time{b - a.range + 1 - a.lookback, 0};
}

void ScheduledExecutor::Settle() {
  if (!holds_) return;
  for (auto& [area, a] : txn_areas_) {
    for (int round = 0; round < 1000000; ++round) {
      Advance(area);
      if (!Commit(area, a)) break;
    }
    ReleaseExits(a, nodes_[index_.at(a.commit)].progress == Time::Infinity() && a.held.empty());
    // Once the input has ended nothing more commits: the reads a replay made for the next
    // window (2PL's locks with them) are let go.
    txn::TransactionManager* m = managers()->Find(area);
    if (m && m->open() && a.held.empty() && nodes_[index_.at(a.commit)].progress == Time::Infinity()) m->Abort();
  }
}

void ScheduledExecutor::ReleaseExits(Area& a, bool all) {
  for (auto& [key, batches] : a.exits) {
    const auto [node, consumer] = key;
    for (const Consumer& c : nodes_[node].consumers) {
      if (c.node != consumer) continue;
      while (!batches.empty()) {
        const Batch b = batches.front();
        const int64_t n = b.num_rows();
        const int64_t k = all ? n : RowsUpTo(b, a.committed.tick);
        if (k == 0) break;
        Append(nodes_[consumer].ports[c.port], k == n ? b : b.Slice(0, k));
        Fed(consumer);
        if (k < n) {
          batches.front() = b.Slice(k, n - k);
          break;
        }
        batches.pop_front();
      }
    }
  }
}

void ScheduledExecutor::Advance(int64_t area) {
  // In execution order: a producer in the area has moved on (and emitted what that released)
  // before its consumers look at what it promises.
  for (int id : Members(area)) {
    Node& n = nodes_[index_.at(id)];
    Time f = Time::Infinity();
    for (size_t p = 0; p < n.ports.size(); ++p) {
      const Port& port = n.ports[p];
      Time t;
      if (!port.queue.empty()) {
        t = port.queue.front().time;
      } else if (const Node* producer = AreaProducer(n, p)) {
        t = producer->op->OutputProgress(producer->progress);
      } else {
        t = port.promised;  // (from outside the area: its waves)
      }
      if (!port.ends_floor.empty()) t = std::min(t, *port.ends_floor.begin());
      f = std::min(f, t);
    }
    bool clear = true;
    for (const Port& port : n.ports) clear = clear && port.Clear(f);
    if (clear && f > n.progress) {
      n.progress = f;
      n.op->AdvanceTo(f, *n.emitter);
    }
  }
}

bool ScheduledExecutor::Commit(int64_t area, Area& a) {
  const Node& c = nodes_[index_.at(a.commit)];
  // One instant at a time (the first held, when final): each commit may reset the area, whose
  // replay then makes the next instant again.
  size_t ready = 0;
  if (!a.held.empty() && a.held[0].time < c.progress)
    while (ready < a.held.size() && a.held[ready].time.tick == a.held[0].time.tick) ++ready;
  const bool windowed =
      std::any_of(top_windows_.begin(), top_windows_.end(), [&](const auto& w) { return w.second == area; });
  // A diff commit ends a transaction at each instant where the top window changed, with the rows
  // RSTREAM emitted for it or with none (R(t) empty: DSTREAM emits the whole committed R).
  const bool diff = a.diff != Area::Diff::kNone;
  // (Without a top window of its own every instant held is a change.)
  const int64_t changed = !windowed           ? (a.held.empty() ? INT64_MAX : a.held[0].time.tick)
                          : a.changed.empty() ? INT64_MAX
                                              : *a.changed.begin();
  if (diff && ready > 0 && a.held[0].time.tick < changed) {
    // RSTREAM's repeats between the changes: their difference with the committed R is empty.
    a.committed = std::max(a.committed, a.held[0].time);
    a.held.erase(a.held.begin(), a.held.begin() + static_cast<std::ptrdiff_t>(ready));
    return true;
  }
  const bool empty = diff && changed != INT64_MAX && Time{changed, 0} < c.op->OutputProgress(c.progress) &&
                     (a.held.empty() || a.held[0].time.tick > changed);
  if (empty) ready = 0;
  if (!diff && ready > 0 && windowed && !a.changed.count(a.held[0].time.tick)) {
    // Output at an instant where the area's top window did not change (RSTREAM repeating R(t)
    // between the window's slides) derives from transactions committed already: it goes out
    // without ending the open one, whose reads (the rows the window keeps until its next slide)
    // belong to the window's next change.
    const int node = index_.at(a.commit);
    a.committed = std::max(a.committed, a.held[0].time);  // (a replay does not send it again)
    for (size_t k = 0; k < ready; ++k) Release(node, std::move(a.held[k]));
    a.held.erase(a.held.begin(), a.held.begin() + static_cast<std::ptrdiff_t>(ready));
    return true;
  }
  txn::TransactionManager* m = managers()->Find(area);
  // A transaction whose commit operator emits nothing for its reads commits too (its locks go) once
  // no instant they can reach is left: past the window the rows read stay in. Reads made again for
  // instants committed before (a replay) wait for the next instant's commit, whose rows they
  // rebuild.
  bool reads_final = false;
  if (m && m->open() && m->last_read() > a.committed) {
    // (A row read stays in a [Rows n] window for as many rows as follow it: no tick bounds it.)
    const Time reach{m->last_read().tick + a.lookback + std::max<int64_t>(0, a.range - 1), m->last_read().step};
    reads_final = a.rows == 0 && reach < c.progress;
  }
  if (ready == 0 && !reads_final && !empty) return false;
  txn::CommitRecord record;
  record.area = area;
  record.query = m ? m->holder() : "";
  record.instant = ready ? a.held[ready - 1].time : empty ? Time{changed, 0} : m->last_read();
  std::vector<txn::TransactionManager::Read> reads;
  record.begin_ns = m && m->open() ? m->begin_ns() : txn::SystemNs();
  std::vector<std::pair<std::string, uint64_t>> kept;
  for (const auto& [version, _] : a.retained.versions()) kept.push_back(version);
  record.committed = m ? m->Commit(&record.versions, &reads, kept) : true;
  record.end_ns = txn::SystemNs();
  for (int id : Members(area)) {
    const int64_t now = nodes_[index_.at(id)].evaluations;
    record.evaluations.emplace_back(id, now - counted_[id]);
    counted_[id] = now;
  }
  std::vector<Batch> next;
  std::vector<Item> out =
      diff && (ready > 0 || empty)
          ? Differ(a, ready, record.instant, &next)
          : std::vector<Item>(std::make_move_iterator(a.held.begin()),
                              std::make_move_iterator(a.held.begin() + static_cast<std::ptrdiff_t>(ready)));
  a.held.erase(a.held.begin(), a.held.begin() + static_cast<std::ptrdiff_t>(ready));
  const int node = index_.at(a.commit);
  for (Item& it : out) {
    if (record.committed) Release(node, std::move(it));
    else if (it.kind == Item::Kind::kEnds) holders_->Unpin(it.ends.ids(), it.ends.length);
  }
  const bool committed = record.committed;
  const Time instant = record.instant;
  managers()->Log(std::move(record));
  if (!committed) {  // §4.2.1: the aborted instants are redone, from the oldest row the first needs
    // (also when rows kept from earlier transactions read a resource this one saw changed)
    Reset(area, a);
    return true;
  }
  if (diff && (ready > 0 || empty)) a.last = std::move(next);
  a.committed = std::max(a.committed, instant);
  ReleaseExits(a, false);  // (before a reset below drops what is not committed)
  a.changed.erase(a.changed.begin(), a.changed.upper_bound(a.committed.tick));
  a.replay_from = ReplayPoint(a, a.committed);
  for (const auto& r : reads) a.retained.Add(r.instant, r.resource, r.version);
  a.retained.DropBefore(a.replay_from);
  bool reset = false;
  if (a.overlapping && (ready > 0 || empty)) {
    reset = redo_always_;
    // on_change: a resource read for a row the window retains has a later version now.
    for (const auto& [version, _] : a.retained.versions())
      reset = reset || (m && m->Stamp(version.first) > version.second);
  }
  if (reset) {
    Reset(area, a);
  } else {
    for (auto& [where, rows] : a.redo)  // no retained state needs them any more
      while (!rows.empty() && rows.front().item.time < a.replay_from) rows.pop_front();
  }
  return true;
}

namespace {

// The rows of `a` (compact batches) with no equal row of `b` left to pair with: the bag
// difference a − b, as (batch, row) of `a` in their order. b's rows wait in the hash table the
// joins use (HashMultimap), each pairing at most once (Take).
std::vector<BatchRow> Minus(const std::vector<Batch>& a, const std::vector<Batch>& b, const RowEqual& equal) {
  HashMultimap<BatchRow> of_b;
  std::vector<uint64_t> hashes;
  for (size_t i = 0; i < b.size(); ++i) {
    hashes.resize(static_cast<size_t>(b[i].length));
    HashRows(b[i].columns, b[i].length, hashes.data());
    for (int64_t r = 0; r < b[i].length; ++r)
      of_b.Insert(hashes[r], {static_cast<uint32_t>(i), static_cast<uint32_t>(r)});
  }
  std::vector<BatchRow> out;
  BatchRow paired;
  for (size_t i = 0; i < a.size(); ++i) {
    hashes.resize(static_cast<size_t>(a[i].length));
    HashRows(a[i].columns, a[i].length, hashes.data());
    for (int64_t r = 0; r < a[i].length; ++r) {
      const auto same = [&](const BatchRow& y) { return equal(a[i].columns, r, b[y.batch].columns, y.row); };
      if (!of_b.Take(hashes[r], same, &paired)) out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(r)});
    }
  }
  return out;
}

}  // namespace

std::vector<QueuedExecutor::Item> ScheduledExecutor::Differ(Area& a, size_t ready, Time t,
                                                            std::vector<Batch>* next) const {
  const Operator& op = *nodes_[index_.at(a.commit)].op;
  if (!a.equal) a.equal = std::make_shared<const RowEqual>(op.output_schema());
  for (size_t k = 0; k < ready; ++k)
    if (a.held[k].kind == Item::Kind::kData && a.held[k].batch.num_rows() > 0)
      next->push_back(a.held[k].batch.Compact());
  const bool in = a.diff == Area::Diff::kIStream;
  const std::vector<Batch>& from = in ? *next : a.last;
  const std::vector<BatchRow> rows = Minus(from, in ? a.last : *next, *a.equal);
  if (rows.empty()) return {};
  Batch out;
  out.kind = BatchKind::kStream;
  out.schema = from[0].schema;
  out.columns = GatherRows([&](uint32_t i) -> const Batch& { return from[i]; }, rows, out.schema->size());
  out.length = static_cast<int64_t>(rows.size());
  out.sync = MakeTimeColumn(std::vector<Time>(rows.size(), t));
  std::vector<Item> items;
  items.push_back({Item::Kind::kData, t, std::move(out), {}});
  return items;
}

void ScheduledExecutor::Reset(int64_t area, Area& a) {
  txn::TransactionManager* m = managers()->Find(area);
  if (m) {
    m->Abort();  // (reads made for rows the replay makes again are made again)
    m->CountReset();
  }
  // What the commit operator holds for later instants is made again by the replay.
  for (Item& it : a.held)
    if (it.kind == Item::Kind::kEnds) holders_->Unpin(it.ends.ids(), it.ends.length);
  a.held.clear();
  a.ticks.clear();     // (the rebuilt window notes its rows again as the replay makes them)
  a.retained.Clear();  // (the replay reads the kept rows again, in the next transaction)
  a.exits.clear();     // (the replay makes them again, from the reads of the next transaction)
  a.resent = a.sent;
  for (int id : Members(area)) {
    const int index = index_.at(id);
    Node& n = nodes_[index];
    for (size_t port = 0; port < n.ports.size(); ++port) {
      Port& p = n.ports[port];
      for (const auto& [after, it] : p.ends) holders_->Unpin(it.ends.ids(), it.ends.length);
      p.ends.clear();
      p.ends_floor.clear();
      p.floor.clear();
      p.seen = Time::MinusInfinity();
      const auto redo = a.redo.find({id, static_cast<int>(port)});
      if (redo == a.redo.end()) {  // an inner queue: emptied; its producer is rebuilt too
        p.queue.assign({});
        p.promised = Time::MinusInfinity();
        p.wave = 0;
        continue;
      }
      // The redo queue from the replay point, then what was not taken yet (heartbeats too).
      std::deque<RedoRow>& rows = redo->second;
      while (!rows.empty() && rows.front().item.time < a.replay_from) rows.pop_front();
      std::vector<Item> items;
      for (const RedoRow& r : rows)
        if (r.seq < p.taken) items.push_back(r.item);
      const auto replayed = static_cast<uint64_t>(items.size());
      for (auto it = p.queue.begin(); it != p.queue.end(); ++it) items.push_back(*it);
      // The producer's promise, taken before the reset (the last heartbeat: at close, the end
      // of time), is made again after the replayed rows: else a member merging this input with
      // another by time waits for it for good (a reset at close lost the last slides' output).
      if (p.promised > Time::MinusInfinity() &&
          (items.empty() || items.back().kind != Item::Kind::kHeartbeat || items.back().time < p.promised) &&
          (items.empty() || items.back().time <= p.promised))
        items.push_back({Item::Kind::kHeartbeat, p.promised, {}, {}});
      p.taken -= replayed;
      uint64_t k = 0;
      for (RedoRow& r : rows)
        if (r.seq < p.taken + replayed) r.seq = p.taken + k++;
      p.queue.assign(std::move(items));
      k = 0;
      for (auto it = p.queue.begin(); it != p.queue.end(); ++it, ++k)
        if (it->kind == Item::Kind::kData) {
          while (!p.floor.empty() && p.floor.back().second >= it->time) p.floor.pop_back();
          p.floor.emplace_back(p.taken + k, it->time);
        }
      if (m) m->CountReplayed(static_cast<int64_t>(replayed));
      Fed(index);
    }
    n.wave = 0;
    n.progress = Time::MinusInfinity();
    // Rebuilt from its spec (the old state, and the holder ids it holds, go).
    std::vector<OperatorInput> inputs;
    for (int in : n.inputs) {
      const Operator* producer = nodes_[index_.at(in)].op.get();
      inputs.push_back({&producer->output_schema(), producer->output_kind()});
    }
    OperatorContext ctx = base_;
    ctx.registered_at = registered_.at(id);
    n.op.reset();
    n.op = OperatorRegistry::Global().Create(specs_.at(id), inputs, ctx);
  }
}

void ScheduledExecutor::SetAreas() {
  std::map<int64_t, sched::RedoArea> by_area;
  for (int id : order_) {  // (each area's members in execution order)
    const auto found = area_of_.find(id);
    if (found == area_of_.end()) continue;
    sched::RedoArea& a = by_area[found->second.first];
    a.members.push_back(id);
    if (found->second.second) a.gatekeepers.push_back(id);
  }
  std::vector<sched::RedoArea> areas;
  for (auto& [area, a] : by_area) {
    if (const auto t = txn_areas_.find(area); t != txn_areas_.end()) t->second.gated = !a.gatekeepers.empty();
    areas.push_back(std::move(a));
  }
  scheduler_->SetAreas(std::move(areas));
}

std::pair<int64_t, int64_t> ScheduledExecutor::NextRow(int id) {
  const Node& n = nodes_[index_.at(id)];
  bool stalled = false;
  const Pick pick = Consumable(n, &stalled);
  // (An end fix carries no row and is taken first: due now.)
  if (pick.port < 0 || pick.ends) return {INT64_MIN, INT64_MIN};
  const Time t = n.ports[pick.port].queue.front().time;
  return {t.tick, t.step};
}

std::pair<int64_t, int64_t> ScheduledExecutor::NextRowBound(int id) {
  // Only what is still to come from outside the operator's area: one that holds a row from
  // outside and waits for an input from inside waits for the area itself, which a gatekeeper
  // held back for it would stop for good.
  const Node& n = nodes_[index_.at(id)];
  Time t = Time::Infinity();
  for (size_t p = 0; p < n.ports.size(); ++p) {
    if (AreaProducer(n, p)) continue;
    const Port& port = n.ports[p];
    if (!port.queue.empty()) return {INT64_MAX, INT64_MAX};
    t = std::min(t, std::max(port.seen, port.promised));
  }
  return {t.tick, t.step};
}

bool ScheduledExecutor::Ready(int id) {
  const int node = index_.at(id);
  // The wave reaches an operator when it is asked: an operator added since the last call computes
  // its progress here too.
  Refresh(node);
  bool stalled = false;
  const bool ready = Consumable(nodes_[node], &stalled).port >= 0;
  if (stalled) ++stats_.stalls;
  return ready;
}

void ScheduledExecutor::Drain() {
  try {
    Settle();
    for (;;) {
      const int turn = scheduler_->NextTurn(*this);
      if (turn < 0) {
        // Nobody could evaluate, but asking passed waves on: their heartbeats may have made an
        // operator already asked ready. Done once a round feeds nobody.
        Settle();
        const bool fed = !fed_.empty();
        fed_.clear();
        ++turn_;
        if (fed) continue;
        return;
      }
      ++turns_;
      ++stats_.switches;
      for (int64_t done = 0;;) {
        const int who = scheduler_->BeforeEvaluation(turn, done, *this);
        if (who < 0) break;
        const int node = index_.at(who);
        bool stalled = false;
        const Pick pick = Consumable(nodes_[node], &stalled);
        if (pick.port < 0) break;
        if (Execute(node, pick)) ++done;
        Settle();
      }
      fed_.clear();
      ++turn_;
    }
  } catch (...) {
    fed_.clear();
    ++turn_;
    throw;
  }
}

}  // namespace cq
