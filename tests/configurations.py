"""Every configuration of the engine (SEMANTICS.md §5: all give the same results): DTS hybrid and as
published (hybrid=False), and the heartbeat executor, each under both lifetime methods. Tests that
must hold everywhere run under each (the conformance files too, in the matrix of
tests/conformance/test_conformance.py)."""

CONFIGURATIONS: dict[str, dict] = {
    f"{name}-{lifetime}": {**options, "lifetime": lifetime}
    for name, options in (
        ("dts", {"executor": "dts"}),
        ("dts-published", {"executor": "dts", "hybrid": False}),
        ("heartbeat", {"executor": "heartbeat"}),
    )
    for lifetime in ("direct", "negative")
}
