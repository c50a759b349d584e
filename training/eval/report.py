"""Aggregate evaluation records into tables, JSON and plots.

Tables are lists of plain rows (dicts) so the same data prints as a rich table, dumps as JSON
for machines and loads into pandas (``pandas.DataFrame(rows)``). Grouping fields may hold a
list (``defect_tags``, ``requirement_types``): a record then counts once in each of its groups;
records without the field are left out of that table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from math import comb
from pathlib import Path
from typing import Any

Record = dict[str, Any]
Row = dict[str, Any]

#: Report fields that domains attach to records (see ``Domain.report_fields``) and get a table.
REPORT_FIELDS = ("defect_tags", "outcome_class", "requirement_types")


def _values(record: Record, field: str) -> list[Any]:
    value = record.get(field)
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [v for v in value if v is not None]
    return [value]


def _stats(rs: Sequence[Record]) -> dict[str, Any]:
    n = len(rs)
    return {
        "episodes": n,
        "passed": sum(bool(r["pass"]) for r in rs),
        "pass_rate": sum(bool(r["pass"]) for r in rs) / n,
        "mean_score": sum(float(r["score"]) for r in rs) / n,
        "mean_steps": sum(int(r["steps"]) for r in rs) / n,
    }


def rate_rows(records: Iterable[Record], fields: Sequence[str]) -> list[Row]:
    """Pass rate, mean score and mean steps per group of ``fields`` (sorted by group)."""
    acc: dict[tuple[Any, ...], list[Record]] = defaultdict(list)
    for r in records:
        groups: list[tuple[Any, ...]] = [()]
        for f in fields:
            groups = [g + (v,) for g in groups for v in _values(r, f)]
        for g in dict.fromkeys(groups):  # a list field naming a value twice counts once
            acc[g].append(r)
    return [{**dict(zip(fields, g)), **_stats(acc[g])} for g in sorted(acc, key=lambda g: tuple(map(str, g)))]


def failure_rows(records: Sequence[Record]) -> list[Row]:
    """Per domain, agent and failure code: episodes with that code and their share of the
    group's episodes."""
    totals: dict[tuple[str, str], int] = defaultdict(int)
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for r in records:
        totals[(r["domain"], r["agent"])] += 1
        for code in dict.fromkeys(r["failure_codes"]):
            counts[(r["domain"], r["agent"], code)] += 1
    return [
        {"domain": d, "agent": a, "failure_code": c, "count": n, "share": n / totals[(d, a)]}
        for (d, a, c), n in sorted(counts.items())
    ]


def pass_hat_k_value(passes: Sequence[bool], k: int) -> float | None:
    """Unbiased pass^k of one task from its attempts: C(c, k) / C(n, k) for c passes in n
    attempts (the chance that k attempts drawn without replacement all pass); ``None`` when
    there are fewer than k attempts."""
    n, c = len(passes), sum(map(bool, passes))
    if n < k or k < 1:
        return None
    return comb(c, k) / comb(n, k)


def pass_hat_k_rows(records: Sequence[Record], ks: Sequence[int] | None = None) -> list[Row]:
    """pass^k per domain and agent, averaged over tasks with at least k attempts.

    ``ks`` defaults to 1 .. the most attempts any task has; empty when every task was tried
    once (pass^1 is then just the pass rate).
    """
    by: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        by[(r["domain"], r["agent"])][r["task_id"]].append(bool(r["pass"]))
    most = max((len(v) for tasks in by.values() for v in tasks.values()), default=0)
    if ks is None:
        ks = list(range(1, most + 1)) if most >= 2 else []
    rows = []
    for (domain, agent), tasks in sorted(by.items()):
        for k in ks:
            vals = [v for v in (pass_hat_k_value(p, k) for p in tasks.values()) if v is not None]
            if vals:
                rows.append({"domain": domain, "agent": agent, "k": k, "tasks": len(vals),
                             "pass_hat_k": sum(vals) / len(vals)})
    return rows


def pass_hat_k(records: Sequence[Record], k: int) -> dict[str, float]:
    """pass^k per ``domain / agent`` (see :func:`pass_hat_k_rows`)."""
    return {f"{r['domain']} / {r['agent']}": r["pass_hat_k"] for r in pass_hat_k_rows(records, [k])}


def group_rates(records: Iterable[Record], key: Callable[[Record], Iterable[str] | str]) -> dict[str, dict[str, float]]:
    """Per group named by ``key``: ``episodes``, ``pass_rate``, ``mean_score``, ``mean_steps``
    (a record may be in several groups)."""
    acc: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        keys = key(r)
        for k in ([keys] if isinstance(keys, str) else keys):
            acc[k].append(r)
    return {k: _stats(acc[k]) for k in sorted(acc)}


def summary(records: Sequence[Record]) -> dict[str, dict[str, float]]:
    """Rates by ``domain / agent``."""
    return group_rates(records, lambda r: f"{r['domain']} / {r['agent']}")


