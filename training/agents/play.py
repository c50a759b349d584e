"""Play a task yourself: a terminal session in which a person is the agent (``backoffice play``).

The session shows the brief and the task's tools with their arguments, then reads one call per
line and answers with the observation the agent would get::

    get_request {"request_id": "REQ-1"}        JSON arguments
    get_request request_id=REQ-1 limit=5       key=value (a value that parses as JSON is JSON)
    submit                                     no arguments
    /help  /tools  /tool NAME  /brief  /quit   the session's own commands (never a step)

Every call is one ``env.step`` with the same validation, errors and trace as any agent's: a call
that names an unknown or disallowed tool, has invalid arguments or breaks a precondition comes
back as the structured error the agent would get, and counts as a step. A line the prompt cannot
read (arguments that are neither a JSON object nor ``key=value``) is not sent and is no step. At the end the session prints the
grade, the diff and the trace file, which replays with ``backoffice replay``.

Heldout tasks follow the rules of any agent-facing server: each is graded at most ``attempts``
times in a session (default 1, declared with ``--attempts k``), and a heldout grade shows only
``pass``, ``score`` and ``failure_codes`` (not the checks' details, which carry expected values).
"""

from __future__ import annotations

import shlex
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import is_generated_id
from backoffice.training.agents.session import Attempts

HELP = """\
Type one tool call per line:
  TOOL {"arg": "value", ...}     arguments as a JSON object
  TOOL arg=value arg2=[1,2]      key=value pairs (values that parse as JSON are JSON, else text;
                                 quote values with spaces: note="two words")
  TOOL                           no arguments
Session commands (not steps): /help, /tools, /tool NAME (its full schema), /brief, /quit
Every call counts as a step, errors included, exactly as for an agent. Finish with the domain's
finishing tool (submit) or a terminal tool."""


class ArgsError(ValueError):
    """A line the prompt cannot read as a call (shown to the person; not a step)."""


def default_trace_path(domain: str) -> Path:
    """``runs/play/<domain>-<UTC time>.jsonl``."""
    return Path("runs") / "play" / f"{domain}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"


