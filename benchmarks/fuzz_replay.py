"""Hostile calls at benchmark size: every invariant of the env boundary and every trace replays.

Per domain, ``--calls N`` seeded fuzzed calls (:func:`backoffice.envs.core.fuzz.fuzz`: valid
calls built from every tool's schema with observed values, the same with one argument
mutated, finishing tools at any time, garbage actions) over train, heldout and generated tasks.
Every step is checked (nothing raises out of ``step()``, observations in the space, no
``internal_error``, error results and read-only tools leave the content hash unchanged,
terminal infos complete) and every episode is replayed from the trace file the env wrote
(each step's tool, status, error code, changed ids and clock, the end hash and the grade).
``--repeat N`` reruns the first N calls of each domain with the same seed and compares the
digest of their observations and trace bytes (byte-identical reruns).

Run: ``.venv/bin/python benchmarks/fuzz_replay.py --calls 100000`` (the issue-37 figure;
``--quick`` is 2,000 calls per domain). Exits 1 when any check failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from backoffice.envs import available_domains
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.fuzz import fuzz

console = Console() if sys.stdout.isatty() else Console(width=150)  # a log file gets whole tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="fuzzed calls per domain (default 100000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domains", default="", help="comma-separated (default: every installed domain)")
    parser.add_argument("--generated", type=int, default=8, help="generated tasks per domain among the fuzzed ones (default 8)")
    parser.add_argument("--repeat", type=int, default=2_000, help="rerun the first N calls per domain and compare digests (0: skip)")
    parser.add_argument("--quick", action="store_true", help="2,000 calls per domain, repeat 500")
    parser.add_argument("--json", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.calls, args.repeat = 2_000, 500
    domains = [d for d in args.domains.split(",") if d] or list(available_domains())

    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=console) as progress:
        for domain in domains:
            bar = progress.add_task(f"{domain:<13}", total=args.calls)
            cpu, wall = time.process_time(), time.perf_counter()
            report = fuzz(domain, args.calls, seed=args.seed, generated=args.generated,
                          progress=lambda n, bar=bar: progress.advance(bar, n))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            repeat_ok = None
            if args.repeat:
                progress.update(bar, description=f"{domain:<13} (repeat)")
                first = fuzz(domain, args.repeat, seed=args.seed, generated=args.generated)
                second = fuzz(domain, args.repeat, seed=args.seed, generated=args.generated)
                repeat_ok = first.digest == second.digest and first.to_json() == second.to_json()
            progress.update(bar, description=f"{domain:<13}", completed=args.calls)
            results.append({**report.to_json(), "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
                            "repeat_calls": args.repeat, "repeat_identical": repeat_ok})

    table = Table(title=f"fuzz + replay, seed {args.seed}")
    for col in ("domain", "calls", "episodes", "replayed", "ok", "errors", "replay mismatches", "internal errors",
                "raised", "problems", "same-seed rerun", "CPU s"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for r in results:
        table.add_row(r["domain"], f"{r['calls']:,}", f"{r['episodes']:,}", f"{r['replayed']:,}",
                      f"{r['statuses'].get('ok', 0):,}", f"{r['statuses'].get('error', 0):,}",
                      str(r["replay_mismatches"]), str(r["internal_errors"]), str(r["raised"]), str(r["problem_count"]),
                      "-" if r["repeat_identical"] is None else ("identical" if r["repeat_identical"] else "DIFFERS"),
                      f"{r['cpu_s']:.1f}")
    console.print(table)
    codes = sorted({c for r in results for c in r["error_codes"]})
    by_code = Table(title="error results by code")
    by_code.add_column("code")
    for r in results:
        by_code.add_column(r["domain"], justify="right")
    by_code.add_column("total", justify="right")
    for code in codes:
        counts = [r["error_codes"].get(code, 0) for r in results]
        by_code.add_row(code, *(f"{n:,}" for n in counts), f"{sum(counts):,}")
    console.print(by_code)
    for r in results:
        for p in r["problems"][:10]:
            console.print(f"[red]{r['domain']}[/]: {p}", highlight=False, markup=True)
    console.print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(dumps({"calls_per_domain": args.calls, "seed": args.seed, "domains": results}) + b"\n")
    failed = any(r["problem_count"] or r["replay_mismatches"] or r["internal_errors"] or r["raised"]
                 or r["repeat_identical"] is False for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
