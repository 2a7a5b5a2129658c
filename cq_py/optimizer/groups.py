"""Base groups and arrival-log clustering of MASTER queries (paper 001 §4.2, §4.3, §4.5).

A *base group* holds queries that run at the same instants (equal master sets) and read common
sources through windows of comparable width (each common source's window ratio ≥ θ1): their
common operators give the same results, so sharing them costs nothing (case 1 of §4.1). Groups
with different masters may still run close in time and read nearly the same rows (case 2): the
*similarity* of two base groups is measured on the arrival log of the last period T, by
simulating which arrivals each group's runs read (USE sets), and groups are clustered by
complete linkage so that every pair inside a cluster is at least θ2 similar.

Everything here reads the parsed query (cq_py/parser) and arrays of timestamps in ticks; the
engine keeps the log and decides when a period ends (cq_py/engine.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cq_py.parser import ast

_TicksOf = Callable[[ast.Duration], int]

# [Now]'s width: a row at a is read by a run at τ only when τ = a (its lifetime is [a, a + ε)).
NOW = 0.0


@dataclass(frozen=True)
class QueryProfile:
    """What grouping needs of one MASTER query: its name, its master sources, and per source of
    its FROM clause (streams, relations, tables; lower-cased) the widest window it reads it
    through, in ticks (``NOW`` for ``[Now]``, ``math.inf`` for none or ``[Range Unbounded]``).
    Count-based windows (``[Rows n]``) have no width: ``None``.

    >>> p = QueryProfile("q", frozenset({"clock30"}), {"access": 5000.0, "urls": math.inf})
    >>> sorted(p.widths)
    ['access', 'urls']
    """

    name: str
    masters: frozenset[str]
    widths: dict[str, float | None]


def profile_of(name: str, master: ast.Master, ticks_of: _TicksOf) -> QueryProfile:
    """The profile of ``REGISTER QUERY name AS master``; ``ticks_of`` converts a window's
    duration to ticks (the engine's time unit).

    >>> from cq_py.parser import parse
    >>> q = parse("REGISTER QUERY q AS MASTER c SELECT * FROM a [Range 5], b;").statements[0]
    >>> profile_of("q", q.query, lambda d: d.value).widths
    {'a': 5.0, 'b': inf}
    """
    widths: dict[str, float | None] = {}
    for src in master.select.sources:
        key = src.name.lower()
        w = _width(src.window, ticks_of)
        if key not in widths:
            widths[key] = w
        else:  # the same source twice (a self-join): the widest window reads the most
            widths[key] = _wider(widths[key], w)
    return QueryProfile(name, frozenset(m.name.lower() for m in master.masters), widths)


def _width(w: ast.Window | None, ticks_of: _TicksOf) -> float | None:
    if w is None or w.kind == "unbounded":
        return math.inf
    if w.kind == "now":
        return NOW
    if w.kind in ("range", "range_slide") and w.range is not None:
        return float(ticks_of(w.range))
    return None


def _wider(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    return max(a, b)


def window_ratio(a: float | None, b: float | None) -> float:
    """min/max of two window widths (§4.2's WIN_Qi(I)/WIN_Qj(I) for both orders): 1 for equal
    widths ([Now] and [Now], unbounded and unbounded), 0 where one is [Now] or unbounded and the
    other not, or either has no width.

    >>> window_ratio(5.0, 10.0), window_ratio(NOW, NOW), window_ratio(math.inf, 60.0)
    (0.5, 1.0, 0.0)
    """
    if a is None or b is None:
        return 0.0
    if a == b:
        return 1.0
    lo, hi = min(a, b), max(a, b)
    if math.isinf(hi) or lo == NOW:
        return 0.0
    return lo / hi


def _compatible(p: QueryProfile, q: QueryProfile, theta1: float) -> bool:
    common = p.widths.keys() & q.widths.keys()
    return (
        p.masters == q.masters
        and bool(common)
        and all(window_ratio(p.widths[i], q.widths[i]) >= theta1 for i in common)
    )


def base_groups(
    profiles: list[QueryProfile], theta1: float, known: list[list[int]] | None = None
) -> list[list[int]]:
    """§4.2's base groups, as lists of indices into ``profiles`` (registration order): every two
    queries of a group have equal masters, a common source, and on each common source a window
    ratio ≥ θ1. That relation is not transitive, so a query joins the first group (in order of
    creation) with every member of which it agrees, else starts one.

    >>> a = QueryProfile("a", frozenset({"s"}), {"x": 10.0})
    >>> b = QueryProfile("b", frozenset({"s"}), {"x": 6.0})
    >>> c = QueryProfile("c", frozenset({"s"}), {"x": 4.0})
    >>> base_groups([a, b, c], 0.5)  # c agrees with b (4/6) but not with a (4/10)
    [[0, 1], [2]]

    ``known``: the groups of a prefix of ``profiles`` (as this function made them): only the
    queries after it are placed (an engine registering queries one by one).

    >>> base_groups([a, b, c], 0.5, known=[[0, 1]])
    [[0, 1], [2]]
    """
    groups = [list(g) for g in known] if known else []
    first = sum(len(g) for g in groups)
    for k in range(first, len(profiles)):
        p = profiles[k]
        for g in groups:
            # (equal masters first: the cheap test that rules most groups out)
            if profiles[g[0]].masters == p.masters and all(
                _compatible(profiles[m], p, theta1) for m in g
            ):
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


def use_set(arrivals: np.ndarray, instants: np.ndarray, width: float | None) -> np.ndarray:
    """§4.3's USE(I, B): the arrivals ``a`` of source I (sorted ticks) read by some run τ of B
    (sorted ticks) through B's widest window on I: τ − w < a ≤ τ; for [Now] a = τ; unbounded
    a ≤ τ. A window with no width (rows) reads what arrived up to the run, as unbounded does.

    >>> use_set(np.array([1, 2, 5, 9]), np.array([5, 6]), 3.0)
    array([5])
    >>> use_set(np.array([1, 2, 5, 9]), np.array([5, 6]), 5.0)
    array([1, 2, 5])
    >>> use_set(np.array([1, 2, 5, 9]), np.array([5]), NOW)
    array([5])
    """
    if len(arrivals) == 0 or len(instants) == 0:
        return arrivals[:0]
    # The first run at or after each arrival: the arrival is read iff that run is within w.
    at = np.searchsorted(instants, arrivals, side="left")
    has = at < len(instants)
    nxt = instants[np.minimum(at, len(instants) - 1)]
    if width is None or math.isinf(width):
        keep = has
    elif width == NOW:
        keep = has & (nxt == arrivals)
    else:
        keep = has & (nxt - arrivals < width)
    return arrivals[keep]


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard's coefficient of two sets of ticks: the size of their intersection over that of
    their union (arrivals are told apart by their timestamps, as the paper's arrival log does),
    1 for two empty sets.

    >>> jaccard(np.array([1, 2, 3]), np.array([2, 3, 4])), jaccard(np.array([]), np.array([]))
    (0.5, 1.0)
    """
    ua, ub = _distinct(a), _distinct(b)
    if len(ua) + len(ub) == 0:
        return 1.0
    common = len(np.intersect1d(ua, ub, assume_unique=True))
    return common / (len(ua) + len(ub) - common)


def _distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, sorted: USE sets come sorted (the log is), so a look at
    neighbours does what np.unique's hashing would, at every pair of groups a clustering compares.

    >>> _distinct(np.array([1, 1, 2, 5, 5])), _distinct(np.array([3, 1, 3]))
    (array([1, 2, 5]), array([1, 3]))
    """
    if len(a) < 2:
        return a
    if not (a[1:] >= a[:-1]).all():
        return np.unique(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def similarity(uses_1: dict[str, np.ndarray] | None, uses_2: dict[str, np.ndarray] | None) -> float:
    """sim(B1, B2) of §4.3: the least Jaccard similarity of their USE sets over the streams both
    read; 0 when they read no common stream, or when either's runs cannot be simulated (None: a
    master whose instants the log does not hold).

    >>> similarity({"a": np.array([1, 2])}, {"a": np.array([2]), "b": np.array([7])})
    0.5
    >>> similarity({"a": np.array([1])}, {"b": np.array([1])})
    0.0
    """
    if uses_1 is None or uses_2 is None:
        return 0.0
    common = uses_1.keys() & uses_2.keys()
    if not common:
        return 0.0
    return min(jaccard(uses_1[i], uses_2[i]) for i in sorted(common))


def similarity_matrix(uses: list[dict[str, np.ndarray] | None]) -> np.ndarray:
    """:func:`similarity` of every pair of base groups at once (the diagonal 1): per stream, each
    group's USE set as a row of membership over the stream's distinct arrivals, and the sizes of
    all intersections as one product of that matrix with itself.

    >>> u = [{"a": np.array([1, 2])}, {"a": np.array([2]), "b": np.array([7])}, None]
    >>> similarity_matrix(u)
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0. ],
           [0. , 0. , 1. ]])
    """
    n = len(uses)
    sim = np.full((n, n), np.inf)
    common = np.zeros((n, n), dtype=bool)
    for stream in sorted({s for u in uses if u is not None for s in u}):
        rows = [k for k, u in enumerate(uses) if u is not None and stream in u]
        sets = [_distinct(uses[k][stream]) for k in rows]  # type: ignore[index]
        universe = np.unique(np.concatenate(sets)) if sets else np.empty(0, np.int64)
        # Integer counts: numpy multiplies them itself, where a float product would wake the
        # BLAS library's threads, which then spin on the other core long after the check.
        member = np.zeros((len(rows), len(universe)), dtype=np.int64)
        for r, s in enumerate(sets):
            member[r, np.searchsorted(universe, s)] = 1
        inter = member @ member.T
        size = member.sum(axis=1)
        union = size[:, None] + size[None, :] - inter
        jac = np.where(union == 0, 1.0, inter / np.where(union == 0, 1.0, union))
        idx = np.ix_(rows, rows)
        sim[idx] = np.minimum(sim[idx], jac)
        common[idx] = True
    sim = np.where(common, sim, 0.0)
    np.fill_diagonal(sim, 1.0)
    return sim


def complete_linkage(sim: np.ndarray, theta2: float) -> list[list[int]]:
    """Agglomerative clustering with complete linkage (a cluster's similarity to another is the
    least similarity of their members), merging the most similar pair while it is ≥ θ2, so that
    every two members of a cluster are at least θ2 similar (§4.3). Ties go to the pair whose
    clusters come first (by their first member). Clusters are returned sorted by first member.

    >>> s = np.array([[1, .9, .2], [.9, 1, .5], [.2, .5, 1]])
    >>> complete_linkage(s, 0.4)
    [[0, 1], [2]]
    >>> complete_linkage(s, 0.1)
    [[0, 1, 2]]
    """
    n = len(sim)
    clusters: list[list[int] | None] = [[i] for i in range(n)]
    link = np.array(sim, dtype=float, copy=True)
    np.fill_diagonal(link, -np.inf)
    alive = np.ones(n, dtype=bool)
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], link, -np.inf)
        best = masked.max()
        if not best >= theta2:
            break
        # (the first pair in row-major order: cluster i keeps the place of the first of the two)
        i, j = divmod(int(np.argmax(masked)), n)
        i, j = min(i, j), max(i, j)
        ci, cj = clusters[i], clusters[j]
        assert ci is not None
        assert cj is not None
        clusters[i] = sorted(ci + cj)
        clusters[j] = None
        alive[j] = False
        # Lance–Williams for complete linkage: the merged cluster's similarity to k is the least.
        link[i, :] = np.minimum(link[i, :], link[j, :])
        link[:, i] = link[i, :]
        link[i, i] = -np.inf
    return sorted((c for c in clusters if c is not None), key=lambda c: c[0])
