"""Language-model agents: a system prompt from the public task, and a chat loop over tool calls.

A *chat function* is anything with the signature ``chat(messages, tools) -> reply``:

- ``messages`` is the conversation so far in the OpenAI chat-completions shape (``system``,
  ``user``, ``assistant`` with ``tool_calls``, ``tool`` with ``tool_call_id``);
- ``tools`` is the episode's allowed tools in the OpenAI shape
  (``env.unwrapped.tool_specs(format="openai")``);
- the reply is a :class:`ChatReply`, a plain ``str`` (text only), or an assistant message dict
  in the chat-completions shape (``{"content": ..., "tool_calls": [{"id", "function":
  {"name", "arguments"}}]}``).

:func:`chat_episode` plays one episode::

    from backoffice.training.agents.chat import chat_episode
    result = chat_episode(env, chat, task_id="APR-H0000")
    result.grade["pass"], result.transcript

How the loop maps a conversation onto environment steps (every step is traced):

- Each tool call of a reply is one ``env.step`` and is applied in the order the reply lists
  them; its observation (the tool result, or the structured error) goes back as a ``tool``
  message. Arguments that are not a JSON object are sent as they are, so the env answers
  ``invalid_action`` (traced, state untouched).
- A reply without any tool call counts as one step too: it is sent to the env as the invalid
  action ``{"text": <reply text>}``, which the env records as ``invalid_action`` (the trace line
  has ``tool: null``; the text itself is in the transcript). The error observation goes back to
  the model as a ``user`` message. An agent that only talks therefore reaches ``max_steps`` and
  is graded on the untouched state, like any other agent that never submits.
- When a call ends the episode (``submit``, a terminal tool, or truncation) the remaining calls
  of that reply are not applied; the transcript marks them ``skipped``.

The transcript (one JSON line per message, canonical JSON) is written beside the env's trace
(``<trace>.transcript.jsonl``) or to ``transcript_path``; its ``step`` fields join it to the
trace lines. With a deterministic chat function the transcript is byte-identical across runs.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.training.policies.base import Action, Policy

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant reply; ``arguments`` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class ChatReply:
    """An assistant reply: optional text and any number of tool calls (applied in order), plus
    what the endpoint said about it (``finish_reason``, token ``usage``), when it said it."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None


class EndpointError(RuntimeError):
    """The chat function failed (endpoint down, HTTP 4xx/5xx after retries, timeout): an
    infrastructure failure, not agent behaviour. ``step`` is the number of env steps the
    episode had made; ``cause`` the original exception."""

    def __init__(self, cause: BaseException, step: int):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.step = step

    def describe(self) -> dict[str, Any]:
        """The ``error`` object of an evaluation record."""
        status = getattr(self.cause, "status_code", None)
        return {"type": type(self.cause).__name__, "message": str(self.cause)[:500], "status_code": status, "step": self.step}


ChatFn = Callable[[list[Message], list[dict[str, Any]]], ChatReply | str | Mapping[str, Any]]

#: What the loop tells a model that answered without calling a tool.
NO_TOOL_CALL_NOTE = "You did not call a tool; that counted as a step. Continue with a tool call, and call submit when the work is done."


# -- system prompt ---------------------------------------------------------------------------
GENERAL_RULES = (
    "Work only through the tools listed above; each call's result comes back as JSON.",
    "A call that fails returns {\"status\": \"error\", \"code\": ..., \"message\": ...} and changes nothing; read the code and adjust.",
    "Every tool call and every reply without a tool call counts as one step; the episode is cut off at {max_steps} steps.",
    "Change only the records this task is about: any write to another record fails the task, whatever else is right.",
    "Base decisions on what the tools return (records, rules, the simulated clock), never on guesses.",
    "When the work is done, call `{finish}`; the state you leave behind is what gets graded.",
)


def domain_description(domain: str) -> str | None:
    """The ``Description`` section of a domain env's docstring (public documentation), if any."""
    try:
        from backoffice.envs import env_class

        doc = env_class(domain).__doc__ or ""
    except (KeyError, ImportError, AttributeError):
        return None
    return _description_section(doc)


_HEADER = re.compile(r"^\s*(#+\s*)?[A-Z][A-Za-z ]{2,40}:?\s*$")


def _description_section(doc: str) -> str | None:
    lines = [ln.rstrip() for ln in doc.splitlines()]
    for i, line in enumerate(lines):
        if line.strip().lstrip("#").strip().rstrip(":").lower() == "description":
            body: list[str] = []
            for ln in lines[i + 1:]:
                if set(ln.strip()) <= {"-", "="} and ln.strip() and not body:
                    continue  # an underline below the header
                if _HEADER.match(ln) and body:
                    break
                body.append(ln.strip())
            text = " ".join(" ".join(body).split())
            return text[:1500] or None
    return None


