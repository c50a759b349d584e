"""An MCP server (official ``mcp`` SDK, the ``llm`` extra) around one backoffice environment.

An MCP-capable agent evaluates as it is: it lists the tools, calls ``reset`` (optionally with
a ``task_id``) to start an episode, works through the task's own tools and finishes with
``submit``; ``grade`` returns the pure grade. Tools exposed:

- the current episode's allowed tools, with the schemas of their pydantic models (the MCP
  ``inputSchema`` shape of ``env.tool_specs(format="mcp")``). A call is one ``env.step``: the
  text content is the env's observation, byte for byte, and the result is flagged ``isError``
  when the observation is a structured error (which, as natively, leaves the state untouched);
- ``reset(task_id?, seed?)``: start an episode (a released task, or one drawn from the split by
  ``seed``). Returns the brief, the system prompt of :func:`backoffice.training.agents.chat.system_prompt`
  and the episode's ids. Without ``seed`` a named task uses its own seed, as native rollouts do,
  so the same calls give the same trace, end state and grade;
- ``grade()``: once the episode has ended (``final: true``), its ``pass``, ``score`` and
  ``failure_codes``; before that only ``{"final": false, "steps": n}``. No check detail or
  expected value ever reaches the agent: they go to the operator's records (the trace's last
  line, ``Session.grade()``).

The server serves its env's split only (``reset`` to a task of another split is refused), and
each task at most ``attempts`` times (default: once on ``heldout``, unlimited on ``train``;
``--attempts k`` for pass^k), counted across every session of the server: a task cannot be
rehearsed until it passes, through a new connection either.

A call after the episode has ended is refused with code ``episode_over`` and is not a step.
The server starts with an episode already reset (``task_id`` if given, else ``seed`` 0 of the
split). With ``trace_path`` every step is traced, so ``backoffice replay`` can check a session.

``backoffice mcp --env approvals [--task-id …]`` serves it over stdio.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.training.agents.session import Attempts, AttemptsExhausted, Session, default_attempts

RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "description": "A released task id (e.g. APR-H0001); omit to draw one from the split by seed."},
        "seed": {"type": ["integer", "string"], "pattern": "^[0-9]{1,20}$",
                 "description": "Episode seed (an integer, or its decimal digits as a string: seeds may exceed 2^53, which "
                                "JavaScript numbers cannot hold; reset results carry seed_str); default: the task's own "
                                "seed, or 0 when no task_id is given."},
    },
    "additionalProperties": False,
}
GRADE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
CONTROL_TOOLS = ("reset", "grade")

INSTRUCTIONS = (
    "A backoffice-gym environment. Call `reset` (optionally with task_id) to start an episode: its result "
    "holds the task brief and a system prompt with the task's rules. Work only through the task's tools; a "
    "failed call returns a structured error and changes nothing. Finish with `submit`, then call `grade`."
)


class EpisodeSession(Session):
    """A :class:`~backoffice.training.agents.session.Session` plus the MCP control tools (``reset``,
    ``grade``); every method returns plain data, so the MCP handlers stay thin and tests can
    use it directly (transport-free)."""

    def __init__(self, env: Any, task_id: str | None = None, seed: int | None = None,
                 attempts: int | Attempts | None | str = "default"):
        names = set(env.unwrapped.domain.toolkit.names)
        clash = names & set(CONTROL_TOOLS)
        if clash:
            raise ValueError(f"domain tools {sorted(clash)} clash with the MCP control tools {CONTROL_TOOLS}")
        super().__init__(env, task_id=task_id, seed=seed, attempts=attempts)

    def tool_specs(self, format: str = "mcp") -> list[dict[str, Any]]:
        """MCP specs (``name``, ``description``, ``inputSchema``): the episode's tools, then the control tools."""
        specs = list(self.env.unwrapped.tool_specs(format="mcp"))
        specs.append({"name": "reset", "description": "Start a new episode (a released task by task_id, or one drawn by seed). "
                      "Returns the task brief and the system prompt.", "inputSchema": RESET_SCHEMA})
        specs.append({"name": "grade", "description": "Once the episode has ended (final: true): its pass, score "
                      "and failure_codes; before that only {final: false, steps}.",
                      "inputSchema": GRADE_SCHEMA})
        return specs

    def step(self, name: str, arguments: Any) -> tuple[str, bool, dict[str, Any]]:
        """One env step; returns ``(observation, is_error, status)``."""
        res = self.call(name, arguments)
        return res.observation, res.is_error, {"terminated": res.terminated, "truncated": res.truncated, "steps": res.steps}

    def grade_tool(self) -> dict[str, Any]:
        """What the agent's ``grade`` tool answers: ``{"final": True, "steps", "pass", "score",
        "failure_codes"}`` once the episode has ended, else only ``{"final": False, "steps"}``.
        The full grade (checks, details, expected values) is the operator's: :meth:`grade`
        and the trace."""
        if self.final is not None:
            return {"final": True, "steps": self.steps, **self.public_grade()}
        return {"final": False, "steps": self.steps}

    def dispatch(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, Any, bool]:
        """Dispatch any tool call, control tools included; returns ``(text, structured_content, is_error)``."""
        if name == "reset":
            args = arguments or {}
            extra = sorted(set(args) - {"task_id", "seed"})
            task_id, seed = args.get("task_id"), args.get("seed")
            problem = None
            if extra:
                problem = f"unknown arguments {extra}"
            elif task_id is not None and not isinstance(task_id, str):
                problem = "task_id must be a string"
            elif isinstance(seed, str) and seed.isascii() and seed.isdigit() and len(seed) <= 20:
                seed = int(seed)  # exact, whatever the client's number type (seeds may exceed 2^53)
            if problem is None and seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                problem = "seed must be a non-negative integer (or its decimal digits as a string)"
            if problem is None:
                try:
                    out = self.reset(task_id=task_id, seed=seed)
                except AttemptsExhausted as exc:
                    err = {"status": "error", "code": "attempts_exhausted", "message": str(exc)}
                    return dumps(err).decode(), err, True
                except (KeyError, ValueError) as exc:
                    problem = str(exc.args[0] if exc.args else exc)
            if problem is not None:
                err = {"status": "error", "code": "invalid_args", "message": problem}
                return dumps(err).decode(), err, True
            return dumps(out).decode(), out, False
        if name == "grade":
            out = self.grade_tool()
            return dumps(out).decode(), out, False
        obs, is_error, status = self.step(name, arguments)
        return obs, {"observation": loads(obs), **status}, is_error


