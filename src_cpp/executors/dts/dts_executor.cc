#include "executors/dts/dts_executor.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "base/errors.h"
#include "batch/snapshot.h"
#include "executors/dts/batch_adapter.h"
#include "plan/plan_util.h"

namespace cq {

void DtsExecutor::NodeEmitter::Forward(const Batch& batch) {
  for (const Consumer& c : self_->consumers) ex_->Deliver(c, batch);
}

void DtsExecutor::NodeEmitter::EmitEnds(EndBatch ends) {
  if (ends.length == 0) return;
  for (const Consumer& c : self_->consumers) ex_->DeliverEnds(c, ends);
}

void DtsExecutor::NodeRowEmitter::Emit(const Row& row) {
  if (lone_) {  // one consumer, no exit (most links of a loop): a tail call, no frame
    *lone_->stale = true;
    return lone_->op->Push(lone_->port, row, *lone_->emitter);
  }
  EmitAll(row);
}

void DtsExecutor::NodeRowEmitter::EmitAll(const Row& row) {
  for (Node* x : exits_) x->exit->Append(row);
  for (const Target& t : targets_) {
    *t.stale = true;
    t.op->Push(t.port, row, *t.emitter);
  }
}

void DtsExecutor::DelayedRows::Push(int, const Row& row, RowEmitter&) {
  ++*count_;
  const Item it{store_.Add(row.values), row.sync};
  if (!HasFrom(items_, head_) || !(row.sync < items_.back().sync)) {
    items_.push_back(it);
    return;
  }
  // (Rare: a row behind the last one.) After the rows of its time, as they came.
  auto at = std::upper_bound(items_.begin() + static_cast<std::ptrdiff_t>(head_), items_.end(), row.sync,
                             [](Time t, const Item& x) { return t < x.sync; });
  items_.insert(at, it);
}

template <typename F>
void DtsExecutor::DelayedRows::Drain(F&& f) {
  std::vector<Item> items(items_.begin() + static_cast<std::ptrdiff_t>(head_), items_.end());
  items_.clear();
  head_ = 0;
  for (const Item& it : items) Hand(it, f);
}

template <typename F>
void DtsExecutor::DelayedRows::Release(Time next, F&& f) {
  while (HasFrom(items_, head_) && items_[head_].sync < next) {
    Hand(items_[head_++], f);  // (by value: f may add rows, and items_ move)
  }
  TrimFront(items_, head_);
}

void DtsExecutor::DelayedRows::Snapshot(SnapshotWriter& w) const {
  store_.Snapshot(w, schema_);
  w.PodVec(items_.data() + head_, items_.size() - head_);
}

void DtsExecutor::DelayedRows::Restore(SnapshotReader& r) {
  store_.Restore(r, *schema_);
  r.PodVec(items_, "a delay's waiting rows", [](const Item& it) { return SnapshotReader::ValidTime(it.sync); });
  head_ = 0;
  // One item per row kept, in time order.
  bool ok = items_.size() == store_.size();
  std::vector<uint8_t> named;
  for (size_t k = 0; ok && k < items_.size(); ++k) {
    const uint32_t s = items_[k].slot;
    ok &= store_.live(s) && (k == 0 || !(items_[k].sync < items_[k - 1].sync));
    if (ok && s >= named.size()) named.resize(s + size_t{1}, 0);
    ok = ok && !named[s]++;
  }
  CQ_SNAPSHOT_CHECK(ok, "a delay's waiting rows are inconsistent");
}

void DtsExecutor::NodeRowEmitter::EmitHeld(const Row& row) {
  for (const Target& t : held_targets_) {
    *t.stale = true;
    t.op->Push(t.port, row, *t.emitter);
  }
}

void DtsExecutor::ReleaseDelayed(Node& d, Time next) {
  d.delayed->Release(next, [&](const Row& row) { d.row_emitter->EmitHeld(row); });
}

void DtsExecutor::NodeRowEmitter::EmitEnd(HolderId id, Time end) {
  for (Node* x : exits_) {
    if (x->exit->FixEnd(id, end)) continue;
    // Its row went out already (or never came this way): the end follows it at once. Were it to
    // wait, the producer could hand the id to a new row that reaches the exit first.
    EndBatch e;
    e.length = 1;
    e.holders = Buffer::Allocate(sizeof(HolderId));
    e.holders.as<HolderId>()[0] = id;
    e.ends = MakeTimeColumn({end});
    for (const Consumer& c : x->outer) ex_->DeliverEnds(c, e);
  }
  for (const Target& t : targets_) {
    *t.stale = true;
    t.op->PushEnd(t.port, id, end, *t.emitter);
  }
}

void DtsExecutor::ResolveRowTargets(Node& n, NodeRowEmitter& e) {
  if (n.exit) e.exits_.push_back(&n);
  for (const Consumer& c : n.inner) {
    if (c.bypass) ResolveRowTargets(*c.target, e);
    else
      e.targets_.push_back({c.target, c.target->rows.get(), c.port, c.target->row_emitter.get(), StaleFlag(*c.target)});
  }
}

void DtsExecutor::Deliver(const Consumer& c, const Batch& batch) {
  if (c.entry >= 0) {
    entries_[c.entry].runs.Add(batch);
    return;
  }
  if (c.bypass) {
    if (batch.num_rows() == 0) return;  // as the operator itself would: nothing to hand on
    for (const Consumer& next : c.target->consumers) Deliver(next, batch);
    return;
  }
  c.target->op->Push(c.port, batch, *c.target->emitter);
}

void DtsExecutor::DeliverEnds(const Consumer& c, const EndBatch& ends) {
  Node& n = *c.target;
  if (c.entry >= 0) {
    EndBatch rest = entries_[c.entry].runs.AddEnds(ends);
    if (rest.length == 0) return;
    if (n.rows) {
      *StaleFlag(n) = true;
      for (int64_t k = 0; k < rest.length; ++k) n.rows->PushEnd(c.port, rest.ids()[k], rest.ends.At(k), *n.row_emitter);
    } else {
      n.op->PushEnds(c.port, rest, *n.emitter);
    }
    return;
  }
  if (c.bypass) {
    for (const Consumer& next : n.consumers) DeliverEnds(next, ends);
    return;
  }
  n.op->PushEnds(c.port, ends, *n.emitter);
}

Operator* DtsExecutor::op(int id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second.op.get();
}

void DtsExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  // Validate everything before touching the graph.
  std::map<int, bool> fresh;
  for (auto& [spec, op] : ops) {
    CQ_CHECK(!nodes_.count(spec.id) && !fresh.count(spec.id), "duplicate operator id " + std::to_string(spec.id));
    fresh[spec.id] = true;
  }
  for (auto& [spec, op] : ops)
    for (int in : spec.inputs)
      CQ_CHECK(nodes_.count(in) || fresh.count(in),
               "operator " + std::to_string(spec.id) + " reads unknown operator " + std::to_string(in));

