"""Named features and actions of a domain's catalog, and the one vector builder every tier uses.

A domain's catalog keeps one observation state, its **desk** (:class:`Desk`): what the agent has
read so far (the brief, the tool results), updated by :meth:`Desk.observe` after every call.
Everything else is a named function of the desk, written once:

- a **feature** is one observed fact, comparison or conclusion: ``fn(desk) -> float`` in
  ``[-1, 1]``; a slot family ``row[i].covers_type`` takes the slot index, ``fn(desk, i)``; a
  **block** computes several named values together (a one-hot, a slot's row of values) when
  that is how they are read;
- an **action** grounds one native call: ``ground(desk) -> {"tool", "args"} | None`` (``None``:
  its slot is empty), with ``legal(desk) -> bool``, the mask (legality only, never judgement);
  an action family takes the slot index too.

A tier (:mod:`.tier`) is then a declaration: the ordered feature names and action names it uses.
:class:`VectorPlan` turns a tier's feature names into one call per producing function per step
(a block or a family member shared by two features of the tier is computed once).

::

    FEATURES = Features()

    @FEATURES.feature("request_read", "1 once get_request returned the target request")
    def request_read(desk: ApprovalsDesk) -> float:
        return float(desk.request is not None)

    @FEATURES.family("row[{i}].in_effect", N_ROWS, "1 if row slot {i} is in effect now")
    def row_in_effect(desk: ApprovalsDesk, i: int) -> float:
        ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import numpy as np

from backoffice.training.catalog.base import ActionDef, FeatureDef

D = TypeVar("D", bound="Desk")
T = TypeVar("T")


class Desk:
    """A domain's observation state: what the agent has read, nothing else (never the store or
    the answer key). Subclasses implement :meth:`reset` and :meth:`observe` and keep plain
    attributes; :meth:`memo` caches a value derived from them until the next observation, so a
    fact several features read (an assessment, a band lookup) is computed once per step."""

    def __init__(self) -> None:
        self._memo: dict[Any, Any] = {}

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:  # pragma: no cover - interface
        """Forget the last episode; ``brief`` is the parsed reset observation."""
        raise NotImplementedError

    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:  # pragma: no cover
        """Take in the parsed native observation ``result`` of ``call``, made for the catalog
        action named ``action``."""
        raise NotImplementedError

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()``, cached until :meth:`changed` (which the catalog calls after every
        reset and observation)."""
        memo = self._memo
        if key in memo:
            return memo[key]
        value = memo[key] = compute()
        return value

    def changed(self) -> None:
        """Forget the derived values: the desk's state changed."""
        self._memo.clear()


@dataclass(frozen=True)
class Feature:
    """One named feature: ``producer`` computes it (alone, or in a block with others) and
    ``slot`` is where its value stands in the producer's output (``-1``: a scalar).

    ``count`` (slot families only, whose first argument is the slot index): the number of
    slots filled now, ``count(desk)``; the producer of a slot at or past it is not called and
    its values are 0. ``gate``: what the values need to be other than 0, ``gate(desk)`` (a
    current line, say), computed once a step for every producer sharing it. The producer must
    give 0 in both cases too: the builder only skips the call."""

    name: str
    doc: str
    producer: Callable[..., Any]
    args: tuple[Any, ...] = ()
    slot: int = -1
    count: Callable[[Any], int] | None = None
    gate: Callable[[Any], bool] | None = None

    @property
    def definition(self) -> FeatureDef:
        return FeatureDef(self.name, self.doc)


def derived(fn: Callable[[D], T]) -> Callable[[D], T]:
    """A desk method whose value is computed once per step: cached in the desk's memo (under
    the method's name) until :meth:`Desk.changed`. The same as ``self.memo(name, ...)`` with
    one call less on the hot path, where a step reads the same derived value many times."""
    key = fn.__name__

    @functools.wraps(fn)
    def get(desk: D) -> T:
        memo = desk._memo
        if key in memo:
            return memo[key]
        value: T = fn(desk)
        memo[key] = value
        return value

    return get


