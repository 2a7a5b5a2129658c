"""The MASTER evaluator (tests/oracle/master.py) on hand-computed cases, and against ISTREAM:
with every FROM source a master, MASTER equals ISTREAM where no equal values end and start at
once (issue 31). The engine's master trigger is to be checked against this evaluator."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from oracle.master import instants, istream, master, relation, stream_lifetimes


def _first(values):
    return values[0]


def test_the_papers_example_by_hand() -> None:
    # MASTER Access SELECT ... FROM Access [now], Status [5], URLs (the table, whole)
    access = [(3, ("/a",)), (7, ("/b",)), (7, ("/a",)), (20, ("/a",))]
    status = [(0, (0.5,)), (5, (0.2,)), (10, (0.9,))]
    urls = [((-(10**9), 0), (15, 0), ("/a",))]  # deleted from the table at 15
    r = relation(
        [
            stream_lifetimes(access, "now", None),
            stream_lifetimes(status, 5, None),
            urls,
        ],
        lambda v: v[0][0] == v[2][0] and v[1][0] >= 0.4,
        lambda v: (v[0][0], v[1][0]),
    )
    runs = instants(["Access"], {"Access": access}, {}, None, 100)
    assert runs == [(3, 0), (7, 0), (20, 0)]
    # At 3: Status 0.5 (alive [0, 5)); at 7: Status 0.2 fails the load test; at 20 /a left URLs.
    assert master(r, runs) == Counter({(3, ("/a", 0.5)): 1})


def test_a_clock_emits_what_started_since_its_last_tick() -> None:
    s = [(1, (1,)), (4, (2,)), (5, (3,)), (12, (4,))]
    r = relation([stream_lifetimes(s, None, None)], lambda v: True, _first)
    runs = instants(["c"], {}, {"c": (5, 0)}, None, 13)
    assert runs == [(0, 0), (5, 0), (10, 0)]  # 15 is beyond the progress before close()
    assert master(r, runs) == Counter({(5, (1,)): 1, (5, (2,)): 1, (5, (3,)): 1})
    # With [Range 2] the row of 1 has ended by 5: it is never emitted; 4 and 5 are.
    r2 = relation([stream_lifetimes(s, 2, None)], lambda v: True, _first)
    assert master(r2, runs) == Counter({(5, (2,)): 1, (5, (3,)): 1})
    # Registered at progress 4: rows and ticks from 4 on.
    r3 = relation([stream_lifetimes(s, None, 4)], lambda v: True, _first)
    assert master(r3, instants(["c"], {}, {"c": (5, 0)}, 4, 13)) == Counter(
        {(5, (2,)): 1, (5, (3,)): 1}
    )


streams = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 1000)), max_size=8, unique_by=lambda r: r[1]
).map(lambda rows: sorted((t, (v,)) for t, v in rows))
windows = st.sampled_from(["now", None, 1, 3])


@given(streams, streams, windows, windows)
def test_with_every_source_a_master_it_equals_istream(a, b, wa, wb) -> None:
    # Distinct values everywhere: no equal values end and start at once.
    b = [(t, (v + 5000,)) for t, (v,) in b]
    r = relation(
        [stream_lifetimes(a, wa, None), stream_lifetimes(b, wb, None)],
        lambda v: (v[0][0] + v[1][0]) % 3 != 0,
        lambda v: (v[0][0], v[1][0]),
    )
    runs = instants(["a", "b"], {"a": a, "b": b}, {}, None, 100)
    assert master(r, runs) == istream(r)