  std::vector<int> added;
  for (auto& [spec, op] : ops) {
    Node n;
    n.op = std::move(op);
    n.inputs = spec.inputs;
    n.emitter = std::make_unique<NodeEmitter>(this, spec.id);
    if (const json::Value* q = spec.params.find("query"); q && q->is_string()) n.query = q->str();
    if (const json::Value* o = spec.params.find("output"))
      if (const json::Value* d = o->find("duration")) n.duration = DurationFromJson(*d);
    Node& placed = nodes_.emplace(spec.id, std::move(n)).first->second;
    placed.emitter->self_ = &placed;
    added.push_back(spec.id);
  }
  for (int id : added) {
    const auto& ins = nodes_.at(id).inputs;
    for (size_t port = 0; port < ins.size(); ++port)
      nodes_.at(ins[port]).consumers.push_back({id, static_cast<int>(port), &nodes_.at(id)});
  }
  try {
    Schedule();
  } catch (...) {
    for (int id : added) {
      for (int in : nodes_.at(id).inputs) {
        auto& cs = nodes_.at(in).consumers;
        cs.erase(std::remove_if(cs.begin(), cs.end(), [&](const Consumer& c) { return c.node == id; }), cs.end());
      }
    }
    for (int id : added) nodes_.erase(id);
    throw;
  }
}

void DtsExecutor::Remove(const std::vector<int>& ids) {
  const std::set<int> gone(ids.begin(), ids.end());
  for (int id : ids) {
    CQ_CHECK(nodes_.count(id), "removing unknown operator " + std::to_string(id));
    for (const Consumer& c : nodes_.at(id).consumers)
      CQ_CHECK(gone.count(c.node), "operator " + std::to_string(id) + " is still read by " + std::to_string(c.node));
  }
  for (int id : ids)
    for (int in : nodes_.at(id).inputs) {
      if (gone.count(in)) continue;
      auto& cs = nodes_.at(in).consumers;
      cs.erase(std::remove_if(cs.begin(), cs.end(), [&](const Consumer& c) { return c.node == id; }), cs.end());
    }
  // Out of the graph, but alive until the schedule is rebuilt: the old regions, entries and row
  // targets still point at them (a map's extracted node stays where it is).
  std::vector<decltype(nodes_)::node_type> removed;
  for (int id : ids) removed.push_back(nodes_.extract(id));
  Schedule();  // (fewer operators: no new loop, nothing to refuse)
}

