"""Every configuration of the engine (SEMANTICS.md §5: all give the same results): DTS hybrid and as
published (hybrid=False), and the heartbeat executor, each under both lifetime methods, on one
engine; and DTS on two engines (``threads=2``: one per part of the input where the script has a
partition key, cq_py/partitions.py). Tests that must hold everywhere run under each (the
conformance files too, in the matrix of tests/conformance/test_conformance.py)."""

CONFIGURATIONS: dict[str, dict] = {
    f"{name}-{lifetime}": {**options, "lifetime": lifetime}
    for name, options in (
        ("dts", {"executor": "dts", "threads": 1}),
        ("dts-published", {"executor": "dts", "hybrid": False, "threads": 1}),
        ("heartbeat", {"executor": "heartbeat", "threads": 1}),
        ("dts-threads2", {"executor": "dts", "threads": 2}),
    )
    for lifetime in ("direct", "negative")
}
