"""The env's share of MaskablePPO ``learn`` wall time, against a trivial env in the same run.

Two layouts, labelled in the table:

- ``--layout train`` (default): exactly what ``backoffice train`` runs: the learner's envs built
  by ``training/rl/envs.py``'s ``learner_envs`` from ``TrainConfig.for_domain`` (the default
  tier, the catalog's tuned reward and hyperparameters, ``n_envs`` envs stepped in the learner's
  process). The share is the time inside every env's ``reset``, ``step`` and ``action_masks``
  (``TrainingEnv.env_seconds``) **summed over the envs**, divided by the learn wall time: with
  in-process envs the learner waits for each of them in turn.
- ``--layout subproc2``: the layout this benchmark measured before issue 34 (2 ``SubprocVecEnv``
  workers, ``fork``, the shaped reward, the tuned rollout size): each worker's share of the wall
  time, read per worker (workers run in parallel, so shares are not added). Not what training
  runs; kept to compare with the figures of issues 15-31.

MaskablePPO ``MlpPolicy`` with the domain's tuned hyperparameters, the finishing actions' logit
bias, one torch thread; a fixed number of timesteps (no validation callback).

Baseline, same run, same layout and sizes: the same learn on a trivial env with the domain's
observation and action sizes (zeros, an all-true mask, fixed-length episodes) inside the same
``TrainingEnv``. Its wall time is the PPO floor; ``learn / trivial`` is what the real env adds.
``CPUs busy`` is (learner + workers' CPU seconds) / learn wall.

Goal (issue 34): env <= 10 % of ``backoffice train``'s learn wall time, in every domain.

Run: ``python benchmarks/bench_learn.py [--quick] [--layout train|subproc2] [--timesteps N] [--seeds 0,1] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from rich.console import Console
from rich.table import Table

from backoffice.envs import available_domains
from backoffice.training.catalog import make_catalog_env
from backoffice.training.rl.config import training_task_ids
from backoffice.training.rl.train import TrainConfig, TrainingEnv, ending_actions, rollout_on, training_env

console = Console(width=None if sys.stdout.isatty() else 200)
GOAL = 0.10


class TrivialEnv(gym.Env):
    """Zero observations of ``n_features``, ``n_actions`` always valid, episodes of ``length`` steps."""

    def __init__(self, n_features: int, n_actions: int, length: int = 16):
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(n_features,), dtype=np.float32)
        self.action_space = spaces.Discrete(n_actions)
        self._obs: np.ndarray = np.zeros(n_features, dtype=np.float32)
        self._mask: np.ndarray = np.ones(n_actions, dtype=bool)
        self.length, self.t = length, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs, 0.0, self.t >= self.length, False, {}

    def action_masks(self) -> np.ndarray:
        return self._mask


def trivial_env(n_features: int, n_actions: int) -> TrainingEnv:
    """A :class:`TrivialEnv` inside the trainer's :class:`TrainingEnv` (same timing overhead)."""
    return TrainingEnv(TrivialEnv(n_features, n_actions))


