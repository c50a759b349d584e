"""Memory and first-reset time of the first env of a domain that touches one task: lazy against eager.

Every measurement runs in a fresh interpreter (nothing shared, nothing cached), which does:

1. imports (``backoffice.envs``, the domain's package, its oracle policy, the rollout) and notes
   RSS (``/proc/self/statm``) and, with ``tracemalloc`` on, the traced bytes;
2. ``make_native(domain, split="heldout")``; in **eager** mode then touches every snapshot and answer key of the
   release (``rel.snapshot(rel.task(t).snapshot_id)`` and ``rel.answer_key(t)`` for every task):
   what the first env of a process loaded before the release became lazy. That is the baseline,
   measured in the same run;
3. the first ``reset`` to one task (the first held-out task, its own seed); the time from step 2
   to here is the **first reset** time (in eager mode it includes the loading);
4. one oracle episode on that task (``get_policy(domain, "oracle")``, ``run_episode``).

Reported per domain and mode: RSS growth over steps 2-4 (the env's memory, imports excluded) and
from interpreter start (imports included), the peak RSS (``ru_maxrss``), the bytes ``tracemalloc``
sees allocated by steps 2-4 (a separate run, since tracing slows everything), the first-reset
time, and how many snapshots the release parsed. The ratio to read is lazy / eager of the env's
memory. Goal (issue 15): <= 1/5 in every domain; the first reset well under a second.

Run: ``python benchmarks/bench_memory.py [--quick] [--repeat R] [--domains a,b] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 200)
GOAL = 0.2
MB = 1024 * 1024

# The measured interpreter's program; argv: domain, "lazy"|"eager", "rss"|"trace". Prints one JSON line.
CHILD = r"""
import os, resource, sys, time
t_start = time.perf_counter()
domain, mode, kind = sys.argv[1:4]
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * page
rss0 = rss()
if kind == "trace":
    import tracemalloc
    tracemalloc.start()
import backoffice.envs
from backoffice.envs import get_domain, make_native
from backoffice.training.policies import get_policy
from backoffice.training.eval.rollout import run_episode
get_domain(domain)
oracle = get_policy(domain, "oracle")
rss1 = rss()
traced1 = tracemalloc.get_traced_memory()[0] if kind == "trace" else 0
t0 = time.perf_counter()
env = make_native(domain, split="heldout")  # the env of the split its one task is drawn from
rel = env.release
if mode == "eager":
    [rel.snapshot(rel.task(t).snapshot_id) for t in rel.tasks]
    [rel.answer_key(t) for t in rel.tasks]
t_loaded = time.perf_counter()
task_id = rel.split_ids["heldout"][0]
env.reset(**env.reset_args(task_id, None))
t_reset = time.perf_counter()
result = run_episode(env, oracle, task_id=task_id)
out = {"rss_start": rss0, "rss_imports": rss1, "rss_end": rss(), "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
       "import_s": t0 - t_start, "load_s": t_loaded - t0, "first_reset_s": t_reset - t0, "pass": bool(result.grade["pass"]),
       "tasks": len(rel.tasks), "snapshots_parsed": len(rel._snapshots) + len(rel._raw_snapshots or {})}
if kind == "trace":
    current, peak = tracemalloc.get_traced_memory()
    out.update(traced_env=current - traced1, traced_total=current, traced_peak=peak)
