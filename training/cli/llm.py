"""CLI commands for language-model agents: ``backoffice mcp [--http]`` and ``backoffice chat``.

``register(app)`` adds them to the main ``backoffice`` Typer app (see the end of ``cli.py``).
``backoffice eval --policy openai:<model>`` needs nothing here: ``get_policy`` builds the agent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` and ``chat`` commands to ``app``."""

    @app.command("mcp")
    def mcp_cmd(
        env: Annotated[str, typer.Option("--env", help="Domain to serve.")] = "approvals",
        task_id: Annotated[str | None, typer.Option("--task-id", help="Task of the first episode (the agent may reset to another).")] = None,
        split: Annotated[str, typer.Option(help="Split that reset(seed=...) draws from: train or heldout.")] = "heldout",
        seed: Annotated[int | None, typer.Option(help="Seed of the first episode.")] = None,
        trace: Annotated[Path | None, typer.Option(help="Write the trace of every step here (JSONL).")] = None,
        max_steps: Annotated[int | None, typer.Option(help="Truncate episodes after this many steps.")] = None,
        attempts: Annotated[int | None, typer.Option(help="Episodes each task may be played on this server, all sessions together (pass^k: k). Default: 1 on heldout, unlimited on train.", min=1)] = None,
        http: Annotated[bool, typer.Option("--http", help="Serve MCP over streamable HTTP at http://HOST:PORT/mcp (one episode per MCP session) instead of stdio.")] = False,
        host: Annotated[str, typer.Option(help="With --http: address to bind; loopback only (127.0.0.1, localhost, ::1): the server has no authentication.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="With --http: TCP port.", min=1, max=65535)] = 8000,
        max_sessions: Annotated[int, typer.Option(help="With --http: episodes kept at once (the least recently used is closed first).", min=1)] = 256,
    ) -> None:
        """Serve one environment as an MCP server over stdio, or with --http over streamable HTTP
        (tools: the task's own, plus reset and grade; grade answers only once the episode has
        ended, with pass, score and failure codes; the full grade goes to --trace). Reset
        serves --split only, each task at most --attempts times. With --http and --trace, TRACE
        is a folder: one trace file per MCP session."""
        from backoffice.envs import DOMAINS
        from backoffice.training.agents.mcp import LOOPBACK, make_session, serve_stdio
        from backoffice.training.agents.session import Attempts, default_attempts

        if env not in DOMAINS:
            raise typer.BadParameter(f"unknown domain {env!r}; choose from {', '.join(DOMAINS)}")
        if split not in ("train", "heldout"):
            raise typer.BadParameter("split must be train or heldout")
        ledger = Attempts(attempts if attempts is not None else default_attempts(split))
        if http:
            from backoffice.training.agents.mcp import SessionPool, serve_http

            if host not in LOOPBACK:
                raise typer.BadParameter(f"--host must be a loopback address ({', '.join(LOOPBACK)}): the MCP server has no authentication")
            if trace is not None:
                trace.mkdir(parents=True, exist_ok=True)
            counter = iter(range(1, 1 << 62))

            def factory():  # one env (and trace file) per MCP session; all share the loaded release
                path = str(trace / f"session-{next(counter):05d}.jsonl") if trace is not None else None
                return make_session(env, task_id=task_id, split=split, seed=seed, trace_path=path,
                                    max_steps=max_steps, attempts=ledger)

            pool = SessionPool(factory, max_sessions=max_sessions, domain=env)
            sys.stderr.write(f"backoffice MCP ({env}, {split}) on http://{host}:{port}/mcp\n")
            serve_http(pool, host=host, port=port)
            return
        session = make_session(env, task_id=task_id, split=split, seed=seed,
                               trace_path=str(trace) if trace else None, max_steps=max_steps, attempts=ledger)
        serve_stdio(session)

    @app.command("chat")
    def chat_cmd(
        model: Annotated[str, typer.Option("--model", help="Model name sent to the endpoint.")],
        env: Annotated[str, typer.Option("--env", help="Domain.")] = "approvals",
        task_id: Annotated[list[str] | None, typer.Option("--task-id", help="Task(s) to play (repeatable).")] = None,
        split: Annotated[str, typer.Option(help="train or heldout (when no --task-id).")] = "heldout",
        limit: Annotated[int, typer.Option(help="Tasks of the split to play when no --task-id.")] = 1,
        base_url: Annotated[str | None, typer.Option(help="Endpoint base URL (default: $OPENAI_BASE_URL). The key is read from $OPENAI_API_KEY.")] = None,
        temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
        trace: Annotated[Path, typer.Option(help="Trace JSONL; the transcript goes beside it (<name>.transcript.jsonl).")] = Path("runs/chat.jsonl"),
    ) -> None:
        """Play tasks with an LLM behind an OpenAI-compatible endpoint; write trace and transcript."""
        from backoffice.envs import make_native
        from backoffice.training.agents.chat import chat_episode, transcript_path_for
        from backoffice.training.agents.openai_chat import OpenAIChat

        if split not in ("train", "heldout"):
            raise typer.BadParameter("split must be train or heldout")
        chat = OpenAIChat(model=model, base_url=base_url, temperature=temperature)
        native = make_native(env, split=split, trace_path=str(trace))
        ids = list(task_id or native.release.split_ids[split][:limit])
        passed = 0
        try:
            for tid in ids:
                res = chat_episode(native, chat, task_id=tid)
                passed += bool(res.grade["pass"])
                codes = ",".join(res.grade["failure_codes"]) or "-"
                sys.stdout.write(f"{tid}\tpass={res.grade['pass']}\tscore={res.grade['score']:.3f}\tsteps={res.steps}\tfailures={codes}\n")
        finally:
            native.close()
        sys.stdout.write(f"{passed}/{len(ids)} passed; trace: {trace}; transcript: {transcript_path_for(trace)}\n")
