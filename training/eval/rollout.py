"""Play a policy in an environment: one episode (:func:`run_episode`) or one episode per task
(:func:`play`). The one loop every evaluation uses: ``backoffice eval``'s jobs, a model's
validation and greedy replays during training, ``evaluate_split``, demonstrations and the
results table's baselines.

The env is a native env or any wrapper of one (a catalog env); the policy is anything with
``reset(obs, info)`` and ``act(obs) -> action`` (:class:`Actor`): a :class:`Policy` on the
native env's text observations, or an actor on a catalog env's features such as
:class:`~backoffice.training.rl.sb3_policy.ModelActor`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


class Actor(Protocol):
    """What :func:`run_episode` drives: told the first observation and the reset ``info``, then
    asked for one action per step."""

    def reset(self, obs: Any, info: dict[str, Any]) -> None: ...

    def act(self, obs: Any) -> Any: ...


@dataclass
class EpisodeResult:
    """The terminal ``info`` of an episode plus what an evaluation record needs."""

    task_id: str
    seed: int
    steps: int
    info: dict[str, Any]
    observations: list[Any]

    @property
    def grade(self) -> dict[str, Any]:
        return self.info["grade"]


def run_episode(env: Any, policy: Actor, task_id: str | None = None, seed: int | None = None, keep_observations: bool = False) -> EpisodeResult:
    """Reset ``env`` (to ``task_id`` if given), let ``policy`` act until the episode ends.

    ``env`` is a native env (wrapped or not). When ``task_id`` is given and ``seed`` is not,
    the task's own seed is used so the episode id is stable.
    """
    unwrapped = env.unwrapped
    kwargs = unwrapped.reset_args(task_id, seed) if task_id is not None else {"seed": seed, "options": None}
    obs, info = env.reset(**kwargs)
    policy.reset(obs, info)
    observations = [obs] if keep_observations else []
    steps = 0
    while True:
        obs, _, terminated, truncated, step_info = env.step(policy.act(obs))
        steps += 1
        if keep_observations:
            observations.append(obs)
        if terminated or truncated:
            return EpisodeResult(info["task_id"], info["seed"], steps, step_info, observations)


def play(env: Any, policy: Actor, task_ids: Iterable[str]) -> list[EpisodeResult]:
    """:func:`run_episode` once on each of ``task_ids`` (each with its own seed), in order."""
    return [run_episode(env, policy, task_id=task_id) for task_id in task_ids]