def failure_counts(records: Sequence[Record]) -> dict[str, dict[str, int]]:
    """Per ``domain / agent``: how often each failure code occurred."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for row in failure_rows(records):
        out[f"{row['domain']} / {row['agent']}"][row["failure_code"]] = row["count"]
    return dict(out)


def build_report(records: Sequence[Record]) -> dict[str, Any]:
    """Every table of a report as plain data (what ``backoffice report --json`` prints)."""
    report: dict[str, Any] = {
        "episodes": len(records),
        "domains": sorted({r["domain"] for r in records}),
        "agents": sorted({r["agent"] for r in records}),
        "runs": sorted({r["run_id"] for r in records}),
        "by_domain_agent": rate_rows(records, ["domain", "agent"]),
        "by_agent": rate_rows(records, ["agent"]),
        "failure_codes": failure_rows(records),
    }
    for field in REPORT_FIELDS:
        report[f"by_{field}"] = rate_rows(records, ["domain", "agent", field])
    report["pass_hat_k"] = pass_hat_k_rows(records)
    return report


# -- plots ------------------------------------------------------------------------------------
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: same bytes each run
    _pyplot().close(fig)
    return str(path)


def plot_pass_rates(records: Sequence[Record], path: str | Path) -> str:
    """Bar chart of pass rate per domain, one bar per agent; written to ``path`` (PNG)."""
    plt = _pyplot()
    domains = sorted({r["domain"] for r in records})
    agents = sorted({r["agent"] for r in records})
    rates = {(row["domain"], row["agent"]): row["pass_rate"] for row in rate_rows(records, ["domain", "agent"])}
    width = 0.8 / max(1, len(agents))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(domains)), 3.6))
    for i, agent in enumerate(agents):
        xs = [d + (i - (len(agents) - 1) / 2) * width for d in range(len(domains))]
        ax.bar(xs, [rates.get((d, agent), 0.0) for d in domains], width, label=agent)
    ax.set_xticks(range(len(domains)), domains)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass rate")
    ax.set_title("Pass rate by domain and agent", pad=24)
    ax.legend(fontsize=8, ncols=min(6, max(1, len(agents))), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return _save(fig, path)


def plot_failure_codes(records: Sequence[Record], path: str | Path) -> str:
    """Failure codes per agent: one panel per domain, a horizontal bar per (code, agent)
    giving the share of that agent's episodes in that domain that had the code; written to
    ``path`` (PNG)."""
    plt = _pyplot()
    agents = sorted({r["agent"] for r in records})
    rows = failure_rows(records)
    domains = sorted({r["domain"] for r in rows})
    if not domains:
        fig, ax = plt.subplots(figsize=(6, 1.6))
        ax.text(0.5, 0.5, "no failure codes", ha="center", va="center")
        ax.set_axis_off()
        return _save(fig, path)
    codes = {d: sorted({r["failure_code"] for r in rows if r["domain"] == d}) for d in domains}
    share = {(r["domain"], r["failure_code"], r["agent"]): r["share"] for r in rows}
    colors = {a: f"C{i % 10}" for i, a in enumerate(agents)}  # one colour per agent in every panel
    sizes = [len(codes[d]) for d in domains]
    fig, axes = plt.subplots(len(domains), 1, figsize=(7.5, 1.0 + 0.22 * len(agents) ** 0.5 * sum(sizes) + 0.45 * len(domains)),
                             sharex=True, squeeze=False, gridspec_kw={"height_ratios": sizes})
    height = 0.8 / max(1, len(agents))
    for ax, domain in zip(axes[:, 0], domains):
        for i, agent in enumerate(agents):
            ys = [c + (i - (len(agents) - 1) / 2) * height for c in range(len(codes[domain]))]
            ax.barh(ys, [share.get((domain, code, agent), 0.0) for code in codes[domain]], height,
                    color=colors[agent], label=agent)
        ax.set_yticks(range(len(codes[domain])), codes[domain], fontsize=8)
        ax.set_ylim(len(codes[domain]) - 0.5, -0.5)
        ax.set_title(domain, fontsize=9, loc="left")
        ax.set_xlim(0, 1.0)
    axes[-1, 0].set_xlabel("share of the agent's episodes with the code")
    axes[0, 0].legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=min(6, len(agents)), frameon=False)
    fig.suptitle("Failure codes by domain and agent", fontsize=10)
    return _save(fig, path)


def write_plots(records: Sequence[Record], stem: str | Path) -> list[str]:
    """Both report plots, as ``<stem>.pass_rate.png`` and ``<stem>.failure_codes.png``."""
    stem = Path(stem)
    return [
        plot_pass_rates(records, stem.with_name(stem.name + ".pass_rate.png")),
        plot_failure_codes(records, stem.with_name(stem.name + ".failure_codes.png")),
    ]
