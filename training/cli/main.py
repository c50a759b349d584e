"""The ``backoffice`` command line: evaluate, report, view, play, replay, train, build and verify seeds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from backoffice.training.cli.options import config_options
from backoffice.training.rl.config import TrainConfig


class UserError(Exception):
    """A mistake the user can fix: the command prints ``backoffice: <message>`` on one line
    (no traceback) and exits with ``code`` (2: usage, 1: the run failed)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


#: the extra that installs a module a command imports lazily
EXTRAS = {"anyio": "llm", "mcp": "llm", "uvicorn": "llm", "openai": "llm", "httpx": "llm", "starlette": "llm",
          "torch": "train", "stable_baselines3": "train", "sb3_contrib": "train", "tensorboard": "tensorboard",
          "ray": "ray", "transformers": "trl", "verifiers": "verifiers"}


def one_line_error(exc: BaseException) -> UserError | None:
    """The :class:`UserError` a known failure means (a missing extra, a refused or corrupt
    output file), else ``None`` (a bug: the traceback is shown)."""
    from backoffice.training.eval.evaluate import CorruptOutput, OutputLocked

    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in EXTRAS:
        extra = EXTRAS[(exc.name or "").split(".")[0]]
        return UserError(f"this command needs the '{extra}' extra (no module named {exc.name!r}): "
                         f"pip install -e '.[{extra}]' (or `make install`, which installs every extra)")
    if isinstance(exc, (CorruptOutput, OutputLocked)):
        return UserError(str(exc), code=1)
    return None


class App(typer.Typer):
    """The Typer app, printing a known failure (:func:`one_line_error`) as one line on stderr
    with a non-zero exit instead of a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except Exception as exc:
            err = one_line_error(exc)
            if err is None:
                raise
            sys.stderr.write(f"backoffice: {' '.join(str(err).split())}\n")
            sys.exit(err.code)


app = App(help="backoffice-gym: Gymnasium back-office environments.", no_args_is_help=True, add_completion=False)
seeds_app = typer.Typer(help="Build and verify the released seed states.", no_args_is_help=True)
app.add_typer(seeds_app, name="seeds")
console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # notes and warnings: never mixed into --json output


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("backoffice-gym")
        except PackageNotFoundError:  # pragma: no cover - run from a tree that was never installed
            number = "unknown (not installed: pip install -e .)"
        sys.stdout.write(f"backoffice-gym {number}\n")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """backoffice-gym: Gymnasium back-office environments."""


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


def tracked_files(path: Path) -> list[str]:
    """Files under ``path`` (a file or a folder) that git tracks in the checkout holding it:
    what no command may overwrite or delete (the shipped models, seeds, docs). Empty outside a
    git checkout or without git."""
    import subprocess

    path = Path(path).absolute()
    folder = path if path.is_dir() else path.parent
    while not folder.exists():
        folder = folder.parent
    try:
        out = subprocess.run(["git", "-C", str(folder), "ls-files", "--", str(path)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return out.stdout.split() if out.returncode == 0 else []


def refuse_tracked(path: Path, option: str, hint: str) -> None:
    """A :class:`UserError` (exit 2) when ``path`` holds tracked files."""
    tracked = tracked_files(path)
    if tracked:
        raise UserError(f"{option} {path} holds {len(tracked)} file(s) tracked by git ({tracked[0]} ...), which this command "
                        f"would overwrite; {hint}")


def _progress(to_stderr: bool = False) -> Progress:
    """A progress bar on stdout, or on stderr (``to_stderr``: when stdout carries JSON)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err_console if to_stderr else console, transient=False)


def _pct(rate: float, n: int) -> str:
    return f"{rate:.1%} ({n})"


def print_summary(records: list[dict], title: str = "Evaluation") -> None:
    """Pass rate, mean score and mean steps per domain and agent."""
    from backoffice.training.eval.report import rate_rows

    _print_rows(rate_rows(records, ["domain", "agent"]), title)


def _print_rows(rows: list[dict], title: str) -> None:
    table = Table(title=title)
    for col in ("domain / agent", "episodes", "pass rate", "mean score", "mean steps"):
        table.add_column(col, justify="left" if col.startswith("domain") else "right")
    for s in rows:
        table.add_row(f"{s['domain']} / {s['agent']}", str(s["episodes"]), f"{s['pass_rate']:.1%}",
                      f"{s['mean_score']:.3f}", f"{s['mean_steps']:.1f}")
    console.print(table)


