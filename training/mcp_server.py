"""An MCP server (official ``mcp`` SDK, the ``llm`` extra) around one backoffice environment.

An MCP-capable agent evaluates as it is: it lists the tools, calls ``reset`` (optionally with
a ``task_id``) to start an episode, works through the task's own tools and finishes with
``submit``; ``grade`` returns the pure grade. Tools exposed:

- the current episode's allowed tools, with the schemas of their pydantic models (the MCP
  ``inputSchema`` shape of ``env.tool_specs(format="mcp")``). A call is one ``env.step``: the
  text content is the env's observation, byte for byte, and the result is flagged ``isError``
  when the observation is a structured error (which, as natively, leaves the state untouched);
- ``reset(task_id?, seed?)``: start an episode (a released task, or one drawn from the split by
  ``seed``). Returns the brief, the system prompt of :func:`backoffice.training.llm.system_prompt`
  and the episode's ids. Without ``seed`` a named task uses its own seed, as native rollouts do,
  so the same calls give the same trace, end state and grade;
- ``grade()``: the terminal grade once the episode has ended (``final: true``), else the grade
  of the state so far (``final: false``, the episode continues).

A call after the episode has ended is refused with code ``episode_over`` and is not a step.
The server starts with an episode already reset (``task_id`` if given, else ``seed`` 0 of the
split). With ``trace_path`` every step is traced, so ``backoffice replay`` can check a session.

``backoffice mcp --env approvals [--task-id …]`` serves it over stdio.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.core.canonical import dumps, loads

RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "description": "A released task id (e.g. APR-H0001); omit to draw one from the split by seed."},
        "seed": {"type": "integer", "description": "Episode seed; default: the task's own seed, or 0 when no task_id is given."},
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


class EpisodeSession:
    """One environment and its current episode, driven by tool calls (transport-free).

    Every method returns plain data, so the MCP handlers stay thin and tests can use it directly.
    """

    def __init__(self, env: Any, task_id: str | None = None, seed: int | None = None):
        self.env = env
        names = set(env.unwrapped.domain.toolkit.names)
        clash = names & set(CONTROL_TOOLS)
        if clash:
            raise ValueError(f"domain tools {sorted(clash)} clash with the MCP control tools {CONTROL_TOOLS}")
        self.final: dict[str, Any] | None = None
        self.reset(task_id=task_id, seed=seed)

    @property
    def done(self) -> bool:
        return self.final is not None

    def reset(self, task_id: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """Start an episode; return the brief, the system prompt and the episode's ids."""
        from backoffice.training.llm import system_prompt

        unwrapped = self.env.unwrapped
        options = None
        if task_id is not None:
            options = {"task_id": task_id}
            if seed is None and "-G" not in task_id:
                seed = unwrapped.release.task(task_id).seed
        obs, info = self.env.reset(seed=0 if seed is None else seed, options=options)
        self.final = None
        self.steps = 0
        self.info = info
        return {
            "brief": loads(obs), "system_prompt": system_prompt(self.env), "task_id": info["task_id"],
            "episode_id": info["episode_id"], "seed": info["seed"], "allowed_tools": info["allowed_tools"],
            "max_steps": info["max_steps"],
        }

    def tool_specs(self) -> list[dict[str, Any]]:
        """MCP specs (``name``, ``description``, ``inputSchema``): the episode's tools, then the control tools."""
        specs = list(self.env.unwrapped.tool_specs(format="mcp"))
        specs.append({"name": "reset", "description": "Start a new episode (a released task by task_id, or one drawn by seed). "
                      "Returns the task brief and the system prompt.", "inputSchema": RESET_SCHEMA})
        specs.append({"name": "grade", "description": "The grade: final once the episode has ended, else of the state so far.",
                      "inputSchema": GRADE_SCHEMA})
        return specs

    def step(self, name: str, arguments: Any) -> tuple[str, bool, dict[str, Any]]:
        """One env step; returns ``(observation, is_error, status)``."""
        if self.done:
            obs = dumps({"status": "error", "code": "episode_over",
                         "message": "the episode is over; call reset to start another"}).decode()
            return obs, True, {"terminated": True, "truncated": False, "steps": self.steps}
        obs, _, terminated, truncated, info = self.env.step({"tool": name, "args": {} if arguments is None else arguments})
        self.steps += 1
        if terminated or truncated:
            self.final = {k: info[k] for k in ("grade", "score", "is_success", "end_state_hash", "shaped_reward") if k in info}
        return obs, info["result_status"] != "ok", {"terminated": terminated, "truncated": truncated, "steps": self.steps}

    def grade(self) -> dict[str, Any]:
        """``{"final", "steps", "grade", ...}``: the terminal grade or that of the state so far."""
        if self.final is not None:
            return {"final": True, "steps": self.steps, **self.final}
        grade = self.env.unwrapped.grade_now()
        return {"final": False, "steps": self.steps, "grade": grade, "score": grade["score"], "is_success": bool(grade["pass"])}

    def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, Any, bool]:
        """Dispatch any tool call; returns ``(text, structured_content, is_error)``."""
        if name == "reset":
            args = arguments or {}
            extra = sorted(set(args) - {"task_id", "seed"})
            task_id, seed = args.get("task_id"), args.get("seed")
            problem = None
            if extra:
                problem = f"unknown arguments {extra}"
            elif task_id is not None and not isinstance(task_id, str):
                problem = "task_id must be a string"
            elif seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                problem = "seed must be a non-negative integer"
            if problem is None:
                try:
                    out = self.reset(task_id=task_id, seed=seed)
                except (KeyError, ValueError) as exc:
                    problem = str(exc.args[0] if exc.args else exc)
            if problem is not None:
                err = {"status": "error", "code": "invalid_args", "message": problem}
                return dumps(err).decode(), err, True
            return dumps(out).decode(), out, False
        if name == "grade":
            out = self.grade()
            return dumps(out).decode(), out, False
        obs, is_error, status = self.step(name, arguments)
        return obs, {"observation": loads(obs), **status}, is_error


def build_server(session: EpisodeSession, name: str | None = None) -> Any:
    """A low-level ``mcp.server.Server`` whose tools are those of ``session``."""
    try:
        import mcp.types as types
        from mcp.server import Server
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the MCP server needs the `llm` extra: pip install 'backoffice-gym[llm]'") from exc

    domain = session.env.unwrapped.domain.name

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=s["name"], description=s["description"], input_schema=s["inputSchema"]) for s in session.tool_specs()
        ])

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, structured, is_error = session.call(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured, is_error=is_error)

    return Server(name or f"backoffice-{domain}", version="1", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def make_session(domain: str, task_id: str | None = None, split: str = "heldout", seed: int | None = None,
                 trace_path: str | None = None, max_steps: int | None = None) -> EpisodeSession:
    """An :class:`EpisodeSession` over a fresh native env of ``domain``."""
    from backoffice.envs import make_native

    env = make_native(domain, split=split, trace_path=trace_path, max_steps=max_steps)
    return EpisodeSession(env, task_id=task_id, seed=seed)


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
