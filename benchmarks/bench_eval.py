"""Evaluation throughput: 1 worker against 2 worker processes (and Ray, if asked), in one run.

The workload is ``backoffice eval``'s: oracle, random and no-op over the held-out tasks of every
installed domain (the toy domain if none is), written to a JSONL file. Each backend runs the
same jobs into a fresh file; the time covers everything ``evaluate`` does, worker start-up
included. The figure to read is the ratio ``2 workers / 1 worker`` of episodes per second,
measured in the same run on the same machine, next to a control: two forked processes that each
run half the jobs and send nothing back, i.e. the most two workers can gain on this machine at
that moment (other load on a 2-core machine caps it). The records of every backend are checked to be
identical (sorted lines).

Two more measurements (``--mode all``, the default; ``--mode inprocess`` runs only the above):

- **CLI** (``--mode cli``): ``backoffice eval --env all --split heldout --workers 1`` against
  ``--workers 2``, each a fresh subprocess writing a temp file, best of ``--repeat``: everything a
  user waits for (interpreter, imports, release loading in each worker). Goal (issue 15):
  ``--workers 2`` >= 1.7x ``--workers 1``. Beside it, the in-process control above (forked halves
  with warm caches, no IPC): the most two workers could gain on this machine at that moment.
- **start-up of one worker** (``--mode startup``): a fresh ``python -c`` that imports, makes the
  eval env of each domain (``default_make_env``) and resets one held-out task of each; the time
  from launching it to the last reset done. Goal: well under a second.

Run: ``python benchmarks/bench_eval.py [--quick] [--mode all|inprocess|cli|startup] [--limit N] [--repeat R] [--ray] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from backoffice.envs import available_domains  # noqa: E402
from backoffice.training.eval.evaluate import (  # noqa: E402
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

console = Console(width=None if sys.stdout.isatty() else 160)
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


def cli_command() -> list[str]:
    """How ``backoffice`` is invoked: the venv's console script (pyproject ``[project.scripts]``)
    next to this interpreter, else the module."""
    script = Path(sys.executable).parent / "backoffice"
    return [str(script)] if script.exists() else [sys.executable, "-m", "backoffice.training.cli"]


def time_cli(workers: int, limit: int | None, repeat: int, tmp: Path) -> tuple[list[float], list[bytes]]:
    """Wall times of ``repeat`` ``backoffice eval --env all --split heldout --workers N`` subprocesses,
    each into a fresh file; the sorted lines of the last."""
    times: list[float] = []
    for i in range(repeat):
        out = tmp / f"cli-{workers}-{i}.jsonl"
        cmd = [*cli_command(), "eval", "--env", "all", "--split", "heldout", "--workers", str(workers), "--out", str(out)]
        if limit is not None:
            cmd += ["--limit", str(limit)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return times, sorted_lines(out)


# A fresh eval worker's start: imports, the eval env of each domain, one reset each (argv: domains).
STARTUP = r"""
import sys, time
t0 = time.perf_counter()
from backoffice.training.eval.evaluate import default_make_env, default_task_ids
t_imports = time.perf_counter()
marks = {}
for domain in sys.argv[1:]:
    t = time.perf_counter()
    env = default_make_env(domain, "heldout")
    env.reset(**env.unwrapped.reset_args(default_task_ids(domain, "heldout")[0], None))
    marks[domain] = time.perf_counter() - t
print("RESULT " + __import__("json").dumps({"imports_s": t_imports - t0, "domains_s": marks, "inside_s": time.perf_counter() - t0}), flush=True)
"""


def time_startup(domains: list[str], repeat: int) -> list[dict[str, Any]]:
    """``repeat`` fresh workers: launch to the RESULT line (all resets done), and the child's own split."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", STARTUP, *domains], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        until_reset = time.perf_counter() - t0
        _, err = proc.communicate()
        if proc.returncode != 0 or not line.startswith("RESULT "):
            raise SystemExit(f"start-up probe failed:\n{err[-2000:]}")
        runs.append({"launch_to_last_reset_s": until_reset, **json.loads(line[len("RESULT "):])})
    return runs


