"""The optimizer's bookkeeping across an engine's life (paper 001 §4.3, §4.5): the MASTER queries
in registration order, their base groups, the arrival log of the last period T, and the clusters
found on it — made when the first period ends, checked at the end of every later one and made
again when a cluster's similarities fell below θ2 or base groups came that no cluster holds.

The engine tells it what registered (:meth:`QueryGroups.add`), what arrived
(:meth:`QueryGroups.note`) and how far its least progress went (:meth:`QueryGroups.follow`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cq_py.optimizer.groups import (
    QueryProfile,
    base_groups,
    complete_linkage,
    similarity_matrix,
    use_set,
)

__all__ = ["Clock", "QueryGroups"]


@dataclass(frozen=True)
class Clock:
    """A clock stream's ticks: offset + k·every, k ≥ 0."""

    every: int
    offset: int

    def ticks(self, t0: int, t1: int) -> np.ndarray:
        """Its ticks in [t0, t1).

        >>> Clock(30, 15).ticks(0, 100)
        array([15, 45, 75])
        """
        first = self.offset
        if t0 > first:  # the first tick at or after t0
            first += -(-(t0 - first) // self.every) * self.every
        return np.arange(first, t1, self.every, dtype=np.int64)


@dataclass
class QueryGroups:
    """Base groups and clusters of an engine's MASTER queries. ``enabled=False`` (``mqo=False``)
    keeps every query alone.

    >>> from cq_py.optimizer.groups import QueryProfile
    >>> g = QueryGroups(theta1=0.5, theta2=0.1, period=100, streams={"s", "t"})
    >>> g.add(QueryProfile("q1", frozenset({"s"}), {"s": 10.0}))
    >>> g.add(QueryProfile("q2", frozenset({"t"}), {"s": 10.0}))
    >>> g.note("s", np.arange(0, 100, 5)); g.note("t", np.arange(1, 100, 5))
    >>> g.follow(100)   # the first period [0, 100) ends: clusters from its log
    >>> g.groups()
    {'base_groups': [['q1'], ['q2']], 'clusters': [['q1', 'q2']], 'log_period': [0, 100]}
    """

    theta1: float
    theta2: float
    period: int
    enabled: bool = True
    profiles: list[QueryProfile] = field(default_factory=list)
    clocks: dict[str, Clock] = field(default_factory=dict)
    streams: set[str] = field(default_factory=set)  # the registered streams (not relations)
    # Arrival timestamps by stream (lower-cased), appended as pushed; trimmed at each check.
    log: dict[str, list[np.ndarray]] = field(default_factory=dict)
    single: dict[str, list[int]] = field(default_factory=dict)  # push_row's, not yet in `log`
    logging: set[str] = field(default_factory=set)  # the streams logged (see logged())
    start: int | None = None  # where the first period starts (the first arrival logged)
    next_check: int | None = None
    clusters: list[list[int]] | None = None  # of base-group indices; None until a first period
    log_period: tuple[int, int] | None = None  # the window the clusters were found on
    checks: int = 0
    reclusterings: int = 0
    # base_groups() until a query registers or leaves (each check asks it several times).
    _groups: list[list[int]] | None = field(default=None, repr=False)

    def add(self, profile: QueryProfile) -> None:
        """A MASTER query registered (in registration order)."""
        self.profiles.append(profile)
        self._groups = None
        self.logging = self.logged()

    def remove(self, name: str) -> None:
        """Query ``name`` was dropped: it leaves its base group. The base groups are formed again
        without it (greedily, as if it had never registered); each goes to the cluster that held
        its first member, so no other query changes cluster before the next check."""
        if not any(p.name == name for p in self.profiles):
            return
        groups = self.base_groups()
        cluster_of = {
            self.profiles[k].name: c
            for c, members in enumerate(self._current_clusters(len(groups)))
            for b in members
            for k in groups[b]
        }
        self.profiles = [p for p in self.profiles if p.name != name]
        self._groups = None
        self.logging = self.logged()
        if self.clusters is None:
            return
        regrouped: dict[int, list[int]] = {}
        for b, g in enumerate(self.base_groups()):
            regrouped.setdefault(cluster_of[self.profiles[g[0]].name], []).append(b)
        self.clusters = sorted(regrouped.values(), key=lambda c: c[0])

    def base_groups(self) -> list[list[int]]:
        """The base groups, as indices of :attr:`profiles` (each alone when disabled)."""
        if not self.enabled:
            return [[k] for k in range(len(self.profiles))]
        if self._groups is None:
            self._groups = base_groups(self.profiles, self.theta1)
        return [list(g) for g in self._groups]

    def logged(self) -> set[str]:
        """The streams whose arrivals the log keeps: those a MASTER query reads or runs on."""
        if not self.enabled:
            return set()
        out: set[str] = set()
        for p in self.profiles:
            out |= p.masters | set(p.widths)
        return out

    def note(self, stream: str, ticks: np.ndarray) -> None:
        """Arrivals on ``stream`` (their timestamps, in ticks); only those of :attr:`logging`'s
        streams are kept."""
        key = stream.lower()
        if len(ticks) and key in self.logging:
            ticks = np.asarray(ticks, dtype=np.int64)
            if self.single.get(key):  # (push_row's earlier arrivals first: the log stays sorted)
                self.log.setdefault(key, []).append(np.array(self.single.pop(key), np.int64))
            self.log.setdefault(key, []).append(ticks)
            self._started(int(ticks[0]))

    def note_one(self, stream: str, tick: int) -> None:
        """One arrival (``push_row``): kept in a list until the log is read."""
        key = stream.lower()
        if key in self.logging:
            self.single.setdefault(key, []).append(tick)
            self._started(tick)

    def _started(self, tick: int) -> None:
        if self.start is None:  # the first period starts with the first arrival
            self.start = tick
            self.next_check = tick + self.period

    def follow(self, progress: int) -> None:
        """The engine's least progress reached ``progress``: a period that ended below it is
        checked (once, however many periods a jump passes: the log holds the last one only)."""
        if not self.enabled or not self.profiles or self.next_check is None:
            return
        if progress < self.next_check:
            return
        passed = (progress - self.next_check) // self.period
        end = self.next_check + passed * self.period
        self.next_check = end + self.period
        self._check(end)

    def recluster(self, progress: int) -> None:
        """Clusters made again now, on the log of the last period before ``progress``."""
        if self.enabled and self.profiles:
            self._cluster(progress)

    def groups(self) -> dict[str, Any]:
        """``{"base_groups": [[names]], "clusters": [[names]], "log_period": [t0, t1]}``;
        ``log_period`` is None before the first period has ended."""
        groups = self.base_groups()
        names = [[self.profiles[k].name for k in g] for g in groups]
        clusters = self._current_clusters(len(groups))
        return {
            "base_groups": names,
            "clusters": [[n for b in c for n in names[b]] for c in clusters],
            "log_period": list(self.log_period) if self.log_period else None,
        }

    # -- checks ----------------------------------------------------------------------------------

    def _current_clusters(self, n_groups: int) -> list[list[int]]:
        clustered = self.clusters or []
        held = {b for c in clustered for b in c}
        # Base groups registered since the last clustering are alone until the next check.
        return [*clustered, *([b] for b in range(n_groups) if b not in held)]

    def _check(self, end: int) -> None:
        self.checks += 1
        groups = self.base_groups()
        if self.clusters is None or sum(map(len, self.clusters)) < len(groups):
            self._cluster(end)
            return
        uses = self._uses(groups, end)
        sim = similarity_matrix(uses)
        for c in self.clusters:
            if any(sim[a, b] < self.theta2 for i, a in enumerate(c) for b in c[i + 1 :]):
                self._cluster(end, sim)
                return
        self._trim(end)

    def _cluster(self, end: int, sim: np.ndarray | None = None) -> None:
        if sim is None:
            sim = similarity_matrix(self._uses(self.base_groups(), end))
        self.clusters = complete_linkage(sim, self.theta2)
        self.log_period = (end - self.period, end)
        self.reclusterings += 1
        self._trim(end)

    def _arrivals(self, stream: str, t0: int, t1: int) -> np.ndarray:
        if self.single.get(stream):
            self.log.setdefault(stream, []).append(np.array(self.single.pop(stream), np.int64))
        parts = self.log.get(stream)
        if not parts:
            return np.empty(0, dtype=np.int64)
        a = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if len(parts) > 1:
            self.log[stream] = [a]
        lo, hi = np.searchsorted(a, [t0, t1], side="left")
        return a[lo:hi]

    def _instants(self, masters: frozenset[str], t0: int, t1: int) -> np.ndarray | None:
        runs = []
        for m in sorted(masters):
            if m in self.clocks:
                runs.append(self.clocks[m].ticks(t0, t1))
            elif m in self.streams:
                runs.append(self._arrivals(m, t0, t1))
            else:
                return None
        return np.unique(np.concatenate(runs)) if runs else np.empty(0, dtype=np.int64)

    def _uses(self, groups: list[list[int]], end: int) -> list[dict[str, np.ndarray] | None]:
        """Per base group, USE(I, B) for each stream I its queries read, on [end − T, end)."""
        t0 = end - self.period
        out: list[dict[str, np.ndarray] | None] = []
        for g in groups:
            members = [self.profiles[k] for k in g]
            instants = self._instants(members[0].masters, t0, end)
            if instants is None:  # a master whose runs the log cannot tell (a query's output)
                out.append(None)
                continue
            uses: dict[str, np.ndarray] = {}
            for stream in sorted({i for p in members for i in p.widths}):
                if stream in self.clocks or stream not in self.streams:
                    continue
                widths = [p.widths[stream] for p in members if stream in p.widths]
                width = None if None in widths else max(w for w in widths if w is not None)
                uses[stream] = use_set(self._arrivals(stream, t0, end), instants, width)
            out.append(uses)
        return out

    def _trim(self, end: int) -> None:
        """Keeps the arrivals a forced re-clustering before the next check can still need."""
        keep_from = end - self.period
        for stream in list(self.log.keys() | self.single.keys()):
            a = self._arrivals(stream, keep_from, np.iinfo(np.int64).max)
            self.log[stream] = [a] if len(a) else []

    # -- snapshots -------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps (the profiles come back as the saved CQL registers again)."""
        for stream in list(self.single):
            self._arrivals(stream, 0, 0)  # (push_row's arrivals into the log)
        return {
            "log": {s: np.concatenate(p).tolist() for s, p in self.log.items() if p},
            "start": self.start,
            "next_check": self.next_check,
            "clusters": self.clusters,
            "log_period": list(self.log_period) if self.log_period else None,
            "checks": self.checks,
            "reclusterings": self.reclusterings,
        }

    def load(self, state: Any) -> None:
        """Back to :meth:`state`'s values (None: a snapshot older than the optimizer, which
        starts afresh). Raises ValueError when ``state`` is not one :meth:`state` made."""
        if state is None:
            return
        try:
            log = {str(s): [np.asarray(v, dtype=np.int64)] for s, v in state["log"].items()}
            start, next_check = state["start"], state["next_check"]
            clusters, period = state["clusters"], state["log_period"]
            checks, reclusterings = int(state["checks"]), int(state["reclusterings"])
            if not all(x is None or type(x) is int for x in (start, next_check)):
                raise TypeError("progress")
            n = len(self.base_groups())
            if clusters is not None and sorted(b for c in clusters for b in c) != sorted(
                {b for c in clusters for b in c if type(b) is int and 0 <= b < n}
            ):
                raise TypeError("clusters")
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise ValueError(f"the optimizer's state is not one it saved ({e})") from None
        self.log, self.start, self.next_check = log, start, next_check
        self.clusters = [list(c) for c in clusters] if clusters is not None else None
        self.log_period = (int(period[0]), int(period[1])) if period else None
        self.checks, self.reclusterings = checks, reclusterings
