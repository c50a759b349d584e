"""CPU cost of the slot-factored policy network against SB3's MLP, in the same run.

Per domain whose facts tier names slot families (``slot_actions``), ``train`` runs twice on the
same budget with the tier's tuned hyperparameters, without validation or heldout evaluation
(``eval_freq`` above the budget):

- **baseline**: ``policy="mlp"`` (SB3's 64x64 MLP actor-critic);
- **slots**: ``policy="slots"`` (``training/slot_policy.py``: slot encoders, a shared scorer per
  action family).

It reports CPU seconds per 10k training steps of each, their ratio (slots / mlp) and the wall
time. What each network learns is in the results table, not here. Several seeds give the spread.

Run: ``python benchmarks/bench_policy.py [--quick] [--timesteps N] [--seeds 0,1] [--domains a,b] [--json PATH]``.
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

from backoffice.training.catalog import spec_class, tier_specs
from backoffice.training.train import TrainConfig, train

console = Console(width=None if sys.stdout.isatty() else 200)
TIER = "facts"


def slotted_domains() -> list[str]:
    """Domains whose facts tier names slot families."""
    from backoffice.envs import DOMAINS

    return [d for d in DOMAINS if TIER in tier_specs(d) and spec_class(d, tier_specs(d)[TIER]).slot_actions]


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run(domain: str, timesteps: int, seed: int, policy: str) -> dict[str, Any]:
    """One training run with ``policy``; its CPU and wall seconds per 10k steps."""
    with tempfile.TemporaryDirectory() as tmp:
        config = TrainConfig.for_domain(domain, Path(tmp), tier=TIER, timesteps=timesteps, seed=seed,
                                        eval_freq=10 * timesteps, heldout_eval=False, validation_size=1)
        config = replace(config, policy=policy)
        cpu0, t0 = cpu_now(), time.perf_counter()
        summary = train(config)
        cpu, wall = cpu_now() - cpu0, time.perf_counter() - t0
    steps = summary["timesteps"]
    return {"domain": domain, "seed": seed, "policy": policy, "timesteps": steps,
            "cpu_s_per_10k": cpu / steps * 1e4, "wall_s_per_10k": wall / steps * 1e4}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5k steps, one seed, two domains")
    ap.add_argument("--timesteps", type=int, default=20_000)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--domains", default=None, help="default: every domain whose facts tier has slots")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    domains = args.domains.split(",") if args.domains else slotted_domains()
    timesteps, seeds = args.timesteps, [int(s) for s in args.seeds.split(",")]
    if args.quick:
        timesteps, seeds, domains = 5_000, [0], domains[:2]
    rows = []
    for domain in domains:
        for seed in seeds:
            for policy in ("mlp", "slots"):
                rows.append(run(domain, timesteps, seed, policy))
                console.print(f"{domain} seed {seed} {policy}: {rows[-1]['cpu_s_per_10k']:.1f} CPU-s / 10k steps")
    table = Table(title=f"MaskablePPO CPU per 10k steps, facts tier: slot-factored vs MLP ({timesteps:,} steps, seeds {','.join(map(str, seeds))})")
    for col in ("domain", "mlp CPU-s", "slots CPU-s", "ratio slots/mlp (mean, min-max)", "wall s (mlp / slots)"):
        table.add_column(col, justify="right" if col != "domain" else "left")
    for domain in domains:
        base = [r for r in rows if r["domain"] == domain and r["policy"] == "mlp"]
        new = [r for r in rows if r["domain"] == domain and r["policy"] == "slots"]
        ratios = [n["cpu_s_per_10k"] / b["cpu_s_per_10k"] for b, n in zip(base, new, strict=True)]
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
