"""Policies that act through a domain's catalog on the native env, so they run in the common
evaluation path (``backoffice eval``) like every other policy:

- ``catalog-random``: uniform over the valid catalog actions (the random baseline a trained
  catalog agent should be compared with: the mask alone already removes many mistakes);
- ``catalog-mask-only``: uniform over the valid actions other than ``submit``, submitting only
  when nothing else is valid: how much of a task the mask alone solves;
- ``catalog-features``: the domain's hand-written ``feature_policy`` over (features, mask), which
  shows the features suffice;
- ``sb3:<model.zip>``: a trained model (:mod:`backoffice.training.rl.sb3_policy`).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from backoffice.envs.core.canonical import derive_seed
from backoffice.training.policies.base import Action, Policy


def feature_policy_of(spec_cls: type[Any]) -> Any:
    """The hand-written ``feature_policy(agent)`` of a catalog spec: the spec class's own (a
    tier's), else its module's."""
    make = getattr(spec_cls, "feature_policy", None) or getattr(importlib.import_module(spec_cls.__module__), "feature_policy", None)
    if make is None:
        raise KeyError(f"{spec_cls.__name__} has no feature_policy")
    return make


class CatalogPolicy(Policy):
    """Runs a :class:`~backoffice.training.catalog.CatalogAgent` over native observations;
    subclasses implement :meth:`choose`."""

    def __init__(self, domain: str, spec: str | None = None, tier: str | None = None):
        from backoffice.training.catalog import catalog_agent

        self.domain = domain
        self.agent = catalog_agent(domain, spec=spec, tier=tier)

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        self.agent.reset(obs, info)
        self._started = False

    def act(self, obs: str) -> Action | str:
        if self._started:
            self.agent.update(obs)
        self._started = True
        return self.agent.native_action(self.choose(self.agent.observation(), self.agent.mask()))


class MaskedRandomPolicy(CatalogPolicy):
    """Uniform over the valid catalog actions, seeded by (seed, task, episode seed)."""

    name = "catalog-random"

    def __init__(self, domain: str, seed: int = 0, tier: str | None = None):
        super().__init__(domain, tier=tier)
        self.seed = seed

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        super().reset(obs, info)
        self._rng = np.random.default_rng(derive_seed("catalog-random", self.seed, info["task_id"], info["seed"]))

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:
        return int(self._rng.choice(np.flatnonzero(mask)))


class MaskOnlyPolicy(MaskedRandomPolicy):
    """Uniform over the valid non-finishing actions; ``submit`` only when nothing else is valid."""

    name = "catalog-mask-only"

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:
        others = mask.copy()
        others[self.agent.finish] = False
        return int(self._rng.choice(np.flatnonzero(others if others.any() else mask)))


class FeaturePolicy(CatalogPolicy):
    """The domain's hand-written policy over (features, mask) only."""

    name = "catalog-features"

    def __init__(self, domain: str, tier: str | None = None):
        super().__init__(domain, tier=tier)
        self._choose = feature_policy_of(type(self.agent.spec))(self.agent)

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:
        return int(self._choose(features, mask))
