"""Shared fixtures: the domains whose package and release are installed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

#: the suite's root (its helper modules: paging, toy_domain, evaltoy) and the repository's; the
#: test files live in folders that mirror the package (contract/, integrity/, domains/<d>/ ...)
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))

from backoffice.envs import available_domains  # noqa: E402

DOMAINS = available_domains()


def domain_params() -> list:
    return [pytest.param(d, id=d, marks=pytest.mark.xdist_group(d)) for d in DOMAINS]


@cache
def release_ids(domain: str) -> tuple[str, ...]:
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def task_split(domain: str, task_id: str) -> str:
    """The split whose env serves ``task_id``: a released task's own, ``train`` for a generated one."""
    from backoffice.envs.core.release import is_generated_id, load_release

    return "train" if is_generated_id(task_id) else load_release(domain).task(task_id).split


class SplitEnvs:
    """``env_for(task_id)``: an env of the task's own split (an env serves only its split), one per
    split, built on first use by ``make(split)``; ``envs`` holds those built, by split."""

    def __init__(self, domain: str, make: Callable[[str], Any]):
        self.domain, self.make, self.envs = domain, make, {}

    def __call__(self, task_id: str) -> Any:
        split = task_split(self.domain, task_id)
        if split not in self.envs:
            self.envs[split] = self.make(split)
        return self.envs[split]

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


def split_envs(domain: str, **kwargs: Any) -> SplitEnvs:
    """Native envs of ``domain`` (``make_native(domain, split=..., **kwargs)``), one per split:
    ``env_for = split_envs(domain); env_for(task_id).reset(options={"task_id": task_id})``."""
    from backoffice.envs import make_native

    return SplitEnvs(domain, lambda split: make_native(domain, split=split, **kwargs))


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
