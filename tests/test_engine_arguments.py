"""Whatever a user hands the API — data Arrow cannot convert, options of the wrong type, CQL that is
not text — ends in an exception of the package (cq_py.CQError) saying what was expected, what
was found and where; never a KeyError, an ArrowInvalid or a pybind11 signature dump."""

import datetime

import pandas as pd
import pyarrow as pa
import pytest

import cq_py

SCRIPT = (
    "REGISTER STREAM s(a INT, v VARCHAR);REGISTER QUERY q AS ISTREAM(SELECT a, v FROM s [Now]);"
)


def engine(**options):
    eng = cq_py.Engine(**options)
    eng.execute(SCRIPT)
    return eng


@pytest.mark.parametrize(
    ("data", "needle", "row"),
    [
        (
            pa.table(
                [pa.array([1]), pa.array([2]), pa.array(["x"]), pa.array([3])],
                names=["a", "a", "v", "ts"],
            ),
            "column 'a' appears 2 times in the data",
            None,
        ),
        (
            pa.table(
                [pa.array([1]), pa.array(["x"]), pa.array([2]), pa.array([3])],
                names=["a", "v", "ts", "ts"],
            ),
            "column 'ts' appears 2 times",
            None,
        ),
        (
            [{"a": 1, "v": "x", "ts": 1}, {"a": "y", "v": "x", "ts": 2}],
            "column 'a' does not convert to an Arrow column: row 1 holds 'y' (str)",
            1,
        ),
        (
            [{"a": 1, "v": "x", "ts": 2**64}],
            (
                "column 'ts' does not convert to an Arrow column: row 0 holds 18446744073709551616 "
                "(int)"
            ),
            0,
        ),
        (
            pd.DataFrame({"a": [1, 2, "z"], "v": ["x"] * 3, "ts": [1, 2, 3]}),
            "column 'a' does not convert to an Arrow column: row 2 holds 'z' (str)",
            2,
        ),
        (
            pd.DataFrame([[1, "x", 1]], columns=["a", "a", "ts"]),
            "column 'a' appears 2 times in the DataFrame",
            None,
        ),
        (pd.Series([1, 2]), "found a pandas Series", None),
        ({"a": [1], "v": ["x"], "ts": [1]}, "a dict of columns?", None),
    ],
)
def test_data_arrow_cannot_take_is_an_input_error(data, needle, row):
    eng = engine()
    with pytest.raises(cq_py.InputError) as e:
        eng.push("s", data)
    assert needle in str(e.value)
    assert e.value.stream == "s"
    assert e.value.row == row
    eng.push("s", [{"a": 1, "v": "x", "ts": 1}])  # the engine is as it was
    assert eng.fetch("q").num_rows == 1


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"hybrid": "no"}, "hybrid must be True or False; found 'no' (str)"),
        ({"expose_steps": 1}, "expose_steps must be True or False; found 1 (int)"),
        ({"auto_delay": None}, "auto_delay must be True or False"),
        (
            {"max_loop_steps": 2**64},
            (
                "max_loop_steps must be a positive integer (at most 9223372036854775807); "
                "found 18446744073709551616"
            ),
        ),
        ({"max_loop_steps": True}, "max_loop_steps must be a positive integer"),
        ({"max_run": 2.0}, "max_run must be a positive integer"),
        ({"time_unit": None}, "time_unit must be one of 's', 'ms', 'us', 'ns'; found None"),
        ({"lifetime": "Direct"}, "lifetime must be one of 'direct', 'negative'"),
        ({"executor": 1}, "executor must be one of 'dts', 'heartbeat', 'scheduled'; found 1 (int)"),
        ({"scheduler": "fifo"}, "scheduler must be one of 'round_robin'; found 'fifo'"),
        ({"batch": 0}, "batch must be a positive integer (at most 9223372036854775807); found 0"),
        ({"gatekeeper": "yes"}, "gatekeeper must be True or False; found 'yes'"),
    ],
)
def test_a_bad_engine_option_is_an_argument_error(options, needle):
    with pytest.raises(cq_py.ArgumentError) as e:
        cq_py.Engine(**options)
    assert needle in str(e.value)
    assert isinstance(e.value, cq_py.CQError)
    assert isinstance(e.value, ValueError)
    assert "incompatible" not in str(e.value)
    with pytest.raises(cq_py.ArgumentError):
        cq_py.run(SCRIPT, {}, **options)


@pytest.mark.parametrize("t", [1.5, "10", None, True, b"1", datetime.date(2020, 1, 1)])
def test_advance_refuses_what_is_not_a_time(t):
    # It was: 1.5 and "10" were taken (as 1 and 10), 2**63 dumped pybind11's signature.
    eng = engine()
    with pytest.raises(
        cq_py.ArgumentError, match=r"advance\(\) takes a tick \(an integer\) or a datetime"
    ):
        eng.advance(t)
    eng.push("s", [{"a": 1, "v": "x", "ts": 0}])  # nothing was advanced


def test_cql_must_be_text():
    with pytest.raises(
        cq_py.ArgumentError, match=r"execute\(\) takes CQL text as a str; found bytes \(decode"
    ):
        cq_py.Engine().execute(SCRIPT.encode())
    with pytest.raises(cq_py.ArgumentError, match=r"run\(\) takes CQL text"):
        cq_py.run(None)
    with pytest.raises(cq_py.ArgumentError, match=r"explain\(\) takes CQL text"):
        cq_py.explain(None)
    with pytest.raises(cq_py.ArgumentError, match="time_unit"):
        cq_py.explain(SCRIPT, time_unit="minutes")