class SessionPool:
    """One :class:`EpisodeSession` per MCP session id (streamable HTTP gives each client its
    own), made on first use by ``factory``; at most ``max_sessions`` live at once (the least
    recently used is closed first). Without a transport session id (stdio, in-process) the
    key is the connection, so each connection still has its own episode."""

    def __init__(self, factory: Any, max_sessions: int = 256, domain: str | None = None):
        self.factory = factory
        self.domain = domain
        self.max_sessions = max_sessions
        self.sessions: dict[Any, EpisodeSession] = {}
        self.created = 0

    def get(self, session_id: Any) -> EpisodeSession:
        session = self.sessions.pop(session_id, None)
        if session is None:
            session = self.factory()
            self.created += 1
            while len(self.sessions) >= self.max_sessions:
                self.sessions.pop(next(iter(self.sessions))).close()
        self.sessions[session_id] = session  # most recently used last
        return session


def rules_document(session: EpisodeSession) -> str:
    """The environment's rules as a document: the domain's description and the general rules
    (public material only, the same as the system prompt's)."""
    from backoffice.training.agents.chat import GENERAL_RULES, domain_description

    unwrapped = session.env.unwrapped
    limit = str(session.info["max_steps"])
    lines = [f"# {unwrapped.domain.name}: rules of the environment", ""]
    description = domain_description(unwrapped.domain.name)
    if description:
        lines += [description, ""]
    lines += [f"- {r.replace('{max_steps}', limit).replace('{finish}', 'submit')}" for r in GENERAL_RULES]
    return "\n".join(lines) + "\n"


