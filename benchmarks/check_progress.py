"""The progress reward's kept distance against fresh grades on every train task (issue 34).

Per domain, :func:`backoffice.training.integrity.progress.check_progress`: the oracle, every
wrong policy, the random policy and masked random catalog play on every train task, the distance
the env keeps (graded again only after a step that can change it, from the checks it touched)
compared with a grade made from scratch after the reset and after every step, and the terminal
grade compared byte for byte. The suite runs the same on one task in five
(``tests/engine/test_progress.py``). Exits 1 on any mismatch.

Run: ``python benchmarks/check_progress.py [--domains a,b] [--every 1] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from backoffice.envs import available_domains
from backoffice.training.integrity.progress import check_progress


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default=",".join(available_domains()))
    parser.add_argument("--every", type=int, default=1, help="every N-th train task (every one for the oracle)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    table = Table(title=f"progress distance kept vs fresh grades, every {'' if args.every == 1 else f'{args.every}th '}train task")
    for col in ("domain", "policies", "episodes", "steps", "steps that wrote", "stale distances", "terminal grades differ", "s"):
        table.add_column(col)
    rows, ok = [], True
    for domain in args.domains.split(","):
        t0 = time.perf_counter()
        checked = check_progress(domain, every=args.every)
        seconds = time.perf_counter() - t0
        ok &= checked.ok
        table.add_row(domain, str(len(checked.policies)), f"{checked.episodes:,}", f"{checked.steps:,}", f"{checked.writes:,}",
                      str(len(checked.stale)), str(len(checked.grades_differ)), f"{seconds:.0f}")
        rows.append({"domain": domain, "policies": checked.policies, "episodes": checked.episodes, "steps": checked.steps,
                     "writes": checked.writes, "stale": checked.stale[:20], "grades_differ": checked.grades_differ[:20]})
        for mismatch in checked.stale[:3]:
            print(f"{domain}: stale distance {mismatch}", file=sys.stderr)
    Console(width=None if sys.stdout.isatty() else 140).print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