void DtsExecutor::Schedule() {
  // Strongly connected components (Tarjan). Flat arrays by operator id: this runs at every
  // registration over every operator (500 queries registered one by one, issue 31).
  const size_t ids = nodes_.empty() ? 0 : static_cast<size_t>(nodes_.rbegin()->first) + 1;
  std::vector<int> index(ids, -1), low(ids, 0), comp_of(ids, -1);
  std::vector<char> on_stack(ids, 0);
  std::vector<int> stack;
  std::vector<std::vector<int>> comps;
  int counter = 0;
  std::function<void(int)> visit = [&](int v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = 1;
    for (const Consumer& c : nodes_.at(v).consumers) {
      if (index[c.node] < 0) {
        visit(c.node);
        low[v] = std::min(low[v], low[c.node]);
      } else if (on_stack[c.node]) {
        low[v] = std::min(low[v], index[c.node]);
      }
    }
    if (low[v] == index[v]) {
      comps.emplace_back();
      int w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = 0;
        comps.back().push_back(w);
        comp_of[w] = static_cast<int>(comps.size()) - 1;
      } while (w != v);
      std::sort(comps.back().begin(), comps.back().end());
    }
  };
  for (const auto& [id, n] : nodes_)
    if (index[id] < 0) visit(id);

  auto is_loop = [&](const std::vector<int>& c) {
    if (c.size() > 1) return true;
    for (const Consumer& k : nodes_.at(c[0]).consumers)
      if (k.node == c[0]) return true;
    return false;
  };
  // Producers before consumers among `members`, ignoring edges out of delays when `cut` (the
  // loop is cut there); smallest id first among the ready ones, so the order follows registration.
  auto order_of = [&](const std::vector<int>& members, bool cut) {
    std::set<int> in(members.begin(), members.end());
    return ProducersFirst(members, [&](int id, const auto& visit) {
      if (cut && !nodes_.at(id).op->delay().IsZero()) return;
      for (const Consumer& c : nodes_.at(id).consumers)
        if (in.count(c.node)) visit(c.node);
    });
  };

  // The condensation in order: components whose producers are all placed, smallest id first.
  std::vector<int> comp_indegree(comps.size(), 0);
  for (const auto& [id, n] : nodes_)
    for (const Consumer& c : n.consumers)
      if (comp_of[c.node] != comp_of[id]) ++comp_indegree[comp_of[c.node]];
  auto first_id = [&](int k) { return comps[k].front(); };
  std::set<std::pair<int, int>> ready;  // (smallest id, component)
  for (size_t k = 0; k < comps.size(); ++k)
    if (comp_indegree[k] == 0) ready.insert({first_id(static_cast<int>(k)), static_cast<int>(k)});
  std::vector<int> order;
  std::vector<Step> schedule;
  std::vector<Region> regions;
  while (!ready.empty()) {
    const int k = ready.begin()->second;
    ready.erase(ready.begin());
    const std::vector<int>& c = comps[k];
    if (is_loop(c)) {
      std::vector<int> inner = order_of(c, true);
      if (inner.size() != c.size()) {
        std::string ops;
        for (int id : c) ops += (ops.empty() ? "#" : " #") + std::to_string(id);
        throw CqError(ErrorKind::kSemantic, "a loop without a delay (operators " + ops +
                                                "): every loop of a recursive query needs a delay such as <Now>");
      }
      order.insert(order.end(), inner.begin(), inner.end());
      if (hybrid_) {
        regions.emplace_back();
        regions.back().nodes = inner;
        schedule.push_back({-1, static_cast<int>(regions.size()) - 1});
      }
    } else {
      order.push_back(c[0]);
      if (hybrid_) schedule.push_back({c[0], -1});
    }
    for (int id : c)
      for (const Consumer& x : nodes_.at(id).consumers) {
        const int kx = comp_of[x.node];
        if (kx != k && --comp_indegree[kx] == 0) ready.insert({first_id(kx), kx});
      }
  }
  CQ_CHECK(order.size() == nodes_.size(), "the operator graph could not be ordered");
  if (hybrid_ && !regions.empty()) {
    // A query output whose input is a loop's takes the loop's rows in the loop's region (it emits
    // nothing, so the region gains no exit; what it keeps is its own).
    std::map<int, size_t> in_region;
    for (size_t r = 0; r < regions.size(); ++r)
      for (int id : regions[r].nodes) in_region[id] = r;
    std::vector<Step> kept;
    for (const Step& s : schedule) {
      if (s.node >= 0) {
        const Node& n = nodes_.at(s.node);
        if (n.op->is_output() && n.inputs.size() == 1 && in_region.count(n.inputs[0])) {
          regions[in_region[n.inputs[0]]].nodes.push_back(s.node);
          continue;
        }
      }
      kept.push_back(s);
    }
    schedule = std::move(kept);
  }
  if (!hybrid_) {
    // Everything below the sources runs instant by instant, as one region — but for operators
    // that look ahead at close (Operator::looks_ahead_at_close): one on no loop runs on whole
    // batches between the region before it and the region after it, and a loop holding one is a
    // region of its own, so that what comes into it is as final as in the hybrid.
    std::vector<Step> below;
    regions.emplace_back();
    auto cut = [&] {
      if (regions.back().nodes.empty()) return;
      below.push_back({-1, static_cast<int>(regions.size()) - 1});
      regions.emplace_back();
    };
    auto looks_ahead = [&](int k) {
      for (int id : comps[k])
        if (nodes_.at(id).op->looks_ahead_at_close()) return true;
      return false;
    };
    int last_comp = -1;
    for (int id : order) {
      if (nodes_.at(id).inputs.empty()) {
        schedule.push_back({id, -1});
        continue;
      }
      const int k = comp_of[id];
      const bool entering = k != last_comp;
      if (entering && last_comp >= 0 && is_loop(comps[last_comp]) && looks_ahead(last_comp)) cut();
      last_comp = k;
      if (!entering) {
        regions.back().nodes.push_back(id);
        continue;
      }
      if (looks_ahead(k)) {
        cut();
        if (!is_loop(comps[k])) {
          below.push_back({id, -1});
          continue;
        }
      }
      regions.back().nodes.push_back(id);
    }
    cut();
    regions.pop_back();  // (empty: cut() leaves one to fill)
    schedule.insert(schedule.end(), below.begin(), below.end());
  }

  // The rows the delays hold go to the consumers they had when they were emitted, at once (each
  // keeps a row of a later instant until then): a query registered now takes what comes from now
  // on, as it does outside loops and in every region alike.
  for (auto& [id, n] : nodes_)
    if (n.delayed) n.delayed->Drain([&](const Row& row) { n.row_emitter->EmitHeld(row); });

  // Nothing below can fail: commit. Regions keep their place in time and their queued rows.
  std::map<int, int> region_of;
  for (size_t r = 0; r < regions.size(); ++r)
    for (int id : regions[r].nodes) region_of[id] = static_cast<int>(r);
  for (Region& r : regions) {
    for (const Region& old : regions_)
      if (std::any_of(old.nodes.begin(), old.nodes.end(),
                      [&](int id) { return std::find(r.nodes.begin(), r.nodes.end(), id) != r.nodes.end(); })) {
        r.progress = old.progress;
        r.last_tick = old.last_tick;
        r.fed_tick = old.fed_tick;
      }
    // A region is no further on than its least member: one that joined it now (a query registered
    // later, an operator that ran outside loops) may still take rows below the old region's place,
    // from an input that other members never read (each member keeps its own progress).
    for (int id : r.nodes) r.progress = std::min(r.progress, nodes_.at(id).progress);
  }
  std::vector<Entry> entries;
  for (size_t r = 0; r < regions.size(); ++r) {
    for (int id : regions[r].nodes) {
      const auto& ins = nodes_.at(id).inputs;
      for (size_t port = 0; port < ins.size(); ++port) {
        auto it = region_of.find(ins[port]);
        if (it != region_of.end() && it->second == static_cast<int>(r)) continue;
        Entry e;
        e.node = id;
        e.port = static_cast<int>(port);
        for (Entry& old : entries_)
          if (old.node == e.node && old.port == e.port) e = std::move(old);
        e.target = &nodes_.at(id);
        regions[r].entries.push_back(entries.size());
        entries.push_back(std::move(e));
        auto& p = regions[r].producers;
        if (std::find(p.begin(), p.end(), ins[port]) == p.end()) p.push_back(ins[port]);
      }
    }
  }
  for (auto& [id, n] : nodes_) {
    auto it = region_of.find(id);
    n.region = it == region_of.end() ? -1 : it->second;
    n.on_loop = is_loop(comps[comp_of[id]]);
  }
  for (Region& r : regions)
    for (int id : r.nodes) r.members.push_back(&nodes_.at(id));
  for (auto& [id, n] : nodes_)
    for (Consumer& c : n.consumers) {
      c.entry = -1;
      if (c.target->region >= 0 && c.target->region != n.region)
        for (size_t e = 0; e < entries.size(); ++e)
          if (entries[e].node == c.node && entries[e].port == c.port) c.entry = static_cast<int>(e);
      c.bypass = c.entry < 0 && c.target->op->passes_through();
    }
  for (Step& s : schedule) {
    if (s.region >= 0) continue;
    s.target = &nodes_.at(s.node);
    s.producers.clear();
    for (int in : s.target->inputs) s.producers.push_back(&nodes_.at(in));
  }
  order_ = std::move(order);
  schedule_ = std::move(schedule);
  regions_ = std::move(regions);
  entries_ = std::move(entries);
  MakeRowForms();
}

