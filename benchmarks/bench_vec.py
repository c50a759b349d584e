"""CPU cost of MaskablePPO training per vec env layout, against the 2-worker layout in the same run.

Per domain (conclusions tier, its tuned hyperparameters), ``train`` is run twice on the same
budget, without validation or heldout evaluation (``eval_freq`` above the budget):

- **baseline**: ``vec_env="subproc"``, 2 envs in worker processes, ``n_steps`` scaled so the
  rollout has the same size (the layout every run used before 2026-12-02);
- **default**: ``TrainConfig``'s layout today, ``vec_env="dummy"`` with 8 envs in the learner's
  process.

It reports CPU seconds (learner + workers) per 10k steps of each, their ratio, and the wall
time. The two layouts do not train the same model (8 envs see 8 tasks per rollout step); what
each learns is in the results table, not here. Several seeds give the spread.

Run: ``python benchmarks/bench_vec.py [--quick] [--timesteps N] [--seeds 0,1] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from backoffice.training.catalog import tier_specs
from backoffice.training.train import TrainConfig, rollout_on, train

console = Console(width=None if sys.stdout.isatty() else 200)
DOMAINS = ("approvals", "registration", "remittance", "schedules", "sufficiency")


def cpu_now() -> float:
    """CPU seconds of this process and its reaped children (the workers, once closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run(domain: str, timesteps: int, seed: int, layout: str) -> dict[str, Any]:
    """One training run of ``layout`` (``baseline`` or ``default``); its CPU and wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        config = TrainConfig.for_domain(domain, Path(tmp), timesteps=timesteps, seed=seed, eval_freq=10 * timesteps,
                                        heldout_eval=False, validation_size=1)
        if layout == "baseline":
            config = replace(config, vec_env="subproc", **rollout_on({"n_envs": config.n_envs, "n_steps": config.n_steps}, 2))
        cpu0, t0 = cpu_now(), time.perf_counter()
        summary = train(config)
        cpu, wall = cpu_now() - cpu0, time.perf_counter() - t0
    steps = summary["timesteps"]
    return {"domain": domain, "seed": seed, "layout": layout, "n_envs": config.n_envs, "vec_env": config.vec_env,
            "timesteps": steps, "cpu_s_per_10k": cpu / steps * 1e4, "wall_s_per_10k": wall / steps * 1e4}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5k steps, one seed, two domains")
    ap.add_argument("--timesteps", type=int, default=20_000)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--domains", default=",".join(DOMAINS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    timesteps, seeds, domains = args.timesteps, [int(s) for s in args.seeds.split(",")], args.domains.split(",")
    if args.quick:
        timesteps, seeds, domains = 5_000, [0], domains[:2]
    rows = []
    for domain in domains:
        tier_specs(domain)  # a helpful error for an unknown domain before any training
        for seed in seeds:
            for layout in ("baseline", "default"):
                rows.append(run(domain, timesteps, seed, layout))
                console.print(f"{domain} seed {seed} {layout}: {rows[-1]['cpu_s_per_10k']:.1f} CPU-s / 10k steps")
    table = Table(title=f"MaskablePPO CPU per 10k steps: 8 envs in-process vs 2 worker processes ({timesteps:,} steps, seeds {args.seeds})")
    for col in ("domain", "2 workers CPU-s", "8 in-process CPU-s", "ratio (mean, min-max)", "wall s (2 w / 8 in)"):
        table.add_column(col, justify="right" if col != "domain" else "left")
    for domain in domains:
        base = [r for r in rows if r["domain"] == domain and r["layout"] == "baseline"]
        new = [r for r in rows if r["domain"] == domain and r["layout"] == "default"]
        ratios = [b["cpu_s_per_10k"] / n["cpu_s_per_10k"] for b, n in zip(base, new, strict=True)]
        table.add_row(domain, f"{statistics.fmean(r['cpu_s_per_10k'] for r in base):.1f}",
                      f"{statistics.fmean(r['cpu_s_per_10k'] for r in new):.1f}",
                      f"{statistics.fmean(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
                      f"{statistics.fmean(r['wall_s_per_10k'] for r in base):.1f} / {statistics.fmean(r['wall_s_per_10k'] for r in new):.1f}")
    console.print(table)
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
