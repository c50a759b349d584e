"""Approvals tool latency at scale 1 and scale 1000 (issue 15's target: every tool at 1000x the
released rows costs at most 3x its time at 1x, once the store's indexes are warm).

For each of a few generated tasks the oracle plays its episode at ``scale=1`` and at
``scale=1000`` (the same task, in an organisation 1000 times larger). Before each of its calls
the check times that call (argument validation, the tool function and the serialisation of its
result) on the live store inside a ``begin``/``rollback`` bracket, so a write is measured without
being applied, then lets the call happen. ``lookup_role_holders`` (which the oracle calls only for
delegations) is also timed on the rule's required role before the decision. At the end the
grader is timed on the finished episode.

Run: ``python benchmarks/scale_approvals_check.py [--tasks N] [--scale K]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from backoffice.envs import make_native
from backoffice.envs.approvals import DOMAIN
from backoffice.envs.core import Episode, ToolError, dumps, loads
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
            dumps(tool.fn(ctx, tool.args_model.model_validate(args)))
        except ToolError:
            pass
        elapsed = time.perf_counter() - start
        store.rollback()
        if i:
            best = min(best, elapsed)
    return best


def time_grade(env: Any, number: int = 20) -> float:
    """Best seconds per call of the approvals grader on the env's finished episode."""
    native = env.unwrapped
    episode = Episode(native._task, native._key, native._snapshot, native._store, native._store.diff(), native._trace)
    best = float("inf")
    for i in range(number + 1):
        start = time.perf_counter()
        DOMAIN.grade(episode)
        if i:
            best = min(best, time.perf_counter() - start)
    return best


def episode_times(index: int, scale: int) -> dict[str, list[float]]:
    """Seconds per call of every tool the oracle calls (and lookup_role_holders) in one episode,
    and of the grade."""
    env = make_native("approvals", split="generated", max_steps=200)
    obs, info = env.reset(seed=index, options={"generate": index, "scale": scale})
    policy = get_policy("approvals", "oracle")
    policy.reset(obs, info)
    times: dict[str, list[float]] = {}
    rule_role: str | None = None
    while True:
        action = policy.act(obs)
        assert isinstance(action, dict)
        name, args = action["tool"], action.get("args", {})
        if name in ("record_decision", "escalate") and rule_role is not None:
            times.setdefault("lookup_role_holders", []).append(time_call(env, "lookup_role_holders", {"role_id": rule_role}))
            rule_role = None
        times.setdefault(name, []).append(time_call(env, name, args))
        obs, _, terminated, truncated, step_info = env.step(action)
        result = loads(obs)
        if name == "get_rules" and result.get("status") == "ok":
            rules = result["result"]["rules"]
            rule_role = rules[0]["required_role_id"] if rules else None
        if terminated or truncated:
            assert step_info["grade"]["pass"], (index, scale, step_info["grade"]["failure_codes"])
            times["(grade)"] = [time_grade(env)]
            return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=12, help="generated tasks to play (default 12: every defect tag)")
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