void DtsExecutor::MakeRowForms() {
  for (Region& r : regions_) {
    for (size_t k = 0; k < r.members.size(); ++k) {
      Node* m = r.members[k];
      Node& n = *m;
      if (!n.rows) {
        // An operator that ran in batch form outside loops joins one in its row form all the
        // same: both forms drive its one state, and the row form takes over what the batch form
        // holds (rows/ROWS.md). Only an operator with no row form runs through a BatchAdapter.
        n.rows = n.op->ToRows();
        if (!n.rows) {
          std::vector<BatchAdapter::Input> ins;
          for (int in : n.inputs) {
            const Node& p = nodes_.at(in);
            ins.push_back({std::make_shared<const Schema>(p.op->output_schema()), p.op->output_kind(), p.duration});
          }
          n.rows = std::make_unique<BatchAdapter>(n.op.get(), std::move(ins));
          n.adapted = true;
        }
        n.row_emitter = std::make_unique<NodeRowEmitter>(this, m);
        n.when_due = n.rows->advances_when_due();
        n.fires = n.rows->fires();
        n.wakes_itself = n.when_due && n.rows->wakes_itself();
        n.row_emitter->set_wake(&n.stale);
      }
      n.row_emitter->set_now(&r.now);
      n.stale = true;
      if (n.rows->stateful()) (n.when_due && !n.fires ? r.closers : r.stateful).push_back(m);
      if (n.rows->gathers()) r.gathering.push_back(m);
    }
  }
  // Each member's consumers, split by where they run; an exit for those outside.
  for (auto& [id, n] : nodes_) {
    n.inner.clear();
    n.outer.clear();
    if (n.region < 0) {
      n.exit.reset();
      continue;
    }
    for (const Consumer& c : n.consumers) (c.target->region == n.region ? n.inner : n.outer).push_back(c);
    if (n.outer.empty()) {
      n.exit.reset();
    } else if (!n.exit) {
      n.exit = std::make_unique<RowBatchBuilder>(std::make_shared<const Schema>(n.op->output_schema()),
                                                 n.op->output_kind(), n.duration);
    }
    if (n.exit) regions_[n.region].exits.push_back(&n);
  }
  for (auto& [id, n] : nodes_) {
    if (!n.row_emitter) continue;
    NodeRowEmitter& e = *n.row_emitter;
    e.targets_.clear();
    e.exits_.clear();
    e.held_targets_.clear();
    ResolveRowTargets(n, e);
    if (!n.op->delay().IsZero() && n.region >= 0) {
      // A delay's rows wait for their instant, but for query outputs: a stream's output takes a
      // future row as final at once, and holding it would only cost a copy.
      auto out = std::stable_partition(e.targets_.begin(), e.targets_.end(),
                                       [](const NodeRowEmitter::Target& t) { return t.node->op->is_output(); });
      e.held_targets_.assign(out, e.targets_.end());
      e.targets_.erase(out, e.targets_.end());
      if (!e.held_targets_.empty()) {
        if (!n.delayed) n.delayed = std::make_unique<DelayedRows>(n.op->output_schema());
        e.targets_.push_back({&n, n.delayed.get(), 0, &e, &n.stale});
      }
    }
    if (n.delayed && n.region >= 0) {
      regions_[n.region].delays.push_back(&n);  // (what it holds goes out, if to no one)
      if (n.on_loop) regions_[n.region].loop_delays.push_back(&n);
    }
    e.lone_ = e.exits_.empty() && e.targets_.size() == 1 ? &e.targets_[0] : nullptr;
  }
  for (auto& [id, n] : nodes_)
    if (n.delayed) n.delayed->count_into(n.region >= 0 && n.on_loop ? &regions_[n.region].taken : nullptr);
}

