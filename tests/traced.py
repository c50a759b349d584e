"""Helpers of the replay tests: play calls in a traced env and read its trace back, an oracle's
calls on the first task whose oracle uses a tool (tests/contract/test_fuzz_replay.py and the
domains' own replay tests)."""

from __future__ import annotations

from backoffice.envs import make_native
from backoffice.envs.core.trace import read_trace
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import release_ids

SUBMIT = {"tool": "submit", "args": {}}


def traced(domain: str, tmp_path, actions, split: str = "train", **reset):
    """Play ``actions`` in a traced env of ``split``; returns ``(live infos, trace lines)``."""
    path = tmp_path / f"{domain}.jsonl"
    env = make_native(domain, split=split, trace_path=str(path))
    env.reset(**(reset or {"seed": 1}))
    infos = []
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            break
    env.close()
    return infos, read_trace(path)


def oracle_actions(domain: str, task_id: str) -> list[dict]:
    env = make_native(domain)
    run_episode(env, get_policy(domain, "oracle", seed=0), task_id=task_id)
    return [{"tool": r["tool"], "args": r["args"]} for r in env.trace]


def first_oracle_run_with(domain: str, tool: str) -> tuple[str, list[dict]]:
    """The first released task whose oracle calls ``tool``, and the oracle's calls."""
    for task_id in release_ids(domain):
        actions = oracle_actions(domain, task_id)
        if any(a["tool"] == tool for a in actions):
            return task_id, actions
    raise AssertionError(f"no {domain} oracle run calls {tool}")
