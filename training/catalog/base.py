"""What a domain's action catalog is, and the agent-side state machine every consumer shares.

A :class:`CatalogSpec` turns a domain's open-ended tool calls into a fixed ``Discrete(K)``
catalog and a fixed-size feature vector, for off-the-shelf RL (stable-baselines3, sb3-contrib):

- **actions**: ``K`` :class:`ActionDef` s, tool templates times padded entity slots
  (``lookup_role_holders[2]``: the third candidate role the agent has seen). ``to_call`` grounds
  an action into one native tool call, filling its arguments from what tools returned so far.
- **features**: :class:`FeatureDef` s, each a float in ``[-1, 1]`` computed **only** from the
  brief and the tool results the agent has seen (never the answer key, never the store).
- **mask**: which actions are valid now; the finishing action (``submit``) always is.

:class:`CatalogAgent` runs a spec over native observations. The Gymnasium wrapper
(:mod:`backoffice.training.catalog.wrapper`) and the evaluation policy of a trained model
(:mod:`backoffice.training.rl.sb3_policy`) both use it, so training and evaluation see exactly the
same observation for the same history.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from backoffice.envs.core.canonical import loads

#: Tool name sent (as an invalid-args call) when an action's slot is empty: the native env
#: answers with an ``invalid_args`` error, so the step is recorded truthfully and costs a step.
EMPTY_SLOT_ARG = "catalog_slot_empty"


@dataclass(frozen=True)
class ActionDef:
    """One catalog action: a name (``get_request``, ``lookup_role_holders[2]``), the native
    tool it calls, and what it does."""

    name: str
    tool: str
    doc: str


@dataclass(frozen=True)
class FeatureDef:
    """One observation feature: a name and what it measures (range ``[-1, 1]``)."""

    name: str
    doc: str


def slots(name: str, tool: str, n: int, doc: str) -> tuple[ActionDef, ...]:
    """``n`` actions ``name[0]`` .. ``name[n-1]`` over the same tool; ``{i}`` in ``doc`` is the slot."""
    return tuple(ActionDef(f"{name}[{i}]", tool, doc.format(i=i)) for i in range(n))


def scale(value: float | None, full: float) -> float:
    """``value / full`` clipped to ``[-1, 1]`` (0 for ``None``): for amounts and counts."""
    if value is None or full <= 0:
        return 0.0
    return float(max(-1.0, min(1.0, value / full)))


class CatalogSpec(ABC):
    """A domain's catalog. One instance serves one env; ``reset`` starts each episode.

    Subclasses set the class attributes and implement the five methods. Everything a method
    reads must come from ``brief``, ``info`` (task id, allowed tools, schemas) and the results
    passed to :meth:`observe`.
    """

    #: domain name (``approvals``)
    domain: ClassVar[str]
    #: the feature tier this spec implements (see ``backoffice.training.catalog.TIERS``)
    tier: ClassVar[str] = "conclusions"
    #: the catalog, fixed per env id (never per task)
    actions: ClassVar[tuple[ActionDef, ...]]
    #: the domain's features, fixed per env id
    features: ClassVar[tuple[FeatureDef, ...]]
    #: name of the finishing tool; its action is always valid
    finish_tool: ClassVar[str] = "submit"
    #: truncation limit for catalog episodes (``None``: the domain's default)
    max_steps: ClassVar[int | None] = None
    #: training hyperparameters tuned for this catalog (``TrainConfig`` fields such as
    #: ``gamma``, ``ent_coef``, ``n_steps``, ``finish_bias``); command-line values override them
    hyperparams: ClassVar[Mapping[str, Any]] = {}
    #: action family -> feature group of its slots (``decide_proceed[i]`` acts on the entity whose
    #: features are ``row[i].*``): what ``policy="slots"`` shares between slots (empty: none)
    slot_actions: ClassVar[Mapping[str, str]] = {}
    #: feature groups ``<group>[i].*`` that ``policy="slots"`` encodes as a set though no action
    #: picks from them (listed payments to compare, say)
    slot_sets: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def finish_action(cls) -> int:
        """Index of the finishing action."""
        return next(i for i, a in enumerate(cls.actions) if a.tool == cls.finish_tool)

    @abstractmethod
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        """Forget the last episode; ``brief`` is the parsed reset observation."""

    @abstractmethod
    def to_call(self, action: int) -> dict[str, Any] | None:
        """The native call ``{"tool", "args"}`` of ``action`` now, or ``None`` if its slot is empty."""

    @abstractmethod
    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
        """Take in the parsed native observation returned by ``call`` (made for ``action``)."""

    @abstractmethod
    def mask(self) -> np.ndarray:
        """Boolean ``(K,)``: actions valid now. The wrapper forces the finishing action on."""

    @abstractmethod
    def feature_vector(self) -> np.ndarray:
        """Float ``(len(features),)`` in ``[-1, 1]``, from observations only."""


#: Features every catalog env has, ahead of the domain's own (then one ``taken[...]`` per action).
GENERIC_FEATURES: tuple[FeatureDef, ...] = (
    FeatureDef("step_fraction", "steps taken / the catalog's step limit (clipped at 1; the same scale in training and evaluation)"),
    FeatureDef("last_call_error", "1 if the last tool call returned an error"),
)


class CatalogAgent:
    """The agent-side state of a catalog episode: grounds actions, reads observations, builds
    the feature vector and the mask. Used by the env wrapper and by trained-model policies."""

    def __init__(self, spec: CatalogSpec, max_steps: int):
        self.spec = spec
        self.n_actions = len(spec.actions)
        self.finish = spec.finish_action()
        self.max_steps = max_steps
        self.feature_defs: tuple[FeatureDef, ...] = (
            *GENERIC_FEATURES,
            *(FeatureDef(f"taken[{a.name}]", f"1 if `{a.name}` has been called this episode") for a in spec.actions),
            *spec.features,
        )
        self.n_features = len(self.feature_defs)
        self._taken = np.zeros(self.n_actions, dtype=np.float32)
        self._steps = 0
        self._last_error = 0.0
        self._pending: tuple[int, dict[str, Any]] | None = None
        self._mask: np.ndarray | None = None
        self._started = False

    def reset(self, obs: str, info: Mapping[str, Any], parsed: Mapping[str, Any] | None = None) -> None:
        """Start an episode from the native reset observation (the brief) and ``info``;
        ``parsed`` is the observation already parsed (the native env's ``last_result``)."""
        self._taken[:] = 0.0
        self._steps = 0
        self._last_error = 0.0
        self._pending = None
        self._mask = None
        self.spec.reset(dict(parsed) if parsed is not None else loads(obs), info)
        self._started = True

    def native_action(self, action: Any) -> dict[str, Any] | str:
        """The native action of catalog ``action`` (an int in ``[0, K)``).

        Never raises: an out-of-range action becomes a malformed native action and an empty
        slot an ``invalid_args`` call, so the native env records the error and charges a step.
        """
        try:
            index = -1 if isinstance(action, (bool, str, bytes)) else int(action)
        except (TypeError, ValueError):
            index = -1
        if not 0 <= index < self.n_actions or (isinstance(action, float) and action != index):
            self._pending = None
            return f"catalog action {action!r} is not in Discrete({self.n_actions})"
        call = self.spec.to_call(index)
        if call is None:
            call = {"tool": self.spec.actions[index].tool, "args": {EMPTY_SLOT_ARG: self.spec.actions[index].name}}
        self._pending = (index, call)
        return call

    def update(self, obs: str, parsed: dict[str, Any] | None = None) -> None:
        """Take in the native observation that answered the last :meth:`native_action`
        (``parsed``: the same already parsed, the native env's ``last_result``, read-only)."""
        self._steps += 1
        self._mask = None
        result = parsed if parsed is not None else loads(obs)
        self._last_error = 1.0 if result.get("status") != "ok" else 0.0
        if self._pending is not None:
            index, call = self._pending
            self._taken[index] = 1.0
            self.spec.observe(index, call, result)
        self._pending = None

    def mask(self) -> np.ndarray:
        """Boolean ``(K,)``: the spec's mask with the finishing action on (a fresh copy).
        Before the first ``reset`` only the finishing action is valid."""
        if self._mask is None:
            m = np.asarray(self.spec.mask(), dtype=bool).copy() if self._started else np.zeros(self.n_actions, dtype=bool)
            m[self.finish] = True
            self._mask = m
        return self._mask.copy()

    def observation(self) -> np.ndarray:
        """The float32 feature vector: generic features, ``taken`` bits, the domain's features."""
        domain = np.asarray(self.spec.feature_vector(), dtype=np.float32)
        generic = np.array([min(1.0, self._steps / max(1, self.max_steps)), self._last_error], dtype=np.float32)
        out = np.concatenate([generic, self._taken, domain]).astype(np.float32, copy=False)
        # np.clip's Python wrapper costs more than the rest of this method; the two ufuncs in
        # place give the same values (NaN included)
        return np.minimum(np.maximum(out, -1.0, out=out), 1.0, out=out)

    def describe(self) -> dict[str, Any]:
        """The catalog and feature documentation (what ``backoffice catalog`` prints)."""
        return {
            "domain": self.spec.domain,
            "actions": [{"index": i, "name": a.name, "tool": a.tool, "doc": a.doc} for i, a in enumerate(self.spec.actions)],
            "features": [{"index": i, "name": f.name, "doc": f.doc} for i, f in enumerate(self.feature_defs)],
        }


class FeatureReader:
    """A hand-written feature policy's view of one observation: features (``v``, ``on``) and
    actions (``act``, ``choose``) by name. A subclass decides in ``__call__(obs, mask)``, which
    starts with :meth:`read`."""

    def __init__(self, agent: CatalogAgent):
        self.idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
        self.act = {a.name: i for i, a in enumerate(agent.spec.actions)}
        self.finish = agent.finish
        self.obs = np.zeros(len(self.idx), dtype=np.float32)
        self.mask = np.zeros(len(self.act), dtype=bool)

    def read(self, obs: np.ndarray, mask: np.ndarray) -> None:
        """Take in this step's features and mask."""
        self.obs, self.mask = obs, mask

    def choose(self, name: str) -> int | None:
        """The index of action ``name`` if the mask allows it, else ``None``."""
        return self.act[name] if self.mask[self.act[name]] else None

    def v(self, name: str) -> float:
        """The feature's value."""
        return float(self.obs[self.idx[name]])

    def on(self, name: str) -> bool:
        """The feature's value is above 0.5 (a flag that is set)."""
        return bool(self.obs[self.idx[name]] > 0.5)


def check_spec(spec_cls: type[CatalogSpec]) -> None:
    """Static sanity checks of a spec class (unique names, one finishing action)."""
    names = [a.name for a in spec_cls.actions]
    if len(set(names)) != len(names):
        raise ValueError(f"{spec_cls.__name__}: duplicate action names")
    if sum(a.tool == spec_cls.finish_tool for a in spec_cls.actions) != 1:
        raise ValueError(f"{spec_cls.__name__}: exactly one action must call {spec_cls.finish_tool!r}")
    fnames = [f.name for f in spec_cls.features]
    if len(set(fnames)) != len(fnames):
        raise ValueError(f"{spec_cls.__name__}: duplicate feature names")
