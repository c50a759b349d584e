"""Where a native env step's time goes, stage by stage (issue 34: "a cheaper engine step").

Per domain, the oracle's calls on heldout tasks (as ``bench_engine.py`` records them) are replayed
through ``gym.make`` with a trace file, as ``bench_engine.py`` times them, and then again through
the unwrapped env with every stage timed:

- **Gymnasium wrappers**: ``gym.make``'s wrappers (order enforcing, the env checker, the step
  limit) against the same calls on the unwrapped env, same run;
- **reset**; **validation** (the tool's pydantic argument model); **tool body** (the domain's
  work and its store writes); **serialise and commit** (the rest of the toolkit's call: the
  result's one serialisation and parse, the store's begin and commit); **trace line** (the
  trace file's write); **grade** (the terminal grade, diff and hash);
- **engine**: what is left of ``step`` (parsing the action, the arguments' JSON, the trace
  record, the observation, the reward).

Stages are timed by wrapping functions, which adds about a tenth of a microsecond per wrapped
call; the wrapped run's total is printed beside the plain one. ``CartPole-v1`` through
``gym.make`` is the baseline of the goal (native step >= 0.4x its throughput).

Run: ``python benchmarks/bench_step_stages.py [--quick] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import backoffice.envs
from backoffice.envs import available_domains, get_domain
from backoffice.envs.core import env as env_module
from backoffice.envs.core.trace import TraceWriter

sys.path.insert(0, str(Path(__file__).parent))
from bench_engine import bench_cartpole, recorded_episodes  # noqa: E402

STAGES = ("wrappers", "reset", "validation", "tool body", "serialise and commit", "trace line", "grade", "engine")


def _timed(clock: dict[str, float], stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[stage] += time.perf_counter() - t0
    return wrapped


def replay(env: Any, episodes: list[tuple[str, list]]) -> tuple[float, int]:
    """Seconds to play ``episodes`` (resets included) and the number of steps."""
    steps = 0
    t0 = time.perf_counter()
    for task_id, calls in episodes:
        env.reset(options={"task_id": task_id})
        for call in calls:
            env.step(call)
            steps += 1
    return time.perf_counter() - t0, steps


def stages(domain: str, episodes: list[tuple[str, list]], repeat: int) -> dict[str, float]:
    """Microseconds per step of each stage (best of ``repeat`` for the totals)."""
    dom = get_domain(domain)
    with tempfile.TemporaryDirectory() as tmp:
        made = gym.make(dom.env_id, split="heldout", trace_path=str(Path(tmp) / "made.jsonl"))
        bare = gym.make(dom.env_id, split="heldout", trace_path=str(Path(tmp) / "bare.jsonl")).unwrapped
        replay(made, episodes[:3])
        replay(bare, episodes[:3])
        made_s = bare_s = float("inf")
        steps = 0
        for _ in range(repeat):
            s, steps = replay(made, episodes)
            made_s = min(made_s, s)
            s, _ = replay(bare, episodes)
            bare_s = min(bare_s, s)
        # the stages, timed by wrapping what each one calls
        clock = dict.fromkeys(STAGES, 0.0)
        tools = dom.toolkit.tools.values()
        saved = [(t, t.validate, t.fn) for t in tools]
        toolkit_call = type(dom.toolkit).call_encoded
        writer_write, grade, reset = TraceWriter.write, env_module.BackofficeEnv._grade, env_module.BackofficeEnv.reset
        try:
            for t, validate, fn in saved:
                object.__setattr__(t, "validate", _timed(clock, "validation", validate))
                object.__setattr__(t, "fn", _timed(clock, "tool body", fn))
            type(dom.toolkit).call_encoded = _timed(clock, "serialise and commit", toolkit_call)  # type: ignore[method-assign]
            TraceWriter.write = _timed(clock, "trace line", writer_write)  # type: ignore[method-assign]
            env_module.BackofficeEnv._grade = _timed(clock, "grade", grade)  # type: ignore[method-assign]
            env_module.BackofficeEnv.reset = _timed(clock, "reset", reset)  # type: ignore[method-assign]
            timed_env = gym.make(dom.env_id, split="heldout", trace_path=str(Path(tmp) / "timed.jsonl")).unwrapped
            timed_s, _ = replay(timed_env, episodes)
        finally:
            for t, validate, fn in saved:
                object.__setattr__(t, "validate", validate)
                object.__setattr__(t, "fn", fn)
            type(dom.toolkit).call_encoded = toolkit_call  # type: ignore[method-assign]
            TraceWriter.write = writer_write  # type: ignore[method-assign]
            env_module.BackofficeEnv._grade = grade  # type: ignore[method-assign]
            env_module.BackofficeEnv.reset = reset  # type: ignore[method-assign]
    # the toolkit's call contains validation and the tool body; the rest of it is serialising and committing
    clock["serialise and commit"] -= clock["validation"] + clock["tool body"]
    clock["engine"] = timed_s - sum(clock[s] for s in STAGES if s not in ("wrappers", "engine"))
    out = {s: clock[s] / steps * 1e6 for s in STAGES}
    out["wrappers"] = (made_s - bare_s) / steps * 1e6
    out["total"] = made_s / steps * 1e6
    out["timed total"] = timed_s / steps * 1e6 + out["wrappers"]
    out["steps"] = steps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes")
    parser.add_argument("--domains", default=",".join(available_domains()))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n, repeat = (40, 3) if args.quick else (200, 5)
    cartpole = bench_cartpole(20_000 if args.quick else 100_000)
    console = Console(width=None if sys.stdout.isatty() else 200)
    table = Table(title=f"native step by stage, us per step (oracle calls on {n} heldout tasks; CartPole-v1 "
                        f"{1e6 / cartpole:.1f} us a step; goal: total <= {1e6 / cartpole / 0.4:.1f} us)")
    for col in ("domain", "steps", "total", *STAGES, "timed total", "vs CartPole"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    rows = {}
    for domain in args.domains.split(","):
        episodes = recorded_episodes(domain, n)
        row = rows[domain] = stages(domain, episodes, repeat)
        table.add_row(domain, str(row["steps"]), f"{row['total']:.1f}", *(f"{row[s]:.1f}" for s in STAGES),
                      f"{row['timed total']:.1f}", f"{1e6 / row['total'] / cartpole:.2f}x")
    console.print(table)
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"cartpole_steps_per_s": cartpole, "rows": rows}, indent=1))


if __name__ == "__main__":
    backoffice.envs  # noqa: B018 - registers the env ids
    main()
