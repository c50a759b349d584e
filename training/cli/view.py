"""CLI commands for people reading and playing episodes: ``backoffice view`` and ``backoffice play``.

``register(app)`` adds them to the main ``backoffice`` Typer app (see the end of ``cli.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``view`` and ``play`` commands to ``app``."""

    @app.command("view")
    def view_cmd(
        files: Annotated[list[Path], typer.Argument(help="Evaluation JSONL files (as `backoffice report` reads them).")],
        trace: Annotated[Path | None, typer.Option("--trace", help="Where traces and diffs live when the records' trace_location / diff_location paths moved: a folder (the same file names in it) or a trace .jsonl file (its diffs beside it).")] = None,
        out: Annotated[Path | None, typer.Option("--out", help="The HTML page (default: the first file with .html).")] = None,
        plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Embed the report's PNG plots.")] = True,
        serve_: Annotated[bool, typer.Option("--serve", help="Also serve the page over HTTP on loopback until Ctrl-C.")] = False,
        port: Annotated[int, typer.Option(help="With --serve: TCP port (0: any free port).", min=0, max=65535)] = 8765,
    ) -> None:
        """One self-contained HTML page (no network) over evaluation records: overview by domain x
        agent, the episode list with filters, every episode's steps, diff and checks, and two
        episodes of a task side by side. Open it from disk or in a notebook."""
        from backoffice.training.eval.view import serve, write_page

        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise typer.BadParameter(f"no such file(s): {missing}")
        if trace is not None and not trace.exists():
            raise typer.BadParameter(f"no such trace folder or file: {trace}")
        path = write_page(files, out or files[0].with_suffix(".html"), trace=trace, plots=plots)
        typer.echo(f"page: {path} ({path.stat().st_size:,} bytes)")
        if serve_:
            try:
                serve(path, port=port, ready=lambda url: typer.echo(f"serving {url} (Ctrl-C to stop)"))
            except KeyboardInterrupt:
                pass

    @app.command("play")
    def play_cmd(
        env: Annotated[str, typer.Option("--env", help="Domain to play.")],
        task_id: Annotated[str | None, typer.Option("--task-id", help="Task to play (of --split).")] = None,
        seed: Annotated[int | None, typer.Option(help="Draw the task from --split by this seed (default 0); with --task-id, that episode's seed (default: the task's own).")] = None,
        split: Annotated[str, typer.Option(help="train (default) or heldout.")] = "train",
        attempts: Annotated[int, typer.Option(min=1, help="Graded attempts per heldout task in this session (declared; default 1).")] = 1,
        trace: Annotated[Path | None, typer.Option(help="Trace file (JSONL; default: runs/play/<domain>-<time>.jsonl). Replays with `backoffice replay`.")] = None,
        max_steps: Annotated[int | None, typer.Option(help="Truncate episodes after this many steps.")] = None,
    ) -> None:
        """Be the agent: read the brief and the tools, call tools by name with JSON or key=value
        arguments, see each result as the agent would, and at the end the grade, the diff and the
        trace file (replayable with `backoffice replay`)."""
        from backoffice.envs import DOMAINS
        from backoffice.training.agents.play import Play, default_trace_path

        if env not in DOMAINS:
            raise typer.BadParameter(f"unknown domain {env!r}; choose from {', '.join(DOMAINS)}")
        if split not in ("train", "heldout"):
            raise typer.BadParameter("split must be train or heldout")
        play = Play(env, split=split, attempts=attempts, trace_path=trace or default_trace_path(env), max_steps=max_steps)
        try:
            code = play.run(task_id=task_id, seed=seed)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        raise typer.Exit(code)
