"""What each of the core's operators is, as the core registered it beside the operator
(src_cpp/operators/descriptor.h): the planner, explain and the Spark runner ask here instead of
keeping tables of operator names.

>>> d = descriptor("window")
>>> d.output, d.firing, d.keeps_identity
('relation', 'expirations', False)
>>> sorted(d.name for d in descriptors() if d.relation_to_stream)
['dstream', 'dstream_aggregate', 'istream', 'istream_aggregate', 'istream_join',
 'master_trigger', 'rstream', 'swj_route_istream']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["OperatorDescriptor", "descriptor", "descriptors", "find"]


@dataclass(frozen=True)
class OperatorDescriptor:
    """One operator's facts (the C++ struct's fields, its enums as the strings Python reads).

    ``output`` is "stream", "relation" or "as input"; ``firing`` the DTS executor's firing point
    ("input", "expirations", "every tick", "delayed output", or "" for none); ``lifetimes`` how its
    output's lifetime property follows ("own": the planner sets it, "first input", "join",
    "union"); ``partition`` what Spark must prove of the key ("per row", "never",
    "partition keys", "join keys", "group keys", "whole rows"); ``columns`` where its output
    columns come from ("source", "pass", "project", "group keys", "concat", "merge", "extend");
    ``role`` "stream source", "relation source", "output" or "".
    """

    name: str
    description: str
    output: str
    firing: str
    lifetimes: str
    partition: str
    columns: str
    role: str
    keeps_identity: bool
    shareable: bool
    tracks_lifetimes: bool
    arrival_order: bool
    negative_form: bool

    @property
    def relation_to_stream(self) -> bool:
        """ISTREAM, DSTREAM, RSTREAM (and an aggregate fused with one): turns a relation into a
        stream (so a delay may follow it)."""
        return self.output == "stream" and not self.role.endswith("source")


@lru_cache(maxsize=1)
def _registered() -> dict[str, OperatorDescriptor]:
    from cq_core import operator_descriptors

    out = {}
    for d in operator_descriptors():
        text = {k: v for k, v in d.items() if isinstance(v, str)}
        flag = {k: v for k, v in d.items() if isinstance(v, bool)}
        out[text["name"]] = OperatorDescriptor(
            name=text["name"],
            description=text["description"],
            output=text["output"],
            firing=text["firing"],
            lifetimes=text["lifetimes"],
            partition=text["partition"],
            columns=text["columns"],
            role=text["role"],
            keeps_identity=flag["keeps_identity"],
            shareable=flag["shareable"],
            tracks_lifetimes=flag["tracks_lifetimes"],
            arrival_order=flag["arrival_order"],
            negative_form=flag["negative_form"],
        )
    return out


def descriptors() -> list[OperatorDescriptor]:
    """Every operator the core can build, by name.

    >>> "join" in [d.name for d in descriptors()]
    True
    """
    return list(_registered().values())


def descriptor(op: str) -> OperatorDescriptor:
    """The descriptor of the plan's operator ``op``; KeyError when the core has no such operator.

    >>> descriptor("filter").keeps_identity
    True
    """
    return _registered()[op]


def find(op: str) -> OperatorDescriptor | None:
    """The descriptor of ``op``, or None when the core has no such operator (explain shows plans
    the core cannot run yet).

    >>> find("no_such_operator") is None
    True
    """
    return _registered().get(op)
