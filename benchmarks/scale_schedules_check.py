"""Schedules tool latency at scale 1 and scale 1000 (issue 15's target: every tool at 1000x the
released rows costs at most 3x its time at 1x, once the store's indexes are warm).

For each of a few generated tasks the oracle plays its episode at ``scale=1`` and at
``scale=1000`` (the same task, in a book 1000 times larger). Before each of its calls the check
times that call (argument validation and the tool function) on the live store inside a
``begin``/``rollback`` bracket, so a write is measured without being applied, then lets the call
happen. Tools the oracle does not call are timed at the points where a clerk would call them:
``get_schedule`` and ``list_approvals`` (with ``list_reminders`` by due date, the reminder sweep)
after the reads, ``remove_instalment`` on the last added instalment before the commit.

Run: ``python benchmarks/scale_schedules_check.py [--tasks N] [--scale K]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from backoffice.envs import make_native
from backoffice.envs.core import ToolError, loads
from backoffice.envs.schedules import DOMAIN
from backoffice.training.policies import get_policy

TOOLS = DOMAIN.toolkit.tools


def time_call(env: Any, name: str, args: dict[str, Any], number: int = 30) -> float:
    """Best seconds per call of tool ``name`` with ``args`` on the env's store, state unchanged
    (the first call warms the indexes and is not counted)."""
    native = env.unwrapped
    store, ctx = native._store, native._ctx
    tool = TOOLS[name]
    best = float("inf")
    for i in range(number + 1):
        store.begin()
        start = time.perf_counter()
        try:
            tool.fn(ctx, tool.args_model.model_validate(args))
        except ToolError:
            pass
        elapsed = time.perf_counter() - start
        store.rollback()
        if i:
            best = min(best, elapsed)
    return best


def episode_times(index: int, scale: int) -> dict[str, list[float]]:
    """Seconds per call of every tool the oracle calls (and the extra ones) in one episode."""
    env = make_native("schedules", split="generated", max_steps=200)
    obs, info = env.reset(seed=index, options={"generate": index, "scale": scale})
    policy = get_policy("schedules", "oracle")
    policy.reset(obs, info)
    times: dict[str, list[float]] = {}
    last_added: str | None = None
    extras_done = False
    while True:
        action = policy.act(obs)
        assert isinstance(action, dict)
        name, args = action["tool"], action.get("args", {})
        if name == "create_draft_schedule" and not extras_done:
            extras_done = True
            policy_id = args["policy_id"]
            got = env.unwrapped._store.rows("schedules", policy_id=policy_id, status="active")
            reminders = env.unwrapped._store.rows("reminders", policy_id=policy_id)
            extra: list[tuple[str, dict[str, Any]]] = [("get_schedule", {"schedule_id": got[0]["id"]}),
                                                       ("list_approvals", {"policy_id": policy_id})]
            if reminders:
                extra.append(("list_reminders", {"due_date": reminders[0]["due_date"], "status": "scheduled"}))
            for tool, targs in extra:
                times.setdefault(tool, []).append(time_call(env, tool, targs))
        if name == "commit_schedule" and last_added:
            times.setdefault("remove_instalment", []).append(time_call(env, "remove_instalment", {"instalment_id": last_added}))
        times.setdefault(name, []).append(time_call(env, name, args))
        obs, _, terminated, truncated, step_info = env.step(action)
        result = loads(obs)
        if name == "add_instalment" and result.get("status") == "ok":
            last_added = result["result"]["id"]
        if terminated or truncated:
            assert step_info["grade"]["pass"], (index, scale, step_info["grade"]["failure_codes"])
            return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8, help="generated tasks to play (default 8)")
    parser.add_argument("--scale", type=int, default=1000, help="the large scale (default 1000)")
    opts = parser.parse_args()
    by_scale: dict[int, dict[str, list[float]]] = {1: {}, opts.scale: {}}
    for index in range(opts.tasks):  # the two scales interleaved, so machine load hits both alike
        for scale in (1, opts.scale):
            for tool, ts in episode_times(index, scale).items():
                by_scale[scale].setdefault(tool, []).extend(ts)
    small, large = by_scale[1], by_scale[opts.scale]
    print(f"{'tool':24s} {'calls':>5s} {'1x (us)':>9s} {f'{opts.scale}x (us)':>11s} {'ratio':>6s}")
    worst = 0.0
    for tool in sorted(small):
        a, b = statistics.median(small[tool]) * 1e6, statistics.median(large.get(tool, [float("nan")])) * 1e6
        worst = max(worst, b / a)
        print(f"{tool:24s} {len(small[tool]):5d} {a:9.1f} {b:11.1f} {b / a:6.2f}")
    missing = sorted(set(TOOLS) - set(small))
    print(f"worst ratio {worst:.2f}; tools not timed: {', '.join(missing) or 'none'}")


if __name__ == "__main__":
    main()