def _rollout_timer() -> Any:
    """A callback adding up the seconds spent collecting rollouts (the rest of learn is updates)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RolloutTimer(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.seconds, self._t0 = 0.0, 0.0

        def _on_rollout_start(self) -> None:
            self._t0 = time.perf_counter()

        def _on_rollout_end(self) -> None:
            self.seconds += time.perf_counter() - self._t0

        def _on_step(self) -> bool:
            return True

    return RolloutTimer()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def learn(config: TrainConfig, make: Any, bias_actions: list[int], layout: str) -> dict[str, Any]:
    """MaskablePPO over ``config.n_envs`` envs from ``make``, in the learner's process
    (``layout="train"``, as train.py's default) or one worker process each; timings."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(config.torch_threads)
    if layout == "train":
        venv: Any = DummyVecEnv([make] * config.n_envs)
    else:
        start = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        venv = SubprocVecEnv([make] * config.n_envs, start_method=start)
    try:
        venv.seed(config.seed)
        model = MaskablePPO("MlpPolicy", venv, n_steps=config.n_steps, batch_size=config.batch_size, n_epochs=config.n_epochs,
                            learning_rate=config.learning_rate, gamma=config.gamma, gae_lambda=config.gae_lambda,
                            clip_range=config.clip_range, ent_coef=config.ent_coef,
                            policy_kwargs={"net_arch": list(config.net_arch)}, seed=config.seed, device="cpu", verbose=0)
        if bias_actions:
            head: Any = model.policy.action_net  # an nn.Linear for a Discrete action space
            with torch.no_grad():
                head.bias[bias_actions] += config.finish_bias
        before = [float(x) for x in venv.get_attr("env_seconds")]
        pids = [p.pid for p in venv.processes] if layout != "train" else []
        cpu_before = [cpu_seconds(p) for p in pids]
        timer = _rollout_timer()
        main_cpu, t0 = time.process_time(), time.perf_counter()
        model.learn(total_timesteps=config.timesteps, callback=timer)
        wall, main_cpu = time.perf_counter() - t0, time.process_time() - main_cpu
        seconds = [float(x) - b for x, b in zip(venv.get_attr("env_seconds"), before, strict=True)]
        worker_cpu = [cpu_seconds(p) - c for p, c in zip(pids, cpu_before, strict=True)]
    finally:
        venv.close()
    steps = int(model.num_timesteps)
    # in-process envs: the learner waits for each in turn, so their times add up; workers run
    # in parallel, so the figure is the slowest worker's
    share = sum(seconds) / wall if layout == "train" else max(seconds) / wall
    return {"timesteps": steps, "wall_s": wall, "collect_s": timer.seconds, "env_s": seconds, "shares": [s / wall for s in seconds],
            "share": share, "learner_cpu_s": main_cpu, "worker_cpu_s": worker_cpu,
            "cpus_busy": (main_cpu + sum(worker_cpu)) / wall, "env_us_per_step": sum(seconds) / max(1, steps) * 1e6}


def bench_domain(domain: str, timesteps: int, seed: int, layout: str) -> dict[str, Any]:
    """The domain's learn and the trivial baseline's, with the same hyperparameters, sizes and layout."""
    with tempfile.TemporaryDirectory() as tmp:
        tuned = TrainConfig.for_domain(domain, tmp, timesteps=timesteps, seed=seed)
    if layout == "train":
        config, reward = tuned, tuned.reward_mode
    else:  # 2 workers with the tuned rollout size and the shaped reward (the layout before issue 34)
        config = replace(tuned, vec_env="subproc", **rollout_on({"n_envs": tuned.n_envs, "n_steps": tuned.n_steps}, 2))
        reward = "shaped"
    train_ids = training_task_ids(config)
    probe: Any = make_catalog_env(domain, split="train", spec=config.spec)
    n_features, n_actions = int(probe.observation_space.shape[0]), int(probe.action_space.n)
    bias = ending_actions(probe, config.finish_tools)
    make = functools.partial(training_env, domain, split=config.train_split, reward_mode=reward, call_cost=config.call_cost,
                             gate_cap=config.gate_cap, task_ids=train_ids, task_sampling=config.task_sampling, spec=config.spec)
    env_run = learn(config, make, bias, layout)
    base_run = learn(config, functools.partial(trivial_env, n_features, n_actions), [], layout)
    return {"domain": domain, "seed": seed, "layout": layout, "reward": reward, "n_envs": config.n_envs,
            "n_steps": config.n_steps, "batch_size": config.batch_size,
            "n_features": n_features, "n_actions": n_actions, "env": env_run, "trivial": base_run,
            "wall_vs_trivial": env_run["wall_s"] / base_run["wall_s"]}


#: what each layout's share is
LAYOUTS = {"train": "every env summed: what `backoffice train` runs", "subproc2": "largest of 2 worker processes, shaped reward"}


def render(rows: list[dict[str, Any]], timesteps: int, layout: str) -> Table:
    table = Table(title=f"Env share of MaskablePPO learn wall time ({timesteps:,} timesteps; layout {layout}: "
                        f"{LAYOUTS[layout]}; goal <= {GOAL:.0%})")
    for col in ("domain", "seed", "envs / reward", "n_steps/batch", "learn s", "collect s", "env share", "env us/step",
                "CPUs busy", "trivial learn s", "trivial share", "learn / trivial", "1 - trivial/learn"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for r in rows:
        e, b = r["env"], r["trivial"]
        share = f"{e['share']:.1%}"
        table.add_row(r["domain"], str(r["seed"]), f"{r['n_envs']} / {r['reward']}", f"{r['n_steps']}/{r['batch_size']}",
                      f"{e['wall_s']:.2f}", f"{e['collect_s']:.2f}", share if e["share"] <= GOAL else f"[red]{share}[/]",
                      f"{e['env_us_per_step']:.0f}", f"{e['cpus_busy']:.2f}", f"{b['wall_s']:.2f}", f"{b['share']:.1%}",
                      f"{r['wall_vs_trivial']:.2f}x", f"{1 - 1 / r['wall_vs_trivial']:.0%}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,048 timesteps instead of 8,192")
    parser.add_argument("--timesteps", type=int, default=0, help="timesteps per learn (default 8192, quick 2048)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (a row per domain and seed)")
    parser.add_argument("--domains", default="", help="comma-separated (default: every installed domain)")
    parser.add_argument("--layout", choices=sorted(LAYOUTS), default="train", help="train (as shipped) or subproc2 (the old layout)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    timesteps = args.timesteps or (2048 if args.quick else 8192)
    domains = args.domains.split(",") if args.domains else available_domains()
    seeds = [int(s) for s in args.seeds.split(",")]
    load_before = os.getloadavg()[0]
    rows = []
    for domain in domains:
        for seed in seeds:
            rows.append(bench_domain(domain, timesteps, seed, args.layout))
            console.print(f"{domain} seed {seed}: env share {rows[-1]['env']['share']:.1%} ({args.layout})")
    console.print(render(rows, timesteps, args.layout))
    if len(seeds) > 1:
        for domain in domains:
            shares = [r["env"]["share"] for r in rows if r["domain"] == domain]
            console.print(f"{domain}: median env share over {len(shares)} seeds {statistics.median(shares):.1%} "
                          f"({min(shares):.1%}-{max(shares):.1%})")
    console.print(f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    if args.json:
        args.json.write_text(json.dumps({"timesteps": timesteps, "layout": args.layout, "goal_share": GOAL, "load_before": load_before,
                                         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