def build_system_prompt(brief: Mapping[str, Any], tools: Sequence[Mapping[str, Any]], max_steps: int | None = None,
                        description: str | None = None, finish_tool: str = "submit") -> str:
    """A system prompt from public material only: the task brief, the allowed tools' specs
    (function shape) and the general rules of the environment. Nothing comes from the answer key.
    """
    lines = [
        f"You are a back-office agent working in the {brief.get('domain', 'backoffice')} environment (task {brief.get('task_id')}).",
    ]
    if description:
        lines += ["", "About this work: " + description]
    lines += ["", "Task:", str(brief.get("instructions", "")).strip()]
    params = brief.get("params") or {}
    if params:
        lines += ["", "Task parameters (JSON): " + dumps(dict(params)).decode()]
    lines += ["", "Allowed tools:"]
    for spec in tools:
        fn = spec.get("function", spec)
        desc = " ".join(str(fn.get("description", "")).split())
        lines.append(f"- {fn['name']}: {desc}")
    lines += ["", "Rules:"]
    limit = str(max_steps) if max_steps else "the episode's"
    lines += [f"- {r.replace('{max_steps}', limit).replace('{finish}', finish_tool)}" for r in GENERAL_RULES]
    return "\n".join(lines)


def system_prompt(env: Any) -> str:
    """The system prompt of ``env``'s current episode (call after ``reset``).

    Instructions, parameters and allowed tools come from the public task
    (:meth:`Task.brief`) and the tools' pydantic schemas; the rules summary is the
    environment's general contract. No answer-key content is read.
    """
    unwrapped = env.unwrapped
    task = unwrapped.task
    if task is None:
        raise RuntimeError("call env.reset() before system_prompt(env)")
    limit = getattr(unwrapped, "step_limit", None)
    return build_system_prompt(task.brief(), unwrapped.tool_specs(format="function"), limit,
                               _description_section(type(unwrapped).__doc__ or ""))


# -- replies ---------------------------------------------------------------------------------
def normalize_reply(reply: ChatReply | str | Mapping[str, Any] | None, turn: int) -> ChatReply:
    """Turn whatever a chat function returned into a :class:`ChatReply`.

    Tool calls without an id get ``call_<turn>_<index>``; ``arguments`` given as a dict are
    serialised canonically. Anything unrecognisable becomes a text reply (its ``str``).
    """
    if isinstance(reply, ChatReply):
        calls = tuple(c if c.id else ToolCall(f"call_{turn}_{i}", c.name, c.arguments) for i, c in enumerate(reply.tool_calls))
        return ChatReply(reply.text, calls, reply.finish_reason, reply.usage)
    if reply is None:
        return ChatReply(None, ())
    if isinstance(reply, str):
        return ChatReply(reply, ())
    if isinstance(reply, Mapping):
        tool_calls: list[ToolCall] = []
        for i, raw in enumerate(reply.get("tool_calls") or ()):
            fn = raw.get("function", raw) if isinstance(raw, Mapping) else {}
            args = fn.get("arguments", "{}") if isinstance(fn, Mapping) else "{}"
            if not isinstance(args, str):
                try:
                    args = dumps(args).decode()
                except TypeError:
                    args = str(args)
            name = fn.get("name") if isinstance(fn, Mapping) else None
            cid = raw.get("id") if isinstance(raw, Mapping) else None
            tool_calls.append(ToolCall(str(cid or f"call_{turn}_{i}"), str(name or ""), args))
        content = reply.get("content")
        return ChatReply(content if isinstance(content, str) else None, tuple(tool_calls),
                         reply.get("finish_reason"), reply.get("usage"))
    return ChatReply(str(reply), ())


def call_to_action(call: ToolCall) -> Any:
    """The env action of one tool call. Empty arguments mean ``{}``; arguments that are not a
    JSON object are passed through so the env answers ``invalid_action``."""
    raw = call.arguments.strip() if isinstance(call.arguments, str) else call.arguments
    if raw in ("", None):
        return {"tool": call.name, "args": {}}
    try:
        args = loads(raw)
    except Exception:
        args = raw
    return {"tool": call.name, "args": args}


def assistant_message(reply: ChatReply) -> Message:
    """The assistant message (chat-completions shape) that records ``reply``. A reply with
    neither text nor tool calls (an empty ``choices`` list, an empty message) is recorded with
    ``content: ""``: strict endpoints reject an assistant message whose content is null."""
    msg: Message = {"role": "assistant", "content": reply.text if reply.text is not None or reply.tool_calls else ""}
    if reply.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls
        ]
    return msg


