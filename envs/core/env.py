"""The one Gymnasium environment every domain shares."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar, cast

import gymnasium as gym
import numpy as np
import orjson
from gymnasium.utils import seeding

from backoffice.envs.core.build import make_task
from backoffice.envs.core.canonical import ascii_text as _ascii, derive_seed, dumps, dumps_ascii, loads
from backoffice.envs.core.domain import CALL_COST, Domain, Episode
from backoffice.envs.core.release import Release, Task, is_generated_id, load_release
from backoffice.envs.core.spaces import OBS_MAX_LENGTH, ToolCallSpace, observation_space, parse_action
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import ToolContext, error
from backoffice.envs.core.trace import TraceWriter, encode_sent, is_plain_json
from backoffice.graders.grade import outcome, work_share
from backoffice.graders.progress import distance

_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
_NOT_SENT = object()  # a step whose ``tool`` and ``args`` replay as they are

SPLITS = ("train", "heldout", "generated")
REWARD_MODES = ("sparse", "shaped", "progress")
#: in ``reward_mode="progress"``, what reaching the accepted end state pays on top of the shaped reward,
#: paid as the distance to it first shrinks
PROGRESS_WEIGHT = 0.5


class UnsupportedRenderMode(ValueError, TypeError):
    """An unsupported ``render_mode``. Also a ``TypeError``: stable-baselines3's ``make_vec_env``
    passes ``render_mode="rgb_array"`` and retries without it on ``TypeError``."""


@lru_cache(maxsize=1024)
def _specs(domain: Domain, allowed_tools: tuple[str, ...]) -> list[dict[str, Any]]:
    """The tool specs of ``info["tools"]``, built once per domain and tool set: shared by every
    reset, so read them, never mutate them."""
    return domain.toolkit.specs(allowed_tools)


@lru_cache(maxsize=256)
def _generated(domain: Domain, index: int, scale: int = 1) -> tuple[Task, Snapshot, dict[str, Any]]:
    return make_task(domain, "generated", index, scale)


class BackofficeEnv(gym.Env[str, Any]):
    """Base class of every backoffice env; a domain subclass only sets ``domain`` and a docstring.

    See the domain classes for the full description (tools, grade, failure codes).

    ## Arguments (every domain)
    - ``split``: ``"train"``, ``"heldout"`` or ``"generated"``. A named task of another split
      is refused (``ValueError`` naming both); a heldout env refuses generated tasks too.
    - ``reward_mode``: ``"sparse"`` (the score at the end), ``"shaped"`` (minus a cost per
      successful call, plus the domain's terminal shaping of the grade) or ``"progress"``
      (shaped, plus :data:`PROGRESS_WEIGHT` times the first approach to the answer key's end
      state; it reads the key at every step, so a heldout env refuses it). No reward mode
      changes ``pass`` or ``score``.
    - ``call_cost``: the shaped reward's cost per successful call (``None``: the domain's,
      ``0.01`` by default), a number in ``[0, 1]``.
    - ``gate_cap``: ``True`` (default): the terminal shaping reads the score, which a failed
      gate caps at 0.25; ``False``: the share of work checks passed (the grade is unchanged).
    - ``max_steps``: the step budget (``None``: the domain's); the episode truncates, graded.
    - ``trace_path``: a JSONL file receiving one line per step and the terminal line
      (``backoffice replay`` reads it).
    - ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns a text view of the last
      step) or ``"human"`` (prints it).
    - ``judge``: ``"rubric"`` (default) or ``"model:<name>"``: scores free text (hand-over
      notes) into ``info["judge"]``, never into ``pass``.
    - ``release``: a :class:`~backoffice.envs.core.release.Release` to serve instead of the
      installed one (tests, generated releases).
    - ``lean_info``: ``False`` (default) or ``True`` (training): a finished episode's info and
      trace record leave out the grade, the diff, the judge's score and the end-state hash
      (``info`` keeps ``score``, ``is_success``, ``shaped_reward``, ``episode_id`` and
      ``task_id``); they cost a plain copy of the grade, a fresh diff, the judge and a hash every
      episode, which a learner never reads, and the episode is graded from its checks alone
      unless the terminal shaping reads a field (``Domain.shaping_fields``). Rewards, ``score``
      and ``is_success`` are the same. Refused with ``trace_path`` (a trace's last line holds
      the grade).

    ``reset(options=...)``: ``{"task_id": ...}`` (or a domain alias such as ``case_id``),
    ``{"generate": n}`` on the generated split, or nothing (a task drawn by the seed).
    """

    domain: ClassVar[Domain]
    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: the ``max_episode_steps`` of a Gymnasium ``TimeLimit`` around this env (set by
    #: :class:`MatchTimeLimit`): episodes then truncate, with their grade, on that same step
    time_limit: int | None = None

    def __init__(
        self,
        split: str = "train",
        reward_mode: str = "sparse",
        max_steps: int | None = None,
        trace_path: str | None = None,
        render_mode: str | None = None,
        release: Release | None = None,
        judge: str = "rubric",
        call_cost: float | None = None,
        gate_cap: bool = True,
        lean_info: bool = False,
    ):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if reward_mode == "progress" and split == "heldout":
            raise ValueError('reward_mode="progress" reads the answer key at every step: it is for training '
                             'splits (train, generated), never heldout')
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if call_cost is not None and (isinstance(call_cost, bool) or not isinstance(call_cost, int | float) or not 0.0 <= call_cost <= 1.0):
            raise ValueError(f"call_cost must be None or a number in [0, 1], got {call_cost!r}")
        if not isinstance(gate_cap, bool):
            raise ValueError(f"gate_cap must be True or False, got {gate_cap!r}")
        if not isinstance(lean_info, bool):
            raise ValueError(f"lean_info must be True or False, got {lean_info!r}")
        if lean_info and trace_path:
            raise ValueError("lean_info leaves the grade out of the trace's last line: it cannot write a trace (trace_path)")
        if judge != "rubric" and not (judge.startswith("model:") and len(judge) > len("model:")):
            raise ValueError(f"judge must be 'rubric' or 'model:<name>', got {judge!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnsupportedRenderMode(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.split = split
        self.reward_mode = reward_mode
        #: the shaped and progress rewards' cost of a successful call, in place of the domain's
        #: ``CALL_COST`` that every step shaping starts from (``None``: the domain's own)
        self.call_cost = call_cost
        self._call_refund = 0.0 if call_cost is None else CALL_COST - float(call_cost)
        #: whether the shaped and progress rewards' terminal shaping sees the grade's score as
        #: graded (``True``: capped at ``GATE_CAP`` when a gate fails) or the share of work
        #: checks passed (``False``). Training-only: the grade, ``score`` and ``pass`` are the
        #: same either way. With the progress reward a failed gate already costs what its
        #: wrong rows add to the distance, and the pass bonus; the cap makes any write that
        #: may break a gate (an allocation to a look-alike claim, an unneeded case) cost far
        #: more than leaving the work undone, which MaskablePPO learns first and then keeps
        self.gate_cap = gate_cap
        #: training-only: a finished episode's info carries no grade, diff, judge or end hash
        self.lean_info = lean_info
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.judge = judge
        self.release = release if release is not None else load_release(self.domain.name)
        if self.split != "generated" and not self.release.split_ids.get(self.split):
            raise ValueError(f"the {self.domain.name} release has no {self.split!r} tasks")
        toolkit = self.domain.toolkit
        self.action_space = ToolCallSpace(toolkit.specs(), vocabulary=self._sample_vocabulary)
        self.observation_space = observation_space()
        self._trace_writer = TraceWriter(trace_path) if trace_path else None
        self._terminal_tools = self.domain.terminal_tools
        # what every env of the process derives alike from one task: its brief, and the
        # end-state distance of its untouched start state (progress reward), kept on the
        # shared release (see :attr:`Release.derived`)
        self._brief_cache: dict[str, tuple[str, dict[str, Any]]] = self.release.derived.setdefault("brief", {})
        self._start_distances: dict[tuple[str, int], int] = self.release.derived.setdefault("start_distance", {})
        self._last_result: dict[str, Any] = {}
        self._task: Task | None = None
        self._store: Store | None = None
        self._done = True
        self._last_obs = ""

    # -- the numpy generator, seeded lazily ----------------------------------------------
    # ``gymnasium.Env`` keeps its generator in ``_np_random`` (and ``_np_random_seed``); here
    # they are properties, so ``reset(seed=s)`` only records ``s`` and the generator is built
    # from it on first use: by a reset without a seed, ``env.np_random`` or Gymnasium's checker.
    _rng: np.random.Generator | None = None
    _rng_seed: int | None = None
    _rng_seed_used: int | None = None

    @property
    def _np_random(self) -> np.random.Generator | None:
        if self._rng is None and self._rng_seed is not None:
            self._rng, self._rng_seed_used = seeding.np_random(self._rng_seed)
            self._rng_seed = None
        return self._rng

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._rng, self._rng_seed = value, None

    @property
    def _np_random_seed(self) -> int | None:
        return self._rng_seed if self._rng is None and self._rng_seed is not None else self._rng_seed_used

    @_np_random_seed.setter
    def _np_random_seed(self, value: int | None) -> None:
        self._rng_seed_used = value

    # -- helpers ---------------------------------------------------------------------------
    def _sample_vocabulary(self) -> list[str]:
        ids = self.release.split_ids.get("train") or tuple(self.release.tasks)
        snap = self.release.snapshot(self.release.task(ids[0]).snapshot_id)
        vocab = []
        for name in snap.table_names:
            vocab.extend(list(snap.table(name))[:3])
        return vocab

    def tool_specs(self, format: str = "function", allowed_only: bool = True) -> list[dict[str, Any]]:
        """Tool specs (``function``, ``openai``, ``mcp`` or ``anthropic`` shape) from the pydantic models."""
        names = self._task.allowed_tools if (allowed_only and self._task is not None) else None
        return self.domain.toolkit.specs(names, format=format)  # type: ignore[arg-type]

    def reset_args(self, task_id: str, seed: int | None = None) -> dict[str, Any]:
        """Keyword arguments of ``reset`` that start the named task: ``options={"task_id": ...}``
        and, unless ``seed`` is given, the released task's own seed (``None`` for a generated
        task), so the same calls give the same episode id, trace and grade. Use it on a wrapped
        env too: ``env.reset(**env.unwrapped.reset_args(task_id))``."""
        if seed is None and not is_generated_id(task_id):
            seed = self.release.task(task_id).seed
        return {"seed": seed, "options": {"task_id": task_id}}

    @property
    def step_limit(self) -> int | None:
        """The current episode's step limit (``None`` before the first reset)."""
        return getattr(self, "_limit", None)

    @property
    def trace_path(self) -> str | None:
        """The file this env appends its trace lines to (``None``: not traced)."""
        return None if self._trace_writer is None else str(self._trace_writer.path)

    @property
    def last_result(self) -> dict[str, Any]:
        """The last observation already parsed: the brief after ``reset``, the tool result
        (``{"status": ..., "result": ...}`` or the error) after ``step``; equal to
        ``json.loads(obs)``. Shared with the trace: read it, never mutate it."""
        return self._last_result

    @property
    def task(self) -> Task | None:
        """The current task (public part only)."""
        return self._task

    @property
    def state(self) -> Store:
        """The working store of the current episode (read it, never write it)."""
        if self._store is None:
            raise RuntimeError("call reset() first")
        return self._store

    @property
    def trace(self) -> list[dict[str, Any]]:
        """The current episode's trace records (a copy of the list)."""
        return list(self._trace)

    def accepted_options(self) -> tuple[str, ...]:
        """The keys ``reset(options=...)`` accepts: ``task_id``, ``generate`` (with ``scale``:
        the world about that many times the released size) and the domain's task aliases (e.g.
        sufficiency's ``case_id``)."""
        return ("task_id", "generate", "scale", *self.domain.task_aliases)

    def _pick_task(self, seed: int, options: Mapping[str, Any]) -> tuple[Task, Snapshot, str, dict[str, Any] | None]:
        unknown = sorted(str(k) for k in options if k not in self.accepted_options())
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; accepted: {', '.join(self.accepted_options())}")
        named = [k for k in ("task_id", *self.domain.task_aliases) if k in options]
        if len(named) > 1:
            raise ValueError(f"reset options {named} each name a task: give one")
        if named and named[0] != "task_id":
            options = {"task_id": self._task_id_for(named[0], options[named[0]])}
        scale = options.get("scale", 1)
        if not isinstance(scale, int) or isinstance(scale, bool) or scale < 1:
            raise ValueError(f"reset option scale must be an int >= 1, got {scale!r}")
        if "task_id" in options:
            task_id = str(options["task_id"])
            self.check_servable(task_id)
            if is_generated_id(task_id):
                return self._generated_task(int(task_id.rsplit("-G", 1)[1]), scale)
            if scale != 1:
                raise ValueError("reset option scale applies to generated tasks only (released tasks are at scale 1)")
            task = self.release.task(task_id)
            snap = self.release.snapshot(task.snapshot_id)
            return task, snap, self.release.checked_hash(task_id), None
        if "generate" in options and self.split == "heldout":
            raise ValueError("reset option generate starts a generated (training) task; this env serves the heldout split only")
        if self.split == "generated" or "generate" in options:
            index = int(options.get("generate", derive_seed("generated", seed) % 1_000_000_000))
            return self._generated_task(index, scale)
        if scale != 1:
            raise ValueError("reset option scale applies to generated tasks only (released tasks are at scale 1)")
        ids = self.release.split_ids[self.split]
        task = self.release.task(ids[derive_seed("pick", self.split, seed) % len(ids)])
        return task, self.release.snapshot(task.snapshot_id), self.release.checked_hash(task.task_id), None

    def check_servable(self, task_id: str) -> None:
        """Raise ``ValueError`` unless this env's split serves ``task_id``: a released task only
        from its own split (a ``train`` env never starts a ``heldout`` task, so no training-only
        reward or route reads a heldout answer key), a generated task only in a training split
        (``train`` or ``generated``). Evaluation on heldout tasks builds a heldout env."""
        if is_generated_id(task_id):
            if self.split == "heldout":
                raise ValueError(f"{task_id} is a generated (training) task; this env serves the heldout split only")
            return
        split = self.release.task(task_id).split  # KeyError names an unknown id
        if split != self.split:
            raise ValueError(f"{task_id} is a {split} task; this env serves the {self.split} split only "
                             f"(build an env with split={split!r} to run it)")

    def _task_id_for(self, alias: str, value: Any) -> str:
        """The released task of this env's split whose ``params[alias]`` is ``value``."""
        ids = self.release.split_ids.get(self.split, ())
        hits = [t for t in ids if self.release.task(t).params.get(alias) == value]
        if len(hits) != 1:
            found = "no task" if not hits else f"{len(hits)} tasks ({', '.join(hits[:5])})"
            raise ValueError(f"{alias}={value!r} names {found} in the {self.split} split of {self.domain.name}")
        return hits[0]

    def _generated_task(self, index: int, scale: int = 1) -> tuple[Task, Snapshot, str, dict[str, Any]]:
        task, snap, key = _generated(self.domain, index, scale)
        return task, snap, snap.content_hash(), key

    # -- gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: a named task (``options={"task_id": ...}`` or a domain alias such as
        ``{"case_id": ...}``), a generated one (``options={"generate": n}``) or one drawn from the
        split by ``seed``. An unknown option key raises ``ValueError`` naming the accepted keys;
        so does a task this env's split does not serve (a released task of another split, a
        generated task on a heldout env: see :meth:`check_servable`).

        ``info["snapshot_hash"]`` is the content hash of the restored state, computed (once per
        loaded snapshot) and checked against the release manifest."""
        if seed is not None:
            # Env.reset(seed=...) would build a new numpy generator on every reset (~15 us);
            # this env only draws from it when reset without a seed, so it is built then
            self._rng_seed = seed
            self._rng = None
        options = options or {}
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31 - 1))
        task, snapshot, snapshot_hash, key = self._pick_task(episode_seed, options)
        self._scale = options.get("scale", 1)
        if self._store is None:
            self._store = Store(snapshot)
        else:
            self._store.reset(snapshot)
        snapshot_hash = self._store.content_hash()  # O(1) after a reset: the snapshot's cached hash
        self._task, self._snapshot, self._snapshot_hash, self._key = task, snapshot, snapshot_hash, key
        self._seed = episode_seed
        self._episode_id = f"{task.task_id}#{episode_seed}"
        self._allowed = frozenset(task.allowed_tools)
        self._limit = self.max_steps or task.max_steps or self.domain.default_max_steps
        if self.time_limit:  # gym.make(..., max_episode_steps=n): end (and grade) where TimeLimit cuts
            self._limit = min(self._limit, self.time_limit)
        self._ctx = ToolContext(self._store, task, 0)
        self._call = self.domain.toolkit.call_encoded
        self._step_shaping = self.domain.step_shaping
        self._domain_name = self.domain.name
        self._has_clock = self._store.has_table("clock")
        self._steps = 0
        self._trace: list[dict[str, Any]] = []
        self._shaped_total = 0.0
        self._done = False
        #: what one episode's grades share (the progress reward grades after every write)
        self._grade_memo: dict[Any, Any] = {}
        self._distance_memo: dict[Any, Any] = {}
        if self.reward_mode == "progress":
            # the untouched start state of a task is always the same: its distance is graded once
            start_key = (task.task_id, self._scale)
            start = self._start_distances.get(start_key)
            if start is None:
                start = self._start_distances[start_key] = self._distance()
            self._distance_now = start
            self._start_distance = max(1, start)
            self._best_progress = 0.0 if start else 1.0  # already at an accepted state: nothing to pay
        cached = self._brief_cache.get(task.task_id)
        if cached is None:
            brief = task.brief()
            cached = self._brief_cache.setdefault(task.task_id, (dumps_ascii(brief), brief))
        obs, self._last_result = cached
        self._last_obs = obs
        if self.render_mode == "human":
            self.render()
        info = {
            "task_id": task.task_id, "seed": episode_seed, "split": task.split,
            "episode_id": self._episode_id, "snapshot_hash": snapshot_hash,
            "allowed_tools": list(task.allowed_tools), "tools": _specs(self.domain, task.allowed_tools),
            "max_steps": self._limit,
        }
        return obs, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one tool call. Bad input becomes an error observation, never an exception.

        The trace line records the call as sent: ``tool`` and ``args``, and ``sent`` (the
        tagged action, :func:`~backoffice.envs.core.trace.encode_sent`) when those two would
        not send it again, so a replay reproduces every step."""
        if self._done or self._task is None:
            raise RuntimeError("the episode is over (or never started): call reset()")
        store = self._store
        assert store is not None
        self._steps = steps = self._steps + 1
        clock_row = store.peek("clock", "clock") if self._has_clock else None
        clock = clock_row["now"] if clock_row else None
        tool, args, problem = parse_action(action)
        args_json = b"null"
        if problem is None:
            try:
                # lone surrogates, >64-bit ints, non-str keys: not JSON, so not an action
                args_json = _dumps(args, option=_SORT)
            except Exception:
                problem = "args are not representable as JSON"
        payload: bytes | None = None
        # the action as sent, when ``tool`` and ``args`` would not send it again: a malformed
        # one, or arguments orjson reads lossily (NaN, tuples, subclasses)
        sent: Any = _NOT_SENT
        if problem is not None:
            result = error("invalid_action", problem)
            changed: list[str] = []
            tool = tool if isinstance(tool, str) and len(tool) <= 200 else None
            args = None
            args_json = b"null"
            sent = encode_sent(action)
        else:
            if not is_plain_json(args):
                sent = encode_sent(action)
            self._ctx.step = steps
            args = dict(args)
            result, payload, changed = self._call(self._ctx, tool, args, self._allowed)  # type: ignore[arg-type]
        status = result["status"]
        ok = status == "ok"
        terminated = ok and tool in self._terminal_tools
        truncated = not terminated and steps >= self._limit
        # the step's one serialisation of the result (``payload``) is spliced into the
        # observation and the trace line
        obs_bytes = b'{"result":' + payload + b',"status":"ok"}' if payload is not None else _dumps(result, option=_SORT)
        obs = obs_bytes.decode()
        if not obs.isascii() or "\x7f" in obs:
            obs = _ascii(obs_bytes)
        self._last_result = result
        if len(obs) > OBS_MAX_LENGTH:
            self._last_result = {"status": status, "message": "result too large to show; the call was applied", "result": None}
            obs = dumps_ascii(self._last_result)
        code = result.get("code")
        record = {
            "episode_id": self._episode_id, "domain": self._domain_name, "task_id": self._task.task_id,
            "seed": self._seed, "step": steps, "clock": clock, "tool": tool, "args": args,
            "result_status": status, "error_code": code,
            "changed_ids": changed, "result": result.get("result") if ok else result,
        }
        if sent is not _NOT_SENT:
            record["sent"] = sent
        self._trace.append(record)
        shaping = self._step_shaping(record)
        if ok:
            shaping += self._call_refund
        info: dict[str, Any] = {"step": steps, "result_status": status, "error_code": code}
        reward = 0.0
        graded: Mapping[str, Any] | None = None
        if terminated or truncated:
            self._done = True
            if self.lean_info:  # the grade as graded, read only: no copy, diff, judge or hash
                graded = grade = self._graded()
            else:
                grade, diff, end_hash, judged, graded = self._grade(judge=True)
                record["end_state_hash"] = end_hash
                record["grade"] = grade
            shaping += self.domain.terminal_shaping(grade if self.gate_cap else {**grade, "score": work_share(grade["checks"])})
            record["max_steps"] = self._limit  # what replay needs to end where this episode did
            if self._scale != 1:
                record["scale"] = self._scale
            # type-stable for Gymnasium's vector info merging (it types each key by the first
            # env that reports it): scalars are always float/bool, and ``judge`` is present
            # only when a judge scored free text (always a dict), never ``None``
            scored = {"score": float(grade["score"]), "is_success": bool(grade["pass"])}
            ids = {"episode_id": self._episode_id, "task_id": self._task.task_id}
            if self.lean_info:
                info.update(scored, **ids)
            else:
                info.update(grade=grade, diff=diff, **scored, end_state_hash=end_hash, **ids)
                if judged is not None:
                    info["judge"] = judged
            reward = float(grade["score"])
        self._shaped_total += shaping
        if self._done:
            info["shaped_reward"] = float(self._shaped_total)
        if self.reward_mode == "shaped":
            reward = shaping
        elif self.reward_mode == "progress":
            grade_reads = self.domain.grade_reads
            if self._done:  # the grade as graded: its checks are those the memo keeps (see _grade)
                self._distance_now = self._distance(graded)
            elif grade_reads is None or changed or tool in grade_reads:
                self._distance_now = self._distance()
            reward = self._progress_reward(shaping)
        if self._trace_writer is not None:
            line = dict(record)
            line["args"] = orjson.Fragment(args_json)
            if payload is not None:
                line["result"] = orjson.Fragment(payload)
            self._trace_writer.write(line)
            if self._done:
                self._trace_writer.flush()
        self._last_obs = obs
        if self.render_mode == "human":
            self.render()
        return obs, float(reward), terminated, truncated, info

    def _graded(self) -> Mapping[str, Any]:
        """``lean_info``'s grade of a finished episode: its checks, ``pass`` and ``score`` (and
        the domain's fields when the terminal shaping reads some, ``Domain.shaping_fields``), as
        the grader returned them (its check results shared with ``_grade_memo``: read only)."""
        assert self._store is not None and self._task is not None
        key = self._key if self._key is not None else self.release.answer_key(self._task.task_id)
        checks_only = not self.domain.shaping_fields
        graded = self.domain.grade(Episode(self._task, key, self._snapshot, self._store, self._store.shared_diff(),
                                           self._trace, memo=self._grade_memo, checks_only=checks_only))
        return {**graded, **outcome(graded["checks"])} if checks_only else graded

    def _grade(self, judge: bool = False) -> tuple[dict[str, Any], dict[str, Any], str, dict[str, Any] | None, Mapping[str, Any]]:
        """The episode's grade as plain data, the diff, the end-state hash, the judge's score and
        the grade as the grader returned it (its check results shared with ``_grade_memo``, read
        only: the progress reward's distance finds their distances kept)."""
        assert self._store is not None and self._task is not None
        diff = self._store.diff()
        key = self._key if self._key is not None else self.release.answer_key(self._task.task_id)
        episode = Episode(self._task, key, self._snapshot, self._store, diff, self._trace, memo=self._grade_memo)
        graded = self.domain.grade(episode)
        grade = loads(dumps(graded))
        judged = None
        if judge and self.domain.judge is not None:
            judged = self.domain.judge(episode, self.judge)
            judged = loads(dumps(judged)) if judged is not None else None
        return grade, diff, self._store.content_hash(), judged, graded  # the diff is fresh plain data already

    def _distance(self, grade: Mapping[str, Any] | None = None) -> int:
        """The end-state distance (rows) of the current state to the accepted end state: from
        ``grade``, or from the checks alone, re-evaluating only those a step touched (the
        episode's ``_grade_memo``)."""
        if grade is None:
            assert self._store is not None and self._task is not None
            key = self._key if self._key is not None else self.release.answer_key(self._task.task_id)
            grade = self.domain.grade(Episode(self._task, key, self._snapshot, self._store, self._store.shared_diff(), self._trace,
                                              memo=self._grade_memo, checks_only=True))
        return distance(grade, self.domain.progress_exclude, self._distance_memo)

    def _progress_reward(self, shaping: float) -> float:
        """``reward_mode="progress"``: the shaped reward, plus ``PROGRESS_WEIGHT`` times the
        progress made the first time the state gets closer to the answer key's accepted end
        state than ever before in the episode (``1 - distance / start distance``, distance in
        rows, see :mod:`backoffice.graders.progress`). The same progress is never paid twice
        and going back earns nothing, so an episode's total is its shaped total plus
        ``PROGRESS_WEIGHT`` times the best progress it reached (at most ``PROGRESS_WEIGHT``).

        The advance is kept, not taken back at the end: a version that settled it (total equal
        to the shaped total) changed only when reward arrived, not which behaviour earns more,
        and left MaskablePPO in the shaped reward's local optimum (registration: refer every
        task; the measurements are in docs/EXPERIMENTS.md)."""
        progress = 1.0 - self._distance_now / self._start_distance
        gain = max(0.0, progress - self._best_progress)
        self._best_progress = max(self._best_progress, progress)
        return shaping + PROGRESS_WEIGHT * gain

    def grade_now(self) -> dict[str, Any]:
        """The pure grade of the current state, without ending the episode (for notebooks)."""
        return self._grade()[0]

    def render(self) -> str | None:
        """``render_mode="ansi"``: a text view of the last step (the tool, its arguments, a summary of
        the result, the step count; after ``reset`` the task, its brief and tools) instead of raw
        JSON; ``"human"`` prints it (after every ``reset`` and ``step`` too). See
        :mod:`backoffice.envs.core.render`."""
        if self.render_mode not in ("ansi", "human"):
            return None
        from backoffice.envs.core.render import render_reset, render_step

        if self._task is None:
            text = f"{self.domain.name}: no episode yet (call reset)\n"
        elif self._trace:
            text = render_step(self.domain.name, self._task.task_id, self._trace[-1], self._limit, self._done)
        else:
            text = render_reset(self.domain.name, self._task.task_id, self._last_result, self._limit, self._task.allowed_tools)
        if self.render_mode == "human":
            print(text, end="", flush=True)
            return None
        return text

    def close(self) -> None:
        if self._trace_writer is not None:
            self._trace_writer.close()
        super().close()


