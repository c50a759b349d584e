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
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _paired import compare, cpu_now
from rich.console import Console

from backoffice.training.catalog import tier_specs
from backoffice.training.rl.train import TrainConfig, rollout_on, train

console = Console(width=None if sys.stdout.isatty() else 200)
DOMAINS = ("approvals", "registration", "remittance", "schedules", "sufficiency")


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
    for domain in domains:
        tier_specs(domain)  # a helpful error for an unknown domain before any training
    rows = compare(console, domains, seeds, ("baseline", "default"), lambda d, s, arm: run(d, timesteps, s, arm),
                   f"MaskablePPO CPU per 10k steps: 8 envs in-process vs 2 worker processes ({timesteps:,} steps, seeds {','.join(map(str, seeds))})",
                   ("2 workers", "8 in-process"))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
