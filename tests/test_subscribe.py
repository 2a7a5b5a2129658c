"""A subscriber callback that raises loses nothing: the call that delivered was applied (and says
so), and the results the callback did not take wait for its next delivery or for fetch."""

import pyarrow as pa
import pytest

import cq_py

SCRIPT = (
    "REGISTER STREAM s(a INT);"
    "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
    "REGISTER QUERY r AS ISTREAM(SELECT a * 10 AS b FROM s [Now]);"
)


class Flaky:
    """Takes batches, raising on the ones listed (by call number)."""

    def __init__(self, fail_on):
        self.fail_on = set(fail_on)
        self.calls = 0
        self.rows = []

    def __call__(self, batch):
        self.calls += 1
        if self.calls in self.fail_on:
            raise OSError("disk full")
        self.rows += batch.column(0).to_pylist()


def engine():
    eng = cq_py.Engine()
    eng.execute(SCRIPT)
    return eng


def push(eng, values, ts):
    eng.push("s", pa.table({"a": values, "ts": [ts] * len(values)}))


def test_a_failing_callback_keeps_its_batch_for_the_next_delivery():
    # It was: the batch and the rest of the drain were lost, and a retried push failed as a
    # decreasing timestamp.
    eng = engine()
    cb, other = Flaky(fail_on=[1]), Flaky(fail_on=[])
    eng.subscribe("q", cb)
    eng.subscribe("r", other)
    with pytest.raises(cq_py.CallbackError) as e:
        push(eng, [1, 2], 5)
    msg = str(e.value)
    assert e.value.query == "q"
    assert isinstance(e.value.__cause__, OSError)
    assert "raised OSError: disk full" in msg
    assert "The push to 's' was applied: do not retry it" in msg
    assert "2 result rows of 'q'" in msg
    assert "fetch('q')" in msg
    assert other.rows == [10, 20]  # the other query was served all the same
    push(eng, [3], 6)  # the next push (not a retry) delivers the kept batch first
    assert cb.rows == [1, 2, 3]
    assert other.rows == [10, 20, 30]


def test_a_kept_batch_comes_again_at_a_call_that_brings_the_query_nothing_new():
    # Only queries with new rows are drained after a call (one core call for all of them): a
    # query with a backlog and nothing new must be served all the same.
    eng = cq_py.Engine(threads=1)
    eng.execute(
        "REGISTER STREAM s(a INT); REGISTER STREAM t(b INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
        "REGISTER QUERY r AS ISTREAM(SELECT b FROM t [Now]);"
    )
    cb, other = Flaky(fail_on=[1]), Flaky(fail_on=[])
    eng.subscribe("q", cb)
    eng.subscribe("r", other)
    with pytest.raises(cq_py.CallbackError):
        eng.push("s", pa.table({"a": [1], "ts": [1]}))  # q's row goes out; its callback raises
    assert cb.rows == []
    eng.push("t", pa.table({"b": [7], "ts": [1]}))  # nothing new for q
    assert cb.rows == [1]
    eng.close()
    assert other.rows == [7]


def test_what_a_failing_callback_did_not_take_can_be_fetched():
    eng = engine()
    cb = Flaky(fail_on=[1, 2, 3])
    eng.subscribe("q", cb)
    with pytest.raises(cq_py.CallbackError):
        push(eng, [1], 1)
    with pytest.raises(cq_py.CallbackError, match="The advance\\(3\\) was applied"):
        eng.advance(3)  # nothing new, but the kept batch is delivered again
    with pytest.raises(cq_py.CallbackError, match="The push to 's' was applied"):
        push(eng, [2], 4)
    assert eng.fetch("q").column("a").to_pylist() == [1, 2]
    assert eng.fetch("q").num_rows == 0  # handed over once
    push(eng, [3], 5)
    assert cb.rows == [3]


def test_several_subscribers_of_one_query_each_get_every_batch_once():
    eng = engine()
    a, b = Flaky(fail_on=[2]), Flaky(fail_on=[])
    eng.subscribe("q", a)
    eng.subscribe("q", b)
    push(eng, [1], 1)
    with pytest.raises(cq_py.CallbackError):
        push(eng, [2], 2)
    eng.close()
    assert a.rows == [1, 2]
    assert b.rows == [1, 2]


def test_a_callback_that_raises_at_subscribe_keeps_what_was_there():
    eng = engine()
    push(eng, [7], 1)
    cb = Flaky(fail_on=[1])
    with pytest.raises(cq_py.CallbackError, match=r"The subscribe\('q'\) was applied"):
        eng.subscribe("q", cb)
    assert cb.rows == []
    eng.close()  # delivers again
    assert cb.rows == [7]
    assert eng.fetch("q").num_rows == 0


def test_an_interrupt_inside_a_callback_loses_nothing_either():
    eng = engine()
    calls = []

    def interrupted(batch):
        calls.append(batch.num_rows)
        if len(calls) == 1:
            raise KeyboardInterrupt

    eng.subscribe("q", interrupted)
    with pytest.raises(KeyboardInterrupt):
        push(eng, [1, 2], 1)
    eng.close()
    # The batch it raised on comes again first, then the rest: every row once (in the batches of
    # one engine, or of each engine of Engine(threads=N)).
    assert calls[1] == calls[0]
    assert sum(calls[1:]) == 2
