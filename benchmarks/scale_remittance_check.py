"""Remittance tool latency at 1x and at a larger scale (default 1000x) of the world.

For each generated task (the same indices at both scales, so the same task; one scale after the
other, task by task), the oracle and the reversing policy play an episode once (warming every index of the snapshot), then the episode is
replayed: before each step, the tool it calls is timed on the store as it stands (repeated,
each time inside ``begin``/``rollback`` so writes do not stick; the fastest run counts), then the
step is taken. Tools the policies never call (``get_open_item``, ``list_cases``) are timed with
typical arguments on the state before ``submit`` (and ``list_payments`` by payer only, a call the
policies never make: it pages through the payer's whole history), and so are the grade (the grader alone and the
env's whole ``grade_now``). Prints per tool the median over calls of the fastest run, at each
scale, and the ratio.

    .venv/bin/python benchmarks/scale_remittance_check.py [--scale 1000] [--tasks 10] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from backoffice.envs import make_native
from backoffice.envs.core import Episode
from backoffice.envs.core.canonical import loads
from backoffice.envs.core.env import _generated  # the env's cache of generated tasks: the key of the task it plays
from backoffice.envs.core.tools import ToolContext
from backoffice.training.policies.remittance import Oracle, ReversingPolicy


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _tool_timer(env: Any, name: str, args: dict[str, Any], repeat: int) -> float:
    """The fastest of ``repeat`` runs of tool ``name`` on the current store (rolled back)."""
    tool = env.domain.toolkit.tools[name]
    parsed = tool.args_model.model_validate(args)
    ctx = ToolContext(env.state, env.task, step=len(env.trace) + 1)

    def once() -> None:
        env.state.begin()
        try:
            tool.fn(ctx, parsed)
        except Exception:  # noqa: BLE001 - a refused call is timed as well
            pass
        finally:
            env.state.rollback()

    return _best(once, repeat)


def _actions(env: Any, policy: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    obs, info = env.reset(options=options)
    policy.reset(obs, info)
    actions = []
    while True:
        action = policy.act(obs)
        actions.append(action)
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            assert info["grade"]["pass"], (options, info["grade"]["failure_codes"])
            return actions


def measure(env: Any, scale: int, index: int, repeat: int, times: dict[str, list[float]]) -> None:
    """Time every call of the oracle's and the reversing policy's episodes of generated task
    ``index`` at ``scale`` into ``times`` (tool name -> seconds per call)."""
    options = {"generate": index, "scale": scale}
    for policy in (Oracle(), ReversingPolicy()):
        actions = _actions(env, policy, options)  # warms the snapshot's indexes
        env.reset(options=options)
        last_item = ""
        for action in actions:
            if action["tool"] == "submit":
                pid = env.task.params["payment_id"]
                if last_item:
                    times["get_open_item"].append(_tool_timer(env, "get_open_item", {"item_id": last_item}, repeat))
                times["list_cases"].append(_tool_timer(env, "list_cases", {"payment_id": pid}, repeat))
                # not a call of the policies: the payer's whole history, one page (see the report)
                times["list_payments (payer_id only)"].append(
                    _tool_timer(env, "list_payments", {"payer_id": env.task.params["payer_id"]}, repeat))
                key = _generated(env.domain, index, scale)[2]
                episode = Episode(env.task, key, env.state.snapshot, env.state, env.state.diff(), env.trace)
                times["grade (grader only)"].append(_best(lambda: env.domain.grade(episode), repeat))
                times["grade_now (diff, grade, hash)"].append(_best(env.grade_now, repeat))
            times[action["tool"]].append(_tool_timer(env, action["tool"], action["args"], repeat))
            obs, *_ = env.step(action)
            res = loads(obs)
            if action["tool"] == "allocate" and res.get("status") == "ok":
                last_item = res["result"]["item"]["id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=15)
    opts = parser.parse_args()
    env = make_native("remittance", split="generated")
    base: dict[str, list[float]] = defaultdict(list)
    big: dict[str, list[float]] = defaultdict(list)
    for index in range(opts.tasks):  # both scales task by task, so that both see the same machine load
        measure(env, 1, index, opts.repeat, base)
        measure(env, opts.scale, index, opts.repeat, big)
    print(f"{'tool':32s} {'calls':>5s} {'1x (us)':>9s} {f'{opts.scale}x (us)':>11s} {'ratio':>6s}")
    for name in sorted(base):
        a, b = statistics.median(base[name]) * 1e6, statistics.median(big[name]) * 1e6
        print(f"{name:32s} {len(base[name]):5d} {a:9.1f} {b:11.1f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
