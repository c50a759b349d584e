"""Run one episode of a policy in an environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backoffice.training.policies.base import Policy


@dataclass
class EpisodeResult:
    """The terminal ``info`` of an episode plus what an evaluation record needs."""

    task_id: str
    seed: int
    steps: int
    info: dict[str, Any]
    observations: list[str]

    @property
    def grade(self) -> dict[str, Any]:
        return self.info["grade"]


def run_episode(env: Any, policy: Policy, task_id: str | None = None, seed: int | None = None, keep_observations: bool = False) -> EpisodeResult:
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
