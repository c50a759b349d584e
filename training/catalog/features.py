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
    ``slot`` is where its value stands in the producer's output (``-1``: a scalar)."""

    name: str
    doc: str
    producer: Callable[..., Any]
    args: tuple[Any, ...] = ()
    slot: int = -1

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

    def feature(self, name: str, doc: str) -> Callable[[Callable[[D], float]], Callable[[D], float]]:
        """Register ``fn(desk) -> float`` as the feature ``name``."""
        def register(fn: Callable[[D], float]) -> Callable[[D], float]:
            self._add(Feature(name, doc, fn))
            return fn
        return register

    def family(self, pattern: str, n: int, doc: str) -> Callable[[Callable[[D, int], float]], Callable[[D, int], float]]:
        """Register ``fn(desk, i) -> float`` as the features ``pattern.format(i=i)`` for each
        slot ``i < n`` (``{i}`` in ``doc`` is the slot too)."""
        def register(fn: Callable[[D, int], float]) -> Callable[[D, int], float]:
            for i in range(n):
                self._add(Feature(pattern.format(i=i), doc.format(i=i), fn, (i,)))
            return fn
        return register

    def block(self, named: Sequence[tuple[str, str]]) -> Callable[[Callable[[D], Sequence[float]]], Callable[[D], Sequence[float]]]:
        """Register ``fn(desk) -> values`` as the features ``named`` (``(name, doc)`` pairs):
        the k-th value is the k-th name's."""
        def register(fn: Callable[[D], Sequence[float]]) -> Callable[[D], Sequence[float]]:
            for k, (name, doc) in enumerate(named):
                self._add(Feature(name, doc, fn, (), k))
            return fn
        return register

    def block_family(self, named: Sequence[tuple[str, str]], n: int
                     ) -> Callable[[Callable[[D, int], Sequence[float]]], Callable[[D, int], Sequence[float]]]:
        """A block per slot: ``fn(desk, i) -> values`` for the names ``name.format(i=i)``."""
        def register(fn: Callable[[D, int], Sequence[float]]) -> Callable[[D, int], Sequence[float]]:
            for i in range(n):
                for k, (name, doc) in enumerate(named):
                    self._add(Feature(name.format(i=i), doc.format(i=i), fn, (i,), k))
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
        for position, f in enumerate(features):
            calls.setdefault((f.producer, f.args), []).append((f.slot, position))
        namespace: dict[str, Any] = {"_array": np.array, "_float32": np.float32, "_min": np.minimum, "_max": np.maximum}
        lines, values = ["def plan(desk):"], [""] * self.size
        for k, ((producer, args), targets) in enumerate(calls.items()):
            namespace[f"p{k}"], namespace[f"a{k}"] = producer, args
            lines.append(f"    r{k} = p{k}(desk{', *a' + str(k) if args else ''})")
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
        calls = []
        for k, a in enumerate(actions):
            namespace[f"l{k}"], namespace[f"a{k}"] = a.legal, a.args
            calls.append(f"l{k}(desk{', *a' + str(k) if a.args else ''})")
        self.source = f"def mask(desk):\n    return _array([{', '.join(calls)}], dtype=bool)\n"
        exec(compile(self.source, f"<MaskPlan of {len(calls)} actions>", "exec"), namespace)  # noqa: S102
        self._mask: Callable[[Any], np.ndarray] = namespace["mask"]

    def __call__(self, desk: Any) -> np.ndarray:
        return self._mask(desk)


@dataclass(frozen=True)
class Action:
    """One named catalog action: its native ``tool``, how it is grounded and when it is legal."""

    name: str
    tool: str
    doc: str
    ground: Callable[..., dict[str, Any] | None]
    legal: Callable[..., bool]
    args: tuple[Any, ...] = ()

    @property
    def definition(self) -> ActionDef:
        return ActionDef(self.name, self.tool, self.doc)


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

    def action(self, name: str, tool: str, doc: str, legal: Callable[[D], bool] = always
               ) -> Callable[[Callable[[D], dict[str, Any] | None]], Callable[[D], dict[str, Any] | None]]:
        """Register ``ground(desk) -> call | None`` as the action ``name`` over ``tool``."""
        def register(fn: Callable[[D], dict[str, Any] | None]) -> Callable[[D], dict[str, Any] | None]:
            self._add(Action(name, tool, doc, fn, legal))
            return fn
        return register

    def family(self, pattern: str, n: int, tool: str, doc: str, legal: Callable[[D, int], bool] = always
               ) -> Callable[[Callable[[D, int], dict[str, Any] | None]], Callable[[D, int], dict[str, Any] | None]]:
        """Register ``ground(desk, i)`` as the actions ``pattern.format(i=i)``, ``i < n``."""
        def register(fn: Callable[[D, int], dict[str, Any] | None]) -> Callable[[D, int], dict[str, Any] | None]:
            for i in range(n):
                self._add(Action(pattern.format(i=i), tool, doc.format(i=i), fn, legal, (i,)))
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


__all__ = ["Action", "Actions", "Desk", "Feature", "Features", "MaskPlan", "VectorPlan", "always", "derived"]