class Features(Generic[D]):
    """A domain's registry of named features (see the module docstring)."""

    def __init__(self) -> None:
        self._by_name: dict[str, Feature] = {}

    def _add(self, feature: Feature) -> None:
        if feature.name in self._by_name:
            raise ValueError(f"feature {feature.name!r} is defined twice")
        self._by_name[feature.name] = feature

    def feature(self, name: str, doc: str, gate: Callable[[D], bool] | None = None
                ) -> Callable[[Callable[[D], float]], Callable[[D], float]]:
        """Register ``fn(desk) -> float`` as the feature ``name`` (``gate``: see :class:`Feature`)."""
        def register(fn: Callable[[D], float]) -> Callable[[D], float]:
            self._add(Feature(name, doc, fn, gate=gate))
            return fn
        return register

    def family(self, pattern: str, n: int, doc: str, count: Callable[[D], int] | None = None,
               gate: Callable[[D], bool] | None = None) -> Callable[[Callable[[D, int], float]], Callable[[D, int], float]]:
        """Register ``fn(desk, i) -> float`` as the features ``pattern.format(i=i)`` for each
        slot ``i < n`` (``{i}`` in ``doc`` is the slot too); ``count`` and ``gate``: see
        :class:`Feature`."""
        def register(fn: Callable[[D, int], float]) -> Callable[[D, int], float]:
            for i in range(n):
                self._add(Feature(pattern.format(i=i), doc.format(i=i), fn, (i,), count=count, gate=gate))
            return fn
        return register

    def block(self, named: Sequence[tuple[str, str]], gate: Callable[[D], bool] | None = None
              ) -> Callable[[Callable[[D], Sequence[float]]], Callable[[D], Sequence[float]]]:
        """Register ``fn(desk) -> values`` as the features ``named`` (``(name, doc)`` pairs):
        the k-th value is the k-th name's (``gate``: see :class:`Feature`)."""
        def register(fn: Callable[[D], Sequence[float]]) -> Callable[[D], Sequence[float]]:
            for k, (name, doc) in enumerate(named):
                self._add(Feature(name, doc, fn, (), k, gate=gate))
            return fn
        return register

    def block_family(self, named: Sequence[tuple[str, str]], n: int, count: Callable[[D], int] | None = None,
                     gate: Callable[[D], bool] | None = None
                     ) -> Callable[[Callable[[D, int], Sequence[float]]], Callable[[D, int], Sequence[float]]]:
        """A block per slot: ``fn(desk, i) -> values`` for the names ``name.format(i=i)``;
        ``count`` and ``gate``: see :class:`Feature`."""
        def register(fn: Callable[[D, int], Sequence[float]]) -> Callable[[D, int], Sequence[float]]:
            for i in range(n):
                for k, (name, doc) in enumerate(named):
                    self._add(Feature(name.format(i=i), doc.format(i=i), fn, (i,), k, count, gate))
            return fn
        return register

    def add(self, feature: Feature) -> None:
        """Register an already built feature (e.g. one a user's tier brings)."""
        self._add(feature)

    def shown_as(self, name: str, registered: str) -> Feature:
        """The feature ``registered`` shown under ``name`` in a tier (a name two tiers give
        different values, registered apart, or a fact a tier calls otherwise)."""
        return replace(self[registered], name=name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Feature:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no feature named {name!r}; e.g. {', '.join(list(self._by_name)[:8])} ...") from None

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def select(self, names: Iterable[str | Feature]) -> tuple[Feature, ...]:
        """The features of a tier, in its order: names from this registry or :class:`Feature`
        objects of the tier's own."""
        return tuple(n if isinstance(n, Feature) else self[n] for n in names)


class VectorPlan:
    """A tier's features as one call per distinct (producer, args) per step: the generic vector
    builder. Values outside ``[-1, 1]`` are clipped.

    The plan is compiled once per tier into one Python function (as :mod:`dataclasses` writes
    ``__init__``): a call per producer, then the clipped values in the tier's order. A loop over
    the calls cost as much as the features themselves (the catalog step is the training hot
    path); the generated source is kept in :attr:`source` for reading."""

    def __init__(self, features: Sequence[Feature]):
        self.size = len(features)
        calls: dict[tuple[Any, tuple[Any, ...]], list[tuple[int, int]]] = {}
        gates: dict[tuple[Any, tuple[Any, ...]], Feature] = {}
        for position, f in enumerate(features):
            calls.setdefault((f.producer, f.args), []).append((f.slot, position))
            if f.count is not None or f.gate is not None:
                gates[(f.producer, f.args)] = f
        namespace: dict[str, Any] = {"_array": np.array, "_float32": np.float32, "_min": np.minimum, "_max": np.maximum}
        lines, values = ["def plan(desk):"], [""] * self.size
        once: dict[Any, str] = {}  # a gate or count -> the local holding it, computed once a step

        def local(fn: Callable[[Any], Any]) -> str:
            if fn not in once:
                once[fn] = name = f"g{len(once)}"
                namespace[f"{name}_fn"] = fn
                lines.append(f"    {name} = {name}_fn(desk)")
            return once[fn]

        for k, ((producer, args), targets) in enumerate(calls.items()):
            namespace[f"p{k}"], namespace[f"a{k}"] = producer, args
            call = f"p{k}(desk{', *a' + str(k) if args else ''})"
            gated = gates.get((producer, args))
            if gated is not None:  # past the filled slots, or with its gate closed, the producer gives 0: not called
                conditions = ([f"{local(gated.count)} > {args[0]}"] if gated.count is not None else []) + (
                    [local(gated.gate)] if gated.gate is not None else [])
                last = max(slot for slot, _ in targets)
                namespace[f"z{k}"] = 0.0 if last < 0 else (0.0,) * (last + 1)
                call = f"{call} if {' and '.join(conditions)} else z{k}"
            lines.append(f"    r{k} = {call}")
            for slot, position in targets:
                values[position] = f"r{k}" if slot < 0 else f"r{k}[{slot}]"
        # clipped once, in place, as float32 (the same values as clipping each one first)
        lines.append(f"    out = _array([{', '.join(values)}], dtype=_float32)")
        lines.append("    return _min(_max(out, -1.0, out=out), 1.0, out=out)")
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, f"<VectorPlan of {self.size} features>", "exec"), namespace)  # noqa: S102
        self._plan: Callable[[Any], np.ndarray] = namespace["plan"]

    def __call__(self, desk: Any) -> np.ndarray:
        return self._plan(desk)


