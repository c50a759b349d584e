"""CPU cost of the slot-factored policy network against SB3's MLP, in the same run.

Per domain whose facts tier names slot families (``slot_actions``), ``train`` runs twice on the
same budget with the tier's tuned hyperparameters, without validation or heldout evaluation
(``eval_freq`` above the budget):

- **baseline**: ``policy="mlp"`` (SB3's 64x64 MLP actor-critic);
- **slots**: ``policy="slots"`` (``training/rl/slot_policy.py``: slot encoders, a shared scorer per
  action family).

It reports CPU seconds per 10k training steps of each, their ratio (slots / mlp) and the wall
time. What each network learns is in the results table, not here. Several seeds give the spread.

Run: ``python benchmarks/bench_policy.py [--quick] [--timesteps N] [--seeds 0,1] [--domains a,b] [--json PATH]``.
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

from backoffice.training.catalog import spec_class, tier_specs
from backoffice.training.rl.train import TrainConfig, train

console = Console(width=None if sys.stdout.isatty() else 200)
TIER = "facts"


def slotted_domains() -> list[str]:
    """Domains whose facts tier names slot families."""
    from backoffice.envs import DOMAINS

    return [d for d in DOMAINS if TIER in tier_specs(d) and spec_class(d, tier_specs(d)[TIER]).slot_actions]


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
    rows = compare(console, domains, seeds, ("mlp", "slots"), lambda d, s, arm: run(d, timesteps, s, arm),
                   f"MaskablePPO CPU per 10k steps, facts tier: slot-factored vs MLP ({timesteps:,} steps, seeds {','.join(map(str, seeds))})",
                   ("mlp", "slots"), ratio=(1, 0))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
