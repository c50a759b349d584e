"""A feature tier is a declaration: which named features, in which order, which named actions,
and the training hyperparameters tuned for it (each with a one-line why).

A domain's catalog module exports one :class:`DomainCatalog`: its desk class, its feature and
action registries (:mod:`.features`) and its tiers by name. :func:`tier_spec` turns a tier into
the :class:`~backoffice.training.catalog.base.CatalogSpec` the catalog env, the trainer and the
model policies use; nothing else is written per tier.

A user's own tier, outside the package (``docs/CATALOG.md`` has the example)::

    from backoffice.training.catalog import Tier, domain_catalog

    approvals = domain_catalog("approvals")
    facts = approvals.tiers["facts"]
    mine = facts.derive("mine", features=(*facts.features, "over_hard_limit"))  # a module-level name
    env = gym.make("backoffice/Approvals-Catalog-v0", tier=mine)

``backoffice train --tier my_module:mine`` and ``backoffice eval --policy sb3:<model>`` find it
by that ``"module:attribute"`` name, recorded in the model's ``catalog.json``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from backoffice.training.catalog.base import CatalogAgent, CatalogSpec
from backoffice.training.catalog.features import Action, Actions, Desk, Feature, Features, MaskPlan, VectorPlan


@dataclass(frozen=True)
class Hyper:
    """A tuned training hyperparameter (a ``TrainConfig`` field's value) and why it has it."""

    value: Any
    why: str


def two_envs(n_steps: int | None = None) -> dict[str, Hyper]:
    """The hyperparameters of a tier whose runs were made on 2 envs (the raw tiers'), with
    ``n_steps`` per env to keep its domain's other tiers' rollout size (``None``: the default)."""
    out = {"n_envs": Hyper(2, "the 2 envs this tier's runs were made on")}
    if n_steps is not None:
        out["n_steps"] = Hyper(n_steps, f"with 2 envs, the rollout size of the other tiers (2 x {n_steps})")
    return out


#: a hand-written policy over a tier's (features, mask): built once per agent
FeaturePolicyFactory = Callable[[CatalogAgent], Callable[[np.ndarray, np.ndarray], int]]


@dataclass(frozen=True)
class Tier:
    """One feature tier of a domain's catalog.

    Attributes:
        name: the tier's name (``conclusions``, ``facts``, ``raw``, or a user's own).
        features: feature names of the domain's registry (or :class:`Feature` objects a user
            adds), in vector order.
        actions: action names of the domain's registry (or :class:`Action` objects), in
            ``Discrete`` order; exactly one calls the finishing tool.
        hyperparams: ``TrainConfig`` field -> :class:`Hyper` (value and why).
        max_steps: the catalog episode's step limit (``None``: the domain's default).
        feature_policy: the tier's hand-written policy over its features and mask, proving the
            tier suffices (``catalog-features@<tier>``), if it has one.
        slot_actions / slot_sets: what ``policy="slots"`` shares between slots (see
            :class:`~backoffice.training.catalog.base.CatalogSpec`).
    """

    name: str
    features: tuple[str | Feature, ...]
    actions: tuple[str | Action, ...]
    hyperparams: Mapping[str, Hyper] = field(default_factory=dict)
    max_steps: int | None = None
    feature_policy: FeaturePolicyFactory | None = None
    slot_actions: Mapping[str, str] = field(default_factory=dict)
    slot_sets: tuple[str, ...] = ()

    def derive(self, name: str, **changes: Any) -> Tier:
        """A new tier from this one with ``changes`` (``features``, ``actions``, ``hyperparams`` ...);
        the feature policy is dropped unless given (it was written for this tier's features)."""
        return replace(self, name=name, **{"feature_policy": None, **changes})


@dataclass(frozen=True)
class DomainCatalog:
    """What a domain's catalog module exports: the desk, the registries and the tiers (each also
    a module-level name of that module, so ``"module:NAME"`` names it)."""

    domain: str
    desk: type[Desk]
    features: Features[Any]
    actions: Actions[Any]
    tiers: Mapping[str, Tier]


def domain_catalog(domain: str) -> DomainCatalog:
    """The :class:`DomainCatalog` a domain declares (``Domain.catalog``: ``"module:attribute"``)."""
    from backoffice.training.catalog import catalog_target

    target = catalog_target(domain)
    if target is None:
        raise KeyError(f"domain {domain!r} declares no catalog")
    found = load_attribute(target)
    if not isinstance(found, DomainCatalog):
        raise TypeError(f"{target} is not a DomainCatalog")
    return found


def load_attribute(target: str) -> Any:
    """``"package.module:attribute"`` imported."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"expected 'package.module:attribute', got {target!r}")
    return getattr(importlib.import_module(module), name)


#: (catalog, tier) ids -> (catalog, tier, spec): the objects are kept so their ids stay theirs
_SPECS: dict[tuple[int, int], tuple[DomainCatalog, Tier, type[CatalogSpec]]] = {}


def tier_spec(catalog: DomainCatalog, tier: Tier) -> type[CatalogSpec]:
    """The :class:`CatalogSpec` of ``tier`` over ``catalog``'s desk and registries (one class per
    tier object, built once)."""
    key = (id(catalog), id(tier))
    cached = _SPECS.get(key)
    if cached is not None:
        return cached[2]
    features = catalog.features.select(tier.features)
    actions = catalog.actions.select(tier.actions)
    plan = VectorPlan(features)
    legality = MaskPlan(actions)
    grounders = [(a.ground, a.legal, a.args) for a in actions]
    names = [a.name for a in actions]
    desk_cls = catalog.desk

    class TierSpec(CatalogSpec):
        domain = catalog.domain

        def __init__(self) -> None:
            self.desk = desk_cls()
            self._mask: np.ndarray | None = None  # this step's, until the desk changes
            self._vector: np.ndarray | None = None

        def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
            self.desk.reset(brief, info)
            self._changed()

        def _changed(self) -> None:
            self.desk.changed()
            self._mask = self._vector = None

        def to_call(self, action: int) -> dict[str, Any] | None:
            ground, _, args = grounders[action]
            return ground(self.desk, *args)

        def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
            self.desk.observe(names[action], call, result)
            self._changed()

        def mask(self) -> np.ndarray:
            if self._mask is None:
                self._mask = legality(self.desk)
                self._mask.setflags(write=False)  # this step's, shared: read-only
            return self._mask

        def feature_vector(self) -> np.ndarray:
            if self._vector is None:
                self._vector = plan(self.desk)
                self._vector.setflags(write=False)
            return self._vector

    TierSpec.tier = tier.name
    TierSpec.actions = tuple(a.definition for a in actions)
    TierSpec.features = tuple(f.definition for f in features)
    TierSpec.max_steps = tier.max_steps
    TierSpec.hyperparams = {k: h.value for k, h in tier.hyperparams.items()}
    TierSpec.slot_actions = dict(tier.slot_actions)
    TierSpec.slot_sets = tuple(tier.slot_sets)
    if tier.feature_policy is not None:
        TierSpec.feature_policy = staticmethod(tier.feature_policy)  # type: ignore[attr-defined]
    TierSpec.__name__ = TierSpec.__qualname__ = f"{catalog.domain.title()}{tier.name.title().replace('_', '')}Tier"
    _SPECS[key] = (catalog, tier, TierSpec)
    return TierSpec


__all__ = ["DomainCatalog", "FeaturePolicyFactory", "Hyper", "Tier", "domain_catalog", "load_attribute", "tier_spec", "two_envs"]