class MaskPlan:
    """A tier's mask: each action's ``legal(desk, *args)`` in the tier's order, compiled once per
    tier into one function like :class:`VectorPlan` (source in :attr:`source`)."""

    def __init__(self, actions: Sequence[Action]):
        namespace: dict[str, Any] = {"_array": np.array}
        calls: list[str] = []
        once: dict[Any, str] = {}  # a gate or count -> the local computing it once a step
        for k, a in enumerate(actions):
            namespace[f"l{k}"], namespace[f"a{k}"] = a.legal, a.args
            call = f"l{k}(desk{', *a' + str(k) if a.args else ''})"
            if isinstance(a.legal, InTable):  # one table a step for the group, a membership test each
                namespace[f"n{k}"] = a.legal.name
                call = f"(n{k} in {self._once(once, namespace, a.legal.table)})"
            if a.count is not None:
                call = f"({self._once(once, namespace, a.count)} > {a.args[0]} and {call})"
            if a.gate is not None:
                call = f"({self._once(once, namespace, a.gate)} and {call})"
            calls.append(call)
        head = "".join(f"    {name} = {name}_fn(desk)\n" for name in once.values())
        self.source = f"def mask(desk):\n{head}    return _array([{', '.join(calls)}], dtype=bool)\n"
        exec(compile(self.source, f"<MaskPlan of {len(calls)} actions>", "exec"), namespace)  # noqa: S102
        self._mask: Callable[[Any], np.ndarray] = namespace["mask"]

    def __call__(self, desk: Any) -> np.ndarray:
        return self._mask(desk)

    @staticmethod
    def _once(once: dict[Any, str], namespace: dict[str, Any], fn: Callable[[Any], Any]) -> str:
        """The local holding ``fn(desk)`` in the generated mask (computed once a step)."""
        if fn not in once:
            once[fn] = name = f"g{len(once)}"
            namespace[f"{name}_fn"] = fn
        return once[fn]