print("RESULT " + __import__("json").dumps(out))
"""


def measure(domain: str, mode: str, kind: str) -> dict[str, Any]:
    """One fresh interpreter running :data:`CHILD`; its JSON result."""
    proc = subprocess.run([sys.executable, "-c", CHILD, domain, mode, kind], capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{domain} {mode} {kind} failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def bench_domain(domain: str, repeat: int) -> dict[str, Any]:
    """Median over ``repeat`` fresh runs of each mode (RSS and timing), one traced run each."""
    out: dict[str, Any] = {}
    for mode in ("lazy", "eager"):
        runs = [measure(domain, mode, "rss") for _ in range(repeat)]
        traced = measure(domain, mode, "trace")

        def med(key: str, runs: list[dict[str, Any]] = runs) -> float:
            return float(statistics.median(r[key] for r in runs))

        out[mode] = {
            "env_rss": med("rss_end") - med("rss_imports"), "whole_rss": med("rss_end") - med("rss_start"),
            "imports_rss": med("rss_imports") - med("rss_start"), "maxrss": med("maxrss"),
            "traced_env": traced["traced_env"], "traced_total": traced["traced_total"], "traced_peak": traced["traced_peak"],
            "import_s": med("import_s"), "load_s": med("load_s"), "first_reset_s": med("first_reset_s"),
            "snapshots_parsed": runs[0]["snapshots_parsed"], "tasks": runs[0]["tasks"], "oracle_pass": all(r["pass"] for r in runs),
        }
    lazy, eager = out["lazy"], out["eager"]
    out["ratio_env_rss"] = lazy["env_rss"] / max(1.0, eager["env_rss"])
    out["ratio_whole_rss"] = lazy["whole_rss"] / max(1.0, eager["whole_rss"])
    out["ratio_traced_env"] = lazy["traced_env"] / max(1.0, eager["traced_env"])
    return out


def render(results: dict[str, dict[str, Any]], repeat: int) -> Table:
    table = Table(title=f"First env touching one task: lazy vs eager (all snapshots and keys), fresh process each, median of {repeat}; "
                        f"goal: lazy / eager env memory <= {GOAL:g}")
    for col in ("domain", "snapshots parsed", "env RSS MB lazy / eager", "ratio", "traced MB lazy / eager", "ratio",
                "RSS from start MB lazy / eager", "ratio", "imports MB", "peak RSS MB lazy / eager", "first reset ms lazy / eager",
                "imports s"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for domain, r in results.items():
        lazy, eager = r["lazy"], r["eager"]

        def ratio(v: float) -> str:
            return f"{v:.2f}" if v <= GOAL else f"[red]{v:.2f}[/]"

        table.add_row(domain, f"{lazy['snapshots_parsed']} / {eager['snapshots_parsed']}",
                      f"{lazy['env_rss'] / MB:.1f} / {eager['env_rss'] / MB:.1f}", ratio(r["ratio_env_rss"]),
                      f"{lazy['traced_env'] / MB:.1f} / {eager['traced_env'] / MB:.1f}", ratio(r["ratio_traced_env"]),
                      f"{lazy['whole_rss'] / MB:.1f} / {eager['whole_rss'] / MB:.1f}", f"{r['ratio_whole_rss']:.2f}",
                      f"{lazy['imports_rss'] / MB:.1f}", f"{lazy['maxrss'] / MB:.0f} / {eager['maxrss'] / MB:.0f}",
                      f"{lazy['first_reset_s'] * 1e3:.0f} / {eager['first_reset_s'] * 1e3:.0f}", f"{lazy['import_s']:.2f}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per mode instead of three")
    parser.add_argument("--repeat", type=int, default=0, help="fresh runs per domain and mode (default 3, quick 1)")
    parser.add_argument("--domains", default="", help="comma-separated (default: every installed domain)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    if not Path("/proc/self/statm").exists():
        raise SystemExit("needs Linux /proc (RSS from /proc/self/statm)")
    from backoffice.envs import available_domains

    domains = args.domains.split(",") if args.domains else available_domains()
    repeat = args.repeat or (1 if args.quick else 3)
    load_before = os.getloadavg()[0]
    results = {d: bench_domain(d, repeat) for d in domains}
    console.print(render(results, repeat))
    failed = [d for d, r in results.items() if not (r["lazy"]["oracle_pass"] and r["eager"]["oracle_pass"])]
    if failed:
        console.print(f"[red]the oracle failed its episode in: {', '.join(failed)}[/]")
    console.print(f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
                  "(memory does not depend on load; times do)")
    if args.json:
        args.json.write_text(json.dumps({"repeat": repeat, "goal_ratio": GOAL, "results": results}, indent=1))


if __name__ == "__main__":
    main()
