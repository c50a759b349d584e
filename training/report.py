"""Aggregate evaluation records into tables (and plots)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Record = dict[str, Any]


def group_rates(records: Iterable[Record], key: Callable[[Record], Iterable[str] | str]) -> dict[str, dict[str, float]]:
    """Per group: ``episodes``, ``pass_rate``, ``mean_score``, ``mean_steps`` (a record may be in several groups)."""
    acc: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        keys = key(r)
        for k in ([keys] if isinstance(keys, str) else keys):
            acc[k].append(r)
    out = {}
    for k in sorted(acc):
        rs = acc[k]
        out[k] = {
            "episodes": len(rs),
            "pass_rate": sum(bool(r["pass"]) for r in rs) / len(rs),
            "mean_score": sum(r["score"] for r in rs) / len(rs),
            "mean_steps": sum(r["steps"] for r in rs) / len(rs),
        }
    return out


def summary(records: Sequence[Record]) -> dict[str, dict[str, float]]:
    """Rates by ``domain / agent``."""
    return group_rates(records, lambda r: f"{r['domain']} / {r['agent']}")


def failure_counts(records: Sequence[Record]) -> dict[str, dict[str, int]]:
    """Per agent: how often each failure code occurred."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in records:
        for code in r["failure_codes"]:
            out[f"{r['domain']} / {r['agent']}"][code] += 1
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def pass_hat_k(records: Sequence[Record], k: int) -> dict[str, float]:
    """pass^k per ``domain / agent``: the share of tasks whose first k attempts all pass."""
    by: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in sorted(records, key=lambda r: r.get("attempt", 0)):
        by[(r["domain"], r["agent"])][r["task_id"]].append(bool(r["pass"]))
    out = {}
    for (domain, agent), tasks in sorted(by.items()):
        eligible = [v[:k] for v in tasks.values() if len(v) >= k]
        if eligible:
            out[f"{domain} / {agent}"] = sum(all(v) for v in eligible) / len(eligible)
    return out


def plot_pass_rates(records: Sequence[Record], path: str) -> str:
    """Bar chart of pass rate per domain, one bar per agent; written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    domains = sorted({r["domain"] for r in records})
    agents = sorted({r["agent"] for r in records})
    rates = group_rates(records, lambda r: f"{r['domain']}\x1f{r['agent']}")
    width = 0.8 / max(1, len(agents))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(domains)), 3.6))
    for i, agent in enumerate(agents):
        xs = [d + (i - (len(agents) - 1) / 2) * width for d in range(len(domains))]
        ys = [rates.get(f"{d}\x1f{agent}", {}).get("pass_rate", 0.0) for d in domains]
        ax.bar(xs, ys, width, label=agent)
    ax.set_xticks(range(len(domains)), domains)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass rate")
    ax.set_title("Pass rate by domain and agent")
    ax.legend(fontsize=8, ncols=min(4, len(agents)))
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