std::string DtsExecutor::form(int id) const {
  const Node& n = nodes_.at(id);
  return !n.rows ? "batch" : n.adapted ? "adapted" : "rows";
}

void DtsExecutor::FlushExits(Region& r) {
  for (Node* m : r.gathering) m->rows->Flush();
  for (Node* m : r.exits) {
    if (m->exit->empty()) continue;
    const Batch b = m->exit->Finish();
    for (const Consumer& c : m->outer) Deliver(c, b);
  }
}

void DtsExecutor::FlushAllExits() {
  for (Region& r : regions_) FlushExits(r);
}

Time DtsExecutor::Progress(const Node& n) const {
  return n.region >= 0 ? std::max(n.progress, regions_[static_cast<size_t>(n.region)].progress) : n.progress;
}

void DtsExecutor::SnapshotOperator(int id, SnapshotWriter& w) const {
  const Node& n = nodes_.at(id);
  w.set_progress(Progress(n));
  n.op->Snapshot(w);
  if (n.rows) n.rows->Snapshot(w);
}

void DtsExecutor::RestoreOperator(int id, SnapshotReader& r) {
  Node& n = nodes_.at(id);
  // A loop's members see its instants before their own progress catches up (AdvanceRegion).
  r.set_progress(Progress(n));
  n.op->Restore(r);
  if (n.rows) n.rows->Restore(r);
  // A loop runs its instants from its progress on: a member due before it would fire in the past.
  if (n.region >= 0 && n.rows && n.fires) {
    const Region& g = regions_[static_cast<size_t>(n.region)];
    const Time next = n.rows->next_firing(g.last_tick);
    if (next < g.progress)
      SnapshotReader::Corrupt("its next firing " + SnapshotReader::Show(next) + " is before its loop's progress " +
                              SnapshotReader::Show(g.progress));
  }
}