def run_inprocess(args: argparse.Namespace, repeat: int, tmp: Path, report: dict[str, Any]) -> None:
    """The in-process comparison of the module docstring (serial, 2 processes, Ray, control)."""
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
    results: list[tuple[str, float, list[bytes]]] = []
    for label, make in backends:
        seconds, lines = timed(jobs, runner, make, tmp / f"{len(results)}.jsonl", 1 if "Ray" in label else repeat)
        results.append((label, seconds, lines))
    bound = control(jobs, runner, repeat)
    base = results[0][1]
    table = Table(title=f"Evaluation throughput in process: {len(jobs)} episodes ({name}; oracle, random, no-op; held-out)")
    for col in ("backend", "seconds", "episodes / s", "speed-up vs 1 worker", "same records"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    for label, seconds, lines in results:
        table.add_row(label, f"{seconds:.2f}", f"{len(jobs) / seconds:.0f}", f"{base / seconds:.2f}x",
                      "yes" if lines == results[0][2] else "NO")
    table.add_row("control: 2 forks, half each, no IPC", f"{bound:.2f}",
                  f"{len(jobs) / bound:.0f}", f"{base / bound:.2f}x", "-")
    console.print(table)
    report["inprocess"] = {"episodes": len(jobs), "seconds": {label: s for label, s, _ in results},
                           "control_s": bound, "control_speedup": base / bound,
                           "same_records": all(lines == results[0][2] for _, _, lines in results)}
    if any(lines != results[0][2] for _, _, lines in results):
        raise SystemExit("backends wrote different records")


def run_cli(args: argparse.Namespace, repeat: int, tmp: Path, report: dict[str, Any]) -> None:
    """``backoffice eval`` with 1 and 2 workers as subprocesses, next to the in-process control."""
    one, lines1 = time_cli(1, args.limit, repeat, tmp)
    two, lines2 = time_cli(2, args.limit, repeat, tmp)
    name, jobs, runner = workload(args.limit, tmp)
    evaluate(jobs[:: max(1, len(jobs) // 30)], runner=runner)  # warm, as the in-process control always is
    serial = timed(jobs, runner, SerialExecutor, tmp / "control-serial.jsonl", repeat)[0]
    bound = control(jobs, runner, repeat)
    ratio = min(one) / min(two)
    table = Table(title=f"`backoffice eval --env all --split heldout` through the CLI: {len(lines1)} episodes ({name}); "
                        f"best of {repeat}; goal --workers 2 >= 1.7x --workers 1")
    for col in ("run", "best s", "all runs s", "speed-up vs 1 worker", "same records"):
        table.add_column(col, justify="left" if col == "run" else "right")
    table.add_row("CLI --workers 1", f"{min(one):.2f}", " ".join(f"{t:.2f}" for t in one), "1.00x", "yes")
    speed = f"{ratio:.2f}x" if ratio >= 1.7 else f"[red]{ratio:.2f}x[/]"
    table.add_row("CLI --workers 2", f"{min(two):.2f}", " ".join(f"{t:.2f}" for t in two), speed, "yes" if lines2 == lines1 else "NO")
    table.add_row("in-process control: serial, warm", f"{serial:.2f}", "-", "1.00x", "-")
    table.add_row("in-process control: 2 forks, half each, warm, no IPC", f"{bound:.2f}", "-", f"{serial / bound:.2f}x", "-")
    console.print(table)
    report["cli"] = {"episodes": len(lines1), "command": cli_command(), "workers1_s": one, "workers2_s": two, "speedup": ratio,
                     "same_records": lines1 == lines2, "control_serial_s": serial, "control_2forks_s": bound,
                     "control_speedup": serial / bound}
    if lines1 != lines2:
        raise SystemExit("--workers 1 and --workers 2 wrote different records")


def run_startup(repeat: int, report: dict[str, Any]) -> None:
    """Start-up of one fresh eval worker (imports, an env of each domain, one reset each)."""
    domains = available_domains()
    runs = time_startup(domains, repeat)
    table = Table(title=f"Start-up of one eval worker: launch to the last first reset ({len(domains)} domains); "
                        f"median of {repeat}; goal well under 1 s")
    for col in ("step", "median s", "all runs s"):
        table.add_column(col, justify="left" if col == "step" else "right")

    def row(label: str, values: list[float]) -> None:
        table.add_row(label, f"{statistics.median(values):.3f}", " ".join(f"{v:.3f}" for v in values))

    row("launch -> every domain reset (whole)", [r["launch_to_last_reset_s"] for r in runs])
    row("  interpreter start (launch - inside)", [r["launch_to_last_reset_s"] - r["inside_s"] for r in runs])
    row("  imports (backoffice.training.eval.evaluate)", [r["imports_s"] for r in runs])
    for d in domains:
        row(f"  make env + first reset: {d}", [r["domains_s"][d] for r in runs])
    console.print(table)
    report["startup"] = {"domains": domains, "runs": runs,
                         "median_launch_to_last_reset_s": statistics.median(r["launch_to_last_reset_s"] for r in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("all", "inprocess", "cli", "startup"), default="all", help="which measurements")
    parser.add_argument("--quick", action="store_true", help="one run per backend (two start-up probes)")
    parser.add_argument("--limit", type=int, default=None, help="tasks per domain (default: all held-out tasks)")
    parser.add_argument("--repeat", type=int, default=0, help="runs per backend, best time counts (default 3, quick 1)")
    parser.add_argument("--ray", action="store_true", help="also time a local Ray instance with 2 CPUs")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    load_before = os.getloadavg()[0]
    report: dict[str, Any] = {"repeat": repeat, "limit": args.limit}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if args.mode in ("all", "startup"):
            if available_domains():
                run_startup(max(2, repeat), report)
            else:
                console.print("[yellow]no domain installed: no start-up probe[/]")
        if args.mode in ("all", "cli"):
            if available_domains():
                run_cli(args, repeat, tmp, report)
            else:
                console.print("[yellow]no domain installed: the CLI has nothing to evaluate[/]")
        if args.mode in ("all", "inprocess"):
            run_inprocess(args, repeat, tmp, report)
    report["load"] = {"before": load_before, "after": os.getloadavg()[0], "cpus": os.cpu_count()}
    console.print(f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
                  "(other processes on the machine slow the parallel runs most)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
