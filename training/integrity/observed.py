"""What an agent saw: the oracle's episodes over a released split, call by call, as parsed
observations. The integrity probes (rule documents, list shapes, money units, list positions,
what the first read predicts) read these, never the store or the answer key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from backoffice.envs.core.canonical import loads

Action = dict[str, Any]


@dataclass(frozen=True)
class Observed:
    """One episode as the agent saw it: the brief, then each call with its parsed observation."""

    task_id: str
    brief: dict[str, Any]
    steps: tuple[tuple[Action, dict[str, Any]], ...]

    def results(self, tool: str | None = None) -> Iterator[tuple[Action, Any]]:
        """``(action, result value)`` of each ok call (of ``tool`` when given)."""
        for action, obs in self.steps:
            if obs.get("status") == "ok" and (tool is None or action.get("tool") == tool):
                yield action, obs.get("result")


def observe(env: Any, policy: Any, task_id: str, max_steps: int = 400) -> Observed:
    """Run ``policy`` on ``task_id`` in ``env`` and keep every call with its parsed observation."""
    unwrapped = env.unwrapped
    obs, info = env.reset(**unwrapped.reset_args(task_id))
    policy.reset(obs, info)
    brief = loads(obs)
    steps: list[tuple[Action, dict[str, Any]]] = []
    for _ in range(max_steps):
        action = policy.act(obs)
        if isinstance(action, str):
            action = loads(action)
        obs, _, terminated, truncated, _ = env.step(action)
        steps.append((dict(action), loads(obs)))
        if terminated or truncated:
            break
    return Observed(task_id, brief, tuple(steps))


@cache
def oracle_episodes(domain: str, split: str) -> tuple[Observed, ...]:
    """The oracle's episode on every task of ``split`` of ``domain``'s release (cached)."""
    from backoffice.envs import make_native
    from backoffice.envs.core.release import load_release
    from backoffice.training.policies import get_policy

    env = make_native(domain, split=split)
    return tuple(observe(env, get_policy(domain, "oracle"), t) for t in load_release(domain).split_ids[split])


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``(path, value)`` of a JSON value, containers included (``a.b[]``: list elements)."""
    yield path, value
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for v in value:
            yield from walk(v, f"{path}[]")


__all__ = ["Observed", "observe", "oracle_episodes", "walk"]