void DtsExecutor::Push(int source, const Batch& batch) {
  Node& n = nodes_.at(source);
  n.op->Push(0, batch, *n.emitter);
  // Ends that reached a region's members from outside may have reached its exits too.
  FlushAllExits();
}

void DtsExecutor::Replay(int producer, int consumer, const Batch& batch) {
  const Node& from = nodes_.at(producer);
  for (const Consumer& c : from.consumers) {
    if (c.node != consumer) continue;
    if (from.region >= 0 && c.target->region == from.region) {
      // In the producer's region: row by row, as a delay's held rows go to the consumers it has
      // when the graph changes (Schedule) — each keeps a row of a later instant until then.
      Node& n = *c.target;
      *StaleFlag(n) = true;
      ForEachRow(batch, [&](const Row& row) { n.rows->Push(c.port, row, *n.row_emitter); });
    } else {
      Deliver(c, batch);
    }
  }
  FlushAllExits();
}

Time DtsExecutor::InputProgress(int producer) const {
  // An input's progress is its producer's, moved forward by the producer's delay (a delay's
  // output holds nothing below its input's progress plus the delay), or held back by an RSTREAM
  // that cannot decide a tick yet (Operator::OutputProgress).
  return InputProgress(nodes_.at(producer));
}

void DtsExecutor::AdvanceTo(const std::map<int, Time>& source_progress) {
  for (const Step& s : schedule_) {
    if (s.region >= 0) {
      RunRegion(regions_[s.region]);
      continue;
    }
    Node& n = *s.target;
    Time p;
    if (s.producers.empty()) {
      auto it = source_progress.find(s.node);
      p = it == source_progress.end() ? n.progress : it->second;
    } else {
      p = Time::Infinity();
      for (const Node* in : s.producers) p = std::min(p, InputProgress(*in));
    }
    if (p > n.progress) {
      n.progress = p;
      n.op->AdvanceTo(p, *n.emitter);
    }
  }
  FlushAllExits();
}

void DtsExecutor::Release(Entry& e, Time next) {
  Node& n = *e.target;
  *StaleFlag(n) = true;
  e.runs.ReleaseEach(next, [&](const Batch& b, int64_t k) {
    WithRow(b, k, [&](const Row& row) { n.rows->Push(e.port, row, *n.row_emitter); });
  });
}

Time DtsExecutor::AdvanceRegion(Region& r, Time p) {
  r.progress = p;
  if (p.IsInfinite()) {
    // Close: every member that keeps something, in the region's order (producers first).
    for (Node* m : r.members)
      if (p > m->progress && m->rows->stateful()) {
        m->progress = p;
        m->stale = true;
        m->rows->AdvanceTo(p, *m->row_emitter);
      }
    return Time::Infinity();
  }
  // Members that keep nothing have nothing to release: only the others are told, and of those
  // that only release what is due, only the ones given something or with something due. What a
  // member emits reaches only members after it in the region's order within an instant (a loop
  // goes round through a delay, which holds its rows for a later instant), so once a member has
  // had its turn its next firing is final: it is asked here, not in another pass over the members.
  // A member passed over keeps its progress until the region's end sets it: nothing reads it
  // meanwhile, and a loop of many small queries passes over most of its members at each instant.
  Time due = Time::Infinity();
  for (Node* m : r.stateful) {
    Node& n = *m;
    if (n.when_due && !n.stale && !(n.next < p)) {  // (p is finite here)
      due = std::min(due, n.next);
      continue;
    }
    if (p > n.progress) {
      n.progress = p;
      n.stale = true;
      n.rows->AdvanceTo(p, *n.row_emitter);
    }
    due = std::min(due, NextFiring(r, n));
  }
  return due;
}

std::string DtsExecutor::LoopName(const Region& r) const {
  std::vector<std::string> queries;
  std::string ops;
  for (int id : r.nodes) {
    const std::string& q = nodes_.at(id).query;
    if (!q.empty() && std::find(queries.begin(), queries.end(), q) == queries.end()) queries.push_back(q);
    ops += (ops.empty() ? "#" : " #") + std::to_string(id);
  }
  std::string s;
  for (const std::string& q : queries) s += (s.empty() ? "" : ", ") + q;
  return (s.empty() ? "" : "queries " + s + "; ") + "operators " + ops;
}

void DtsExecutor::NextTick(Region& r, int64_t tick) {
  if (r.past_from != r.fed_tick) {
    r.past_from = r.fed_tick;
    r.past_ticks = 0;
    r.past_rows = 0;
  }
  const uint64_t rows = r.taken - r.tick_taken;
  if (rows > 0 && r.tick > r.fed_tick) {
    ++r.past_ticks;
    r.past_rows += rows;
    if (r.past_ticks > bounds_.ticks || r.past_rows > static_cast<uint64_t>(bounds_.rows)) RunawayLoop(r, r.tick);
  }
  r.tick = tick;
  r.tick_taken = r.taken;
}