class MatchTimeLimit(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Registered as an additional wrapper of every backoffice id, so it sits outside the
    ``TimeLimit`` that ``gym.make(id, max_episode_steps=n)`` adds: it hands ``n`` to the
    native env, which then truncates on the step where ``TimeLimit`` does, with the grade,
    ``score`` and ``is_success`` in ``info`` (what ``Monitor(info_keywords=("is_success",))``
    and ``EvalCallback`` read). Without a ``TimeLimit`` below it, it does nothing."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        inner = env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, gym.wrappers.TimeLimit):
                # Env.unwrapped is typed as a plain gym.Env; every env this wrapper is registered on is a BackofficeEnv
                cast(BackofficeEnv, env.unwrapped).time_limit = int(inner._max_episode_steps)
                break
            inner = inner.env

    def reset(self, **kwargs: Any) -> Any:
        """``env.reset``; when it raises (an unknown task id, a bad option), Gymnasium's
        ``PassiveEnvChecker`` below has already marked its one reset check done without the
        data it compares the first step with, so every later step would raise ``TypeError``:
        it is re-armed, and the next reset runs the check again (the env stays usable)."""
        try:
            return self.env.reset(**kwargs)
        except Exception:
            inner = self.env
            while isinstance(inner, gym.Wrapper):
                if isinstance(inner, gym.wrappers.PassiveEnvChecker) and getattr(inner, "_previous_data", True) is None:
                    inner.checked_reset = False
                inner = inner.env
            raise

