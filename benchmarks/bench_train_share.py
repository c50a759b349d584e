"""The env's share of ``backoffice train``'s learn wall time, in the layout the command runs.

Per domain and seed, runs ``backoffice train --env D --timesteps N --seed S --out <tmp>`` as
shipped (the default tier, the catalog's tuned reward and hyperparameters, ``n_envs`` envs in
the learner's process) and reads its ``summary.json``: ``env_share_of_wall`` is the time inside
every env's ``reset``, ``step`` and ``action_masks`` summed over the envs, divided by the learn
wall time of the same run (a ratio within one run, so the machine's speed cancels out);
``env_share_per_worker`` is the largest single env's share, the figure the summaries reported
before (about 1/8 of the sum with 8 in-process envs). Prints mean and spread over the seeds,
and what the goal asks of the env in the same runs: the rest of the wall time per env step
(the learner's forward passes, updates and bookkeeping) and the env time per step that would
make the share 10 % against that rest. The validation and greedy-replay envs, whose episodes run
inside learn's wall time too, are timed apart (``validation_env_share_of_wall``) and added in
``every env``, the figure the goal is checked on.

Goal (issue 34): env <= 10 % of ``backoffice train`` wall time in every domain.

Run: ``python benchmarks/bench_train_share.py [--timesteps 20000] [--seeds 0,1] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from backoffice.envs import available_domains

GOAL = 0.10


def measure(domain: str, timesteps: int, seed: int, root: Path) -> dict:
    """One ``backoffice train`` run; its summary."""
    out = root / f"{domain}-s{seed}"
    # --no-heldout: the final heldout evaluation runs after learn, outside the measured wall time
    cmd = [sys.executable, "-m", "backoffice.training.cli", "train", "--env", domain, "--timesteps", str(timesteps),
           "--seed", str(seed), "--no-heldout", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads((out / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--domains", default=",".join(available_domains()))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for domain in args.domains.split(","):
            runs = [measure(domain, args.timesteps, s, Path(tmp)) for s in seeds]
            shares = [r["env_share_of_wall"] for r in runs]
            rows.append({"domain": domain, "tier": runs[0]["tier"], "reward": runs[0]["config"]["reward_mode"],
                         "n_envs": runs[0]["config"]["n_envs"], "shares": shares,
                         "largest_env": [r["env_share_per_worker"] for r in runs],
                         "env_step_us": [r["env_step_us"] for r in runs],
                         "validation_shares": [r["validation_env_share_of_wall"] for r in runs]})
    table = Table(title=f"env share of `backoffice train` learn wall time ({args.timesteps:,} steps, seeds {args.seeds})")
    for col in ("domain", "tier / reward / envs", "learner's envs (min-max)", "largest env", "validation envs",
                "every env (min-max)", "env us/step: learner's / every", "rest us/step", f"{100 * GOAL:.0f} % allows us/step", "goal"):
        table.add_column(col)
    for r in rows:
        learner, checks = r["shares"], r["validation_shares"]
        every = [a + b for a, b in zip(learner, checks, strict=True)]
        # per learner step: the wall time is env_step_us / share; every env's time and the rest of it
        wall = [us / sh for us, sh in zip(r["env_step_us"], learner, strict=True)]
        r["every_env_shares"] = every
        r["every_env_step_us"] = statistics.mean(w * e for w, e in zip(wall, every, strict=True))
        r["rest_step_us"] = statistics.mean(w * (1 - e) for w, e in zip(wall, every, strict=True))
        r["goal_env_step_us"] = r["rest_step_us"] * GOAL / (1 - GOAL)
        table.add_row(r["domain"], f"{r['tier']} / {r['reward']} / {r['n_envs']}",
                      f"{100 * statistics.mean(learner):.1f} % ({100 * min(learner):.1f}-{100 * max(learner):.1f})",
                      f"{100 * statistics.mean(r['largest_env']):.1f} %", f"{100 * statistics.mean(checks):.1f} %",
                      f"{100 * statistics.mean(every):.1f} % ({100 * min(every):.1f}-{100 * max(every):.1f})",
                      f"{statistics.mean(r['env_step_us']):.0f} / {r['every_env_step_us']:.0f}",
                      f"{r['rest_step_us']:.0f}", f"{r['goal_env_step_us']:.0f}",
                      "met" if max(every) <= GOAL else f"> {100 * GOAL:.0f} %")
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
