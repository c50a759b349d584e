"""The progress reward's cost: a full grade after every write against the incremental distance.

Per domain, the native calls of train episodes (the oracle's, and masked random catalog play
that rarely ends early) are replayed through ``make_native(domain, reward_mode="progress")`` twice in the same run:

- **full grade** (the baseline, the env before issue 34): every step that can change the
  distance grades the whole episode again, fields, score and process metrics included;
- **incremental** (the env as shipped): the checks alone (``Episode.checks_only``), each
  declarative check kept until a table or tool it reads changes (``Episode.memo``), each kept
  result's distance kept with it.

Both arms must pay the same rewards (checked on every step); the table gives µs per env step
(resets, grades and the progress reward included; best of ``--repeat``) and their ratio.

Run: ``python benchmarks/bench_progress.py [--quick] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from backoffice.envs import available_domains, make_native
from backoffice.envs.core.domain import Episode
from backoffice.envs.core.env import BackofficeEnv
from backoffice.graders.progress import distance


def full_distance(self: BackofficeEnv, grade: Any = None) -> int:
    """The baseline arm: the distance from a whole grade, nothing shared between grades."""
    if grade is None:
        key = self.release.answer_key(self._task.task_id)
        grade = self.domain.grade(Episode(self._task, key, self._snapshot, self._store, self._store.diff(), self._trace))
    return distance(grade, self.domain.progress_exclude)


def record(domain: str, episodes: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """The native calls of ``episodes`` train episodes: the oracle's on every other one (a
    trained policy's kind of episode), masked random catalog play on the rest, ending the
    episode with probability 0.05 a step while other actions are valid."""
    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.eval.rollout import run_episode
    from backoffice.training.policies import get_policy

    env = make_catalog_env(domain, split="train")
    native = make_native(domain, split="train")
    rng = np.random.default_rng(0)
    ids = env.unwrapped.release.split_ids["train"]
    out = []
    for i in range(episodes):
        task_id = ids[i % len(ids)]
        if i % 2 == 0:
            run_episode(native, get_policy(domain, "oracle", seed=i), task_id=task_id)
            trace = native.trace
        else:
            env.reset(options={"task_id": task_id})
            finish = env.get_wrapper_attr("agent").finish
            while True:
                mask = env.action_masks().copy()
                if mask.sum() > 1 and rng.random() > 0.05:
                    mask[finish] = False
                _, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
                if terminated or truncated:
                    break
            trace = env.unwrapped.trace
        out.append((task_id, [r.get("sent") or {"tool": r["tool"], "args": r["args"]} for r in trace]))
    return out


def play(domain: str, episodes: list[tuple[str, list[dict[str, Any]]]], arm: str) -> tuple[float, list[float]]:
    """Seconds to replay ``episodes`` in one arm, and the rewards paid."""
    original = BackofficeEnv._distance
    if arm == "full":
        BackofficeEnv._distance = full_distance  # type: ignore[method-assign]
    try:
        env = make_native(domain, split="train", reward_mode="progress")
        rewards: list[float] = []
        for task_id, _ in episodes[:5]:  # the start distances of the first tasks, outside the timing
            env.reset(options={"task_id": task_id})
        t0 = time.perf_counter()
        for task_id, calls in episodes:
            env.reset(options={"task_id": task_id})
            for call in calls:
                rewards.append(env.step(call)[1])
        return time.perf_counter() - t0, rewards
    finally:
        BackofficeEnv._distance = original  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes")
    parser.add_argument("--domains", default=",".join(available_domains()))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n = 80 if args.quick else 400
    console = Console(width=None if sys.stdout.isatty() else 140)
    table = Table(title=f"progress reward: µs per native env step, {n} train episodes per domain (oracle and masked random)")
    for col in ("domain", "steps", "full grade", "incremental", "incremental / full"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    rows = []
    for domain in args.domains.split(","):
        episodes = record(domain, n)
        steps = sum(len(c) for _, c in episodes)
        best: dict[str, float] = {}
        paid: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for arm in ("full", "incremental"):
                seconds, paid[arm] = play(domain, episodes, arm)
                best[arm] = min(best.get(arm, seconds), seconds)
        if paid["full"] != paid["incremental"]:
            raise SystemExit(f"{domain}: the two arms paid different rewards")
        row = {"domain": domain, "steps": steps, **{f"{a}_us": best[a] / steps * 1e6 for a in best}}
        row["ratio"] = row["incremental_us"] / row["full_us"]
        rows.append(row)
        table.add_row(domain, str(steps), f"{row['full_us']:.0f}", f"{row['incremental_us']:.0f}", f"{row['ratio']:.2f}x")
    console.print(table)
    console.print(f"rewards identical in both arms on every step; load average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