def build_server(session: EpisodeSession | SessionPool, name: str | None = None) -> Any:
    """A low-level ``mcp.server.Server`` serving ``session`` (or one session per MCP session
    id from a :class:`SessionPool`).

    Besides the tools: the episode's system prompt as the prompt ``system``, and two
    resources, ``backoffice://rules`` (the rules document) and ``backoffice://episode/brief``
    (the current task brief). ``tools.listChanged`` is declared: a ``reset`` that changes the
    episode's tool set sends ``notifications/tools/list_changed``.
    """
    try:
        import mcp.types as types
        from mcp.server import Server
        from mcp.server.lowlevel.server import NotificationOptions
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the MCP server needs the `llm` extra: pip install 'backoffice-gym[llm]'") from exc

    if isinstance(session, SessionPool):
        pool, domain = session, session.domain
    else:
        pool, domain = SessionPool(lambda: session), session.env.unwrapped.domain.name
        pool.sessions[None] = session

    single = None if isinstance(session, SessionPool) else session

    def client_key(ctx: Any) -> Any:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None) or {}
        # the transport's session id (streamable HTTP, handshake-era protocols), else the
        # episode cookie (streamable HTTP, 2026-07-28: no session id; see http_app), else the
        # connection's session object (stdio, in-process)
        return headers.get("mcp-session-id") or headers.get(EPISODE_HEADER) or ctx.session

    def current(ctx: Any) -> EpisodeSession:
        if single is not None:
            return single
        return pool.get(client_key(ctx))

    listeners: dict[Any, Any] = {}  # client key -> (bus, ListenHandler): list_changed per client (2026-07-28)

    def listener(key: Any) -> Any:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        if key not in listeners:
            while len(listeners) >= max(1, pool.max_sessions):
                listeners.pop(next(iter(listeners)))[1].close()
            bus = InMemorySubscriptionBus()
            listeners[key] = (bus, ListenHandler(bus))
        return listeners[key]

    async def subscriptions_listen(ctx: Any, params: Any) -> Any:
        return await listener(None if single is not None else client_key(ctx))[1](ctx, params)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=s["name"], description=s["description"], input_schema=s["inputSchema"],
                       annotations=types.ToolAnnotations(read_only_hint=s["annotations"]["readOnlyHint"]) if "annotations" in s else None)
            for s in current(ctx).tool_specs()
        ])

    async def call_tool(ctx: Any, params: Any) -> Any:
        session = current(ctx)
        before = session.info["allowed_tools"]
        text, structured, is_error = await anyio_to_thread(session.dispatch, params.name, params.arguments)
        if params.name == "reset" and not is_error and session.info["allowed_tools"] != before:
            key = None if single is not None else client_key(ctx)
            if key in listeners:  # 2026-07-28: the client's subscriptions/listen stream
                from mcp.server.subscriptions import ToolsListChanged

                await listeners[key][0].publish(ToolsListChanged())
            try:
                await ctx.session.send_tool_list_changed()
            except Exception:  # a client that cannot take notifications still gets its result
                pass
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured, is_error=is_error)

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[types.Prompt(
            name="system", description="The system prompt of the current episode: task, allowed tools, rules.")])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        if params.name != "system":
            raise ValueError(f"unknown prompt {params.name!r}; the server has 'system'")
        session = current(ctx)
        return types.GetPromptResult(description=f"system prompt of {session.task_id}", messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=session.system_prompt))])

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=[
            types.Resource(name="rules", uri=RULES_URI, mime_type="text/markdown",
                           description="The environment's rules (what the system prompt summarises)."),
            types.Resource(name="brief", uri=BRIEF_URI, mime_type="application/json",
                           description="The current episode's task brief."),
        ])

    async def read_resource(ctx: Any, params: Any) -> Any:
        session = current(ctx)
        uri = str(params.uri)
        if uri == RULES_URI:
            text, mime = rules_document(session), "text/markdown"
        elif uri == BRIEF_URI:
            text, mime = dumps(session.start["brief"]).decode(), "application/json"
        else:
            raise ValueError(f"unknown resource {uri}")
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    class EnvServer(Server):
        def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)

    return EnvServer(name or f"backoffice-{domain or 'env'}", version="1", instructions=INSTRUCTIONS,
                     on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts,
                     on_get_prompt=get_prompt, on_list_resources=list_resources, on_read_resource=read_resource,
                     on_subscriptions_listen=subscriptions_listen)


async def anyio_to_thread(fn: Any, *args: Any) -> Any:
    """Run a (short, CPU-bound) env step off the event loop, so many sessions interleave."""
    import anyio

    return await anyio.to_thread.run_sync(fn, *args)