void DtsExecutor::RunawayLoop(const Region& r, int64_t tick) const {
  const std::string limit = "more than " + std::to_string(bounds_.rows) + " rows went round ";
  const std::string past_inputs = "past its inputs' progress (tick " + std::to_string(r.fed_tick) + ")";
  const std::string kept = "; fetch() still returns the results that were final before this call)";
  if (r.taken - r.tick_taken > static_cast<uint64_t>(bounds_.rows))
    throw CqError(ErrorKind::kRunaway, "runaway loop: " + limit + "at tick " + std::to_string(tick) +
                                           " in the loop of " + LoopName(r) +
                                           " (its rows multiply as they go round; Engine(max_loop_rows=...) raises "
                                           "the limit" +
                                           kept);
  if (r.past_rows > static_cast<uint64_t>(bounds_.rows))
    throw CqError(ErrorKind::kRunaway, "runaway loop: " + limit + past_inputs + ", up to tick " + std::to_string(tick) +
                                           ", in the loop of " + LoopName(r) +
                                           " (a loop must settle once its inputs stop; Engine(max_loop_rows=...) "
                                           "raises the limit" +
                                           kept);
  throw CqError(ErrorKind::kRunaway, "runaway loop: rows at more than " + std::to_string(bounds_.ticks) + " ticks " +
                                         past_inputs + ", up to tick " + std::to_string(tick) + ", in the loop of " +
                                         LoopName(r) +
                                         " (a loop must settle once its inputs stop; Engine(max_loop_ticks=...) "
                                         "raises the limit" +
                                         kept);
}

void DtsExecutor::RunRegion(Region& r) {
  Time bound = Time::Infinity();
  for (int p : r.producers) bound = std::min(bound, InputProgress(p));
  r.fed_tick = std::max(r.fed_tick, r.last_tick);  // (the inputs' progress before this call)
  if (!bound.IsInfinite() && bound != Time::MinusInfinity()) r.last_tick = std::max(r.last_tick, bound.tick);
  if (bound.IsInfinite() && !r.closing) {
    r.closing = true;
    for (Node* n : r.stateful) n->rows->Closing(r.last_tick);
    for (Node* n : r.closers) n->rows->Closing(r.last_tick);
  }
  Time due = Time::Infinity();  // the members' next firing
  for (Node* n : r.stateful) {
    n->stale = true;  // last_tick may have moved
    due = std::min(due, NextFiring(r, *n));
  }
  for (;;) {
    // The next instant: rows waiting at the entries, or an operator firing by itself.
    Time entered = Time::Infinity();
    for (size_t e : r.entries) entered = std::min(entered, entries_[e].runs.head());
    Time t = std::min(due, entered);
    for (Node* d : r.delays) t = std::min(t, d->delayed->head());
    if (!(t < bound)) break;
    CQ_CHECK(!(t < r.progress),
             "an operator of a loop fires at " + t.ToString() + ", below the loop's progress " + r.progress.ToString());
    if (t.step > bounds_.steps)
      throw CqError(ErrorKind::kRunaway,
                    "runaway loop: more than " + std::to_string(bounds_.steps) + " ε steps at tick " +
                        std::to_string(t.tick) + " in the loop of " + LoopName(r) +
                        " (a loop must settle within a tick; Engine(max_loop_steps=...) raises the limit)");
    if (t.tick != r.tick && !r.loop_delays.empty()) NextTick(r, t.tick);
    const Time next{t.tick, t.step + 1};
    r.now = t;
    // The delays' rows first: they were on their way before the entries' rows of the instant.
    for (Node* d : r.delays)
      if (d->delayed->head() < next) ReleaseDelayed(*d, next);
    for (size_t e : r.entries) Release(entries_[e], next);
    due = AdvanceRegion(r, next);
    r.now = Time::MinusInfinity();
    if (entered < next) r.fed_tick = std::max(r.fed_tick, t.tick);
    if (r.taken - r.tick_taken > static_cast<uint64_t>(bounds_.rows)) RunawayLoop(r, t.tick);
  }
  if (bound > r.progress) AdvanceRegion(r, bound);
  // Members without state follow the region (their progress is what their consumers outside read).
  for (Node* m : r.members) m->progress = std::max(m->progress, r.progress);
  FlushExits(r);
}

// Every node's progress; each region's place in time; the rows waiting at the regions' entries.
// The schedule itself follows from the plan.
void DtsExecutor::Snapshot(SnapshotWriter& w) const {
  w.U64(nodes_.size());
  for (const auto& [id, n] : nodes_) {
    w.I64(id);
    w.Pod(n.progress);
  }
  w.U64(regions_.size());
  for (const Region& r : regions_) {
    w.Pod(r.progress);
    w.I64(r.last_tick);
    w.Bool(r.closing);
  }
  w.U64(entries_.size());
  for (const Entry& e : entries_) {
    w.I64(e.node);
    w.I64(e.port);
    e.runs.Snapshot(w);
  }
  for (const auto& [id, n] : nodes_) {
    w.Bool(n.delayed != nullptr);
    if (n.delayed) n.delayed->Snapshot(w);
  }
}

