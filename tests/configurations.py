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
        # Paper 002 §5: round robin, one row per evaluation, `batch` of them per turn; the
        # gatekeeper constraint on and off (no resources, no gatekeepers: the same results).
        *(
            (
                f"scheduled-b{batch}{'' if gatekeeper else '-nogk'}",
                {"executor": "scheduled", "batch": batch, "gatekeeper": gatekeeper, "threads": 1},
            )
            for batch in (1, 7)
            for gatekeeper in (True, False)
        ),
    )
    for lifetime in ("direct", "negative")
}
