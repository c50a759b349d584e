"""The toy domain wired into the evaluation runner: env and policy factories for
:class:`backoffice.training.eval.evaluate.Runner`, so evaluation tests always have an env.

Factories are module-level functions (bound with :func:`functools.partial`), so a runner that
uses them pickles by reference and runs in worker processes, Ray workers and subprocesses
(they need this folder on ``sys.path``).
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import Any

from backoffice.envs.core.build import build_release
from backoffice.envs.core.release import Release
from backoffice.training.eval.evaluate import Runner
from backoffice.training.policies import ScriptedPolicy, call, get_policy
from backoffice.training.policies.base import Plan, Policy
from toy_domain import DOMAIN, ToyEnv

TESTS = Path(__file__).resolve().parent


class ToyOracle(ScriptedPolicy):
    """Reads counter C-1 and bumps it to the task's target, using only tool results."""

    name = "oracle"

    def __init__(self, delay: float = 0.0):
        self.delay = delay

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        target = brief["params"]["target"]
        obs = yield call("get_counter", counter_id="C-1")
        value = obs["result"]["value"]
        while value < target:
            obs = yield call("bump", counter_id="C-1")
            value = obs["result"]["value"]

    def act(self, obs: str) -> Any:
        if self.delay:
            time.sleep(self.delay)  # only slows the run down (the SIGKILL test needs time)
        return super().act(obs)


def build(root: Path) -> Path:
    """Build the toy release under ``root`` (once) and return ``root``."""
    if not (root / "toy" / "manifest.json").exists():
        build_release(DOMAIN, root)
    return root


def make_env(root: str, domain: str, split: str) -> ToyEnv:
    """Env factory: a toy env on the release at ``root``."""
    assert domain == "toy", domain
    return ToyEnv(release=Release("toy", Path(root)), split=split)


def make_policy(delay: float, domain: str, agent: str, seed: int) -> Policy:
    """Policy factory: the toy oracle, or a generic baseline (random, noop)."""
    if agent == "oracle":
        return ToyOracle(delay)
    policy = get_policy(domain, agent, seed=seed)
    if delay:
        act = policy.act

        def slow_act(obs: str) -> Any:
            time.sleep(delay)
            return act(obs)

        policy.act = slow_act  # type: ignore[method-assign]
    return policy


def task_ids(root: str, domain: str, split: str) -> tuple[str, ...]:
    """Task-id source for ``plan_jobs``."""
    return Release("toy", Path(root)).split_ids[split]


def runner(root: Path, delay: float = 0.0, keep_trace: bool = False) -> Runner:
    """A runner over the toy release at ``root``."""
    return Runner(functools.partial(make_env, str(root)), functools.partial(make_policy, delay), keep_trace)


def ids(root: Path) -> Any:
    return functools.partial(task_ids, str(root))


def main(argv: list[str]) -> None:
    """``python evaltoy.py ROOT OUT WORKERS DELAY ATTEMPTS``: a toy evaluation (run as a
    subprocess by the resume test)."""
    from backoffice.training.eval.evaluate import evaluate, plan_jobs

    root, out, workers, delay, attempts = Path(argv[0]), Path(argv[1]), int(argv[2]), float(argv[3]), int(argv[4])
    jobs = plan_jobs(["toy"], ["oracle", "random", "noop"], "heldout", attempts=attempts, task_ids=ids(root))
    evaluate(jobs, out=out, workers=workers, runner=runner(root, delay))


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS))
    main(sys.argv[1:])
