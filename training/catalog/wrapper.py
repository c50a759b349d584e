"""The catalog env: a ``gymnasium.Wrapper`` giving a native env a ``Discrete(K)`` action space
and a ``Box`` feature observation, for stable-baselines3 and sb3-contrib's MaskablePPO.

Each catalog action becomes exactly one native tool call, so the native trace, diff and grade
stay the single truth; ``reward``, ``terminated``, ``truncated`` and ``info`` (grade, score,
is_success, shaped_reward ...) are the native env's, plus ``info["action_mask"]`` (int8).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from backoffice.envs.core.canonical import derive_seed
from backoffice.training.catalog.base import CatalogAgent, CatalogSpec

if TYPE_CHECKING:
    from backoffice.envs.core.env import BackofficeEnv


class CatalogEnv(gym.Wrapper[np.ndarray, np.int64, str, Any]):
    """``Discrete(K)`` actions and float32 features over a native backoffice env.

    Args:
        env: the native env (``BackofficeEnv``), unwrapped or not.
        spec: the domain's :class:`CatalogSpec` instance.
        task_ids: if given, each reset without ``options`` draws its task from these released
            ids (how training carves a validation set out of ``train``); each must be a task of
            the native env's split (``ValueError`` otherwise).

    ``action_masks()`` is defined here, so ``VecEnv.env_method("action_masks")`` and MaskablePPO
    find it without ``ActionMasker``.
    """

    # gymnasium 1.x types ``Wrapper.env`` with the wrapper's own obs/action types
    # (``Env[WrapperObsType, WrapperActType]``); the wrapped env is the native one (text obs).
    env: gym.Env[str, Any]  # type: ignore[assignment]

    def __init__(self, env: gym.Env, spec: CatalogSpec, task_ids: Sequence[str] | None = None):
        super().__init__(env)
        native = cast("BackofficeEnv", env.unwrapped)
        #: the native env under any wrappers: its ``last_result`` is the parsed observation
        self.native = native
        self._next_seed: int | None = None
        # the feature scale of step_fraction: the catalog's limit, whatever the native env's
        self.agent = CatalogAgent(spec, max_steps=spec.max_steps or native.domain.default_max_steps)
        self.task_ids = tuple(task_ids) if task_ids else ()
        for task_id in self.task_ids:  # the split is the env's: refuse now, not at some later reset
            native.check_servable(task_id)
        self.action_space = spaces.Discrete(self.agent.n_actions)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.agent.n_features,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        options = dict(options or {})
        native = self.native
        if seed is None:
            # a seed chain: deterministic after one seeded reset, as SB3 vector envs expect
            # (the first unseeded reset draws from the native generator)
            seed = self._next_seed if self._next_seed is not None else int(native.np_random.integers(2**31 - 1))
        self._next_seed = derive_seed("catalog-chain", seed) % (2**31 - 1)
        if self.task_ids and "task_id" not in options and "generate" not in options:
            options["task_id"] = self.task_ids[derive_seed("catalog-pick", seed) % len(self.task_ids)]
        obs, info = self.env.reset(seed=seed, options=options)
        self.agent.reset(obs, info, parsed=native.last_result)
        info["action_mask"] = self.action_masks().astype(np.int8)
        return self.agent.observation(), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        native_action = self.agent.native_action(action)
        obs, reward, terminated, truncated, info = self.env.step(native_action)
        self.agent.update(obs, parsed=self.native.last_result)
        info["action_mask"] = self.action_masks().astype(np.int8)
        return self.agent.observation(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Boolean ``(K,)`` mask of the actions valid now (the finishing action always is)."""
        return self.agent.mask()

    def describe(self) -> dict[str, Any]:
        """Every action and feature with its documentation."""
        return self.agent.describe()
