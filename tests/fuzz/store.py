"""The crash fuzzer's resource store (paper 002): what a case's ``ResourceStore`` holds and what
happens to it between pushes.

A script that registers resources or models runs on an engine with a store (worker.py). The
store gets generated rows for every resource the engine registers — columns and key as declared
or, now and then, not (a missing or extra column, a value of another type, another key: an
``InputError`` or ``ArgumentError``, the store unchanged) —, sometimes before the script is
executed (and then, now and then, with columns that differ from the declaration: a
``CQLSemanticError`` naming both). Every model gets a callable, mostly one returning the declared
columns and sometimes one returning the wrong length, types, names or no array at all (a package
error naming the model). Between pushes a store transaction may upsert and delete rows — a delete
of a key the resource lacks must be an ``InputError`` with nothing of the transaction applied —,
a model may be replaced and a resource reloaded.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

import cq_py
from cq_py.errors import CQError
from cq_py.parser import ast, parse
from cq_py.planner import types as T

# Values by str() of the Arrow type ("double" is float64's). Key values: a few small ones (the
# generated stream rows hold 0, 1, 2, 7, 42), odd ones now and then.
KEYS: dict[str, list[Any]] = {
    "int64": [0, 1, 2, 3, 7, 42, -1, 2**63 - 1, -(2**63)],
    "double": [0.0, 1.0, 1.5, -0.0, float("nan")],
    "string": ["a", "b", "", "\u00e9", "x" * 300],
    "bool": [True, False],
}
VALUES: dict[str, list[Any]] = {
    "int64": [0, 1, -1, 2, 7, 2**63 - 1, -(2**63), None],
    "double": [0.0, -0.0, 1.5, -2.25, 1e308, 5e-324, float("inf"), float("nan"), None],
    "string": ["", "a", "b", "\u00e9", "\x00", "'", None],
    "bool": [True, False, None],
}
# A key value the generated rows never hold (a delete of it must be refused).
ABSENT: dict[str, Any] = {"int64": 123456789, "double": 0.125, "string": "absent"}
# What a model may return instead of its columns (each a package error naming the model).
BAD_MODELS = (
    "length",
    "empty",
    "type",
    "names",
    "none",
    "scalar",
    "text",
    "nested",
    "two_d",
    "chunked",
    "table",
    "huge_int",
    "objects",
)


class Bug(Exception):
    """The store or the engine broke the contract (worker.py reports it as a finding)."""


def declarations(text: str) -> tuple[dict[str, ast.RegisterResource], dict[str, ast.RegisterModel]]:
    """The resources and models ``text`` declares, by lower-cased name (statements that do not
    parse are skipped)."""
    pieces: list[str] = [text]
    statements: list[Any] = []
    try:
        statements += parse(text).statements
    except CQError:
        pieces = text.split(";")
    if not statements:
        for piece in pieces:
            try:
                statements.extend(parse(piece).statements)
            except CQError:
                continue
    resources = {s.name.lower(): s for s in statements if isinstance(s, ast.RegisterResource)}
    models = {s.name.lower(): s for s in statements if isinstance(s, ast.RegisterModel)}
    return resources, models


def _arrow(columns: tuple[ast.ColumnDef, ...]) -> pa.Schema | None:
    try:
        return T.arrow_schema([(c.name, T.FROM_CQL[c.type.name]) for c in columns])
    except (KeyError, AttributeError):
        return None


def _value(rng: random.Random, f: pa.Field, key: bool) -> Any:
    pool = KEYS if key else VALUES
    if key and rng.random() < 0.03:
        return None  # a null key
    return rng.choice(pool.get(str(f.type), [None]))


def rows(rng: random.Random, schema: pa.Schema, key: list[str], n: int) -> list[dict[str, Any]]:
    return [{f.name: _value(rng, f, f.name in key) for f in schema} for _ in range(n)]


def misfit(rng: random.Random, data: list[dict[str, Any]], schema: pa.Schema) -> Any:
    """``data`` made not to fit ``schema``: a column missing or added, a value of another type,
    or no rows at all."""
    kind = rng.choice(["missing", "extra", "type", "not_rows", "ragged"])
    data = [dict(r) for r in data] or [{f.name: None for f in schema}]
    if kind == "missing" and len(schema):
        for r in data:
            r.pop(schema.names[0], None)
    elif kind == "extra":
        for r in data:
            r["zz_extra"] = 1
    elif kind == "type":
        bad = {"int64": "seven", "double": "x", "string": 3.5, "bool": 2**70}
        for r in data:
            for f in schema:
                r[f.name] = bad.get(str(f.type), object())
    elif kind == "ragged":
        data[0] = {"zz_only": True}
    else:
        return rng.choice(["rows", 7, None, {"a": [1]}, [1, 2, 3]])
    return data


def model(seed: int, returns: pa.Schema, bad: str | None) -> Callable[..., Any]:
    """A model's callable: the declared result columns, values drawn from ``seed`` (one array for
    a model of one column, now and then a dict), or when ``bad`` says so a wrong answer."""
    rng = random.Random(seed)
    as_dict = rng.random() < 0.3 or len(returns) != 1

    def good(n: int) -> Any:
        cols = {
            f.name: pa.array([rng.choice(VALUES[str(f.type)]) for _ in range(n)], f.type)
            for f in returns
            if str(f.type) in VALUES
        }
        return cols if as_dict else next(iter(cols.values()), None)

    def fn(*args: Any) -> Any:
        n = len(args[0]) if args else 1
        if bad is None:
            return good(n)
        return {
            "length": lambda: good(n + 1),
            "empty": lambda: good(0),
            "type": lambda: pa.array(["s"] * n) if str(returns[0].type) != "string" else np.ones(n),
            "names": lambda: {"zz_other": np.zeros(n)},
            "none": lambda: None,
            "scalar": lambda: 1.5,
            "text": lambda: "abc",
            "nested": lambda: [[1.0]] * n,
            "two_d": lambda: np.zeros((n, 2)),
            "chunked": lambda: pa.chunked_array([np.zeros(n)]),
            "table": lambda: pa.table({"a": np.zeros(n)}),
            "huge_int": lambda: [2**70] * n,
            "objects": lambda: [object()] * n,
        }[bad]()

    return fn


class StoreFeed:
    """The store side of a case: rows for each resource, callables for each model, and store
    transactions between pushes, all drawn from ``rng``; ``log`` keeps what was rejected."""

    def __init__(self, rng: random.Random, store: cq_py.ResourceStore, text: str) -> None:
        self.rng, self.store = rng, store
        self.resources, self.models = declarations(text)
        self.loaded: set[str] = set()
        self.bad_models: set[str] = set()

    # -- before execute ---------------------------------------------------------------------

    def prepare(self, step: Callable[..., Any]) -> None:
        """Models set; some resources loaded before the script registers them (with columns
        that now and then differ from the declaration)."""
        for name, m in self.models.items():
            self.set_model(step, name, m)
        for r in self.resources.values():
            if r.url is not None or self.rng.random() < 0.6:
                continue
            schema = _arrow(r.columns)
            if schema is None:
                continue
            key = list(r.key) or schema.names[:1]
            if self.rng.random() < 0.2:  # another declaration than the script's
                schema = (
                    schema.remove(0)
                    if len(schema) > 1
                    else schema.append(pa.field("zz_extra", pa.int64()))
                )
                key = schema.names[:1]
            data = rows(self.rng, schema, key, self.rng.randint(0, 5))
            self.load(step, r.name, data, key)

    def set_model(self, step: Callable[..., Any], name: str, m: ast.RegisterModel) -> None:
        returns = _arrow(m.returns)
        if returns is None:
            return
        bad = self.rng.choice(BAD_MODELS) if self.rng.random() < 0.15 else None
        if bad:
            self.bad_models.add(name)
        else:
            self.bad_models.discard(name)
        step(
            f"set_model {m.name}",
            self.store.set_model,
            m.name,
            model(self.rng.randrange(2**32), returns, bad),
            0.5,
        )

    # -- after each execute ------------------------------------------------------------------

    def refresh(self, step: Callable[..., Any], eng: cq_py.Engine) -> None:
        """Rows for each resource the engine registered that has none yet."""
        for name, st in eng._catalog.resources.items():
            if name in self.loaded or not isinstance(st, ast.RegisterResource) or st.url:
                continue
            self.loaded.add(name)
            if st.name not in self.store.names():
                continue  # (not bound: no query reads it yet)
            schema, key = self.store.schema(st.name)
            data: Any = rows(self.rng, schema, key, self.rng.randint(0, 8))
            if self.rng.random() < 0.1:
                data = misfit(self.rng, data, schema)
            elif self.rng.random() < 0.05:
                key = [*key[::-1], "zz"]  # another key than the resource's
            self.load(step, st.name, data, key)

    def load(self, step: Callable[..., Any], name: str, data: Any, key: list[str]) -> None:
        self.unchanged(
            step, f"load {name}", lambda: self.store.load(name, data, key=key, timeout=0.5)
        )

    # -- between pushes ----------------------------------------------------------------------

    def between(self, step: Callable[..., Any]) -> None:
        r = self.rng.random()
        names = self.store.names()
        if r < 0.35 and names:
            self.transaction(step, names)
        elif r < 0.45 and self.models:
            name = self.rng.choice(sorted(self.models))
            self.set_model(step, name, self.models[name])
        elif r < 0.5 and names:
            name = self.rng.choice(names)
            schema, key = self.store.schema(name)
            self.load(step, name, rows(self.rng, schema, key, self.rng.randint(0, 4)), key)

    def transaction(self, step: Callable[..., Any], names: list[str]) -> None:
        """Upserts and deletes in one transaction; a delete of a missing key must reject it
        whole."""
        missing = unfit = False
        plan: list[tuple[str, str, Any]] = []
        # The keys each resource holds at each change of the plan (changes apply in order), by
        # repr (a NaN key equals itself there).
        live: dict[str, dict[str, dict[str, Any]]] = {}
        for _ in range(self.rng.randint(1, 3)):
            name = self.rng.choice(names)
            schema, key = self.store.schema(name)
            if name not in live:
                have = self.store.read(name).select(key).to_pylist()
                live[name] = {repr(k): k for k in have}
            keys = live[name]
            kind = self.rng.random()
            if kind < 0.45:
                data: Any = rows(self.rng, schema, key, self.rng.randint(0, 4))
                if self.rng.random() < 0.08:
                    data = misfit(self.rng, data, schema)
                    unfit = True
                else:
                    keys.update((repr(k), k) for k in ({c: r[c] for c in key} for r in data))
                plan.append((name, "upsert", data))
            elif kind < 0.8 and keys:
                gone = self.rng.sample(sorted(keys), self.rng.randint(1, len(keys)))
                plan.append((name, "delete", [keys.pop(k) for k in gone]))
            else:
                absent = {k: ABSENT.get(str(schema.field(k).type)) for k in key}
                if repr(absent) not in keys:
                    missing = True
                    plan.append((name, "delete", [absent]))

        def run() -> None:
            with self.store.transaction(timeout=0.5, writer="fuzz") as tx:
                for name, kind, data in plan:
                    (tx.upsert if kind == "upsert" else tx.delete)(name, data)

        error = self.unchanged(step, "store transaction", run)
        if missing and error is None:
            raise Bug(f"a store transaction deleting a missing key was accepted: {plan!r:.600}")
        if missing and not unfit and not isinstance(error, (cq_py.InputError, cq_py.LockTimeout)):
            # (LockTimeout: a query holds the lock; a misfit upsert may be an ArgumentError.)
            raise Bug(f"a delete of a missing key was refused as {error!r:.300}: {plan!r:.300}")

    def unchanged(
        self, step: Callable[..., Any], name: str, fn: Callable[[], Any]
    ) -> CQError | None:
        """``fn()`` through ``step``; when it is rejected the store must be as it was. The
        package error that rejected it, or None."""
        before = self._state()
        rejected: list[CQError] = []

        def call() -> None:
            try:
                fn()
            except CQError as e:
                rejected.append(e)
                raise

        step(name, call)
        if rejected and self._state() != before:
            raise Bug(f"{name} was rejected and changed the store")
        return rejected[0] if rejected else None

    def _state(self) -> tuple[int, dict[str, list[str]]]:
        return self.store.version(), {
            n: sorted(map(repr, self.store.read(n).to_pylist())) for n in self.store.names()
        }