@dataclass(frozen=True)
class Action:
    """One named catalog action: its native ``tool``, how it is grounded and when it is legal.

    ``gate`` (optional): what the action's legality needs first, ``gate(desk)``, shared by a
    group of actions (a current line, say) and computed once a step; ``count`` (families, whose
    first argument is the slot index): the number of slots filled now. The mask builder skips
    ``legal`` when the gate fails or the slot is at or past the count (``legal`` must be false
    there too: the builder only skips the call)."""

    name: str
    tool: str
    doc: str
    ground: Callable[..., dict[str, Any] | None]
    legal: Callable[..., bool]
    args: tuple[Any, ...] = ()
    gate: Callable[[Any], bool] | None = None
    count: Callable[[Any], int] | None = None

    @property
    def definition(self) -> ActionDef:
        return ActionDef(self.name, self.tool, self.doc)


class InTable:
    """The legality of an action read from a table of the legal action names that ``table``
    computes once a step for a group of actions (``table(desk) -> frozenset[str]``, cached by
    the caller, e.g. a ``@derived`` function): ``InTable(table, "open_hit[2]")``. The mask
    builder reads the table once and checks membership without a call per action."""

    def __init__(self, table: Callable[[Any], Any], name: str):
        self.table, self.name = table, name

    def __call__(self, desk: Any, *args: Any) -> bool:
        return self.name in self.table(desk)


def always(desk: Any, *args: Any) -> bool:
    """The legality of an action that is always valid (``submit``)."""
    return True


class Actions(Generic[D]):
    """A domain's registry of named actions: ``ground`` and ``legal`` per action or family."""

    def __init__(self) -> None:
        self._by_name: dict[str, Action] = {}

    def _add(self, action: Action) -> None:
        if action.name in self._by_name:
            raise ValueError(f"action {action.name!r} is defined twice")
        self._by_name[action.name] = action

    def action(self, name: str, tool: str, doc: str, legal: Callable[[D], bool] = always,
               gate: Callable[[D], bool] | None = None
               ) -> Callable[[Callable[[D], dict[str, Any] | None]], Callable[[D], dict[str, Any] | None]]:
        """Register ``ground(desk) -> call | None`` as the action ``name`` over ``tool``
        (``gate``: see :class:`Action`)."""
        def register(fn: Callable[[D], dict[str, Any] | None]) -> Callable[[D], dict[str, Any] | None]:
            self._add(Action(name, tool, doc, fn, legal, gate=gate))
            return fn
        return register

    def family(self, pattern: str, n: int, tool: str, doc: str, legal: Callable[[D, int], bool] = always,
               gate: Callable[[D], bool] | None = None, count: Callable[[D], int] | None = None
               ) -> Callable[[Callable[[D, int], dict[str, Any] | None]], Callable[[D, int], dict[str, Any] | None]]:
        """Register ``ground(desk, i)`` as the actions ``pattern.format(i=i)``, ``i < n``
        (``gate`` and ``count``: see :class:`Action`)."""
        def register(fn: Callable[[D, int], dict[str, Any] | None]) -> Callable[[D, int], dict[str, Any] | None]:
            for i in range(n):
                self._add(Action(pattern.format(i=i), tool, doc.format(i=i), fn, legal, (i,), gate, count))
            return fn
        return register

    def add(self, action: Action) -> None:
        self._add(action)

    def shown_as(self, name: str, registered: str) -> Action:
        """The action ``registered`` shown under ``name`` in a tier (a name two tiers ground or
        check differently, registered apart)."""
        return replace(self[registered], name=name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Action:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no action named {name!r}; e.g. {', '.join(list(self._by_name)[:8])} ...") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def select(self, names: Iterable[str | Action]) -> tuple[Action, ...]:
        return tuple(n if isinstance(n, Action) else self[n] for n in names)


__all__ = ["Action", "Actions", "Desk", "Feature", "Features", "InTable", "MaskPlan", "VectorPlan", "always", "derived"]
