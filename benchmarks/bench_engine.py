"""Engine benchmarks, reported as ratios against baselines measured in the same run.

1. reset: ``env.reset(options={"task_id": ...})`` against ``copy.deepcopy`` of the same
   snapshot, at three snapshot sizes (a synthetic padded domain).
2. step throughput: replaying recorded oracle actions through ``gym.make`` (validation and a
   trace file on) against ``CartPole-v1`` through ``gym.make``, per installed domain.
3. grade: time of the pure grade at the end of oracle episodes, per installed domain.

Run: ``make bench`` or ``python benchmarks/bench_engine.py [--quick]``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import backoffice.envs  # noqa: E402,F401
from backoffice.envs import available_domains, make_native  # noqa: E402
from backoffice.envs.core import BackofficeEnv, Domain, Generated  # noqa: E402
from backoffice.envs.core.build import build_release  # noqa: E402
from backoffice.envs.core.release import Release  # noqa: E402
from backoffice.training.eval.rollout import run_episode  # noqa: E402
from backoffice.training.policies import get_policy  # noqa: E402

console = Console()


def best_of(fn, repeat: int, number: int) -> float:
    """Best mean seconds per call over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def padded_domain(rows: int) -> Domain:
    import toy_domain

    def generate(seed: int, tag: str) -> Generated:
        base = toy_domain.generate(seed, tag)
        snap = dict(base.snapshot)
        snap["ledger"] = [{"id": f"L-{i:06d}", "amount": i * 7 % 1000, "memo": f"entry {i}"} for i in range(rows)]
        return Generated(base.task, snap, base.key)

    return Domain(name=f"pad{rows}", title="Pad", prefix="PAD", toolkit=toy_domain.toolkit, generate=generate,
                  grade=toy_domain.grade, defect_tags=("plain",), failure_codes=("wrong_value",),
                  generator_version="1", sizes={"train": 20, "heldout": 20})


def bench_reset(sizes: list[int], quick: bool) -> Table:
    table = Table(title="reset vs copy.deepcopy of the snapshot")
    for col in ("rows", "env.reset (us)", "deepcopy (us)", "deepcopy / reset"):
        table.add_column(col, justify="right")
    for rows in sizes:
        dom = padded_domain(rows)
        with tempfile.TemporaryDirectory() as tmp:
            build_release(dom, Path(tmp))
            release = Release(dom.name, Path(tmp))
            env_cls = type("PadEnv", (BackofficeEnv,), {"domain": dom})
            env = env_cls(release=release)
            opts = {"task_id": "PAD-T0001"}
            env.reset(options=opts)
            snapshot = release.snapshot("PAD-T0001")
            tables = snapshot.to_json()
            t_reset = best_of(lambda: env.reset(options=opts), 5, 2000 if not quick else 200)
            t_copy = best_of(lambda: copy.deepcopy(tables), 3, max(1, 2000 // max(1, rows // 10)) if not quick else 2)
        table.add_row(f"{rows:,}", f"{t_reset * 1e6:.1f}", f"{t_copy * 1e6:,.0f}", f"{t_copy / t_reset:,.0f}x")
    return table


def recorded_episodes(domain: str, n: int) -> list[tuple[str, list]]:
    env = make_native(domain, split="heldout")
    ids = env.release.split_ids["heldout"][:n]
    out = []
    for task_id in ids:
        run_episode(env, get_policy(domain, "oracle"), task_id=task_id)
        out.append((task_id, [{"tool": r["tool"], "args": r["args"]} for r in env.trace]))
    return out


def bench_cartpole(steps: int) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=steps).tolist()

    def run() -> None:
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()

    t = best_of(run, 3, 1)
    return steps / t


def bench_domains(domains: list[str], quick: bool) -> Table:
    cartpole = bench_cartpole(20_000 if not quick else 2_000)
    table = Table(title=f"native step throughput vs CartPole-v1 ({cartpole:,.0f} steps/s), reset and grade")
    for col in ("domain", "steps/s", "vs CartPole", "reset (us)", "grade (us)", "grade max (us)"):
        table.add_column(col, justify="right")
    for domain in domains:
        episodes = recorded_episodes(domain, 60 if not quick else 10)
        with tempfile.TemporaryDirectory() as tmp:
            env = gym.make(backoffice.envs.get_domain(domain).env_id, split="heldout", trace_path=str(Path(tmp) / "trace.jsonl"))

            def run() -> int:
                n = 0
                for task_id, actions in episodes:
                    env.reset(options={"task_id": task_id})
                    for a in actions:
                        env.step(a)
                        n += 1
                return n

            n_steps = run()
            t = best_of(run, 3, 1)
            task_id = episodes[0][0]
            t_reset = best_of(lambda: env.reset(options={"task_id": task_id}), 5, 500 if not quick else 50)
            grades = []
            native = env.unwrapped
            for task_id, actions in episodes:
                native.reset(options={"task_id": task_id})
                for a in actions[:-1]:
                    native.step(a)
                grades.append(best_of(lambda: native._grade(), 3, 20))
            env.close()
        sps = n_steps / t
        table.add_row(domain, f"{sps:,.0f}", f"{sps / cartpole:.0%}", f"{t_reset * 1e6:.1f}",
                      f"{np.mean(grades) * 1e6:.0f}", f"{np.max(grades) * 1e6:.0f}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    args = parser.parse_args()
    console.print(bench_reset([100, 10_000, 100_000], args.quick))
    domains = available_domains()
    if domains:
        console.print(bench_domains(domains, args.quick))
    else:
        console.print("[yellow]no domain installed: only the reset benchmark ran[/]")


if __name__ == "__main__":
    main()