void DtsExecutor::Restore(SnapshotReader& r, const std::map<int, Time>& source_progress) {
  SnapshotReader::Expect(r.Count(24, "the operators' progress"), nodes_.size(), "the executor's operators");
  for (auto& [id, n] : nodes_) {
    SnapshotReader::Expect(r.I64(), int64_t{id}, "an operator's id in the executor");
    n.progress = r.TimeValue("an operator's progress");
  }
  SnapshotReader::Expect(r.Count(25, "the loops"), regions_.size(), "the executor's loops");
  for (Region& g : regions_) {
    g.progress = r.TimeValue("a loop's progress");
    g.last_tick = r.I64();
    g.closing = r.Bool();
    g.fed_tick = g.last_tick;
  }
  SnapshotReader::Expect(r.Count(16, "the loop entries"), entries_.size(), "the executor's loop entries");
  for (Entry& e : entries_) {
    CQ_SNAPSHOT_CHECK(r.I64() == e.node && r.I64() == e.port, "the executor's loop entries differ");
    const Operator& producer = *nodes_.at(nodes_.at(e.node).inputs[e.port]).op;
    e.runs.Restore(r, producer.output_schema(), producer.output_kind());
  }
  for (auto& [id, n] : nodes_) {
    CQ_SNAPSHOT_CHECK(r.Bool() == (n.delayed != nullptr), "the executor's delays differ");
    if (n.delayed) n.delayed->Restore(r);
  }
  // Progress as a run leaves it between calls: a source where its input is; an operator outside
  // loops where its inputs are (AdvanceTo), not beyond; a loop where its producers are, its
  // members not beyond it — or, when the loop was re-formed around a query registered later and
  // took its least member's place (Schedule), not beyond where the furthest of its inputs is —, its
  // last tick theirs, closing once they have ended; rows waiting at its entries and delays not
  // before it. Operators that reached a time past their input's would see it come again.
  auto where = [](const Time& t) { return SnapshotReader::Show(t); };
  std::vector<Time> reach(regions_.size());
  for (size_t k = 0; k < regions_.size(); ++k) {
    reach[k] = regions_[k].progress;
    for (int p : regions_[k].producers) reach[k] = std::max(reach[k], InputProgress(p));
  }
  for (const auto& [id, n] : nodes_) {
    if (n.region < 0 || !n.inputs.empty()) continue;
    auto it = source_progress.find(id);
    if (it != source_progress.end())
      reach[static_cast<size_t>(n.region)] = std::max(reach[static_cast<size_t>(n.region)], it->second);
  }
  for (const auto& [id, n] : nodes_) {
    const std::string what = "operator #" + std::to_string(id) + "'s progress " + where(n.progress);
    if (n.region >= 0) {
      const Time top = reach[static_cast<size_t>(n.region)];
      if (top < n.progress) SnapshotReader::Corrupt(what + " is past its loop's inputs' " + where(top));
      continue;
    }
    Time p = Time::Infinity();
    if (n.inputs.empty()) {
      auto it = source_progress.find(id);
      p = it == source_progress.end() ? Time::MinusInfinity() : it->second;
    }
    for (int in : n.inputs) p = std::min(p, InputProgress(in));
    if (p < n.progress) SnapshotReader::Corrupt(what + " is past its inputs' " + where(p));
  }
  for (size_t k = 0; k < regions_.size(); ++k) {
    const Region& g = regions_[k];
    Time bound = Time::Infinity();
    for (int p : g.producers) bound = std::min(bound, InputProgress(p));
    const std::string what = "the loop of " + LoopName(g);
    if (bound < g.progress)
      SnapshotReader::Corrupt(what + ": its progress " + where(g.progress) + " is past its inputs' " + where(bound));
    if (g.closing != bound.IsInfinite())
      SnapshotReader::Corrupt(what + (g.closing ? " is closing before its inputs have ended" : " has not closed"));
    // (The last tick a member reached: a re-formed loop keeps its earlier members'.)
    if (!reach[k].IsInfinite() && g.last_tick != Time::kMinTick && g.last_tick > reach[k].tick)
      SnapshotReader::Corrupt(what + ": its last tick " + std::to_string(g.last_tick) + " is past its inputs' " +
                              where(reach[k]));
    for (size_t e : g.entries)
      if (entries_[e].runs.head() < g.progress)
        SnapshotReader::Corrupt(what + ": rows wait at its entry at " + where(entries_[e].runs.head()) +
                                ", before its progress " + where(g.progress));
    for (const Node* d : g.delays)
      if (d->delayed && d->delayed->head() < g.progress)
        SnapshotReader::Corrupt(what + ": rows wait in a delay at " + where(d->delayed->head()) +
                                ", before its progress " + where(g.progress));
  }
}

}  // namespace cq