def _grid(title: str, rows: list[dict], row_fields: list[str], cell: str = "rate") -> Table:
    """A table with one row per value of ``row_fields`` and one column per agent."""
    agents = sorted({r["agent"] for r in rows})
    table = Table(title=title)
    table.add_column(" / ".join(row_fields))
    for agent in agents:
        table.add_column(agent, justify="right")
    cells: dict[tuple, dict[str, str]] = {}
    for r in rows:
        text = _pct(r["pass_rate"], r["episodes"]) if cell == "rate" else f"{r['count']} ({r['share']:.0%})"
        cells.setdefault(tuple(r[f] for f in row_fields), {})[r["agent"]] = text
    for key in sorted(cells, key=lambda k: tuple(map(str, k))):
        table.add_row(" / ".join(map(str, key)), *(cells[key].get(a, "-") for a in agents))
    return table


def print_report(report: dict) -> None:
    """The tables of :func:`backoffice.training.eval.report.build_report` as rich tables."""
    _print_rows(report["by_domain_agent"], f"{report['episodes']} episodes, runs: {', '.join(report['runs'])}")
    console.print(_grid(f"Pass rate by domain x agent ({report['episodes']} episodes)", report["by_domain_agent"], ["domain"]))
    if len(report["domains"]) > 1:
        all_rows = [{**r, "domains": "all"} for r in report["by_agent"]]
        console.print(_grid("Pass rate by agent over all domains", all_rows, ["domains"]))
    if report["failure_codes"]:
        console.print(_grid("Failure codes: episodes (share of the agent's episodes)", report["failure_codes"], ["domain", "failure_code"], cell="count"))
    for field, title in (("defect_tags", "defect tag"), ("outcome_class", "outcome class"), ("requirement_types", "requirement type")):
        rows = report[f"by_{field}"]
        if rows:
            console.print(_grid(f"Pass rate by {title}", rows, ["domain", field]))
    if report["pass_hat_k"]:
        ks = sorted({r["k"] for r in report["pass_hat_k"]})
        table = Table(title="pass^k (share of tasks whose k attempts all pass; unbiased estimate)")
        table.add_column("domain / agent")
        for k in ks:
            table.add_column(f"pass^{k}", justify="right")
        by: dict[str, dict[int, float]] = {}
        for r in report["pass_hat_k"]:
            by.setdefault(f"{r['domain']} / {r['agent']}", {})[r["k"]] = r["pass_hat_k"]
        for name, vals in by.items():
            table.add_row(name, *(f"{vals[k]:.1%}" if k in vals else "-" for k in ks))
        console.print(table)


def _check_policies(domains: list[str], policies: list[str]) -> list[tuple[str, str]]:
    """(domain, policy) pairs to run: ``wrong:<code>`` only where the domain has that code,
    ``sb3:<model>`` only on the domain the model was trained on."""
    from backoffice.training.policies import get_policy

    pairs: list[tuple[str, str]] = []
    unknown: list[str] = []
    for p in policies:
        ok = []
        for d in domains:
            try:
                get_policy(d, p)
                ok.append(d)
            except Exception as exc:
                if type(exc).__module__.split(".")[0] == "openai":  # e.g. OpenAIError: missing credentials
                    raise UserError(f"policy {p!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__} Set "
                                    "$OPENAI_API_KEY (and $OPENAI_BASE_URL for another endpoint; any key for the fake one: "
                                    "OPENAI_API_KEY=unused).") from None
                if not isinstance(exc, (KeyError, ImportError, AttributeError, FileNotFoundError, ValueError)):
                    raise
                extra = one_line_error(exc) if isinstance(exc, ModuleNotFoundError) else None
                if extra is not None:
                    raise extra from None
                skippable = (p.startswith("wrong:") and isinstance(exc, (KeyError, ImportError, AttributeError))) or (
                    p.startswith("sb3:") and isinstance(exc, KeyError))
                if not skippable:
                    raise typer.BadParameter(f"policy {p!r} on {d}: {exc}") from None
        if not ok:
            unknown.append(p)
        pairs.extend((d, p) for d in ok)
    if unknown:
        raise typer.BadParameter(f"no selected domain has policy {unknown}")
    return pairs


