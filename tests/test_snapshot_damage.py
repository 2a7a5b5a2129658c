"""Damaged snapshots signed again (the checksum is public, so it proves nothing about where
bytes came from): every restore ends in ``SnapshotError`` or in an engine that behaves — no crash,
no hang, no other exception — and a refused restore changes nothing. Snapshot bytes are
deterministic: the same state gives the same bytes.

The damage fuzzer itself is tests/snapshot_damage.py: a fixed-seed campaign of ``CQ_FUZZ_CASES``
cases (default 300) runs here in worker subprocesses, so that a crash or a hang fails this test;
``python tests/snapshot_damage.py --cases N --seed S`` runs longer campaigns by hand.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import cq_py
import snapshot_damage as fuzz
from child import child_env

CASES = int(os.environ.get("CQ_FUZZ_CASES", "300"))


def test_a_fixed_seed_damage_campaign_ends_in_snapshot_errors_or_engines_that_behave():
    result = fuzz.campaign(seed=20240611, n=CASES, batch=100, case_timeout=60.0)
    assert not result.failures, "\n".join(str(f) for f in result.failures[:20])
    assert sum(result.outcomes.values()) == CASES
    # The campaign exercises both ends: damage that is refused and damage that still restores.
    assert result.outcomes["refused"] > 0
    assert result.outcomes["ran"] + result.outcomes["ran-input-error"] > 0


def test_the_checksum_is_the_engines():
    """The fuzzer signs damaged bytes with its own copy of the checksum: it must be the engine's."""
    base = fuzz.build(fuzz.bases()[0])
    payload = base.snapshot[fuzz.HEADER :]
    assert fuzz.sign(base.snapshot, payload) == base.snapshot
    assert fuzz.sign(base.snapshot, payload[:-1])[24:32] != base.snapshot[24:32]


@pytest.mark.parametrize("index", range(0, len(fuzz.bases()), 3))
def test_the_same_state_gives_the_same_bytes(index):
    """Padding inside the structs an engine keeps once reached the bytes (whatever memory held):
    two engines fed alike, and an engine restored from the first's snapshot, give equal bytes."""
    base = fuzz.bases()[index]
    first = fuzz.build(base).snapshot
    second = fuzz.build(fuzz.bases()[index]).snapshot
    assert first == second
    again = cq_py.Engine.restore(first)
    assert again.snapshot() == first


def test_the_same_state_gives_the_same_bytes_in_another_process(tmp_path):
    code = (
        "import sys, snapshot_damage as f; b = f.build(f.bases()[{}]); "
        "sys.stdout.buffer.write(b.snapshot)"
    )
    env = child_env(Path(fuzz.__file__).parent)
    for index in (5, 20):
        # Not run from the source tree: `python -c` puts the working directory first on sys.path,
        # and a fresh clone's cq_core/ has no compiled module (the installed package is tested).
        out = subprocess.run(
            [sys.executable, "-c", code.format(index)],
            capture_output=True,
            check=True,
            env=env,
            cwd=tmp_path,
        )
        assert out.stdout == fuzz.build(fuzz.bases()[index]).snapshot


def damaged_at(blob: bytes, offset: int, data: bytes) -> bytes:
    """`blob` with `data` written at payload offset `offset`, signed again."""
    payload = bytearray(blob[fuzz.HEADER :])
    payload[offset : offset + len(data)] = data
    return fuzz.sign(blob, bytes(payload))


def test_a_refused_restore_leaves_the_engine_as_it_was():
    base = fuzz.build(fuzz.bases()[8])  # aggregates, direct, hybrid
    eng = cq_py.Engine(**base.config)
    eng.execute(fuzz.SCRIPTS[base.script])
    fuzz.feed(eng, base.script, 0, base.cut)
    before = eng.snapshot()
    assert before == base.snapshot
    start = base.state_at - fuzz.HEADER
    refused = 0
    kinds = set()
    for at in range(start, len(before) - fuzz.HEADER - 8, 97):
        bad = damaged_at(before, at, b"\xff" * 8)
        try:
            eng._core.restore(bad)
        except _core_error_type() as e:
            kinds.add(e.args[0])
            refused += 1
        else:
            eng._core.restore(before)  # it restored: put the state back for the next try
        assert eng.snapshot() == before
    assert refused > 0
    assert kinds == {"snapshot"}


def _core_error_type():
    from cq_core import _core

    return _core.CoreError


def test_errors_say_where_the_damage_is():
    base = fuzz.build(fuzz.bases()[0])
    # The holder table's count of ids handed out comes first in the state: a huge count is named.
    bad = damaged_at(base.snapshot, base.state_at - fuzz.HEADER, struct.pack("<I", 0xFFFFFFF0))
    with pytest.raises(cq_py.SnapshotError, match="in the expiration holder table: the ids"):
        cq_py.Engine.restore(bad)


def test_a_damaged_operator_state_names_the_operator():
    base = fuzz.build(fuzz.bases()[1])
    blob = base.snapshot
    marker = b"Window [Rows 3]"
    at = blob.index(marker) + len(marker)  # the operator's section length follows its explain line
    (length,) = struct.unpack_from("<Q", blob, at)
    bad = damaged_at(blob, at - fuzz.HEADER, struct.pack("<Q", length + 1))
    with pytest.raises(cq_py.SnapshotError, match=r"Window \[Rows 3\]"):
        cq_py.Engine.restore(bad)


def test_messages_quoting_damaged_bytes_are_printable():
    base = fuzz.build(fuzz.bases()[0])
    blob = base.snapshot
    at = blob.index(b"Window [Rows 3]")
    bad = damaged_at(blob, at - fuzz.HEADER, b"\xff\x01\x80")
    with pytest.raises(cq_py.SnapshotError) as e:
        cq_py.Engine.restore(bad)
    assert "\\xff\\x01\\x80" in str(e.value)
    assert str(e.value).isprintable()
