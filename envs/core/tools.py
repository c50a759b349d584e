"""Tools: plain functions over the store, each with a pydantic model for its arguments.

A domain declares its tools with a :class:`Toolkit`::

    toolkit = Toolkit()

    class GetRequestArgs(ToolArgs):
        request_id: str = Field(description="Id of the request, e.g. REQ-0001.")

    @toolkit.tool
    def get_request(ctx: ToolContext, args: GetRequestArgs) -> dict:
        \"\"\"Return one request by id.\"\"\"
        ...

The argument model is the schema (exported as OpenAI / MCP / Anthropic tool specs) and the
validator, so the two never drift. A tool signals a broken precondition by raising
:class:`ToolError` with a stable ``code``; :meth:`Toolkit.call` turns that (and anything else
that goes wrong) into a structured error result and rolls the store back.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from backoffice.envs.core.release import Task
    from backoffice.envs.core.store import Row, Store

#: Error codes the engine itself emits; domains may add their own (documented per domain).
ENGINE_ERROR_CODES = (
    "invalid_action",  # the action is not {"tool": str, "args": {...}} or its JSON is broken
    "unknown_tool",
    "tool_not_allowed",
    "invalid_args",
    "not_found",
    "conflict",
    "approval_required",
    "precondition_failed",
    "internal_error",  # a bug in a tool: reported, rolled back, never raised
)


class ToolArgs(BaseModel):
    """Base class of every tool's argument model: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_max_length=4000)


class NoArgs(ToolArgs):
    """No arguments."""


#: the rows a list tool returns per call unless the agent asks for fewer (``limit``)
PAGE_SIZE = 50
#: the most rows one call of a list tool returns
MAX_PAGE_SIZE = 200


class PageArgs(ToolArgs):
    """Arguments of a paginated list tool (subclass it to add filters): ``limit`` rows per page
    and the ``cursor`` returned by the previous page."""

    limit: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE, description=f"Rows per page (default {PAGE_SIZE}, at most {MAX_PAGE_SIZE}).")
    cursor: str | None = Field(None, max_length=200, description="The next_cursor of the previous page; omit for the first page.")


def check_cursor(store: Store, table: str, cursor: str | None) -> None:
    """An ``invalid_args`` :class:`ToolError` when ``cursor`` is not an id of ``table`` (the
    snapshot's or one the episode wrote), so it cannot be a ``next_cursor`` the list returned:
    a made-up cursor is an error, never an empty page that reads as "no more rows"."""
    if cursor is not None and not store.known_id(table, cursor):
        raise ToolError("invalid_args", f"cursor {cursor[:64]!r} is not a next_cursor this list returned: pass the "
                        "next_cursor of the previous page, or omit cursor for the first page")