@app.command("eval")
def eval_cmd(
    env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"],
    policy: Annotated[list[str], typer.Option("--policy", help="Repeatable. oracle; random (valid tool calls); noop (submits at once); wrong:<failure_code> (commits exactly that failure); catalog-random, catalog-mask-only, catalog-features (through the domain's catalog; add @facts or @raw for a feature tier); sb3:<path/model.zip> (a model from `backoffice train`); openai:<model> (an LLM behind an OpenAI-compatible endpoint: $OPENAI_BASE_URL, $OPENAI_API_KEY).")] = ["oracle", "random", "noop"],
    split: Annotated[str, typer.Option(help="train or heldout.")] = "heldout",
    out: Annotated[Path | None, typer.Option(help="JSONL output; a rerun with the same file skips written episodes.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (or Ray CPUs with --ray).")] = 1,
    ray: Annotated[bool, typer.Option("--ray", help="Run on Ray (the 'ray' extra): a local instance unless --ray-address.")] = False,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to join ('auto', 'ray://host:10001'); implies --ray.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N tasks per domain.")] = None,
    attempts: Annotated[int, typer.Option(min=1, help="Attempts per task (random policies are seeded by attempt; for pass^k).")] = 1,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: <agent>-<split>).")] = None,
    trace: Annotated[Path | None, typer.Option(help="Keep every new episode's trace and diff: a folder (trace.jsonl, diffs.jsonl) or a .jsonl file; each record points at them (trace_location, diff_location). The trace replays with `backoffice replay`.")] = None,
    judge: Annotated[str, typer.Option(help="Judge of free text (hand-over notes): 'rubric' (deterministic) or 'model:<name>' (endpoint from $BACKOFFICE_JUDGE_ENDPOINT, key $BACKOFFICE_JUDGE_API_KEY; not run without them). Never part of pass.")] = "rubric",
    plot: Annotated[Path | None, typer.Option(help="Write a pass-rate PNG here.")] = None,
    timeout: Annotated[float | None, typer.Option(min=0.1, help="openai: seconds per request before it counts as failed (default 120).")] = None,
    retries: Annotated[int | None, typer.Option(min=0, help="openai: retries of a failed request (default 2); an episode whose endpoint still fails gets a record with an `error` object and the run goes on.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes at once in threads of this process (for openai: policies, which wait on the network).")] = 1,
    keep_errors: Annotated[bool, typer.Option("--keep-errors", help="On a rerun with the same --out, keep episodes whose endpoint failed (records with an `error`) instead of running them again.")] = False,
) -> None:
    """Evaluate policies on a split and print a summary table."""
    import functools

    from backoffice.training.eval.evaluate import Executor, Job, Runner, default_make_env, evaluate, make_executor, plan_jobs, trace_files

    if split not in ("train", "heldout"):
        raise typer.BadParameter("split must be train or heldout")
    domains = _domains(env)
    if not domains:
        console.print("[red]no domain is installed[/]")
        raise typer.Exit(1)
    if judge != "rubric" and not (judge.startswith("model:") and len(judge) > 6):
        raise typer.BadParameter("--judge must be 'rubric' or 'model:<name>'")
    if judge.startswith("model:"):
        import os

        unset = [v for v in ("BACKOFFICE_JUDGE_ENDPOINT", "BACKOFFICE_JUDGE_API_KEY") if not os.environ.get(v)]
        if unset:
            raise UserError(f"--judge {judge} cannot run: set {' and '.join('$' + v for v in unset)} (a chat-completions URL "
                            "and its key), or use --judge rubric")
    if out is not None:
        if out.is_dir():
            raise UserError(f"--out {out} is a folder: give a JSONL file, e.g. --out {out / 'eval.jsonl'}")
        if not out.parent.exists():
            err_console.print(f"note: creating the folder {out.parent} for --out", highlight=False)
        refuse_tracked(out, "--out", "give a file outside the tracked tree, e.g. --out runs/eval.jsonl")
    if trace is not None:
        refuse_tracked(trace, "--trace", "give a folder outside the tracked tree, e.g. --trace runs/traces/")
    runner = Runner(make_env=functools.partial(default_make_env, judge=judge)) if judge != "rubric" else None
    pairs = set(_check_policies(domains, policy))
    jobs: list[Job] = [j for j in plan_jobs(domains, policy, split, run_id=run_id, limit=limit, attempts=attempts)
                       if (j.domain, j.agent) in pairs]
    llm = any(p.startswith("openai:") for p in policy)
    if llm:  # endpoint failures become error records; token usage, finish reasons, transcripts
        from backoffice.training.agents.chat import transcript_path_for
        from backoffice.training.eval.llm import llm_runner

        runner = llm_runner(runner, timeout=timeout, retries=retries,
                            transcript_path=transcript_path_for(trace_files(trace)[0]) if trace is not None else None)
    executor: Executor
    if concurrency > 1:
        from backoffice.training.eval.llm import ThreadExecutor

        executor = ThreadExecutor(concurrency)
    else:
        executor = make_executor(workers, ray_address or ("local" if ray else None))
    with executor:  # workers start before the progress bar's thread
        with _progress() as progress:
            bar = progress.add_task(f"evaluating {len(domains)} domain(s) x {len(policy)} policies", total=len(jobs))
            records = evaluate(jobs, out=out, executor=executor, trace=trace, runner=runner,
                               on_record=lambda r: progress.advance(bar), retry_errors=not keep_errors)
            progress.update(bar, completed=len(jobs))
    print_summary(records, title=f"{split}: {len(records)} episodes")
    if out is not None:
        console.print(f"records: {out}")
    if trace is not None:
        trace_file, diff_file = trace_files(trace)
        console.print(f"trace: {trace_file}; diffs: {diff_file}")
    if plot is not None:
        from backoffice.training.eval.report import plot_pass_rates

        console.print(f"plot: {plot_pass_rates(records, plot)}")
    if judge.startswith("model:"):  # a chosen judge that never ran is an error, not a silent None
        from backoffice.envs import get_domain

        judged_domains = {d for d in domains if get_domain(d).judge is not None}
        eligible = [r for r in records if r["domain"] in judged_domains]
        if eligible and not any(isinstance(r.get("judge"), dict) and r["judge"].get("judge") == "model" for r in eligible):
            raise UserError(f"--judge {judge} judged none of the {len(eligible)} episodes of {', '.join(sorted(judged_domains))}: "
                            "its endpoint failed (check $BACKOFFICE_JUDGE_ENDPOINT and $BACKOFFICE_JUDGE_API_KEY) or no "
                            "episode wrote a note", code=1)
    if llm:
        from backoffice.training.eval.llm import error_summary

        if trace is not None:
            console.print(f"transcripts: {transcript_path_for(trace_files(trace)[0])}")
        summary = error_summary(records)
        if summary is not None:
            console.print(f"[red]{escape(summary)}[/]", highlight=False, soft_wrap=True)  # one line, whatever the width
            raise typer.Exit(1)


