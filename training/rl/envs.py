"""The learner's envs: a catalog env inside :class:`TrainingEnv`, ``n_envs`` of them in one
stable-baselines3 vector env (:func:`learner_envs`)."""

from __future__ import annotations

import functools
import multiprocessing
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from backoffice.training.rl.curriculum import GreedyFailures, task_sampler

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

    from backoffice.training.rl.config import TrainConfig

#: what a finished episode's info carries that training never reads (see :class:`TrainingEnv`)
UNREAD_INFO = frozenset({"grade", "diff", "judge"})
#: what every step's info carries that training never reads: MaskablePPO asks ``action_masks()``
UNREAD_STEP_INFO = "action_mask"


class TimedEnv(gym.Wrapper):
    """An env with the seconds spent inside its ``reset``, ``step`` and ``action_masks`` added up
    (``env_seconds``), for the summary's share of the wall time; what it returns is the wrapped
    env's, untouched. The trainer wraps its validation and greedy-replay envs in it; subclasses
    change what a call returns in :meth:`_reset` and :meth:`_step`, inside the timed span."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.env_seconds = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        t0 = time.perf_counter()
        out = self._reset(seed=seed, options=options)
        self.env_seconds += time.perf_counter() - t0
        return out

    def step(self, action: Any) -> Any:
        t0 = time.perf_counter()
        out = self._step(action)
        self.env_seconds += time.perf_counter() - t0
        return out

    def action_masks(self) -> np.ndarray:
        """The catalog env's mask, timed with ``reset`` and ``step``: MaskablePPO and the model's
        actor ask for it at every step, so it is env time too."""
        t0 = time.perf_counter()
        mask = self.env.get_wrapper_attr("action_masks")()
        self.env_seconds += time.perf_counter() - t0
        return mask

    def _reset(self, *, seed: int | None, options: dict[str, Any] | None) -> Any:
        return self.env.reset(seed=seed, options=options)

    def _step(self, action: Any) -> Any:
        return self.env.step(action)


class TrainingEnv(TimedEnv):
    """What the learner's env adds to a catalog env:

    - the step limit ends the episode (``terminated``), because the native env grades the
      episode there and the observation carries the step count (``step_fraction``): nothing
      follows, so SB3 must not bootstrap a value after it (it does on ``truncated``, which made
      harmless loops until the limit look valuable);
    - the seconds spent inside ``reset``, ``step`` and ``action_masks`` are added up
      (:class:`TimedEnv`; for the summary only, nothing the agent sees depends on them);
    - a finished episode's info drops its ``grade``, ``diff`` and ``judge`` (:data:`UNREAD_INFO`),
      and every step's its ``action_mask`` (MaskablePPO calls :meth:`action_masks`): SB3's
      ``DummyVecEnv`` deep-copies every step's infos, nothing in training reads them (the
      monitor reads ``score``, ``shaped_reward`` and ``is_success``), and copying the grade's
      checks is a noticeable share of a run's CPU;
    - with ``tasks`` (``task_sampling="greedy-failures"``), the next train task is drawn by it.
    """

    def __init__(self, env: gym.Env, tasks: GreedyFailures | None = None):
        super().__init__(env)
        #: ``None``: the catalog env draws its train task uniformly
        self.tasks = tasks

    def _reset(self, *, seed: int | None, options: dict[str, Any] | None) -> Any:
        if self.tasks is not None:
            if seed is not None:
                self.tasks.seed(seed)
            options = dict(options or {})
            options.setdefault("task_id", self.tasks.pick())
        return self.env.reset(seed=seed, options=options)

    def focus(self, task_ids: Sequence[str]) -> None:
        """Aim a ``greedy-failures`` env's draws at ``task_ids`` (the learner's greedy failures)."""
        if not isinstance(self.tasks, GreedyFailures):
            raise TypeError("focus needs task_sampling='greedy-failures'")
        self.tasks.focus(task_ids)

    def _step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info.pop(UNREAD_STEP_INFO, None)
        if terminated or truncated:
            info = {k: v for k, v in info.items() if k not in UNREAD_INFO}
        return obs, reward, terminated or truncated, False, info


def training_env(domain: str, task_sampling: str = "uniform", **kwargs: Any) -> TrainingEnv:
    """A catalog env (``kwargs``: :func:`~backoffice.training.catalog.make_catalog_env`'s) inside
    a :class:`TrainingEnv`; picklable as a factory for ``SubprocVecEnv``. ``task_sampling=
    "greedy-failures"`` gives it a :class:`~backoffice.training.rl.curriculum.GreedyFailures`
    choice over its ``task_ids``."""
    from backoffice.training.catalog import make_catalog_env

    tasks = task_sampler(task_sampling, kwargs.get("task_ids") or ())
    return TrainingEnv(make_catalog_env(domain, **kwargs), tasks=tasks)


def learner_envs(config: TrainConfig, train_ids: Sequence[str] | None) -> VecEnv:
    """``config.n_envs`` training envs on ``train_ids`` (``None``: the run's ``train_split``
    serves them), stepped in the learner's process (``vec_env="dummy"``) or in one worker
    process each (``"subproc"``), seeded with ``config.seed``. Their native envs report a
    finished episode's score and pass without the grade, diff, judge and end hash nothing in
    training reads (``lean_info``)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    make = functools.partial(training_env, config.domain, split=config.train_split,
                             reward_mode=config.reward_mode, call_cost=config.call_cost,
                             gate_cap=config.gate_cap, lean_info=True, task_ids=train_ids,
                             task_sampling=config.task_sampling, spec=config.spec)
    if config.vec_env == "subproc":
        # fork where the platform has it: workers inherit the loaded modules instead of
        # re-importing them (forkserver, SB3's default, pays the start-up again in every worker)
        start = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        venv: VecEnv = SubprocVecEnv([make] * config.n_envs, start_method=start)
    else:
        venv = DummyVecEnv([make] * config.n_envs)
    venv.seed(config.seed)
    return venv
