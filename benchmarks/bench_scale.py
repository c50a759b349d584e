"""Scale benchmark: every tool, reset, grade and hash in worlds 1x, 10x, 100x and 1000x the
released size, as ratios against 1x measured in the same run.

Per domain and scale ``k``, generated tasks are built with the generator's ``scale`` option
(``env.reset(options={"generate": i, "scale": k})``: the same task in a world about ``k``
times the released rows) and played by the oracle. Then, with every index warmed by that
first episode, the same episode is replayed and timed:

- **tool latency**: each call of the episode is timed on the state it met (the tool function
  run ``repeat`` times inside a rolled-back transaction, then once for real), averaged per tool;
- **reset**: ``env.reset`` to the task (its snapshot already loaded);
- **grade**: the pure grade of the end state (``env.grade_now()``);
- **hash**: ``store.content_hash()`` of the end state.

Goals (issue 15): every tool at 1000x <= 3x its 1x latency, grade <= 3x, reset flat.

Run: ``python benchmarks/bench_scale.py [--quick] [--domains a,b] [--scales 1,10,100,1000] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import backoffice.envs  # noqa: F401
from backoffice.envs import available_domains, make_native
from backoffice.envs.core.canonical import dumps
from backoffice.training.policies import get_policy

console = Console()
GOAL = 3.0


def best_of(fn: Any, repeat: int, number: int) -> float:
    """Best mean seconds per call over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def time_episode(env: Any, options: dict[str, Any], actions: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    """Replay ``actions`` from ``reset(options=options)``, timing each tool on the state it met."""
    toolkit = env.domain.toolkit
    per_tool: dict[str, list[float]] = defaultdict(list)
    env.reset(seed=0, options=options)
    for action in actions[:-1]:
        tool = toolkit.tools.get(action["tool"])
        if tool is not None:
            parsed = tool.args_model.model_validate(action["args"])
            ctx, store = env._ctx, env.state

            def once() -> None:
                store.begin()
                try:
                    dumps(tool.fn(ctx, parsed))
                except Exception:
                    pass
                store.rollback()

            per_tool[action["tool"]].append(best_of(once, 3, repeat))
        env.step(action)
    grade = best_of(env.grade_now, 3, max(1, repeat // 4))
    content_hash = best_of(env.state.content_hash, 3, repeat)
    reset = best_of(lambda: env.reset(seed=0, options=options), 3, repeat)
    return {"tools": {t: float(np.mean(v)) for t, v in per_tool.items()}, "grade": grade, "hash": content_hash, "reset": reset}


def bench_domain(domain: str, scales: list[int], tasks: int, repeat: int) -> dict[int, dict[str, Any]]:
    env = make_native(domain, split="generated")
    oracle = get_policy(domain, "oracle")
    out: dict[int, dict[str, Any]] = {}
    for k in scales:
        runs, rows, built = [], 0, 0.0
        for i in range(tasks):
            options = {"generate": i, "scale": k}
            t0 = time.perf_counter()
            env.reset(seed=0, options=options)
            built += time.perf_counter() - t0
            rows = max(rows, sum(env.state.snapshot.row_count().values()))
            # play the oracle once (its episode warms the indexes), then replay it timed
            result = _oracle_episode(env, oracle, options)
            if not result["pass"]:
                console.print(f"[red]{domain} scale {k} task {i}: the oracle failed: {result['failure_codes']}[/]")
            runs.append(time_episode(env, options, result["actions"], repeat))
        tools: dict[str, list[float]] = defaultdict(list)
        for run in runs:
            for t, v in run["tools"].items():
                tools[t].append(v)
        out[k] = {
            "rows": rows, "build_s": built / tasks,
            "tools": {t: float(np.mean(v)) for t, v in sorted(tools.items())},
            **{m: float(np.mean([r[m] for r in runs])) for m in ("grade", "hash", "reset")},
        }
    return out


def _oracle_episode(env: Any, oracle: Any, options: dict[str, Any]) -> dict[str, Any]:
    obs, info = env.reset(seed=0, options=options)
    oracle.reset(obs, info)
    actions = []
    while True:
        action = oracle.act(obs)
        actions.append(action)
        obs, _, terminated, truncated, step_info = env.step(action)
        if terminated or truncated:
            grade = step_info["grade"]
            return {"actions": actions, "pass": grade["pass"], "failure_codes": grade.get("failure_codes")}


def render(domain: str, res: dict[int, dict[str, Any]]) -> Table:
    scales = sorted(res)
    base = res[scales[0]]
    table = Table(title=f"{domain}: latency at each scale / latency at {scales[0]}x (goal <= {GOAL:g}x at 1000x)")
    table.add_column("measure")
    table.add_column(f"{scales[0]}x (us)", justify="right")
    for k in scales[1:]:
        table.add_column(f"{k}x", justify="right")

    def row(name: str, get: Any) -> None:
        b = get(base)
        cells = []
        for k in scales[1:]:
            v = get(res[k])
            ratio = v / b if b and v is not None else float("nan")
            style = "red" if ratio > GOAL else ""
            cells.append(f"[{style}]{ratio:.2f}x[/]" if style else f"{ratio:.2f}x")
        table.add_row(name, f"{b * 1e6:,.1f}" if b is not None else "-", *cells)

    table.add_row("rows", f"{base['rows']:,}", *[f"{res[k]['rows']:,}" for k in scales[1:]])
    table.add_row("build (s)", f"{base['build_s']:.2f}", *[f"{res[k]['build_s']:.2f}" for k in scales[1:]])
    for tool in base["tools"]:
        row(tool, lambda r, t=tool: r["tools"].get(t))
    for m in ("reset", "grade", "hash"):
        row(m, lambda r, m=m: r[m])
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one task, scales 1/10/100, fewer repeats")
    parser.add_argument("--domains", default="", help="comma-separated (default: every installed domain)")
    parser.add_argument("--scales", default="", help="comma-separated scales (default 1,10,100,1000)")
    parser.add_argument("--tasks", type=int, default=0, help="generated tasks per scale (default 3, quick 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",")] if args.scales else ([1, 10, 100] if args.quick else [1, 10, 100, 1000])
    domains = args.domains.split(",") if args.domains else available_domains()
    tasks = args.tasks or (1 if args.quick else 3)
    repeat = 20 if args.quick else 100
    results = {}
    for domain in domains:
        results[domain] = bench_domain(domain, scales, tasks, repeat)
        console.print(render(domain, results[domain]))
    if args.json:
        args.json.write_bytes(dumps({d: {str(k): v for k, v in r.items()} for d, r in results.items()}))


if __name__ == "__main__":
    main()
