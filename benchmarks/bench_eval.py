"""Evaluation throughput: 1 worker against 2 worker processes (and Ray, if asked), in one run.

The workload is ``backoffice eval``'s: oracle, random and no-op over the held-out tasks of every
installed domain (the toy domain if none is), written to a JSONL file. Each backend runs the
same jobs into a fresh file; the time covers everything ``evaluate`` does, worker start-up
included. The figure to read is the ratio ``2 workers / 1 worker`` of episodes per second,
measured in the same run on the same machine, next to a control: two forked processes that each
run half the jobs and send nothing back, i.e. the most two workers can gain on this machine at
that moment (other load on a 2-core machine caps it). The records of every backend are checked to be
identical (sorted lines).

Run: ``python benchmarks/bench_eval.py [--limit N] [--repeat R] [--ray]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from backoffice.envs import available_domains  # noqa: E402
from backoffice.training.evaluate import (  # noqa: E402
    Executor,
    Job,
    ProcessExecutor,
    RayExecutor,
    Runner,
    SerialExecutor,
    evaluate,
    plan_jobs,
    sorted_lines,
)

console = Console()
AGENTS = ["oracle", "random", "noop"]


def workload(limit: int | None, tmp: Path) -> tuple[str, list[Job], Runner]:
    """The jobs and runner: installed domains, or the toy domain when none is installed."""
    domains = available_domains()
    if domains:
        return ", ".join(domains), plan_jobs(domains, AGENTS, "heldout", limit=limit), Runner()
    import evaltoy

    root = evaltoy.build(tmp / "toy-seeds")
    jobs = plan_jobs(["toy"], AGENTS, "heldout", attempts=max(1, (limit or 150) // 20), task_ids=evaltoy.ids(root))
    return "toy (no domain installed)", jobs, evaltoy.runner(root)


def timed(jobs: list[Job], runner: Runner, make: Callable[[], Executor], out: Path, repeat: int) -> tuple[float, list[bytes]]:
    """Best wall time of ``repeat`` evaluations into a fresh file; the sorted lines written."""
    best = float("inf")
    for i in range(repeat):
        path = out.with_name(f"{out.stem}-{i}.jsonl")
        t0 = time.perf_counter()
        evaluate(jobs, out=path, executor=make(), runner=runner)
        best = min(best, time.perf_counter() - t0)
    return best, sorted_lines(path)


def _half(jobs: list[Job], runner: Runner) -> None:
    evaluate(jobs, runner=runner)


def control(jobs: list[Job], runner: Runner, repeat: int) -> float:
    """Best wall time of two forked processes that each run half the jobs serially and send
    nothing back: the most that two workers could gain on this machine right now."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        procs = [ctx.Process(target=_half, args=(jobs[i::2], runner)) for i in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="tasks per domain (default: all held-out tasks)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per backend (best time counts)")
    parser.add_argument("--ray", action="store_true", help="also time a local Ray instance with 2 CPUs")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        name, jobs, runner = workload(args.limit, tmp)
        # warm this process's caches (releases, envs) so the 1-worker run is not charged for loading;
        # forked workers inherit them
        evaluate(jobs[:: max(1, len(jobs) // 30)], runner=runner)
        backends: list[tuple[str, Callable[[], Executor]]] = [
            ("1 worker (serial)", SerialExecutor),
            ("2 worker processes", lambda: ProcessExecutor(2)),
        ]
        if args.ray:
            backends.append(("Ray, local instance, 2 CPUs (incl. start-up)", lambda: RayExecutor(num_cpus=2)))
        results = []
        for label, make in backends:
            seconds, lines = timed(jobs, runner, make, tmp / f"{len(results)}.jsonl", 1 if "Ray" in label else args.repeat)
            results.append((label, seconds, lines))
        bound = control(jobs, runner, args.repeat)
    base = results[0][1]
    table = Table(title=f"Evaluation throughput: {len(jobs)} episodes ({name}; oracle, random, no-op; held-out)")
    for col in ("backend", "seconds", "episodes / s", "speed-up vs 1 worker", "same records"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    for label, seconds, lines in results:
        table.add_row(label, f"{seconds:.2f}", f"{len(jobs) / seconds:.0f}", f"{base / seconds:.2f}x",
                      "yes" if lines == results[0][2] else "NO")
    table.add_row("control: 2 forks, half each, no IPC", f"{bound:.2f}",
                  f"{len(jobs) / bound:.0f}", f"{base / bound:.2f}x", "-")
    console.print(table)
    console.print(f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
                  "(other processes on the machine slow the parallel runs most)")
    if any(lines != results[0][2] for _, _, lines in results):
        raise SystemExit("backends wrote different records")


if __name__ == "__main__":
    main()