# -- the agent -------------------------------------------------------------------------------
class ChatAgent(Policy):
    """A :class:`~backoffice.training.policies.base.Policy` driven by a chat function.

    It keeps the conversation, asks ``chat`` for a reply whenever it has no pending tool call,
    and turns replies into actions as described in the module docstring. Use it directly with
    :func:`backoffice.training.eval.rollout.run_episode` / ``evaluate`` (``--policy openai:<model>``)
    or through :func:`chat_episode` here, which also writes the transcript.
    """

    name = "chat"

    def __init__(self, chat: ChatFn, name: str | None = None, version: str = "1"):
        self.chat = chat
        if name is not None:
            self.name = name
        self.version = version
        self.messages: list[Message] = []
        self.transcript: list[dict[str, Any]] = []
        self.requests = 0
        self.usage: dict[str, int] = {}
        self.finish_reasons: dict[str, int] = {}

    def stats(self) -> dict[str, Any]:
        """Requests, summed token usage and finish reasons of the current episode."""
        return {"requests": self.requests, "usage": dict(sorted(self.usage.items())),
                "finish_reasons": dict(sorted(self.finish_reasons.items()))}

    # Policy API ----------------------------------------------------------------------------
    def reset(self, obs: str, info: dict[str, Any], system: str | None = None) -> None:
        """Start a conversation from the reset observation (the brief) and ``info``.

        ``system`` overrides the system prompt (by default built from the brief and
        ``info["tools"]``, which hold the same public material as :func:`system_prompt`).
        """
        brief = loads(obs)
        self.tools = [{"type": "function", "function": dict(spec)} for spec in info["tools"]]
        if system is None:
            system = build_system_prompt(brief, info["tools"], info.get("max_steps"), domain_description(str(brief.get("domain"))))
        self.messages = []
        self.transcript = []
        self.requests, self.usage, self.finish_reasons = 0, {}, {}
        self._turn = 0
        self._step = 0
        self._pending: deque[tuple[ToolCall, Any]] = deque()
        self._awaiting: tuple[str, Any] | None = None  # ("tool", call) or ("text", None)
        self._record({"role": "system", "content": system})
        self._record({"role": "user", "content": obs})

    def act(self, obs: str) -> Action:
        """Deliver ``obs`` (the result of the previous action) and return the next action."""
        self._deliver(obs)
        if not self._pending:
            self._ask()
        if self._pending:
            call, action = self._pending.popleft()
            self._awaiting = ("tool", call)
            return action
        self._awaiting = ("text", None)
        return {"text": self._last_text}

    def finish(self, obs: str) -> None:
        """Deliver the final observation; calls of the last reply never applied are marked skipped."""
        self._deliver(obs)
        while self._pending:
            call, _ = self._pending.popleft()
            self._record({"role": "tool", "tool_call_id": call.id, "content": None, "skipped": True})

    # internals -----------------------------------------------------------------------------
    def _record(self, message: Message, **extra: Any) -> None:
        self.messages.append(message)
        self.transcript.append({"turn": self._turn, **message, **extra})

    def _deliver(self, obs: str) -> None:
        if self._awaiting is None:
            return
        kind, call = self._awaiting
        self._awaiting = None
        self._step += 1
        if kind == "tool":
            self._record({"role": "tool", "tool_call_id": call.id, "content": obs}, step=self._step)
        else:
            self._record({"role": "user", "content": f"{NO_TOOL_CALL_NOTE}\n{obs}"}, step=self._step)

    def _ask(self) -> None:
        self._turn += 1
        self.requests += 1
        try:
            raw = self.chat([dict(m) for m in self.messages], self.tools)
        except Exception as exc:  # the endpoint, not the agent: the caller decides (an error record)
            raise EndpointError(exc, self._step) from exc
        reply = normalize_reply(raw, self._turn)
        for key, value in (reply.usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value
        reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        self.finish_reasons[reason] = self.finish_reasons.get(reason, 0) + 1
        extra = {k: v for k, v in (("finish_reason", reply.finish_reason), ("usage", reply.usage)) if v is not None}
        self._record(assistant_message(reply), **extra)
        self._last_text = reply.text or ""
        self._pending.extend((c, call_to_action(c)) for c in reply.tool_calls)


# -- the episode loop ------------------------------------------------------------------------
@dataclass
class ChatEpisodeResult:
    """Outcome of :func:`chat_episode`: the terminal ``info`` (grade, diff …) and the transcript."""

    task_id: str
    seed: int
    episode_id: str
    steps: int
    info: dict[str, Any]
    transcript: list[dict[str, Any]] = field(default_factory=list)
    transcript_path: Path | None = None

    @property
    def grade(self) -> dict[str, Any]:
        return self.info["grade"]


def transcript_path_for(trace_path: str | Path) -> Path:
    """Where the transcript of a trace goes: ``runs/x.jsonl`` -> ``runs/x.transcript.jsonl``."""
    p = Path(trace_path)
    stem = p.name[: -len(".jsonl")] if p.name.endswith(".jsonl") else p.name
    return p.with_name(f"{stem}.transcript.jsonl")


def chat_episode(env: Any, chat: ChatFn | ChatAgent, task_id: str | None = None, seed: int | None = None,
                 transcript_path: str | Path | None = None) -> ChatEpisodeResult:
    """Play one episode of ``env`` with a chat function; see the module docstring for the rules.

    ``env`` is a native env (wrapped or not). With ``task_id`` and no ``seed`` the task's own
    seed is used, as in :func:`backoffice.training.eval.rollout.run_episode`. The transcript is
    appended to ``transcript_path`` or, when the env writes a trace, beside it; otherwise it is
    only returned. Exceptions raised by ``chat`` itself (e.g. the endpoint is down) propagate
    after the transcript so far is written; the episode is then left unfinished.
    """
    unwrapped = env.unwrapped
    kwargs = unwrapped.reset_args(task_id, seed) if task_id is not None else {"seed": seed, "options": None}
    obs, info = env.reset(**kwargs)
    agent = chat if isinstance(chat, ChatAgent) else ChatAgent(chat)
    agent.reset(obs, info, system=system_prompt(env))
    if transcript_path is None and getattr(unwrapped, "trace_path", None) is not None:
        transcript_path = transcript_path_for(unwrapped.trace_path)
    steps, step_info = 0, {}
    try:
        while True:
            obs, _, terminated, truncated, step_info = env.step(agent.act(obs))
            steps += 1
            if terminated or truncated:
                agent.finish(obs)
                break
    finally:
        lines = [{"episode_id": info["episode_id"], "task_id": info["task_id"], "seed": info["seed"], "index": i, **m}
                 for i, m in enumerate(agent.transcript)]
        if transcript_path is not None:
            path = Path(transcript_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as fh:
                fh.write(b"".join(dumps(line) + b"\n" for line in lines))
    return ChatEpisodeResult(info["task_id"], info["seed"], info["episode_id"], steps, step_info, lines,
                             Path(transcript_path) if transcript_path is not None else None)


# -- scripted chat functions (tests, examples, the fake endpoint) ------------------------------
def policy_chat(make_policy: Callable[[str], Policy]) -> ChatFn:
    """A chat function that plays a scripted policy, one tool call per reply.

    ``make_policy(domain)`` builds the policy (e.g. the domain's oracle). The policy is rebuilt
    from the conversation whenever needed (the brief is the first ``user`` message, each ``tool``
    message an observation), so replies depend on the messages alone; a policy already advanced
    through the same observations is reused, which keeps an episode linear in time.
    """
    cache: dict[tuple[str, tuple[str, ...]], Policy] = {}

    def chat(messages: list[Message], tools: list[dict[str, Any]]) -> ChatReply:
        brief_obs = next(m["content"] for m in messages if m["role"] == "user")
        results = tuple(m["content"] for m in messages if m["role"] == "tool")
        policy = cache.pop((brief_obs, results[:-1]), None) if results else None
        if policy is not None:
            action = policy.act(results[-1])
        else:
            brief = loads(brief_obs)
            info = {"task_id": brief.get("task_id"), "allowed_tools": brief.get("allowed_tools", []), "seed": 0,
                    "tools": [t.get("function", t) for t in tools]}
            policy = make_policy(str(brief.get("domain")))
            policy.reset(brief_obs, info)
            action = policy.act(brief_obs)
            for obs in results:
                action = policy.act(obs)
        cache[(brief_obs, results)] = policy
        while len(cache) > 64:
            cache.pop(next(iter(cache)))
        if isinstance(action, str):
            action = loads(action)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return ChatReply(None, (ToolCall(f"call_{turn}_0", action["tool"], dumps(action.get("args", {})).decode()),))

    return chat


def oracle_chat(make_policy: Callable[[str], Policy] | None = None) -> ChatFn:
    """:func:`policy_chat` over each domain's oracle (``get_policy(domain, "oracle")``)."""
    if make_policy is None:
        from backoffice.training.policies import get_policy

        def make_policy(domain: str) -> Policy:
            return get_policy(domain, "oracle")

    return policy_chat(make_policy)


def text_only_chat(messages: list[Message], tools: list[dict[str, Any]]) -> ChatReply:
    """A chat function that never calls a tool (it describes what it would do)."""
    turn = sum(1 for m in messages if m["role"] == "assistant")
    return ChatReply(f"I would start by listing the records (turn {turn}).", ())