def parse_call(line: str) -> tuple[str, Any]:
    """``(tool, args)`` of a prompt line; :class:`ArgsError` when the line cannot be read (JSON
    that does not parse, a token that is not ``key=value``): a typo at the prompt is not sent."""
    line = line.strip()
    name, _, rest = line.partition(" ")
    rest = rest.strip()
    if not name:
        raise ArgsError("empty line")
    if not rest:
        return name, {}
    if rest[0] in "{[\"":
        try:
            parsed = loads(rest)
        except Exception as exc:
            raise ArgsError(f"the arguments are not valid JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise ArgsError(f"the arguments must be a JSON object, got {type(parsed).__name__}")
        return name, parsed
    try:
        tokens = shlex.split(rest)
    except ValueError as exc:
        raise ArgsError(f"cannot split the arguments: {exc}") from None
    args: dict[str, Any] = {}
    for tok in tokens:
        key, eq, value = tok.partition("=")
        if not eq or not key:
            raise ArgsError(f"expected key=value or a JSON object, got {tok!r} (see /help)")
        try:
            args[key] = loads(value)
        except Exception:
            args[key] = value
    return name, args


def _type(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(map(str, schema["enum"]))
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    return str(kind)


def tool_line(spec: Mapping[str, Any]) -> str:
    """``name(arg: type, opt?: type = default)`` and the first sentence of the description."""
    params = spec.get("parameters", {})
    required = set(params.get("required", ()))
    args = []
    for name, schema in params.get("properties", {}).items():
        if name in required:
            args.append(f"{name}: {_type(schema)}")
        else:
            default = f" = {dumps(schema['default']).decode()}" if "default" in schema else ""
            args.append(f"{name}?: {_type(schema)}{default}")
    desc = spec.get("description", "").split(". ")[0].rstrip(".")
    return f"{spec['name']}({', '.join(args)})\n      {desc}"


class Play:
    """One play session over a native env of ``domain`` (see the module docstring)."""

    def __init__(self, domain: str, split: str = "train", attempts: int = 1, trace_path: str | Path | None = None,
                 max_steps: int | None = None, read: Callable[[str], str] = input, out: IO[str] | None = None,
                 width: int = 100):
        from backoffice.envs import make_native

        if split not in ("train", "heldout"):
            raise ValueError("split must be train or heldout")
        self.domain, self.split, self.attempts = domain, split, attempts
        #: the attempts ledger every agent-facing session keeps (heldout only: train is practice)
        self.ledger = Attempts(attempts if split == "heldout" else None)
        self.trace_path = Path(trace_path) if trace_path is not None else None
        self.env = make_native(domain, split=split, max_steps=max_steps, trace_path=None if trace_path is None else str(trace_path))
        self.read, self.out, self.width = read, out or sys.stdout, width
        self.grades: list[dict[str, Any]] = []

    # -- output -----------------------------------------------------------------------------
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _json(self, value: Any) -> str:
        import json

        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)

    # -- the session ------------------------------------------------------------------------
    def run(self, task_id: str | None = None, seed: int | None = None) -> int:
        """Play episodes until the person quits (``/quit``, an empty answer at the end, or end of
        input); return the exit code (0)."""
        try:
            while True:
                if not self.episode(task_id, seed):
                    break
                try:
                    answer = self.read("\nanother task? (a task id, seed=N, or Enter to quit) ").strip()
                except EOFError:
                    break
                if not answer or answer in ("q", "/quit", "quit"):
                    break
                task_id, seed = (None, int(answer[5:])) if answer.startswith("seed=") and answer[5:].isdigit() else (answer, None)
        finally:
            self.env.close()
        return 0

    def _start(self, task_id: str | None, seed: int | None) -> tuple[str, dict[str, Any]] | None:
        unwrapped = self.env
        if task_id is not None:
            if is_generated_id(task_id) or task_id not in unwrapped.release.tasks:
                self.say(f"no task {task_id!r} in the {self.domain} release")
                return None
            if unwrapped.release.task(task_id).split != self.split:
                self.say(f"{task_id} is not in the {self.split} split (this session plays {self.split}; see --split)")
                return None
        kwargs = unwrapped.reset_args(task_id, seed) if task_id is not None else {"seed": seed or 0, "options": None}
        if task_id is None:  # the task the seed draws, before starting it (so a refused one leaves no trace)
            task_id = unwrapped._pick_task(int(seed or 0), {})[0].task_id
        if self.ledger.left(task_id) == 0:
            self.say(f"{task_id} (heldout) was played {self.attempts} time(s) in this session, as many as declared "
                     f"(--attempts {self.attempts}): it is not graded again")
            return None
        return self.env.reset(**kwargs)

    def episode(self, task_id: str | None = None, seed: int | None = None) -> bool:
        """Play one episode; ``False`` when the person quit."""
        started = self._start(task_id, seed)
        if started is None:
            return True
        obs, info = started
        brief = loads(obs)
        self.say(f"\n=== {self.domain} {info['task_id']} ({self.split}; seed {info['seed']}; at most {info['max_steps']} steps) ===")
        if self.trace_path is not None:
            self.say(f"trace: {self.trace_path}")
        self.show_brief(brief)
        self.show_tools(info["tools"])
        self.say("\n" + HELP.splitlines()[0] + " (/help for more)")
        specs = {t["name"]: t for t in info["tools"]}
        step = 0
        while True:
            try:
                line = self.read(f"\n[step {step + 1}/{info['max_steps']}] > ")
            except EOFError:
                self.say("\nend of input: episode left unfinished (its trace has no end and will not replay)")
                return False
            line = line.strip()
            if not line:
                continue
            if line.startswith("/") or line == "?":
                cmd, _, arg = line.partition(" ")
                if cmd in ("/quit", "/q", "/exit"):
                    self.say("quit: episode left unfinished (its trace has no end and will not replay)")
                    return False
                if cmd in ("/help", "?"):
                    self.say(HELP)
                elif cmd == "/tools":
                    self.show_tools(info["tools"])
                elif cmd == "/tool":
                    spec = specs.get(arg.strip())
                    self.say(self._json(spec) if spec else f"no tool {arg.strip()!r} in this task; /tools lists them")
                elif cmd == "/brief":
                    self.show_brief(brief)
                else:
                    self.say(f"unknown command {cmd}; /help lists them")
                continue
            try:
                tool, args = parse_call(line)
            except ArgsError as exc:
                self.say(f"(not sent) {exc}")
                continue
            if step == 0:
                self.ledger.spend(info["task_id"])  # an attempt is an episode that took a step
            obs, _, terminated, truncated, step_info = self.env.step({"tool": tool, "args": args})
            step += 1
            self.show_result(obs, step_info)
            if terminated or truncated:
                self.finish(step_info, truncated and not terminated)
                return True

    # -- views ------------------------------------------------------------------------------
    def show_brief(self, brief: Mapping[str, Any]) -> None:
        self.say("\nBrief")
        for key in sorted(brief):
            if key in ("allowed_tools",):
                continue
            value = brief[key]
            text = value if isinstance(value, str) else dumps(value).decode()
            self.say(textwrap.fill(text, self.width, initial_indent=f"  {key}: ", subsequent_indent="    "))

    def show_tools(self, tools: list[dict[str, Any]]) -> None:
        self.say("\nTools (name(argument: type, optional?: type = default))")
        for spec in tools:
            self.say("  " + tool_line(spec))

    def show_result(self, obs: str, info: Mapping[str, Any]) -> None:
        result = loads(obs)
        if result.get("status") == "ok":
            self.say("ok")
            self.say(self._json(result.get("result")))
        else:
            self.say(f"error {result.get('code')}: {result.get('message', '')}")
            self.say(f"  (what the agent gets: {obs})")

    def finish(self, info: Mapping[str, Any], truncated: bool) -> None:
        grade = info["grade"]
        task_id = info["task_id"]
        self.grades.append(grade)
        self.say(f"\n=== episode over ({'step limit reached' if truncated else 'finished'}) ===")
        self.say(f"pass: {str(bool(grade['pass'])).lower()}")
        self.say(f"score: {float(grade['score']):.3f}")
        self.say(f"failure_codes: {', '.join(grade['failure_codes']) or '-'}")
        if self.split == "heldout":
            used = self.attempts - (self.ledger.left(task_id) or 0)
            self.say(f"(heldout: graded attempt {used} of {self.attempts}; the checks' details are not shown)")
        else:
            self.say("\nChecks")
            for c in grade["checks"]:
                detail = "" if c.get("detail") is None else "  " + dumps(c["detail"]).decode()
                self.say(f"  {'pass' if c['pass'] else 'FAIL'}  {c['id']} ({'gate' if c.get('gate') else 'work'})"
                         f"{'  ' + c['failure_code'] if c.get('failure_code') else ''}{detail}")
            self.say(f"shaped reward (training only, not the score): {float(info.get('shaped_reward', 0.0)):.3f}")
            if info.get("judge") is not None:
                self.say(f"judge: {dumps(info['judge']).decode()}")
        self.show_diff(info.get("diff") or {})
        if self.trace_path is not None:
            self.say(f"\ntrace: {self.trace_path}  (replay: backoffice replay {self.trace_path})")

    def show_diff(self, diff: Mapping[str, Any]) -> None:
        self.say("\nDiff (the end state against the start)")
        shown = False
        for table in sorted(diff):
            t = diff[table]
            created, updated, deleted = t.get("created", []), t.get("updated", {}), t.get("deleted", [])
            if not (created or updated or deleted):
                continue
            shown = True
            self.say(f"  {table}:")
            for rid in created:
                self.say(f"    + {rid} {dumps(t.get('created_rows', {}).get(rid)).decode()}")
            for rid in sorted(updated):
                for field in sorted(updated[rid]):
                    c = updated[rid][field]
                    self.say(f"    ~ {rid}.{field}: {dumps(c.get('before')).decode()} -> {dumps(c.get('after')).decode()}")
            for rid in deleted:
                self.say(f"    - {rid}")
        if not shown:
            self.say("  no change")
