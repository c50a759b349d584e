"""One episode driven by tool calls: the object every agent adapter uses (MCP, chat, TRL,
verifiers).

::

    from backoffice.training.agents.session import Session

    s = Session("approvals", task_id="APR-H0000")       # or Session(env, ...) over any native env
    s.tools                                              # the episode's tool specs (function shape)
    s.call("list_pending", {})                           # -> StepResult: observation text, is_error ...
    s.call("submit", {})
    s.done, s.reward, s.grade()["pass"], s.transcript

- ``call(name, args)`` is one ``env.step``. ``args`` may be a dict or the JSON text a model wrote;
  text that is not a JSON object reaches the env as it is, which answers ``invalid_action``
  (traced, state untouched). After the end, a call is refused (``episode_over``) and is no step.
- ``grade()`` is the final grade and raises :class:`EpisodeNotOver` before the end: nothing of
  the grade (checks, expected values) reaches an agent while it can still act.
- ``reward`` is 0.0 until the end, then the pure score (``shaped_reward`` the training reward).
- ``acall`` is the same call for asyncio code; it runs the step in a worker thread, one step of
  a session at a time.
- Sessions of one domain in one process share the loaded release (snapshots are immutable;
  every episode writes to its own copy-on-write overlay), so a session costs little.
- The split is the env's: ``reset`` to a task of another split raises ``ValueError`` (the env
  refuses it), so a session on ``train`` cannot rehearse ``heldout`` tasks.
- ``attempts`` (default 1 on ``heldout``, unlimited on the training splits): how many episodes
  of one task may be played on this session. An attempt is an episode that took a step. A
  ``reset`` naming a task whose attempts are spent raises :class:`AttemptsExhausted`; on such a
  task drawn by seed, every call answers ``attempts_exhausted`` (and is no step).
  Sessions built for one server share one :class:`Attempts` ledger (``attempts=`` accepts
  it), so opening a new connection gives no new attempt. pass^k: ``attempts=k``.
- :meth:`public_grade` is what an agent may be shown once its episode ended (``pass``,
  ``score``, ``failure_codes``); :meth:`grade` is the operator's full grade.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import is_generated_id


class EpisodeNotOver(RuntimeError):
    """``grade()`` before the episode ended."""


class AttemptsExhausted(ValueError):
    """A task whose declared attempts have all been played on this server."""


#: the fields of a final grade an agent may read (the rest, check details and expected values
#: included, goes to the operator's records: the trace's last line, ``Session.grade()``)
PUBLIC_GRADE_FIELDS = ("pass", "score", "failure_codes")


class Attempts:
    """The attempts ledger of one server: how many episodes of each task have been played (an
    episode counts once it took a step). ``limit`` ``None``: unlimited."""

    def __init__(self, limit: int | None = 1):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"attempts must be None or an int >= 1, got {limit!r}")
        self.limit = limit
        self.used: dict[str, int] = {}
        self._lock = threading.Lock()

    def left(self, task_id: str) -> int | None:
        """Attempts left for ``task_id`` (``None``: unlimited)."""
        return None if self.limit is None else max(0, self.limit - self.used.get(task_id, 0))

    def check(self, task_id: str) -> None:
        """Raise :class:`AttemptsExhausted` when ``task_id`` has no attempt left."""
        if self.left(task_id) == 0:
            raise AttemptsExhausted(f"{task_id} has been played {self.limit} time(s), all the attempts this "
                                    f"server allows (attempts={self.limit}); reset to another task")

    def spend(self, task_id: str) -> None:
        """Count one attempt of ``task_id`` (raises :class:`AttemptsExhausted` if none is left)."""
        with self._lock:
            self.check(task_id)
            self.used[task_id] = self.used.get(task_id, 0) + 1


def default_attempts(split: str) -> int | None:
    """The attempts an agent-facing session allows by default: one graded episode per heldout
    task, unlimited on the training splits."""
    return 1 if split == "heldout" else None


@dataclass(frozen=True)
class StepResult:
    """What one call returned: the observation text (canonical JSON, as the env returned it),
    whether it is a structured error, and where the episode stands."""

    observation: str
    is_error: bool
    terminated: bool
    truncated: bool
    steps: int

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def __str__(self) -> str:
        return self.observation


EPISODE_OVER = dumps({"status": "error", "code": "episode_over",
                      "message": "the episode is over; call reset to start another"}).decode()


class Session:
    """One native env and its current episode (see the module docstring)."""

    def __init__(self, env: Any, task_id: str | None = None, seed: int | None = None, *, split: str = "heldout",
                 attempts: int | Attempts | None | str = "default", max_steps: int | None = None,
                 trace_path: str | None = None):
        if isinstance(env, str):
            from backoffice.envs import make_native

            env = make_native(env, split=split, max_steps=max_steps, trace_path=trace_path)
        self.env = env
        if attempts == "default":
            attempts = default_attempts(env.unwrapped.split)
        #: the attempts ledger (shared with the other sessions of a server when given one)
        self.attempts = attempts if isinstance(attempts, Attempts) else Attempts(attempts)  # type: ignore[arg-type]
        self._lock = threading.Lock()
        self.reset(task_id=task_id, seed=seed)

    # -- episode ---------------------------------------------------------------------------
    def reset(self, task_id: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """Start an episode (a task by id, else drawn from the split by ``seed``, default 0);
        return its public start: brief, system prompt, ids, allowed tools, step limit."""
        from backoffice.training.agents.chat import system_prompt

        unwrapped = self.env.unwrapped
        options = None
        if task_id is not None:
            unwrapped.check_servable(task_id)  # the env's split (ValueError naming both splits)
            self.attempts.check(task_id)
            options = {"task_id": task_id}
            if seed is None and not is_generated_id(task_id):
                seed = unwrapped.release.task(task_id).seed
        with self._lock:
            obs, info = self.env.reset(seed=0 if seed is None else seed, options=options)
            self.info = info
            self.observation = obs
            self.final: dict[str, Any] | None = None
            self.steps = 0
            self.transcript: list[dict[str, Any]] = []
            self.system_prompt = system_prompt(self.env)
        return self.start

    @property
    def start(self) -> dict[str, Any]:
        """The public start of the episode (what an MCP ``reset`` returns), with ``attempts_left``
        (``None``: unlimited; 0: every call of this episode is refused). Task seeds are 63-bit
        integers (above 2^53, where JavaScript numbers and float-based JSON readers round), so
        ``seed_str`` carries the same seed as decimal text; pass either back to ``reset``."""
        info = self.info
        return {"brief": loads(self.observation), "system_prompt": self.system_prompt, "task_id": info["task_id"],
                "episode_id": info["episode_id"], "seed": info["seed"], "seed_str": str(info["seed"]),
                "allowed_tools": info["allowed_tools"], "max_steps": info["max_steps"],
                "attempts_left": self.attempts.left(info["task_id"])}

    @property
    def brief(self) -> dict[str, Any]:
        return loads(self.observation) if not self.steps else self.start["brief"]

    @property
    def task_id(self) -> str:
        return self.info["task_id"]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The episode's allowed tools, ``{"name", "description", "parameters"}`` (from the
        pydantic models; :meth:`tool_specs` gives the other shapes)."""
        return self.info["tools"]

    def tool_specs(self, format: str = "function") -> list[dict[str, Any]]:
        """The allowed tools in the ``function``, ``openai``, ``mcp`` or ``anthropic`` shape."""
        return self.env.unwrapped.tool_specs(format=format)

    @property
    def done(self) -> bool:
        return self.final is not None

    # -- calls -----------------------------------------------------------------------------
    def call(self, name: str, args: Any = None) -> StepResult:
        """One tool call (one env step); see the module docstring."""
        if isinstance(args, (str, bytes)):
            text = args.strip() if isinstance(args, str) else args
            try:
                args = loads(text) if text else {}
            except Exception:
                args = text  # not JSON: the env answers invalid_action
        with self._lock:
            if self.final is not None:
                return StepResult(EPISODE_OVER, True, self.final["terminated"], self.final["truncated"], self.steps)
            if not self.steps:
                try:
                    self.attempts.spend(self.task_id)
                except AttemptsExhausted as exc:
                    refused = dumps({"status": "error", "code": "attempts_exhausted", "message": str(exc)}).decode()
                    return StepResult(refused, True, False, False, self.steps)
            obs, _, terminated, truncated, info = self.env.step({"tool": name, "args": {} if args is None else args})
            self.steps += 1
            self.observation = obs
            is_error = info["result_status"] != "ok"
            self.transcript.append({"step": self.steps, "tool": name, "args": args, "observation": obs, "is_error": is_error})
            if terminated or truncated:
                self.final = {k: info[k] for k in ("grade", "score", "is_success", "end_state_hash", "shaped_reward", "judge") if k in info}
                self.final.update(terminated=terminated, truncated=truncated)
                self.info_final = info
            return StepResult(obs, is_error, terminated, truncated, self.steps)

    async def acall(self, name: str, args: Any = None) -> StepResult:
        """:meth:`call` for asyncio code (the step runs in a worker thread)."""
        import anyio

        return await anyio.to_thread.run_sync(self.call, name, args)

    # -- outcome ---------------------------------------------------------------------------
    def grade(self) -> dict[str, Any]:
        """The final grade; raises :class:`EpisodeNotOver` before the episode ended."""
        if self.final is None:
            raise EpisodeNotOver(f"episode {self.info['episode_id']} has not ended (step {self.steps}): no grade yet")
        return self.final["grade"]

    def public_grade(self) -> dict[str, Any]:
        """What an agent may read of the final grade: ``pass``, ``score`` and ``failure_codes``
        (raises :class:`EpisodeNotOver` before the end)."""
        grade = self.grade()
        return {k: grade[k] for k in PUBLIC_GRADE_FIELDS}

    @property
    def reward(self) -> float:
        """0.0 before the end, then the pure score."""
        return float(self.final["score"]) if self.final is not None else 0.0

    @property
    def shaped_reward(self) -> float:
        """0.0 before the end, then the episode's shaped (training) reward."""
        return float(self.final["shaped_reward"]) if self.final is not None else 0.0

    def close(self) -> None:
        self.env.close()