def page(store: Store, table: str, args: PageArgs, where: Callable[[dict[str, Any]], bool] | None = None,
         **equals: Any) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``store.select(table, where, **equals)`` in id order: the rows after
    ``args.cursor`` (an id), at most ``args.limit`` of them, and the cursor of the next page
    (the last id returned when more rows remain, else ``None``). A cursor that is no id of
    ``table`` is an ``invalid_args`` error (:func:`check_cursor`)."""
    check_cursor(store, table, args.cursor)
    rows = store.select(table, where, after=args.cursor, limit=args.limit + 1, **equals)
    if len(rows) > args.limit:
        rows = rows[: args.limit]
        return rows, rows[-1]["id"]
    return rows, None


def page_result(store: Store, table: str, args: PageArgs, key: str, where: Callable[[dict[str, Any]], bool] | None = None,
                **equals: Any) -> dict[str, Any]:
    """The one result shape of every list or search tool: one :func:`page` of rows under ``key``,
    ``next_cursor`` (``None`` on the last page) and ``total``, the number of rows matching the
    filters over every page. Callers add their own fields beside these."""
    rows, cursor = page(store, table, args, where, **equals)
    total = store.count(table, **equals) if where is None else len(store.select_where(table, equals, where))
    return {key: rows, "next_cursor": cursor, "total": total}


def paged_list(rows: Sequence[dict[str, Any]], args: PageArgs, key: str, id_field: str = "id") -> dict[str, Any]:
    """:func:`page_result` over rows a tool computed itself (a search's hits, a bounded list such
    as one person's delegations), in the order given: the rows after the one whose ``id_field`` is
    ``args.cursor``, at most ``args.limit`` of them, ``next_cursor`` and ``total``. A cursor that
    names no row of ``rows`` is an ``invalid_args`` error."""
    start = 0
    if args.cursor is not None:
        at = next((i for i, r in enumerate(rows) if r.get(id_field) == args.cursor), None)
        if at is None:
            raise ToolError("invalid_args", f"cursor {args.cursor[:64]!r} is not a next_cursor this list returned: pass the "
                            "next_cursor of the previous page, or omit cursor for the first page")
        start = at + 1
    shown = list(rows[start:start + args.limit])
    more = start + args.limit < len(rows)
    return {key: shown, "next_cursor": shown[-1][id_field] if more and shown else None, "total": len(rows)}


#: the keys of one entry of a rule document: ``value`` is optional (a desk policy's setting)
RULE_KEYS = ("id", "title", "text")
RULE_OPTIONAL_KEYS = ("value",)


def rule_document(rules: Iterable[Mapping[str, Any]], tables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one shape of every rule document a tool returns (a desk procedure, a rule file, desk
    policies, a case type's requirements): ``{"rules": [...], "tables": {...}}``, whole, never
    paginated or truncated.

    Each entry of ``rules`` is one rule the agent must apply (a procedure step, a validity
    condition, a desk policy and its ``value``) with exactly ``id``, ``title``, ``text`` and
    optionally ``value``; its ``id`` is one of the domain's ``Domain.rules``, each of which the
    test suite proves binds. ``tables`` holds the reference data the rules read (amount bands,
    codes, requirement items), ``{}`` when there is none. Raises ``ValueError`` on another shape.
    """
    out = []
    for rule in rules:
        extra = set(rule) - set(RULE_KEYS) - set(RULE_OPTIONAL_KEYS)
        missing = [k for k in RULE_KEYS if not isinstance(rule.get(k), str) or not rule.get(k)]
        if extra or missing:
            raise ValueError(f"a rule entry needs non-empty {RULE_KEYS} (and may have {RULE_OPTIONAL_KEYS}): "
                             f"{dict(rule)!r} lacks {missing}, has extra {sorted(extra)}")
        out.append(dict(rule))
    return {"rules": out, "tables": dict(tables or {})}


class ToolError(Exception):
    """A tool's structured failure. ``code`` is stable; ``message`` is for humans."""

    def __init__(self, code: str, message: str, **details: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


@dataclass
class ToolContext:
    """What a tool may use: the working store, the public task and the episode's step."""

    store: Store
    task: Task
    step: int = 0

    @property
    def now(self) -> str:
        """The simulated clock (ISO string) read from the ``clock`` table."""
        row = self.store.get("clock", "clock")
        return row["now"] if row else ""


ToolFn = Callable[[ToolContext, Any], Any]


@dataclass(frozen=True)
class Tool:
    """One registered tool."""

    name: str
    description: str
    args_model: type[ToolArgs]
    fn: ToolFn
    terminal: bool = False
    #: whether the tool may change the store; ``False`` tools are proven read-only by the fuzz
    #: test and exported with MCP's ``readOnlyHint``; ``None``: not declared (legacy)
    writes: bool | None = None

    def __post_init__(self) -> None:
        # the argument model's validator (pydantic-core's ``validate_python``, what
        # ``model_validate`` calls), bound once
        object.__setattr__(self, "validate", self.args_model.__pydantic_validator__.validate_python)

    validate: Callable[[Any], ToolArgs] = field(init=False, repr=False, compare=False)

    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments (pydantic's, without ``title`` noise)."""
        return _strip_titles(self.args_model.model_json_schema())

    def spec(self, format: str = "function") -> dict[str, Any]:
        """Tool spec in a given shape: ``function`` ({name, description, parameters}),
        ``openai`` (chat-completions ``{"type": "function", "function": ...}``), ``mcp``
        ({name, description, inputSchema}) or ``anthropic`` ({name, description, input_schema})."""
        params = self.parameters()
        if format == "function":
            return {"name": self.name, "description": self.description, "parameters": params}
        if format == "openai":
            return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}
        if format == "mcp":
            spec: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": params}
            if self.writes is not None:
                spec["annotations"] = {"readOnlyHint": not self.writes}
            return spec
        if format == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": params}
        raise ValueError(f"unknown tool spec format {format!r}; use function, openai, mcp or anthropic")


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


SpecFormat = Literal["function", "openai", "mcp", "anthropic"]


@dataclass
class Toolkit:
    """The tools of one domain, in declaration order."""

    tools: dict[str, Tool] = field(default_factory=dict)

    def tool(self, fn: ToolFn | None = None, *, terminal: bool = False, writes: bool | None = None) -> Any:
        """Decorator registering ``fn(ctx, args)``; the args model comes from the annotation.

        ``writes`` declares whether the tool may change the store (read tools: ``False``)."""

        def register(f: ToolFn) -> ToolFn:
            hints = get_type_hints(f)
            params = list(inspect.signature(f).parameters)
            if len(params) != 2:
                raise TypeError(f"tool {f.__name__} must take (ctx, args)")
            model = hints.get(params[1])
            if not (isinstance(model, type) and issubclass(model, ToolArgs)):
                raise TypeError(f"tool {f.__name__}: annotate args with a ToolArgs subclass")
            doc = inspect.cleandoc(f.__doc__ or "")
            if not doc:
                raise TypeError(f"tool {f.__name__} needs a docstring: it is the tool's description")
            if f.__name__ in self.tools:
                raise ValueError(f"tool {f.__name__} registered twice")
            self.tools[f.__name__] = Tool(f.__name__, doc, model, f, terminal, writes)
            return f

        return register(fn) if fn is not None else register

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    def specs(self, names: Iterable[str] | None = None, format: SpecFormat = "function") -> list[dict[str, Any]]:
        chosen = self.tools if names is None else [n for n in self.tools if n in set(names)]
        return [self.tools[n].spec(format) for n in chosen]

    def call(self, ctx: ToolContext, name: str, args: Any, allowed: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
        """Run one tool call atomically.

        Returns ``(result, changed_ids)``. ``result`` is ``{"status": "ok", "result": ...}`` or
        ``{"status": "error", "code": ..., "message": ...}``; on error the store is unchanged.
        Never raises for anything in ``name`` or ``args``.
        """
        result, _, changed = self.call_encoded(ctx, name, args, allowed)
        return result, changed

    def call_encoded(self, ctx: ToolContext, name: str, args: Any,
                     allowed: frozenset[str]) -> tuple[dict[str, Any], bytes | None, list[str]]:
        """:meth:`call`, also returning the canonical JSON of an ok call's ``result`` value
        (``None`` for an error): the one serialisation of the step, which the env reuses for
        the observation and the trace line."""
        tool = self.tools.get(name)
        if tool is None:
            return error("unknown_tool", f"no tool named {name[:80]!r}; available: {', '.join(sorted(allowed))}"), None, []
        if name not in allowed:
            return error("tool_not_allowed", f"{name} is not allowed in this task"), None, []
        if not isinstance(args, dict):
            return error("invalid_args", "args must be a JSON object"), None, []
        try:
            parsed = tool.validate(args)
        except ValidationError as exc:
            return error("invalid_args", _validation_message(exc)), None, []
        store = ctx.store
        store.begin()
        try:
            value = tool.fn(ctx, parsed)
            # Results are plain JSON: serialised once (which also rejects what is not JSON) and
            # parsed back, so no caller shares (or can mutate) a store row.
            payload = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
            value = orjson.loads(payload)
        except ToolError as exc:
            store.rollback()
            return error(exc.code, exc.message, **exc.details), None, []
        except Exception as exc:  # a tool bug must never escape step(): report it as data
            store.rollback()
            return error("internal_error", f"{type(exc).__name__} in {name}"), None, []
        return {"status": "ok", "result": value}, payload, store.commit()


def require_row(store: Store, table: str, rid: str, message: str | None = None) -> dict[str, Any]:
    """A copy of the row ``rid`` of ``table``, or a ``not_found`` :class:`ToolError` (``message``,
    default ``"no <table> row <rid>"``): the one way a tool asks for a row that must exist and
    that it will change or keep. :func:`live_row` reads one in place."""
    row = store.get(table, rid)
    if row is None:
        raise ToolError("not_found", message if message is not None else f"no {table} row {rid}")
    return row


def live_row(store: Store, table: str, rid: str, message: str | None = None) -> Row:
    """:func:`require_row` without the copy: the live row, read in place (``Store.peek``: never
    mutate it; a tool may return it, the toolkit serialises every result)."""
    row = store.peek(table, rid)
    if row is None:
        raise ToolError("not_found", message if message is not None else f"no {table} row {rid}")
    return row


def error(code: str, message: str, **details: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error", "code": code, "message": message}
    if details:
        out["details"] = details
    return out


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "args"
        parts.append(f"{loc[:60]}: {err['msg']}")
    return "; ".join(parts)
