"""Catalog env benchmark, as ratios against baselines measured in the same run.

Per domain, over the same episodes (random valid catalog actions on released train tasks):

1. native: the recorded native calls replayed straight into the native env;
2. catalog: the same episodes through the catalog wrapper (grounding, observation parsing,
   features, masks);
3. policy forward: one MaskablePPO ``predict`` with masks (64x64 MLP, CPU, 1 thread), the
   per-step cost on the learner's side.

The ratio catalog / native is the wrapper's overhead; catalog / (catalog + forward) bounds the
share of a training step spent in the env before the PPO update itself is counted.

Run: ``python benchmarks/bench_catalog.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.console import Console
from rich.table import Table

import backoffice.envs  # noqa: F401
from backoffice.envs import available_domains, make_native
from backoffice.training.catalog import make_catalog_env

console = Console()


def record_episodes(domain: str, episodes: int) -> tuple[list[tuple[str, list[int], list]], int]:
    env = make_catalog_env(domain, split="train")
    rng = np.random.default_rng(0)
    ids = env.unwrapped.release.split_ids["train"]
    out, steps = [], 0
    for i in range(episodes):
        tid = ids[i % len(ids)]
        env.reset(options={"task_id": tid})
        actions = []
        while True:
            a = int(rng.choice(np.flatnonzero(env.action_masks())))
            actions.append(a)
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                break
        calls = [{"tool": r["tool"], "args": r["args"]} if r["args"] is not None else "x" for r in env.unwrapped.trace]
        out.append((tid, actions, calls))
        steps += len(actions)
    return out, steps


def time_native(domain: str, episodes: list) -> float:
    env = make_native(domain, split="train")
    t0 = time.perf_counter()
    for tid, _, calls in episodes:
        env.reset(options={"task_id": tid})
        for c in calls:
            env.step(c)
    return time.perf_counter() - t0


def time_catalog(domain: str, episodes: list) -> float:
    env = make_catalog_env(domain, split="train")
    t0 = time.perf_counter()
    for tid, actions, _ in episodes:
        env.reset(options={"task_id": tid})
        for a in actions:
            env.step(a)
            env.action_masks()
    return time.perf_counter() - t0


def time_forward(domain: str, n: int) -> float:
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    env = make_catalog_env(domain)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu")
    obs, _ = env.reset(seed=0)
    mask = env.action_masks()
    t0 = time.perf_counter()
    for _ in range(n):
        model.predict(obs, action_masks=mask, deterministic=False)
    return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer episodes")
    args = parser.parse_args()
    n = 60 if args.quick else 300
    table = Table(title=f"Catalog env: {n} random-valid episodes per domain")
    for col in ("domain", "steps", "native us/step", "catalog us/step", "catalog / native", "predict us", "env share of act+step"):
        table.add_column(col, justify="right")
    for domain in available_domains():
        episodes, steps = record_episodes(domain, n)
        native = min(time_native(domain, episodes) for _ in range(3)) / steps
        catalog = min(time_catalog(domain, episodes) for _ in range(3)) / steps
        forward = time_forward(domain, 500)
        table.add_row(domain, str(steps), f"{native * 1e6:.0f}", f"{catalog * 1e6:.0f}", f"{catalog / native:.2f}x",
                      f"{forward * 1e6:.0f}", f"{catalog / (catalog + forward):.0%}")
    console.print(table)


if __name__ == "__main__":
    main()
