"""Spaces: a tool-call action space and a printable-text observation space."""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from backoffice.envs.core.canonical import loads, valid_text

#: Observations are canonical ASCII JSON, so printable ASCII (space .. tilde) is enough.
OBS_CHARSET = "".join(chr(c) for c in range(32, 127))
OBS_MAX_LENGTH = 200_000
#: Actions longer than this (as JSON) are rejected before parsing.
ACTION_MAX_BYTES = 65_536


class ObservationText(spaces.Text):
    """The observation space: printable-ASCII ``Text`` that also works in Gymnasium's
    ``AsyncVectorEnv`` with ``shared_memory=True`` (its default).

    Gymnasium reads a ``Text`` shared-memory buffer once, into a tuple of strings, at the
    vector env's construction, so every later observation would be that zeroed buffer
    (``max_length`` spaces). The shared-memory functions registered below for this class
    return a live view instead, which the vector env deep-copies into a tuple of the current
    strings on every ``reset``/``step``; writing and reading are vectorised (ASCII bytes).
    """


def observation_space() -> spaces.Text:
    return ObservationText(max_length=OBS_MAX_LENGTH, min_length=0, charset=OBS_CHARSET)


class SharedTextView(Sequence):
    """The observations of a vector env's shared ``Text`` buffer, decoded when read.

    A ``deepcopy`` (what ``AsyncVectorEnv`` returns with ``copy=True``) is a plain tuple of
    ``str``; without the copy this view reads the buffer on every access."""

    def __init__(self, buffer: Any, n: int, max_length: int):
        self._buffer, self._n, self._max_length = buffer, n, max_length

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(index)
        row = np.frombuffer(self._buffer.get_obj(), dtype=np.int32)[(index % self._n) * self._max_length:][: self._max_length]
        end = np.flatnonzero(row >= len(OBS_CHARSET))
        codes = row[: int(end[0]) if end.size else self._max_length]
        return (codes + 32).astype(np.uint8).tobytes().decode("ascii")

    def __deepcopy__(self, memo: Any) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return repr(tuple(self))


def _register_shared_memory() -> None:
    from gymnasium.vector.utils import shared_memory as shm

    @shm.create_shared_memory.register(ObservationText)
    def _create(space: ObservationText, n: int = 1, ctx: Any = None) -> Any:
        import multiprocessing as mp

        return (ctx or mp).Array(np.dtype(np.int32).char, n * space.max_length)

    @shm.read_from_shared_memory.register(ObservationText)
    def _read(space: ObservationText, shared_memory: Any, n: int = 1) -> SharedTextView:
        return SharedTextView(shared_memory, n, space.max_length)

    @shm.write_to_shared_memory.register(ObservationText)
    def _write(space: ObservationText, index: int, value: str, shared_memory: Any) -> None:
        size = space.max_length
        codes = np.frombuffer(value.encode("ascii"), dtype=np.uint8).astype(np.int32) - 32
        row = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size:(index + 1) * size]
        row[: len(codes)] = codes
        row[len(codes):] = len(space.character_set)  # padding: what Gymnasium's flatten writes


_register_shared_memory()


_ACTION_KEYS = frozenset(("tool", "args"))


def parse_action(action: Any) -> tuple[str | None, Any, str | None]:
    """Split an action into ``(tool, args, problem)``; ``problem`` is ``None`` when well formed.

    Accepts ``{"tool": str, "args": dict}`` (``args`` may be omitted) or the same as JSON
    ``str``/``bytes``; a ``tool`` that is not valid Unicode text (lone surrogates) is
    malformed, reported with no tool. Never raises.
    """
    if type(action) is dict and action.keys() <= _ACTION_KEYS:  # the common case, checked fast
        tool, args = action.get("tool"), action.get("args", {})
        if type(tool) is str and tool and tool.isascii() and type(args) is dict:
            return tool, args, None
    if isinstance(action, (str, bytes)):
        if len(action) > ACTION_MAX_BYTES:
            return None, None, f"action longer than {ACTION_MAX_BYTES} characters"
        try:
            action = loads(action)
        except Exception:
            return None, None, "action is not valid JSON"
    if not isinstance(action, Mapping):
        return None, None, 'action must be {"tool": name, "args": {...}}'
    tool = action.get("tool")
    args = action.get("args", {})
    extra = [k for k in action if k not in ("tool", "args")]
    if not isinstance(tool, str) or not tool:
        return None, None, "action needs a non-empty string 'tool'"
    if not valid_text(tool):  # lone surrogates: no JSON text holds such a name
        return None, None, "'tool' is not valid Unicode text"
    if extra:
        return tool, args, "action has keys other than 'tool' and 'args'"
    if isinstance(args, (str, bytes)):  # a model's arguments text that did not parse
        try:
            decoded = loads(args)
        except Exception:
            return tool, args, "'args' is not a JSON object (unparsable arguments text)"
        if isinstance(decoded, Mapping):  # valid JSON, but text: e.g. arguments encoded twice
            return tool, args, "'args' is a JSON string holding an object: pass the object itself, not its JSON text"
        return tool, args, f"'args' is JSON text holding {type(decoded).__name__}, not an object"
    if not isinstance(args, Mapping):
        return tool, args, "'args' must be an object"
    return tool, args, None