@app.command()
def report(
    files: Annotated[list[Path], typer.Argument(help="Evaluation JSONL files.")],
    json: Annotated[bool, typer.Option("--json", help="Print the report as JSON (for machines) instead of tables.")] = False,
    plots: Annotated[bool | None, typer.Option("--plots/--no-plots", help="Write the PNG plots (default: yes, except with --json).")] = None,
    plot_stem: Annotated[Path | None, typer.Option(help="Plot path prefix (default: the first file without .jsonl).")] = None,
) -> None:
    """Tables by domain x agent, failure code, defect tag, outcome class, requirement type and
    pass^k; PNG plots of pass rate and failure codes beside the first file."""
    from backoffice.envs.core.canonical import dumps
    from backoffice.training.eval.evaluate import load_records
    from backoffice.training.eval.report import build_report, write_plots

    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise typer.BadParameter(f"no such file(s): {missing}")
    notes: list[str] = []
    records = load_records(files, notes=notes)  # a corrupt or mistyped line: CorruptOutput (file:line), exit 1
    for note in notes:
        err_console.print(f"[yellow]note: {escape(note)}[/]", highlight=False)
    if not records:
        console.print("[red]no records[/]")
        raise typer.Exit(1)
    data = build_report(records)
    stem = plot_stem or files[0].with_suffix("")
    if plots is None:
        plots = not json
    data["plots"] = write_plots(records, stem) if plots else []
    if json:
        sys.stdout.write(dumps(data).decode() + "\n")
        return
    print_report(data)
    for path in data["plots"]:
        console.print(f"plot: {path}")


#: the fields every trace line has (see DESIGN.md: the trace), and the ones replay reads
TRACE_FIELDS = ("episode_id", "domain", "task_id", "seed", "step", "tool", "args")