def test_an_integer_literal_too_long_for_python_is_a_positioned_syntax_error():
    # It was: ValueError "Exceeds the limit (4300 digits) for integer string conversion".
    digits = "9" * 5000
    for tail in ("", "ms"):
        with pytest.raises(cq_py.CQLSyntaxError) as e:
            cq_py.Engine().execute(
                f"REGISTER STREAM s(a INT);\nREGISTER QUERY q AS SELECT a + {digits}{tail} FROM s;"
            )
        assert (e.value.line, e.value.column) == (2, 32)
        assert "integer literal out of range: 5000 digits" in e.value.message
    with pytest.raises(cq_py.CQLSemanticError, match="does not fit in BIGINT"):
        cq_py.Engine().execute(
            "REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a + "
            + "9" * 100
            + " AS b FROM s;"
        )


@pytest.mark.parametrize(
    ("inputs", "error", "needle"),
    [
        (
            [pa.table({"a": [1], "v": ["x"], "ts": [1]})],
            cq_py.ArgumentError,
            "maps stream names to their data",
        ),
        ("s", cq_py.ArgumentError, "found str"),
        ({1: pa.table({"a": [1], "v": ["x"], "ts": [1]})}, cq_py.InputError, "unknown stream 1"),
        ({"s": 5}, cq_py.InputError, "found int"),
        (
            {"s": pa.table({"a": [1], "v": ["x"]}), "S": pa.table({"a": [1], "v": ["x"]})},
            cq_py.InputError,
            "'s' and 'S' name the same stream 's'",
        ),
    ],
)
def test_run_refuses_inputs_it_cannot_read(inputs, error, needle):
    with pytest.raises(error, match=needle):
        cq_py.run(SCRIPT, inputs)


def test_run_names_unknown_options_and_bad_ts():
    with pytest.raises(
        cq_py.ArgumentError, match="unknown engine option 'time_units'; the options are time_unit"
    ):
        cq_py.run(SCRIPT, {}, time_units="s")
    with pytest.raises(cq_py.ArgumentError, match=r"run\(ts=...\)"):
        cq_py.run(SCRIPT, {}, ts=0)


def test_run_names_the_row_of_the_input_when_inputs_are_merged():
    bad = pa.table({"a": [1, 2, 3, 4], "v": ["x"] * 4, "ts": [1, 5, 3, 8]})
    other = "REGISTER STREAM t(b INT);"
    with pytest.raises(cq_py.InputError) as e:
        cq_py.run(SCRIPT + other, {"s": bad, "t": pa.table({"b": [1, 2], "ts": [2, 4]})})
    assert e.value.stream == "s"
    assert e.value.row == 2
    assert "row 2 of inputs['s']" in str(e.value)


def test_schema_lookups_and_subscribe_check_their_arguments():
    eng = engine()
    with pytest.raises(cq_py.InputError, match="unknown stream 1"):
        eng.stream_schema(1)
    with pytest.raises(cq_py.ArgumentError, match="callback must be callable"):
        eng.subscribe("q", "print")
    with pytest.raises(cq_py.ArgumentError, match=r"push\(ts=...\)"):
        eng.push("s", [{"a": 1, "v": "x", "ts": 0}], ts=None)
    with pytest.raises(cq_py.ArgumentError, match="bytes"):
        cq_py.Engine.restore("snapshot")


@pytest.mark.parametrize(
    "make",
    [
        lambda: pd.DataFrame({"a": [1, 2], "v": pd.Categorical(["x", "y"]), "ts": [1, 2]}),
        lambda: pa.table(
            {"a": [1, 2], "v": pa.array(["x", "y"]).dictionary_encode(), "ts": [1, 2]}
        ),
        lambda: pa.table(
            {
                "a": pa.array([1, 2]).dictionary_encode(),
                "v": pa.array(["x", "y"], pa.large_string()).dictionary_encode(),
                "ts": [1, 2],
            }
        ),
    ],
)
def test_dictionary_encoded_columns_are_cast_to_the_declared_type(make):
    # It was: "column 'v' must be VARCHAR; found Arrow type dictionary<values=string, ...>".
    eng = engine()
    eng.push("s", make())
    assert eng.fetch("q").to_pylist() == [{"a": 1, "v": "x", "ts": 1}, {"a": 2, "v": "y", "ts": 2}]


def test_dictionary_of_the_wrong_values_is_refused_naming_the_type():
    eng = engine()
    with pytest.raises(
        cq_py.InputError,
        match="column 'a' must be BIGINT; found Arrow type dictionary<values=string",
    ):
        eng.push("s", pa.table({"a": pa.array(["1"]).dictionary_encode(), "v": ["x"], "ts": [1]}))


def test_categoricals_through_the_arrow_capsule_interface_are_cast():
    # What polars hands over for a Categorical: large_string values, uint32 indices.
    v = pa.DictionaryArray.from_arrays(
        pa.array([1, 0], pa.uint32()), pa.array(["x", "y"], pa.large_string())
    )
    reader = pa.RecordBatchReader.from_batches(
        pa.schema([("a", pa.int64()), ("v", v.type), ("ts", pa.int64())]),
        [pa.record_batch([pa.array([1, 2]), v, pa.array([1, 2])], names=["a", "v", "ts"])],
    )

    class Capsule:  # only the PyCapsule stream protocol, as a foreign library offers it
        def __arrow_c_stream__(self, requested_schema=None):
            return reader.__arrow_c_stream__(requested_schema)

    eng = engine()
    eng.push("s", Capsule())
    assert eng.fetch("q").column("v").to_pylist() == ["y", "x"]
