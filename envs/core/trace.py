"""The trace: one JSONL line per tool call, written with orjson.

Fields: ``episode_id``, ``domain``, ``task_id``, ``seed``, ``step``, ``clock`` (simulated time
before the call), ``tool``, ``args``, ``result_status``, ``error_code``, ``changed_ids``
(``table:id``) and ``result`` (what the tool returned). The line of the step that ends the
episode also carries ``end_state_hash``, ``grade`` and ``max_steps`` (the episode's step limit;
``scale`` too for a generated task built at a scale above 1) so a replay can be checked
against it.

``tool`` and ``args`` are the call as JSON: ``args`` is ``null`` for a malformed action (one
that is not ``{"tool": str, "args": {...}}``, or whose arguments are not JSON) and orjson's
reading of the arguments otherwise, which is lossy for a few Python values (NaN and infinities
become ``null``, tuples lists). Whenever ``tool`` and ``args`` would not send the same action
again, the line also carries ``sent``: the whole action exactly as the agent sent it, in the
tagged encoding of :func:`encode_sent` (a stable JSON form that keeps non-finite floats, ints
beyond 64 bits, non-string keys, tuples, sets, bytes and strings that are not valid Unicode
apart from ``null``, lists and each other). :func:`decode_sent` rebuilds the action and replay
sends it. Traces written before ``sent`` existed still read and replay.
"""

from __future__ import annotations

import base64
import math
import re
import types
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from backoffice.envs.core.canonical import dumps, loads, valid_text

TRACE_FIELDS = (
    "episode_id", "domain", "task_id", "seed", "step", "clock", "tool", "args",
    "result_status", "error_code", "changed_ids", "result",
)

