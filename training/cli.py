"""The ``backoffice`` command line: evaluate, report, replay, build and verify seeds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

app = typer.Typer(help="backoffice-gym: Gymnasium back-office environments.", no_args_is_help=True, add_completion=False)
seeds_app = typer.Typer(help="Build and verify the released seed states.", no_args_is_help=True)
app.add_typer(seeds_app, name="seeds")
console = Console()


def _domains(env: list[str]) -> list[str]:
    from backoffice.envs import DOMAINS, available_domains

    if not env or env == ["all"]:
        found = available_domains()
        missing = [d for d in DOMAINS if d not in found]
        if missing:
            console.print(f"[yellow]not installed (skipped): {', '.join(missing)}[/]")
        return found
    bad = [d for d in env if d not in DOMAINS]
    if bad:
        raise typer.BadParameter(f"unknown domain(s) {bad}; choose from {', '.join(DOMAINS)} or all")
    return env


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console, transient=False)


def print_summary(records: list[dict], title: str = "Evaluation") -> None:
    from backoffice.training.report import summary

    table = Table(title=title)
    for col in ("domain / agent", "episodes", "pass rate", "mean score", "mean steps"):
        table.add_column(col, justify="left" if col.startswith("domain") else "right")
    for name, s in summary(records).items():
        table.add_row(name, str(s["episodes"]), f"{s['pass_rate']:.1%}", f"{s['mean_score']:.3f}", f"{s['mean_steps']:.1f}")
    console.print(table)


@app.command("eval")
def eval_cmd(
    env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"],
    policy: Annotated[list[str], typer.Option("--policy", help="oracle, random, noop or wrong:<code> (repeatable).")] = ["oracle", "random", "noop"],
    split: Annotated[str, typer.Option(help="train or heldout.")] = "heldout",
    out: Annotated[Optional[Path], typer.Option(help="JSONL output (resumable).")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    limit: Annotated[Optional[int], typer.Option(help="Only the first N tasks per domain.")] = None,
    attempts: Annotated[int, typer.Option(help="Attempts per task (for pass^k).")] = 1,
    run_id: Annotated[Optional[str], typer.Option(help="Run id (default: <agent>-<split>).")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="Write a pass-rate PNG here.")] = None,
) -> None:
    """Evaluate policies on a split and print a summary table."""
    from backoffice.training.evaluate import evaluate, plan_jobs

    if split not in ("train", "heldout"):
        raise typer.BadParameter("split must be train or heldout")
    domains = _domains(env)
    if not domains:
        console.print("[red]no domain is installed[/]")
        raise typer.Exit(1)
    jobs = plan_jobs(domains, policy, split, run_id=run_id, limit=limit, attempts=attempts)
    with _progress() as progress:
        bar = progress.add_task(f"evaluating {len(domains)} domain(s) x {len(policy)} policies", total=len(jobs))
        records = evaluate(jobs, out=out, workers=workers, on_record=lambda r: progress.advance(bar))
        progress.update(bar, completed=len(jobs))
    print_summary(records, title=f"{split}: {len(records)} episodes")
    if out is not None:
        console.print(f"records: {out}")
    if plot is not None:
        from backoffice.training.report import plot_pass_rates

        console.print(f"plot: {plot_pass_rates(records, str(plot))}")


@app.command()
def report(
    files: Annotated[list[Path], typer.Argument(help="Evaluation JSONL files.")],
    plot: Annotated[Optional[Path], typer.Option(help="Pass-rate PNG (default: beside the first file).")] = None,
) -> None:
    """Tables by domain x agent, failure code and defect tag, plus a pass-rate plot."""
    from backoffice.training.evaluate import read_records
    from backoffice.training.report import failure_counts, group_rates, plot_pass_rates

    records = [r for f in files for r in read_records(f)]
    if not records:
        console.print("[red]no records[/]")
        raise typer.Exit(1)
    print_summary(records)
    codes = Table(title="Failure codes")
    codes.add_column("domain / agent")
    codes.add_column("failure code counts")
    for name, counts in failure_counts(records).items():
        codes.add_row(name, ", ".join(f"{k}: {v}" for k, v in counts.items()))
    console.print(codes)
    tags = Table(title="Pass rate by defect tag")
    for col in ("domain / agent / tag", "episodes", "pass rate"):
        tags.add_column(col)
    rates = group_rates(records, lambda r: [f"{r['domain']} / {r['agent']} / {t}" for t in r.get("defect_tags", [])])
    for name, s in rates.items():
        tags.add_row(name, str(s["episodes"]), f"{s['pass_rate']:.1%}")
    console.print(tags)
    target = plot or files[0].with_suffix(".pass_rate.png")
    console.print(f"plot: {plot_pass_rates(records, str(target))}")


@app.command()
def replay(trace: Annotated[Path, typer.Argument(help="A trace JSONL written with trace_path.")]) -> None:
    """Replay a trace against its tasks; confirm end-state hash and grade or show where they diverge."""
    from backoffice.envs.core.replay import replay as run_replay
    from backoffice.envs.core.trace import read_trace

    results = run_replay(read_trace(trace))
    bad = [r for r in results if not r.ok]
    for r in bad:
        console.print(f"[red]{r.episode_id}[/]: " + "; ".join(r.divergences))
    console.print(f"{len(results) - len(bad)}/{len(results)} episodes reproduced")
    if bad:
        raise typer.Exit(1)


@app.command()
def tools(
    env: Annotated[str, typer.Option("--env", help="Domain.")] = "approvals",
    format: Annotated[str, typer.Option(help="function, openai, mcp or anthropic.")] = "function",
) -> None:
    """Print a domain's tool specs as JSON."""
    from backoffice.envs import get_domain
    from backoffice.envs.core.canonical import dumps

    sys.stdout.write(dumps(get_domain(env).toolkit.specs(format=format)).decode() + "\n")


@seeds_app.command("build")
def seeds_build(
    env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"],
    out: Annotated[Optional[Path], typer.Option(help="Seeds folder (default: the installed one).")] = None,
) -> None:
    """Regenerate the release of each domain from its generator."""
    from backoffice.envs import DOMAINS, get_domain
    from backoffice.envs.core.build import build_release
    from backoffice.envs.core.release import seeds_root

    root = out or seeds_root()
    names = list(DOMAINS) if env == ["all"] else env
    with _progress() as progress:
        for name in names:
            dom = get_domain(name)
            bar = progress.add_task(f"building {name}", total=sum(dom.sizes.values()))
            build_release(dom, root, progress=lambda n, b=bar: progress.advance(b, n))
    console.print(f"release written to {root}")


@seeds_app.command("verify")
def seeds_verify(env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"]) -> None:
    """Check the installed release against a fresh build, file by file."""
    from backoffice.envs import get_domain
    from backoffice.envs.core.build import verify_release
    from backoffice.envs.core.release import seeds_root

    failed = False
    for name in _domains(env):
        problems = verify_release(get_domain(name), seeds_root())
        if problems:
            failed = True
            console.print(f"[red]{name}[/]: " + "; ".join(problems))
        else:
            console.print(f"[green]{name}[/]: identical to a fresh build")
    if failed:
        raise typer.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    app()