def check_trace_file(trace: Path) -> None:
    """A :class:`UserError` naming the file and line of the first line that is not a trace
    line (unreadable, or without a trace field: e.g. an evaluation records file)."""
    from backoffice.envs.core.canonical import loads

    with open(trace, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = loads(line)
            except Exception as exc:
                raise UserError(f"{trace}:{number}: unreadable trace line ({exc})", code=1) from None
            missing = [f for f in TRACE_FIELDS if not isinstance(rec, dict) or f not in rec]
            if missing:
                hint = (" (an evaluation records file: replay the trace written with `eval --trace`, which its "
                        "records' trace_location point at)" if isinstance(rec, dict) and "agent" in rec else "")
                raise UserError(f"{trace}:{number}: not a trace line: no {', '.join(map(repr, missing))}{hint}", code=1)
            if not isinstance(rec["step"], int) or isinstance(rec["step"], bool) or not isinstance(rec["episode_id"], str):
                raise UserError(f"{trace}:{number}: not a trace line: step {rec['step']!r} / episode_id "
                                f"{rec['episode_id']!r} mistyped", code=1)


def replay_file(trace: Path) -> list[dict]:
    """Replay every episode of a trace file; per episode: ``episode_id``, ``task_id``,
    ``steps``, ``ok``, ``first_step`` (the first step that diverged, if a step did), ``call``
    (that step's ``tool`` and ``args``, and ``sent`` when the line has it) and ``divergences``."""
    import re

    from backoffice.envs.core.replay import replay_env, replay_episode
    from backoffice.envs.core.trace import episodes, read_trace

    check_trace_file(trace)
    envs: dict[tuple[str, str], Any] = {}  # an env per domain and split (an env serves only its split)
    out = []
    for ep in episodes(read_trace(trace)):
        env = replay_env(envs, ep[0]["domain"], ep[0]["task_id"])
        res = replay_episode(ep, env)
        divergences = list(res.divergences)
        replayed = len(env.trace)
        if replayed != len(ep):
            divergences.append(f"step {replayed}: replay ended after {replayed} steps, the record has {len(ep)}")
        steps = [int(m.group(1)) for d in divergences if (m := re.match(r"step (\d+):", d))]
        first = min(steps) if steps else None
        call = next(({"tool": r["tool"], "args": r["args"], **({"sent": r["sent"]} if "sent" in r else {})}
                     for r in ep if r["step"] == first), None)
        out.append({"episode_id": res.episode_id, "task_id": res.task_id, "steps": len(ep), "ok": not divergences,
                    "first_step": first, "call": call, "divergences": divergences})
    return out


@app.command()
def replay(trace: Annotated[Path, typer.Argument(help="A trace JSONL (env trace_path or eval --trace).")]) -> None:
    """Replay a trace against its tasks; confirm end-state hash and grade of every episode or
    show the first step where it diverges and how."""
    from backoffice.envs.core.canonical import dumps

    if not trace.exists():
        raise typer.BadParameter(f"no such file: {trace}")
    if trace.is_dir():
        raise UserError(f"{trace} is a folder: give its trace file, e.g. {trace / 'trace.jsonl'}")
    results = replay_file(trace)
    bad = [r for r in results if not r["ok"]]
    for r in bad:
        where = f"first divergence at step {r['first_step']} ({dumps(r['call']).decode()})" if r["first_step"] else "end of episode"
        console.print(f"[red]{r['episode_id']}[/] ({r['steps']} steps): {where}", highlight=False)
        for d in r["divergences"]:
            console.print(f"  - {d}", highlight=False, markup=False)
    console.print(f"{len(results) - len(bad)}/{len(results)} episodes reproduced")
    if bad:
        raise typer.Exit(1)


@app.command()
def audit(
    env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"],
    split: Annotated[str, typer.Option(help="train or heldout.")] = "heldout",
    rules: Annotated[bool, typer.Option("--rules/--no-rules", help="Also measure how many tasks each documented rule decides.")] = True,
    json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Attack the grade with blind policies (constant outcome, first/last hit, acting without
    reading), position attackers and rule-ignoring ones, and fit trees over what is visible before
    the judgement (task ids, the first read, everything); print each attacker's numbers beside
    its bound's reference (the class prior, chance)."""
    from backoffice.envs.core.canonical import dumps
    from backoffice.envs.core.release import load_release
    from backoffice.training.integrity.audit import audit as run_audit, policies_run

    if split not in ("train", "heldout"):
        raise typer.BadParameter("split must be train or heldout")
    domains_ = _domains(env)
    total = sum(policies_run(d, rules) * len(load_release(d).split_ids[split]) for d in domains_)
    results = []
    with _progress(to_stderr=json) as progress:
        bar = progress.add_task(f"auditing {len(domains_)} domain(s)", total=total)
        for d in domains_:
            results.append(run_audit(d, split, rules, progress=lambda n: progress.advance(bar, n)))
    if json:
        sys.stdout.write(dumps([r.to_json() for r in results]).decode() + "\n")
        return
    for r in results:
        table = Table(title=f"{r.domain} ({r.split}, {r.tasks} tasks): no-op mean score {r.noop_score:.3f}; "
                            f"largest outcome class {r.top_class[0]} {r.top_class[1]:.1%}, "
                            f"largest decision {r.top_decision[0]} {r.top_decision[1]:.1%}")
        table.add_column("blind policy")
        table.add_column("pass", justify="right")
        table.add_column("mean score", justify="right")
        table.add_column("wrong-state pass", justify="right")
        for name, b in r.blind.items():
            table.add_row(name, f"{b.pass_rate:.1%}", f"{b.mean_score:.3f}", f"{b.wrong_pass:.1%}")
        console.print(table)
        if r.rule_binds:
            console.print("rule binds (tasks its ignoring policy fails): " +
                          ", ".join(f"{k} {v}" for k, v in r.rule_binds.items()), highlight=False)
        trees = {"task ids (outcome class)": r.id_tree, **{f"{view} (decision)": t for view, t in r.reader_tree.items()}}
        for name, by_depth in trees.items():
            console.print(f"tree over {name}, fitted on train; heldout accuracy vs prior: " +
                          ", ".join(f"depth {d} {a:.1%} vs {p:.1%}" for d, (a, p) in by_depth.items()), highlight=False)
        for lp in r.positions:
            console.print(f"list {lp.list_name}: {lp.choices} choices, right entry first {lp.first:.0%} / last {lp.last:.0%} "
                          f"(chance {lp.chance:.0%}), no decoy {lp.singletons:.0%}, mean length {lp.mean_length:.1f}", highlight=False)
        for a in r.position_attacks:
            console.print(f"position attacker ({a.pick} entry): passes {a.pass_rate:.1%} of {a.tasks} tasks with a choice "
                          f"(chance {a.chance:.1%})", highlight=False)


@app.command()
def domains(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also say where each domain comes from.")] = False,
) -> None:
    """List the discovered domains, one per line (this package's own and those of installed
    packages declaring a ``backoffice.domains`` entry point)."""
    from backoffice.envs.core.registry import discover

    for name, ref in discover().items():
        sys.stdout.write(f"{name}\t{ref.module}\t{'builtin' if ref.builtin else 'entry point'}\n" if verbose else f"{name}\n")


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
    out: Annotated[Path | None, typer.Option(help="Seeds folder (default: the installed one).")] = None,
) -> None:
    """Regenerate the release of each domain from its generator."""
    from backoffice.envs import DOMAINS, get_domain, seeds_folder
    from backoffice.envs.core.build import build_release

    names = list(DOMAINS) if env == ["all"] else env
    bad = [d for d in names if d not in DOMAINS]
    if bad:
        raise typer.BadParameter(f"unknown domain(s) {bad}; choose from {', '.join(DOMAINS)} or all")
    with _progress() as progress:
        for name in names:
            dom = get_domain(name)
            root = out or seeds_folder(name)
            bar = progress.add_task(f"building {name}", total=sum(dom.sizes.values()))

            def advance(n: int, b: TaskID = bar) -> None:
                progress.advance(b, n)

            build_release(dom, root, progress=advance)
            console.print(f"{name}: release written to {root / name}")


@seeds_app.command("verify")
def seeds_verify(env: Annotated[list[str], typer.Option("--env", help="Domain(s) or 'all'.")] = ["all"]) -> None:
    """Check the installed release against a fresh build, file by file."""
    from backoffice.envs import get_domain, seeds_folder
    from backoffice.envs.core.build import verify_release

    failed = False
    for name in _domains(env):
        problems = verify_release(get_domain(name), seeds_folder(name))
        if problems:
            failed = True
            console.print(f"[red]{name}[/]: " + "; ".join(problems))
        else:
            console.print(f"[green]{name}[/]: identical to a fresh build")
    if failed:
        raise typer.Exit(1)


@app.command()
@config_options(TrainConfig)
def train(
    env: Annotated[str, typer.Option("--env", help="Domain to train on.")],
    out: Annotated[Path | None, typer.Option(help="Model folder (default: runs/<env>); never a folder of tracked files such as the shipped models/.")] = None,
    tensorboard: Annotated[Path | None, typer.Option("--tensorboard", help="Write TensorBoard logs (SB3's tensorboard_log) to this folder; needs the 'tensorboard' extra. View with `tensorboard --logdir DIR`.")] = None,
    *,
    settings: dict[str, Any],
) -> None:
    """Train an agent on a domain's catalog env (shaped reward), keep the best model by
    validation pass rate, plot the learning curve and evaluate on heldout (pure grade).

    Every other option is a field of ``TrainConfig``; those not given here come from the
    catalog's tuned ``hyperparams``, then the defaults of ``TrainConfig``.
    """
    from backoffice.envs import DOMAINS
    from backoffice.training.rl.train import train as run_training

    if env not in DOMAINS:
        raise typer.BadParameter(f"unknown domain {env!r}; choose from {', '.join(DOMAINS)}")
    out = out or Path("runs") / env
    refuse_tracked(out, "--out", f"train into another folder, e.g. --out runs/{env}")
    if tensorboard is not None:
        import importlib.util

        if importlib.util.find_spec("tensorboard") is None:
            raise UserError("--tensorboard needs the 'tensorboard' extra (SB3 writes its logs through it): "
                            "pip install -e '.[tensorboard]'")
    try:
        config = TrainConfig.for_domain(env, out, **settings, tensorboard_log=str(tensorboard) if tensorboard is not None else None)
    except (ValueError, TypeError, KeyError) as exc:
        raise typer.BadParameter(str(exc)) from None
    timesteps = config.timesteps
    algo = config.algo
    with _progress() as progress:
        bar = progress.add_task(f"training {algo} on {env}", total=timesteps)
        summary = run_training(config, on_progress=lambda t: progress.update(bar, completed=min(t, timesteps)))
        done = int(summary["timesteps"])
        if done < timesteps:  # stopped early: the bar shows where (30,000/300,000), never the budget as done
            progress.update(bar, description=f"training {algo} on {env} (stopped early at {done:,})")
        progress.update(bar, completed=min(done, timesteps))
    table = Table(title=f"{env}: {algo}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("timesteps (episodes)", f"{summary['timesteps']:,} ({summary['episodes']:,})")
    table.add_row("training wall time", f"{summary['train_seconds']:.0f} s")
    table.add_row("best validation pass rate", f"{summary['best_validation_pass_rate']:.1%} of {summary['validation_ids']}")
    share = summary.get("env_share_of_wall", summary.get("env_share_per_worker", 0.0))
    table.add_row("time in env reset+step+mask / share of wall (every learner env)", f"{summary['env_step_us']:.0f} us per step / {share:.1%}")
    if "validation_env_share_of_wall" in summary:
        table.add_row("share of wall in the validation and greedy-replay envs", f"{summary['validation_env_share_of_wall']:.1%}")
    if "heldout" in summary:
        h = summary["heldout"]
        table.add_row("heldout pass rate (pure)", f"{h['pass_rate']:.1%} of {h['episodes']}")
        table.add_row("heldout mean score", f"{h['mean_score']:.3f}")
    console.print(table)
    console.print(f"model: {summary['model']}  curve: {config.out / 'learning_curve.png'}  summary: {config.out / 'summary.json'}")


@app.command()
def results(
    env: Annotated[str, typer.Option("--env", help="A domain or all.")] = "all",
    tier: Annotated[list[str] | None, typer.Option("--tier", help="Repeatable; default: every tier each catalog has.")] = None,
    timesteps: Annotated[int | None, typer.Option(min=1, help="Budget of each training run (early stopping may end it sooner); default: the catalog's tuned budget, else 200k.")] = None,
    run_training: Annotated[bool, typer.Option("--train/--no-train", help="Train the runs that are not up to date (else only tabulate).")] = True,
    only: Annotated[list[str] | None, typer.Option("--run", help="Repeatable: train only these runs of each domain and tier (ppo-s0, ppo-s1, warm-s0 ...).")] = None,
    out: Annotated[Path, typer.Option(help="Markdown table written here.")] = Path("results/README_table.md"),
    reevaluate: Annotated[bool, typer.Option("--reevaluate", help="Measure the models made for the current catalog and settings on an earlier release on this release's heldout split (not retrained; the table marks them) before training what is still stale.")] = False,
) -> None:
    """Fill the results table: train every domain x tier run that is not up to date (pure
    MaskablePPO seeds, one warm-started run), compute the baselines, plot the learning curves per
    tier and print the table. Resumable: finished runs are skipped."""
    from backoffice.envs import DOMAINS
    from backoffice.training.rl import results as res

    domains = list(DOMAINS) if env == "all" else [env]
    runs = res.plan(domains, tier or None)
    if reevaluate:
        for run in runs:
            summary = res.reevaluate(run)
            if summary is not None:
                console.print(f"re-evaluated {run.domain}/{run.tier}/{run.kind}-s{run.seed}: heldout "
                              f"{summary['heldout_before'].get('pass_rate', float('nan')):.1%} -> {summary['heldout']['pass_rate']:.1%}")
    for domain, tier_name in dict.fromkeys((r.domain, r.tier) for r in runs):
        console.print(f"baselines: {domain} / {tier_name}")
        res.baselines(domain, tier_name)
    if run_training:
        chosen = [r for r in runs if only is None or f"{r.kind}-s{r.seed}" in only]
        if only is not None and not chosen:
            raise typer.BadParameter(f"no planned run is named {only}; runs are ppo-s<seed> and warm-s0", param_hint="--run")
        todo = [r for r in chosen if not res.up_to_date(r, timesteps)]
        console.print(f"{len(chosen) - len(todo)} of {len(chosen)} runs up to date; training {len(todo)}")
        for run in todo:
            steps = res.budget(run, timesteps)
            with _progress() as progress:
                bar = progress.add_task(f"{run.domain}/{run.tier}/{run.kind}-s{run.seed}", total=steps)

                def advance(t: int, bar: TaskID = bar, progress: Progress = progress, steps: int = steps) -> None:
                    progress.update(bar, completed=min(t, steps))

                summary = res.train_run(run, steps, on_progress=advance)
            console.print(f"  heldout {summary.get('heldout', {}).get('pass_rate', float('nan')):.1%} in {summary['timesteps']:,} steps, "
                          f"{summary['cpu_minutes']:.1f} CPU-min")
    for domain in domains:
        res.plot_curves(domain, Path("docs") / f"learning_curves_{domain}.png")
    table = res.markdown(res.collect_rows(DOMAINS))  # the README's table: every domain, whichever ran
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table + "\n")
    sys.stdout.write(table + "\n")


@app.command()
def catalog(
    env: Annotated[str, typer.Option("--env", help="Domain.")] = "approvals",
    json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    tier: Annotated[str | None, typer.Option("--tier", help="Feature tier: conclusions (default), facts or raw.")] = None,
) -> None:
    """List a catalog env's actions and observation features with their documentation."""
    from backoffice.envs.core.canonical import dumps
    from backoffice.training.catalog import catalog_agent

    try:
        info = catalog_agent(env, tier=tier).describe()
    except (ValueError, KeyError) as exc:
        raise typer.BadParameter(str(exc)) from None
    if json:
        sys.stdout.write(dumps(info).decode() + "\n")
        return
    for kind in ("actions", "features"):
        table = Table(title=f"{env}{'' if tier is None else f' ({tier})'}: {len(info[kind])} {kind}")
        for col in ("index", "name", *(("tool",) if kind == "actions" else ()), "doc"):
            table.add_column(col)
        for row in info[kind]:
            # escaped: a feature named ``taken[get_request]`` is not rich markup
            table.add_row(*(escape(str(row[c])) for c in ("index", "name", *(("tool",) if kind == "actions" else ()), "doc")))
        console.print(table)


@app.command("new-domain")
def new_domain_cmd(
    name: Annotated[str, typer.Argument(help="Domain name, a snake_case identifier (e.g. refunds).")],
    package: Annotated[Path | None, typer.Option("--package", help="Write a standalone installable distribution DIR/backoffice-<name>/ (entry point backoffice.domains) instead of the in-repo layout.")] = None,
) -> None:
    """Scaffold a complete minimal domain (tables, two tools, a generator with three defect tags, a grader, policies, a catalog, tests) and build its seeds; see docs/DOMAIN_GUIDE.md."""
    from backoffice.training.cli.scaffold import ScaffoldError, new_domain

    try:
        written = new_domain(name, package_dir=package)
    except ScaffoldError as exc:
        console.print(f"[red]{exc}[/]", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    for path in written:
        sys.stdout.write(f"{path}\n")
    console.print(f"[green]{name}[/]: {len(written)} files written; next: edit them (docs/DOMAIN_GUIDE.md), "
                  f"`backoffice seeds build --env {name}`, then the tests", highlight=False, soft_wrap=True)


from backoffice.training.cli.llm import register as _register_llm  # noqa: E402

_register_llm(app)

from backoffice.training.cli.view import register as _register_view  # noqa: E402

_register_view(app)


if __name__ == "__main__":  # pragma: no cover
    app()
