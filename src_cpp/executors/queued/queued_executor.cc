#include "executors/queued/queued_executor.h"

#include <algorithm>
#include <set>
#include <string>

#include "base/errors.h"
#include "batch/snapshot.h"

namespace cq {

namespace {

// Topological order of a graph given as id -> input ids. Returns the ids it could not order:
// those on or behind a cycle.
std::vector<int> Topological(const std::map<int, const std::vector<int>*>& graph, std::vector<int>& left) {
  std::map<int, std::vector<int>> consumers;
  std::vector<int> ids;
  for (const auto& [id, ins] : graph) {
    ids.push_back(id);
    for (int in : *ins) consumers[in].push_back(id);
  }
  return ProducersFirst(
      ids,
      [&](int id, const auto& visit) {
        for (int c : consumers[id]) visit(c);
      },
      &left);
}

// One cycle among `left` (every one of them has an input in `left`): walk inputs until an
// operator repeats. Returned in data-flow order from its smallest id, first = last.
std::vector<int> OneCycle(const std::map<int, const std::vector<int>*>& graph, const std::vector<int>& left) {
  const std::set<int> rest(left.begin(), left.end());
  std::vector<int> path{left.front()};
  std::map<int, size_t> at{{left.front(), 0}};
  for (;;) {
    int next = -1;
    for (int in : *graph.at(path.back()))
      if (rest.count(in)) {
        next = in;
        break;
      }
    if (auto it = at.find(next); it != at.end()) {
      std::vector<int> cycle(path.begin() + static_cast<std::ptrdiff_t>(it->second), path.end());
      std::reverse(cycle.begin(), cycle.end());
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      cycle.push_back(cycle.front());
      return cycle;
    }
    at[next] = path.size();
    path.push_back(next);
  }
}

}  // namespace

QueuedExecutor::Item QueuedExecutor::Fifo::pop_front() {
  Item it = std::move(items_[head_++]);
  if (head_ == items_.size()) {
    items_.clear();
    head_ = 0;
  } else if (head_ >= 1024 && 2 * head_ >= items_.size()) {  // drop the taken half: amortized O(1)
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  return it;
}

void QueuedExecutor::Port::QueueData(Item item) {
  if (item.kind == Item::Kind::kData) {
    while (!floor.empty() && floor.back().second >= item.time) floor.pop_back();
    floor.emplace_back(taken + queue.size(), item.time);
  }
  queue.push_back(std::move(item));
}

QueuedExecutor::Item QueuedExecutor::Port::TakeData() {
  Item it = queue.pop_front();
  ++taken;
  while (!floor.empty() && floor.front().first < taken) floor.pop_front();
  seen = std::max(seen, it.time);
  return it;
}

bool QueuedExecutor::Port::Clear(Time t) const {
  return (floor.empty() || floor.front().second >= t) && (ends_floor.empty() || *ends_floor.begin() >= t);
}

QueuedExecutor::QueuedExecutor(std::string name, bool row_items, HolderTable* holders)
    : name_(std::move(name)), row_items_(row_items), holders_(holders) {
  CQ_CHECK(holders_, "the " + name_ + " executor needs the engine's holder table");
}

Operator* QueuedExecutor::op(int id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : nodes_[it->second].op.get();
}

int64_t QueuedExecutor::queued(int id) const {
  int64_t k = 0;
  for (const Port& p : nodes_.at(index_.at(id)).ports) k += static_cast<int64_t>(p.queue.size() + p.ends.size());
  return k;
}

void QueuedExecutor::Add(std::vector<std::pair<OperatorSpec, std::unique_ptr<Operator>>> ops) {
  // Everything is checked on the whole graph before anything changes.
  std::map<int, const std::vector<int>*> graph;
  for (const Node& n : nodes_) graph[n.id] = &n.inputs;
  for (auto& [spec, op] : ops) {
    CQ_CHECK(!graph.count(spec.id), "duplicate operator id " + std::to_string(spec.id));
    graph[spec.id] = &spec.inputs;
  }
  for (auto& [spec, op] : ops)
    for (int in : spec.inputs)
      CQ_CHECK(graph.count(in),
               "operator " + std::to_string(spec.id) + " reads unknown operator " + std::to_string(in));
  std::vector<int> left;
  std::vector<int> order = Topological(graph, left);
  if (!left.empty()) {
    std::string ring;
    for (int id : OneCycle(graph, left)) ring += (ring.empty() ? "#" : " → #") + std::to_string(id);
    throw CqError(ErrorKind::kSemantic,
                  "executor='" + name_ + "' cannot run recursive queries: operators " + ring +
                      " form a loop, on which a binary operator would wait for a heartbeat from its own "
                      "output (paper 000 §2.3); use executor='dts'");
  }

  const size_t first = nodes_.size();
  for (auto& [spec, op] : ops) {
    Node n;
    n.id = spec.id;
    n.op = std::move(op);
    n.inputs = spec.inputs;
    n.ports.resize(std::max<size_t>(1, spec.inputs.size()));
    n.emitter = std::make_unique<NodeEmitter>(this, static_cast<int>(nodes_.size()));
    index_[spec.id] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
  }
  for (size_t i = first; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    for (size_t port = 0; port < n.inputs.size(); ++port) {
      Node& producer = nodes_[index_.at(n.inputs[port])];
      producer.consumers.push_back({static_cast<int>(i), static_cast<int>(port)});
      // An operator added to a running graph reads only what its producer emits from now on,
      // which lies at or after the producer's progress.
      if (producer.progress > Time::MinusInfinity()) {
        Port& p = n.ports[port];
        p.seen = p.promised = producer.op->OutputProgress(producer.progress);
      }
    }
  }
  order_ = std::move(order);
}

void QueuedExecutor::Remove(const std::vector<int>& ids) {
  std::set<int> gone;  // indices into nodes_
  for (int id : ids) {
    CQ_CHECK(index_.count(id), "removing unknown operator " + std::to_string(id));
    gone.insert(index_.at(id));
  }
  for (int i : gone)
    for (const Consumer& c : nodes_[i].consumers)
      CQ_CHECK(gone.count(c.node),
               "operator " + std::to_string(nodes_[i].id) + " is still read by " + std::to_string(nodes_[c.node].id));
  // The others move down over the gaps; consumers and emitters name nodes by index.
  std::vector<int> moved(nodes_.size(), -1);
  std::vector<Node> kept, removed;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (gone.count(static_cast<int>(i))) {
      removed.push_back(std::move(nodes_[i]));
    } else {
      moved[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(nodes_[i]));
    }
  }
  index_.clear();
  for (size_t i = 0; i < kept.size(); ++i) {
    Node& n = kept[i];
    std::erase_if(n.consumers, [&](const Consumer& c) { return moved[c.node] < 0; });
    for (Consumer& c : n.consumers) c.node = moved[c.node];
    n.emitter->set_node(static_cast<int>(i));
    index_[n.id] = static_cast<int>(i);
  }
  std::erase_if(order_, [&](int id) { return !index_.count(id); });
  std::erase_if(fed_, [&](int i) { return moved[i] < 0; });
  for (int& i : fed_) i = moved[i];
  Renumbered(moved);
  nodes_ = std::move(kept);
  // End fixes still queued for a removed operator pin their ids: nobody will take them now.
  for (const Node& n : removed)
    for (const Port& p : n.ports)
      for (const auto& [after, it] : p.ends) holders_->Unpin(it.ends.ids(), it.ends.length);
}

void QueuedExecutor::Append(Port& port, const Batch& batch) {
  const int64_t rows = batch.num_rows();
  int64_t start = 0;
  while (start < rows) {
    const Time t = batch.StartAt(batch.Physical(start));
    int64_t end = start + 1;
    while (!row_items_ && end < rows && batch.StartAt(batch.Physical(end)) == t) ++end;
    port.QueueData({Item::Kind::kData, t, batch.Slice(start, end - start), {}});
    start = end;
  }
}

void QueuedExecutor::Fed(int consumer) {
  Node& c = nodes_[consumer];
  if (c.fed_mark == turn_) return;
  c.fed_mark = turn_;
  fed_.push_back(consumer);
}

void QueuedExecutor::EnqueueData(int node, const Batch& batch) {
  if (batch.num_rows() == 0) return;
  if (holds_ && Hold(node, Item{Item::Kind::kData, batch.StartAt(batch.Physical(batch.num_rows() - 1)), batch, {}}))
    return;
  for (const Consumer& c : nodes_[node].consumers) {
    Port& p = nodes_[c.node].ports[c.port];
    if (!holds_) {
      Append(p, batch);
    } else {
      const int64_t had = Duplicates(node, c.node, batch);
      if (had >= batch.num_rows()) continue;
      const size_t first = p.queue.size();
      Append(p, had ? batch.Slice(had, batch.num_rows() - had) : batch);
      Entered(c.node, c.port, first);
    }
    Fed(c.node);
  }
}

void QueuedExecutor::Release(int node, Item item) {
  if (item.kind == Item::Kind::kData) {
    for (const Consumer& c : nodes_[node].consumers) {
      Append(nodes_[c.node].ports[c.port], item.batch);
      Fed(c.node);
    }
    return;
  }
  // (A held end fix was pinned while held, by Hold: queued, it is pinned per consumer.)
  QueueEnds(node, item.ends);
  holders_->Unpin(item.ends.ids(), item.ends.length);
}

void QueuedExecutor::EnqueueEnds(int node, const EndBatch& ends) {
  if (ends.length == 0) return;
  Time lowest = Time::Infinity();
  for (int64_t k = 0; holds_ && k < ends.length; ++k) lowest = std::min(lowest, ends.ends.At(k));
  if (holds_ && Hold(node, Item{Item::Kind::kEnds, lowest, {}, ends})) return;
  QueueEnds(node, ends);
}

void QueuedExecutor::QueueEnds(int node, const EndBatch& ends) {
  for (const Consumer& c : nodes_[node].consumers) {
    Port& p = nodes_[c.node].ports[c.port];
    // An end e may be about a queued row that starts at or before e, never a later one: it waits
    // for the queued items up to the last at or before e (times are in order: a binary search).
    // The fixes of one batch are grouped by what they wait for.
    std::map<uint64_t, std::vector<uint32_t>> groups;
    for (int64_t k = 0; k < ends.length; ++k) {
      const Time e = ends.ends.At(k);
      auto after =
          std::upper_bound(p.queue.begin(), p.queue.end(), e, [](Time t, const Item& it) { return t < it.time; });
      groups[p.taken + static_cast<uint64_t>(after - p.queue.begin())].push_back(static_cast<uint32_t>(k));
    }
    for (auto& [after, rows] : groups) {
      EndBatch part = ends;
      if (rows.size() != static_cast<size_t>(ends.length)) {
        part.length = static_cast<int64_t>(rows.size());
        part.holders = Buffer::Allocate(part.length * static_cast<int64_t>(sizeof(HolderId)));
        for (int64_t k = 0; k < part.length; ++k) part.holders.as<HolderId>()[k] = ends.ids()[rows[k]];
        part.ends = GatherTime(ends.ends, rows.data(), part.length);
      }
      Time lowest = Time::Infinity();
      for (int64_t k = 0; k < part.length; ++k) lowest = std::min(lowest, part.ends.At(k));
      holders_->Pin(part.ids(), part.length);  // released at the consumer's PushEnds (Execute)
      p.ends.emplace(after, Item{Item::Kind::kEnds, lowest, {}, std::move(part)});
      p.ends_floor.insert(lowest);
    }
    Fed(c.node);
  }
}

void QueuedExecutor::Promise(Port& p, Time t) {
  if (t > p.promised) {
    if (!p.queue.empty() && p.queue.back().kind == Item::Kind::kHeartbeat)
      p.queue.back().time = t;  // a later heartbeat says all the earlier one did
    else p.QueueData({Item::Kind::kHeartbeat, t, {}, {}});
    p.promised = t;
  }
  p.wave = wave_;
}

void QueuedExecutor::EnqueueHeartbeat(int node, Time t) {
  for (const Consumer& c : nodes_[node].consumers) {
    Promise(nodes_[c.node].ports[c.port], t);
    Fed(c.node);
  }
}

QueuedExecutor::Pick QueuedExecutor::Consumable(const Node& n, bool* stalled) const {
  int best = -1;
  for (size_t p = 0; p < n.ports.size(); ++p) {
    const Port& port = n.ports[p];
    if (!port.ends.empty() && port.ends.begin()->first <= port.taken) return {static_cast<int>(p), true};
    if (!port.queue.empty() && (best < 0 || port.queue.front().time < n.ports[best].queue.front().time))
      best = static_cast<int>(p);
  }
  if (best < 0 || n.ports.size() == 1) return {best, false};
  // The stall of §2.3: an input with nothing queued must already have delivered the head's time.
  const Time t = n.ports[best].queue.front().time;
  for (size_t p = 0; p < n.ports.size(); ++p) {
    if (n.ports[p].queue.empty() && Delivered(n, p) < t) {
      *stalled = true;
      return {};
    }
  }
  return {best, false};
}

bool QueuedExecutor::Execute(int node, Pick pick) {
  Node& n = nodes_[node];
  Port& p = n.ports[pick.port];
  ++stats_.executions;
  if (pick.ends) {
    auto first = p.ends.begin();
    Item it = std::move(first->second);
    p.ends.erase(first);
    p.ends_floor.erase(p.ends_floor.find(it.time));
    n.op->PushEnds(pick.port, it.ends, *n.emitter);
    holders_->Unpin(it.ends.ids(), it.ends.length);  // after: what the consumer passed on is pinned again
  } else {
    Item it = p.TakeData();
    if (it.kind == Item::Kind::kData) {
      ++n.evaluations;
      n.op->Push(pick.port, it.batch, *n.emitter);
      Refresh(node);
      return true;
    }
  }
  Refresh(node);
  return false;
}

void QueuedExecutor::Refresh(int node) {
  Node& n = nodes_[node];
  if (n.wave == wave_) return;  // passed on already
  Time progress = Time::Infinity();
  for (const Port& p : n.ports) {
    if (p.wave != wave_) return;  // an input's heartbeat of this wave is still on its way
    progress = std::min(progress, p.promised);
  }
  // Data and end fixes below the new progress must reach the operator first.
  for (const Port& p : n.ports)
    if (!p.Clear(progress)) return;
  n.wave = wave_;
  if (progress > n.progress) {
    n.progress = progress;
    n.op->AdvanceTo(progress, *n.emitter);
  }
  EnqueueHeartbeat(node, n.op->OutputProgress(n.progress));
}

void QueuedExecutor::Push(int source, const Batch& batch) {
  const int node = index_.at(source);
  CQ_CHECK(nodes_[node].inputs.empty(), "push into operator " + std::to_string(source) + ", which is not a source");
  Append(nodes_[node].ports[0], batch);
  Wake(node);
  Drain();
}

void QueuedExecutor::Replay(int producer, int consumer, const Batch& batch) {
  const int node = index_.at(consumer);
  for (size_t port = 0; port < nodes_[node].inputs.size(); ++port)
    if (nodes_[node].inputs[port] == producer && batch.num_rows() > 0) Append(nodes_[node].ports[port], batch);
  Wake(node);
  Drain();
}

void QueuedExecutor::AdvanceTo(const std::map<int, Time>& source_progress) {
  // A wave: every source sends a heartbeat, behind its data, whether its progress moved or not, and
  // an operator passes the wave on once it has its inputs' heartbeats of this wave (Refresh). The
  // first source runs first.
  ++wave_;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const int node = index_.at(*it);
    if (!nodes_[node].inputs.empty()) continue;
    Port& p = nodes_[node].ports[0];
    auto found = source_progress.find(*it);
    Promise(p, found == source_progress.end() ? p.promised : found->second);
    Wake(node);
  }
  Drain();
}