class ToolCallSpace(spaces.Space):
    """Tool calls: ``{"tool": name, "args": {...}}`` or that object as a JSON string.

    ``contains`` checks the shape only (whether the call succeeds is the environment's business).
    ``sample`` draws plausible calls: a tool of the domain with arguments drawn from its JSON
    schema, using ids from ``vocabulary`` for string fields.
    """

    def __init__(self, tool_schemas: Sequence[Mapping[str, Any]],
                 vocabulary: Sequence[str] | Callable[[], Sequence[str]] = (), seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.tool_schemas = [dict(s) for s in tool_schemas]
        self._vocabulary = vocabulary

    @property
    def vocabulary(self) -> list[str]:
        """Ids used for string fields by :meth:`sample` (a callable given at construction is
        called on first use, so building the space reads no data)."""
        if callable(self._vocabulary):
            self._vocabulary = list(self._vocabulary())
        return self._vocabulary or ["x"]  # type: ignore[return-value]

    @vocabulary.setter
    def vocabulary(self, words: Sequence[str]) -> None:
        self._vocabulary = words

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles carry the words, not the callable (an env's bound method)
        state = dict(self.__dict__)
        state["_vocabulary"] = self.vocabulary
        return state

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        tool, args, problem = parse_action(x)
        return problem is None

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        if mask is not None or probability is not None:
            raise NotImplementedError("ToolCallSpace.sample takes no mask")
        rng = self.np_random
        schema = self.tool_schemas[int(rng.integers(len(self.tool_schemas)))]
        params = schema["parameters"]
        args = {}
        for name, prop in params.get("properties", {}).items():
            if name in params.get("required", ()) or rng.random() < 0.3:
                args[name] = self._value(prop, params.get("$defs", {}), rng)
        return {"tool": schema["name"], "args": args}

    def _value(self, prop: Mapping[str, Any], defs: Mapping[str, Any], rng: np.random.Generator, depth: int = 0) -> Any:
        if "$ref" in prop:
            prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
        if "enum" in prop:
            return prop["enum"][int(rng.integers(len(prop["enum"])))]
        if "anyOf" in prop:
            options = [p for p in prop["anyOf"] if p.get("type") != "null"] or prop["anyOf"]
            return self._value(options[int(rng.integers(len(options)))], defs, rng, depth)
        kind = prop.get("type")
        if kind == "integer":
            return int(rng.integers(prop.get("minimum", 0), min(prop.get("maximum", 100_000), 100_000) + 1))
        if kind == "number":
            return float(np.round(rng.uniform(0, 1000), 2))
        if kind == "boolean":
            return bool(rng.integers(2))
        if kind == "array" and depth < 2:
            return [self._value(prop.get("items", {}), defs, rng, depth + 1) for _ in range(int(rng.integers(0, 3)))]
        if kind == "string":
            if rng.random() < 0.8:
                return self.vocabulary[int(rng.integers(len(self.vocabulary)))]
            return "".join(rng.choice(list(string.ascii_letters)) for _ in range(int(rng.integers(1, 8))))
        return None

    def __repr__(self) -> str:
        return f"ToolCallSpace({len(self.tool_schemas)} tools)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and other.tool_schemas == self.tool_schemas
