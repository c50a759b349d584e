"""Shared fixtures: the domains whose package and release are installed."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from backoffice.envs import available_domains  # noqa: E402

DOMAINS = available_domains()


def domain_params() -> list:
    return [pytest.param(d, id=d, marks=pytest.mark.xdist_group(d)) for d in DOMAINS]


@cache
def release_ids(domain: str) -> tuple[str, ...]:
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def play_catalog(env, policy, task_id: str, check: bool = True) -> tuple[dict, list]:
    """One episode of ``policy(obs, mask) -> action`` on a catalog env, from task ``task_id``.

    With ``check``, every chosen action must be valid and every observation in the space.
    Returns the terminal ``info`` and the observations seen (the reset one first).
    """
    obs, info = env.reset(options={"task_id": task_id})
    seen = [obs]
    while True:
        mask = env.action_masks()
        action = policy(obs, mask)
        if check:
            assert mask[action], f"{task_id}: the policy chose masked action {env.agent.spec.actions[action].name}"
        obs, _, terminated, truncated, info = env.step(action)
        if check:
            assert env.observation_space.contains(obs)
        seen.append(obs)
        if terminated or truncated:
            return info, seen
