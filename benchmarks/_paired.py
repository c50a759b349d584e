"""What the paired training benchmarks share (``bench_vec.py``, ``bench_policy.py``): two arms
trained on the same budget per domain and seed, CPU seconds per 10k steps of each and their
ratio in one table."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def cpu_now() -> float:
    """CPU seconds of this process and its reaped children (vec env workers, once closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def compare(console: Console, domains: Sequence[str], seeds: Sequence[int], arms: tuple[str, str],
            run: Callable[[str, int, str], dict[str, Any]], title: str, labels: tuple[str, str],
            ratio: tuple[int, int] = (0, 1)) -> list[dict[str, Any]]:
    """Run both ``arms`` (``run(domain, seed, arm)`` returns ``cpu_s_per_10k`` and
    ``wall_s_per_10k``) for every domain and seed, print a line per run and the table (the
    ratio is arm ``ratio[0]`` over arm ``ratio[1]``, mean and range over seeds); returns the rows."""
    rows = []
    for domain in domains:
        for seed in seeds:
            for arm in arms:
                rows.append({**run(domain, seed, arm), "arm": arm})
                console.print(f"{domain} seed {seed} {arm}: {rows[-1]['cpu_s_per_10k']:.1f} CPU-s / 10k steps")
    table = Table(title=title)
    num, den = labels[ratio[0]], labels[ratio[1]]
    for col in ("domain", f"{labels[0]} CPU-s", f"{labels[1]} CPU-s", f"ratio {num} / {den} (mean, min-max)",
                f"wall s ({labels[0]} / {labels[1]})"):
        table.add_column(col, justify="right" if col != "domain" else "left")
    for domain in domains:
        per_arm = [[r for r in rows if r["domain"] == domain and r["arm"] == arm] for arm in arms]
        ratios = [a["cpu_s_per_10k"] / b["cpu_s_per_10k"]
                  for a, b in zip(per_arm[ratio[0]], per_arm[ratio[1]], strict=True)]
        table.add_row(domain, *(f"{statistics.fmean(r['cpu_s_per_10k'] for r in side):.1f}" for side in per_arm),
                      f"{statistics.fmean(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
                      " / ".join(f"{statistics.fmean(r['wall_s_per_10k'] for r in side):.1f}" for side in per_arm))
    console.print(table)
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return rows