void QueuedExecutor::Snapshot(SnapshotWriter& w) const {
  CheckSnapshots();
  // Taken between calls: every Drain has ended, so nothing is on a stack or fed in a turn; what
  // remains is what waits in the queues (stalled data, heartbeats, end fixes) and each operator's
  // place in the waves.
  w.U64(wave_);
  w.U64(order_.size());
  for (int id : order_) {
    const Node& n = nodes_[index_.at(id)];
    w.I64(id);
    w.Pod(n.progress);
    w.U64(n.wave);
    w.I64(n.evaluations);
    for (const Port& p : n.ports) {
      w.U64(p.taken);
      w.Pod(p.seen);
      w.Pod(p.promised);
      w.U64(p.wave);
      w.U64(p.queue.size());
      for (const Item& it : p.queue) {
        w.Bool(it.kind == Item::Kind::kData);
        w.Pod(it.time);
        if (it.kind == Item::Kind::kData) w.WriteBatch(it.batch);
      }
      w.U64(p.ends.size());
      for (const auto& [after, it] : p.ends) {
        w.U64(after);
        w.WriteEnds(it.ends);
      }
    }
  }
}

void QueuedExecutor::Restore(SnapshotReader& r, const std::map<int, Time>&) {
  CheckSnapshots();
  wave_ = r.U64();
  SnapshotReader::Expect(r.Count(24, "the operators"), order_.size(), "the executor's operators");
  // The ids each queued end fix pins, counted to compare with the holder table's pins.
  std::vector<uint32_t> pins(holders_->capacity(), 0);
  for (int id : order_) {
    Node& n = nodes_[index_.at(id)];
    SnapshotReader::Expect(r.I64(), int64_t{id}, "an operator's id in the executor");
    n.progress = r.TimeValue("an operator's progress");
    n.wave = r.U64();
    n.evaluations = r.I64In(0, INT64_MAX, "an operator's evaluations");
    CQ_SNAPSHOT_CHECK(n.wave <= wave_, "an operator's wave is ahead of the executor's");
    for (size_t port = 0; port < n.ports.size(); ++port) {
      Port& p = n.ports[port];
      p = Port{};
      // What reaches the port: its producer's rows, or for a source what is pushed into it.
      const Operator& from = n.inputs.empty() ? *n.op : *nodes_[index_.at(n.inputs[port])].op;
      p.taken = r.U64();
      p.seen = r.TimeValue("a queue's latest time taken");
      p.promised = r.TimeValue("a queue's latest heartbeat");
      p.wave = r.U64();
      CQ_SNAPSHOT_CHECK(p.wave <= wave_, "a queue's wave is ahead of the executor's");
      for (size_t k = r.Count(9, "a queue's items"); k > 0; --k) {
        const bool data = r.Bool();
        const Time t = r.TimeValue("a queued item's time");
        Item it{data ? Item::Kind::kData : Item::Kind::kHeartbeat, t, {}, {}};
        if (data) {
          it.batch = r.ReadBatch(from.output_schema(), from.output_kind());
          const int64_t rows = it.batch.num_rows();
          CQ_SNAPSHOT_CHECK(rows > 0 && (!row_items_ || rows == 1), "a queued data item's rows");
          for (int64_t i = 0; i < rows; ++i)
            CQ_SNAPSHOT_CHECK(it.batch.StartAt(it.batch.Physical(i)) == t, "a queued row's time is not its item's");
        } else {
          CQ_SNAPSHOT_CHECK(!(p.promised < t), "a queued heartbeat is beyond its queue's promise");
        }
        p.QueueData(std::move(it));
      }
      for (size_t k = r.Count(16, "a queue's end fixes"); k > 0; --k) {
        const uint64_t after = r.U64();
        CQ_SNAPSHOT_CHECK(after >= p.taken && after - p.taken <= p.queue.size() &&
                              (p.ends.empty() || after >= p.ends.rbegin()->first),
                          "an end fix waits for items its queue does not hold");
        EndBatch ends = r.ReadEnds();
        CQ_SNAPSHOT_CHECK(ends.length > 0, "an empty end fix");
        Time lowest = Time::Infinity();
        for (int64_t i = 0; i < ends.length; ++i) {
          lowest = std::min(lowest, ends.ends.At(i));
          ++pins[ends.ids()[i]];
        }
        p.ends_floor.insert(lowest);
        p.ends.emplace(after, Item{Item::Kind::kEnds, lowest, {}, std::move(ends)});
      }
    }
  }
  for (HolderId id = 0; id < holders_->capacity(); ++id)
    if (holders_->pins(id) != pins[id])
      SnapshotReader::Corrupt("holder id " + std::to_string(id) + " is pinned " + std::to_string(holders_->pins(id)) +
                              " times; the queued end fixes name it " + std::to_string(pins[id]) + " times");
}

void QueuedExecutor::CheckSnapshots() const {
  if (!snapshots_)
    throw CqError(ErrorKind::kSnapshot,
                  "engine snapshots are supported under executor='dts' and 'heartbeat' (found "
                  "executor='" +
                      name_ + "')");
}

}  // namespace cq