RULES_URI = "backoffice://rules"
BRIEF_URI = "backoffice://episode/brief"


def make_session(domain: str, task_id: str | None = None, split: str = "heldout", seed: int | None = None,
                 trace_path: str | None = None, max_steps: int | None = None,
                 attempts: int | Attempts | None | str = "default") -> EpisodeSession:
    """An :class:`EpisodeSession` over a fresh native env of ``domain`` on ``split``, with
    ``attempts`` per task (an int, a ledger shared with other sessions, ``None``: unlimited;
    default: :func:`~backoffice.training.agents.session.default_attempts`)."""
    from backoffice.envs import make_native

    env = make_native(domain, split=split, trace_path=trace_path, max_steps=max_steps)
    return EpisodeSession(env, task_id=task_id, seed=seed, attempts=attempts)


def serve_stdio(session: EpisodeSession) -> None:
    """Serve ``session`` over stdin/stdout until the client disconnects."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(session)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        session.env.close()


def make_pool(domain: str, split: str = "heldout", task_id: str | None = None, seed: int | None = None,
              max_steps: int | None = None, max_sessions: int = 256,
              attempts: int | None | str = "default") -> SessionPool:
    """A :class:`SessionPool` of fresh native envs of ``domain``: one episode per MCP session
    (they share the loaded release) and one attempts ledger for them all."""
    ledger = Attempts(default_attempts(split) if attempts == "default" else attempts)  # type: ignore[arg-type]
    return SessionPool(lambda: make_session(domain, task_id=task_id, split=split, seed=seed, max_steps=max_steps,
                                            attempts=ledger), max_sessions=max_sessions, domain=domain)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


#: the cookie that keys a client's episode over streamable HTTP when the protocol has no
#: session id (2026-07-28, what the SDK's ``Client(url)`` negotiates by default)
EPISODE_COOKIE = "backoffice-episode"
#: the request header the cookie middleware sets for the handlers (a client's own is dropped)
EPISODE_HEADER = "x-backoffice-episode"


class EpisodeCookie:
    """ASGI middleware: gives every HTTP client an episode key in a cookie and hands it to the
    MCP handlers as the :data:`EPISODE_HEADER` request header.

    Handshake-era protocols (``Client(url, mode="legacy")``) carry ``mcp-session-id``, which
    keys the episode; the 2026-07-28 protocol (the SDK's default ``mode="auto"``, or the
    version pinned) is stateless per request and has none, so without a key each request
    would meet a new episode. HTTP clients keep cookies (the SDK's ``httpx`` client does), so
    the first response sets the key and every later request of that client carries it."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        import secrets
        from http.cookies import SimpleCookie

        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != EPISODE_HEADER.encode()]
        key = None
        for k, v in headers:
            if k.lower() == b"cookie":
                morsel = SimpleCookie(v.decode("latin-1")).get(EPISODE_COOKIE)
                key = morsel.value if morsel is not None and morsel.value.isalnum() else key
        fresh = key is None
        key = key or secrets.token_hex(16)
        scope = {**scope, "headers": [*headers, (EPISODE_HEADER.encode(), key.encode())]}

        async def send_with_cookie(message: Any) -> None:
            if fresh and message.get("type") == "http.response.start":
                cookie = f"{EPISODE_COOKIE}={key}; Path=/; HttpOnly; SameSite=Strict".encode()
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def http_app(pool: SessionPool) -> Any:
    """The Starlette app serving ``pool`` over MCP streamable HTTP at ``/mcp`` (official SDK),
    one episode per client whatever the protocol version it negotiates (:class:`EpisodeCookie`).
    The pool bounds the episodes (the least recently used is closed first); the SDK's own
    session limit is off, so a new client is never refused (transports idle 30 minutes close)."""
    app = build_server(pool).streamable_http_app(max_sessions=None)
    app.add_middleware(EpisodeCookie)
    return app


def serve_http(pool: SessionPool, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``pool`` over streamable HTTP (``http://host:port/mcp``) until interrupted.
    Only loopback hosts: the server has no authentication."""
    import uvicorn

    if host not in LOOPBACK:
        raise ValueError(f"serve on a loopback address ({', '.join(LOOPBACK)}); the MCP server has no authentication")
    uvicorn.run(http_app(pool), host=host, port=port, log_level="warning")