#: a string or bytes action longer than this is traced by its length only (``$long``): the env
#: refuses it unread (:data:`backoffice.envs.core.spaces.ACTION_MAX_BYTES`), so its content
#: never matters; kept equal to that limit by a test
LONG_ACTION = 65_536
_SCALARS = frozenset((str, int, bool, type(None)))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson writes as a JSON number
_TAGS = frozenset((
    "$float", "$int", "$str", "$tuple", "$set", "$frozenset", "$bytes", "$bytearray", "$map",
    "$mapping", "$long", "$opaque",
))


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is exactly JSON data, so that orjson's reading of it is lossless: ``str``,
    ``int``, ``bool``, ``None``, finite ``float``, and ``list``/``dict`` (string keys) of
    those, exact types only (no subclasses, tuples, NaN or infinities). Strings that are not
    valid Unicode and ints beyond 64 bits pass here; orjson refuses them. (Checked on every
    step's arguments, so the flat case is one loop.)"""
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or (type(v) not in _SCALARS and not is_plain_json(v)):
                return False
        return True
    if kind in _SCALARS:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        for v in value:
            if type(v) not in _SCALARS and not is_plain_json(v):
                return False
        return True
    return False


def encode_sent(value: Any, top: bool = True) -> Any:
    """The tagged JSON form of an action (or any value in it) that :func:`decode_sent` turns
    back into an equal value. Never raises.

    JSON data stays as it is (objects with string keys, unless their one key is a tag);
    anything else is a one-key object whose key names the kind: ``{"$float": "nan"}``
    (``"inf"``, ``"-inf"``), ``{"$int": "0x..."}`` (beyond 64 bits), ``{"$str": ...}`` (not
    valid Unicode: the ``unicode_escape`` text), ``{"$tuple": [...]}``, ``{"$set": [...]}`` and
    ``{"$frozenset": [...]}`` (items in canonical order), ``{"$bytes": base64}``,
    ``{"$bytearray": base64}``, ``{"$map": [[key, value], ...]}`` (a dict with a key that is not
    a valid string, or whose one key is a tag), ``{"$mapping": [[key, value], ...]}`` (a mapping that is not a dict),
    ``{"$long": {"type": "str"|"bytes", "length": n}}`` (an action longer than
    :data:`LONG_ACTION`, at the top only) and ``{"$opaque": {"type", "repr", "json"}}`` for a value
    no trace can rebuild (an object, a numpy scalar, a datetime: ``json`` tells whether orjson
    serialised it). Subclasses of ``str``, ``int``, ``list`` and ``dict`` (which orjson writes as
    their base type) are encoded as that base type."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        if top and len(value) > LONG_ACTION:
            return {"$long": {"type": "str", "length": len(value)}}
        text = str.__str__(value)
        return text if valid_text(text) else {"$str": text.encode("unicode_escape").decode("ascii")}
    if isinstance(value, int):
        number = int(value)
        return number if _INT_MIN <= number <= _INT_MAX else {"$int": hex(number)}
    if type(value) is float:
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, (bytes, bytearray)) and type(value) in (bytes, bytearray):
        if top and type(value) is bytes and len(value) > LONG_ACTION:
            return {"$long": {"type": "bytes", "length": len(value)}}
        return {"$" + type(value).__name__: base64.b64encode(value).decode("ascii")}
    if isinstance(value, list):
        return [encode_sent(v, False) for v in value]
    if type(value) is tuple:
        return {"$tuple": [encode_sent(v, False) for v in value]}
    if type(value) in (set, frozenset):
        items = sorted((encode_sent(v, False) for v in value), key=dumps)
        return {"$" + type(value).__name__: items}
    if isinstance(value, dict):
        keys = list(value)
        if all(type(k) is str and valid_text(k) for k in keys) and not (len(keys) == 1 and keys[0] in _TAGS):
            return {k: encode_sent(v, False) for k, v in value.items()}
        return {"$map": [[encode_sent(k, False), encode_sent(v, False)] for k, v in value.items()]}
    if isinstance(value, Mapping):
        try:
            pairs = list(value.items())
        except Exception:
            return _opaque(value)
        return {"$mapping": [[encode_sent(k, False), encode_sent(v, False)] for k, v in pairs]}
    return _opaque(value)


def _opaque(value: Any) -> dict[str, Any]:
    try:  # without the memory addresses of default reprs: a trace never depends on the process
        text = _ADDRESS.sub("", ascii(value))[:200]
    except Exception:
        text = "<repr failed>"
    try:
        orjson.dumps(value)
        serialisable = True
    except Exception:
        serialisable = False
    kind = type(value)
    return {"$opaque": {"type": f"{kind.__module__}.{kind.__qualname__}", "repr": text, "json": serialisable}}


@dataclass(frozen=True)
class OpaqueRecord:
    """What replay sends for a traced value it cannot rebuild that orjson serialised (a
    datetime, an enum, a dataclass): orjson serialises it too, no tool argument accepts it."""

    type: str
    repr: str


class OpaqueValue:
    """What replay sends for a traced value it cannot rebuild that orjson refused (an object, a
    numpy scalar): orjson refuses it too."""

    __slots__ = ("type", "repr")

    def __init__(self, type: str, repr: str):
        self.type, self.repr = type, repr

    def __repr__(self) -> str:
        return f"<opaque {self.type} {self.repr}>"


def decode_sent(data: Any) -> Any:
    """The value :func:`encode_sent` encoded (``$opaque`` values become an :class:`OpaqueRecord`
    or :class:`OpaqueValue` stand-in, ``$long`` actions a string or bytes of that length).
    Raises ``ValueError`` on data that is no such encoding."""
    if isinstance(data, list):
        return [decode_sent(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        (tag, body), = data.items()
        if tag in _TAGS:
            return _decode_tag(tag, body)
    return {k: decode_sent(v) for k, v in data.items()}


def _decode_tag(tag: str, body: Any) -> Any:
    if tag == "$float":
        return float(body)
    if tag == "$int":
        return int(body, 16)
    if tag == "$str":
        return str(body).encode("ascii").decode("unicode_escape")
    if tag == "$tuple":
        return tuple(decode_sent(v) for v in body)
    if tag == "$set":
        return {decode_sent(v) for v in body}
    if tag == "$frozenset":
        return frozenset(decode_sent(v) for v in body)
    if tag == "$bytes":
        return base64.b64decode(body)
    if tag == "$bytearray":
        return bytearray(base64.b64decode(body))
    if tag == "$map":
        return {decode_sent(k): decode_sent(v) for k, v in body}
    if tag == "$mapping":
        return types.MappingProxyType({decode_sent(k): decode_sent(v) for k, v in body})
    if tag == "$long":
        return " " * int(body["length"]) if body["type"] == "str" else b" " * int(body["length"])
    if tag == "$opaque":
        cls = OpaqueRecord if body.get("json") else OpaqueValue
        return cls(str(body.get("type")), str(body.get("repr")))
    raise ValueError(f"unknown tag {tag!r}")


def has_opaque(data: Any) -> bool:
    """Whether a ``sent`` encoding holds a value replay cannot rebuild (``$opaque``)."""
    if isinstance(data, list):
        return any(has_opaque(v) for v in data)
    if isinstance(data, dict):
        return "$opaque" in data or any(has_opaque(v) for v in data.values())
    return False


class TraceWriter:
    """Appends trace records to a JSONL file, opened lazily and flushed per episode."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fh: IO[bytes] | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
        self._fh.write(dumps(record) + b"\n")

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """All records of a trace file (a torn last line is ignored)."""
    records = []
    with open(path, "rb") as fh:
        for line in fh:
            try:
                records.append(loads(line))
            except Exception:
                break
    return records


def episodes(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Group trace records by ``episode_id`` (first-seen order), each sorted by step.

    A reset to the same task and seed reuses an episode id, so a new episode also starts
    whenever ``step`` goes back to 1.
    """
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    run: dict[str, int] = defaultdict(int)
    order: list[tuple[str, int]] = []
    for rec in records:
        eid = rec["episode_id"]
        if rec["step"] == 1:
            run[eid] += 1
        key = (eid, run[eid])
        if key not in groups:
            order.append(key)
        groups[key].append(rec)
    for key in order:
        yield sorted(groups[key], key=lambda r: r["step"])
