"""A seeded, schema-aware fuzzer of the env boundary that checks every trace replays.

:func:`fuzz` plays episodes of one domain over train, heldout and generated tasks with hostile
calls built from every tool's JSON schema and the values the episode has observed: valid
calls, the same with one argument mutated (ids, amounts, dates and strings: other scripts'
digits, superscripts, off-by-one dates, NaN, infinities, ints beyond 64 bits, type
confusion, missing and unknown fields), finishing tools at any time, and garbage (actions that
are not ``{"tool", "args"}``, arguments that are not JSON objects, non-string keys, lone
surrogates, numpy scalars, tuples, sets, bytes). It checks, at every step:

- nothing raises out of ``step()``, and the observation is in ``observation_space``;
- no ``internal_error`` (a tool that raised: a bug);
- an error result, and any call of a read-only tool (``writes=False``), leaves the store's
  content hash unchanged;
- a terminal step's ``info`` holds the grade (``pass``, ``score``, ``checks``,
  ``failure_codes``, ``process_metrics``), ``shaped_reward``, ``diff``, ``score``,
  ``is_success`` and ``end_state_hash``, all plain JSON data;

and it replays every episode from the trace file the env wrote (every step's tool, status,
error code, changed ids and clock, the end hash and the grade must match). The same
``(domain, calls, seed)`` gives the same calls, observations and trace bytes: :attr:`FuzzReport.digest`
hashes them, so two runs can be compared. Used by ``tests/contract/test_fuzz_replay.py`` (a few
thousand calls per domain) and ``benchmarks/fuzz_replay.py`` (10^5 and more).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.replay import replay_env, replay_episode
from backoffice.envs.core.store import _hashable
from backoffice.envs.core.trace import read_trace

#: keys every terminal ``info`` holds, and every grade
TERMINAL_INFO_KEYS = ("grade", "shaped_reward", "diff", "score", "is_success", "end_state_hash")
GRADE_KEYS = ("pass", "score", "checks", "failure_codes", "process_metrics")

#: digit look-alikes that ``str.isdigit`` passes: fullwidth, Arabic-Indic, superscript, circled
_DIGIT_SETS = (
    "０１２３４５６７８９",
    "٠١٢٣٤٥٦٧٨٩",
    "⁰¹²³⁴⁵⁶⁷⁸⁹",
    "⓪①②③④⑤⑥⑦⑧⑨",
)
_PREFIX = re.compile(r"\b([A-Z]{2,5})-[A-Z0-9]")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ODD_STRINGS = (
    "", " ", "\x00", "\ud800", "a\udfffb", "\U0001f600", "NaN", "null", "None", "-1", "0", "1e309",
    "\u200b", "\u202e", "%s%n", "'; DROP TABLE x; --", "\\u0000", "x" * 5000,
)
_ODD_NUMBERS: tuple[Any, ...] = (
    0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**70, -(2**63) - 1, -(2**80), 0.5, -0.0, 1e308,
    math.nan, math.inf, -math.inf, True, False, "12", "１２", None,
)


class _Opaque:
    """A value no tool accepts and orjson refuses (and whose repr has no address)."""

    def __repr__(self) -> str:
        return "<fuzz opaque>"


@dataclass
class FuzzReport:
    """What one :func:`fuzz` run saw."""

    domain: str
    calls: int = 0
    episodes: int = 0
    replayed: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    error_codes: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    splits: Counter[str] = field(default_factory=Counter)
    #: invariant violations, each ``"<episode> step <n>: ..."`` (at most :data:`MAX_PROBLEMS` kept)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    replay_mismatches: int = 0
    internal_errors: int = 0
    raised: int = 0
    digest: str = ""

    def add_problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain, "calls": self.calls, "episodes": self.episodes, "replayed": self.replayed,
            "statuses": dict(sorted(self.statuses.items())), "error_codes": dict(sorted(self.error_codes.items())),
            "kinds": dict(sorted(self.kinds.items())), "splits": dict(sorted(self.splits.items())),
            "problem_count": self.problem_count, "problems": self.problems,
            "replay_mismatches": self.replay_mismatches, "internal_errors": self.internal_errors,
            "raised": self.raised, "digest": self.digest,
        }


MAX_PROBLEMS = 50


class CallMaker:
    """Draws hostile calls for one domain from its tools' schemas and the values observed."""

    def __init__(self, toolkit: Any, rng: np.random.Generator):
        self.rng = rng
        self.tools = list(toolkit.tools.values())
        self.names = [t.name for t in self.tools]
        self.terminal = sorted(t.name for t in self.tools if t.terminal)
        self.schemas = {t.name: t.parameters() for t in self.tools}
        self.strings: dict[str, None] = {}
        self.ints: dict[int, None] = {}
        #: strings seen under each key (``request_id`` -> ids), for arguments of that name
        self.by_key: dict[str, dict[str, None]] = {}
        self.allowed: list[str] = list(self.names)

    # -- what the episode has seen ---------------------------------------------------------------
    def start(self, brief: Any, allowed: list[str]) -> None:
        self.strings, self.ints, self.by_key = {}, {}, {}
        self.allowed = [n for n in self.names if n in set(allowed)] or list(self.names)
        self.observe(brief)

    def observe(self, value: Any, budget: int = 400) -> None:
        """Collect strings (ids, dates, names) and ints from an observation (bounded)."""
        stack: list[tuple[str, Any]] = [("", value)]
        seen = 0
        while stack and seen < budget:
            key, v = stack.pop()
            seen += 1
            if isinstance(v, str):
                if 0 < len(v) <= 60 and len(self.strings) < 600:
                    self.strings[v] = None
                    if key:
                        self.by_key.setdefault(key, {})[v] = None
            elif isinstance(v, bool):
                continue
            elif isinstance(v, int):
                if len(self.ints) < 200:
                    self.ints[v] = None
            elif isinstance(v, dict):
                stack.extend(v.items())
            elif isinstance(v, list):
                stack.extend((key, x) for x in v[:30])

    # -- drawing ---------------------------------------------------------------------------------
    def _pick(self, seq: Any) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def _chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def action(self) -> tuple[str, Any]:
        """``(kind, action)``: kind is valid, mutated, finish or garbage."""
        r = self.rng.random()
        if r < 0.015 and self.terminal:
            tool = self._pick(self.terminal)
            return "finish", {"tool": tool, "args": self.args_for(tool)}
        if r < 0.45:
            return "valid", self.call()
        if r < 0.85:
            return "mutated", self.mutate(self.call())
        return "garbage", self.garbage()

    def call(self) -> dict[str, Any]:
        names = self.allowed if self._chance(0.95) else self.names
        names = [n for n in names if n not in self.terminal] or names
        tool = self._pick(names)
        return {"tool": tool, "args": self.args_for(tool)}

    def args_for(self, tool: str) -> dict[str, Any]:
        schema = self.schemas[tool]
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            if name in required or self._chance(0.5):
                out[name] = self.value(prop, schema.get("$defs", {}), name)
        return out

    def value(self, prop: dict[str, Any], defs: dict[str, Any], name: str, depth: int = 0) -> Any:
        if "$ref" in prop:
            prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
        if "enum" in prop:
            return self._pick(prop["enum"])
        if "const" in prop:
            return prop["const"]
        if "anyOf" in prop:
            options = [p for p in prop["anyOf"] if p.get("type") != "null"] or prop["anyOf"]
            if len(options) < len(prop["anyOf"]) and self._chance(0.1):
                return None
            return self.value(self._pick(options), defs, name, depth)
        kind = prop.get("type")
        if kind == "integer":
            if self.ints and self._chance(0.6):
                return self._pick(list(self.ints))
            lo, hi = prop.get("minimum", 0), min(prop.get("maximum", 10_000), 10_000_000)
            return int(self.rng.integers(lo, max(lo, hi) + 1))
        if kind == "number":
            return float(np.round(self.rng.uniform(0, 1000), 2))
        if kind == "boolean":
            return self._chance(0.5)
        if kind == "array":
            if depth >= 2:
                return []
            return [self.value(prop.get("items", {}), defs, name, depth + 1) for _ in range(int(self.rng.integers(0, 4)))]
        if kind == "object":
            return {}
        # strings (and untyped): an observed value most of the time, of the id family the
        # description names (``e.g. REQ-0001``) or a date where one is asked for
        if self.strings and self._chance(0.85):
            fitting = self._fitting(prop, name)
            return self._pick(fitting if fitting and self._chance(0.9) else list(self.strings))
        return "".join(self._pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") for _ in range(int(self.rng.integers(1, 12))))

    def _fitting(self, prop: dict[str, Any], name: str) -> list[str]:
        text = f"{prop.get('description', '')} {prop.get('pattern', '')}"
        same = list(self.by_key.get(name, ()))
        if name.endswith("_id") and same:  # rows' own ids of the family seen under this name
            family = tuple({v.split("-", 1)[0] + "-" for v in same if "-" in v})
            return same + [v for v in self.by_key.get("id", ()) if family and v.startswith(family)]
        if same:
            return same
        if name.endswith("_id") and "id" in self.by_key:  # some row's own id
            return list(self.by_key["id"])
        if "date" in name or "YYYY-MM-DD" in text:
            return [v[:10] for v in self.strings if _DATE.fullmatch(v[:10])]
        if "YYYY-MM" in text or name == "period":
            return [v[:7] for v in self.strings if _DATE.fullmatch(v[:10])]
        prefixes = _PREFIX.findall(text)
        if prefixes:
            return [v for v in self.strings if v.startswith(tuple(p + "-" for p in prefixes))]
        return []

    # -- mutations -------------------------------------------------------------------------------
    def mutate(self, call: dict[str, Any]) -> Any:
        args = dict(call["args"])
        r = self.rng.random()
        if not args or r < 0.08:
            if args and self._chance(0.5):
                args.pop(self._pick(sorted(args)))  # a required field may go missing
            else:
                args[self._pick(("extra", "Tool", "args", "$float", "id"))] = self.mutant(self._pick(list(self.strings) or ["x"]))
            return {"tool": call["tool"], "args": args}
        key = self._pick(sorted(args))
        args[key] = self.mutant(args[key])
        return {"tool": call["tool"], "args": args}

    def mutant(self, value: Any) -> Any:
        r = self.rng.random()
        if r < 0.1:  # type confusion
            return self._pick((None, [], {}, [value], {"value": value}, (value,), {value} if _hashable(value) else [value], 3.5, "", _Opaque()))
        if isinstance(value, bool):
            return self._pick((not value, 0, 1, "true", None))
        if isinstance(value, int):
            if r < 0.6:
                return self._pick(_ODD_NUMBERS)
            return value + int(self.rng.integers(-2, 3)) if self._chance(0.7) else float(value)
        if isinstance(value, float):
            return self._pick(_ODD_NUMBERS)
        if isinstance(value, list):
            if value and self._chance(0.5):
                out = list(value)
                i = int(self.rng.integers(len(out)))
                out[i] = self.mutant(out[i])
                return out
            return value * 2 if value else [self.mutant("x")]
        if isinstance(value, str):
            return self.mutate_string(value)
        return self._pick(_ODD_STRINGS)

    def mutate_string(self, s: str) -> str:
        r = self.rng.random()
        digits = [i for i, ch in enumerate(s) if "0" <= ch <= "9"]
        if digits and r < 0.35:  # one or all ASCII digits become look-alikes
            table = self._pick(_DIGIT_SETS)
            if self._chance(0.5):
                return "".join(table[int(ch)] if "0" <= ch <= "9" else ch for ch in s)
            i = self._pick(digits)
            return s[:i] + table[int(s[i])] + s[i + 1:]
        if digits and r < 0.5:  # a near id / amount / date: one digit changed
            i = self._pick(digits)
            return s[:i] + str((int(s[i]) + int(self.rng.integers(1, 10))) % 10) + s[i + 1:]
        if len(s) == 10 and s[4:5] == "-" and r < 0.6:  # dates: impossible or shifted days
            return self._pick((s[:8] + "31", s[:5] + "02-30", s[:5] + "13" + s[7:], s + "T00:00:00", s.replace("-", "/"), s[:7]))
        if r < 0.7:
            return self._pick((s.lower(), s.upper(), " " + s + " ", s[:-1], s + "X", s + s, s[::-1], s.replace("-", "")))
        if r < 0.8:
            return s + self._pick(_ODD_STRINGS[:12])
        return self._pick(_ODD_STRINGS)

    # -- garbage ---------------------------------------------------------------------------------
    def garbage(self) -> Any:
        tool = self._pick(self.allowed)
        args = self.args_for(tool)
        options: list[Callable[[], Any]] = [
            lambda: self._pick(("not json", "", "{", "[]", "null", '{"tool": "submit", "args": NaN}', b"\xff\xfe", 7, None, 1.5, [])),
            lambda: [{"tool": tool, "args": args}],
            lambda: {"tool": tool},
            lambda: {"tool": tool, "args": self._pick(("x", "{bad json", b"{}", [], None, 3, ["a"], (("a", 1),)))},
            lambda: {"tool": tool, "args": args, "extra": 1},
            lambda: {"tool": self._pick((5, None, "", b"submit", ["submit"], "\ud800", "no_such_tool", tool.upper(), tool + " ", "x" * 300)), "args": args},
            lambda: {"tool": tool, "args": {1: "int key", **args}},
            lambda: {"tool": tool, "args": {**args, "k": {1, 2}}},
            lambda: {"tool": tool, "args": {**args, "k": np.int64(3)}},
            lambda: {"tool": tool, "args": {**args, "k": np.float64(2.5)}},
            lambda: {"tool": tool, "args": types.MappingProxyType(args)},
            lambda: {"args": args},
            lambda: dumps({"tool": tool, "args": args}).decode(),
            lambda: dumps({"tool": tool, "args": args}),
            lambda: dumps({"tool": tool, "args": args, "x": 1}).decode(),
            lambda: _Opaque(),
            lambda: {"tool": tool, "args": {**args, "\ud800": 1}},
            lambda: {"tool": tool, "args": {**args, "$float": "nan"}},
            lambda: {"tool": tool, "args": {"$map": [[1, 2]]}},
        ]
        if self._chance(0.01):
            options.append(lambda: " " * 70_000)
        return self._pick(options)()


#: the share of episodes on each kind of task
SPLIT_SHARES = (("train", 0.4), ("heldout", 0.4), ("generated", 0.2))


def _task_pool(env: Any, rng: np.random.Generator, generated: int) -> dict[str, list[dict[str, Any]]]:
    """The reset options of the tasks to fuzz, per split: every train and heldout task and a
    few generated ones (generating a task is the slow part of its first reset)."""
    rel = env.release
    pool = {s: [{"task_id": t} for t in rel.split_ids.get(s, ())] for s in ("train", "heldout")}
    pool["generated"] = [{"generate": int(i)} for i in rng.integers(0, 1_000_000, size=generated)]
    return {s: tasks for s, tasks in pool.items() if tasks}


def _draw_task(pool: dict[str, list[dict[str, Any]]], rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    splits = [(s, p) for s, p in SPLIT_SHARES if s in pool]
    weights = np.array([p for _, p in splits])
    split = splits[int(rng.choice(len(splits), p=weights / weights.sum()))][0]
    return split, pool[split][int(rng.integers(len(pool[split])))]


def fuzz(domain: str, calls: int, seed: int = 0, *, generated: int = 3, replay: bool = True,
         progress: Callable[[int], None] | None = None, trace_dir: str | None = None) -> FuzzReport:
    """Fuzz ``domain`` with ``calls`` hostile calls (seeded) and check the invariants above;
    ``progress(n)`` is called with the number of calls made since its last call. The trace
    of each episode is written to a file in ``trace_dir`` (default: a temporary folder),
    replayed and truncated, so the disk holds one episode at a time."""
    from backoffice.envs import make_native

    rng = np.random.default_rng([seed, _stable(domain)])
    report = FuzzReport(domain)
    own_dir = trace_dir is None
    folder = tempfile.mkdtemp(prefix="fuzz-") if own_dir else trace_dir
    assert folder is not None
    path = os.path.join(folder, f"{domain}-{seed}.jsonl")
    if os.path.exists(path):
        os.remove(path)
    # an env serves its own split only: one per split (generated tasks on train), all tracing
    # to ``path`` (appended, flushed per episode), and the replay's own env per split
    envs = {split: make_native(domain, split=split, trace_path=path) for split in ("train", "heldout")}
    replayers: dict[tuple[str, str], Any] = {}
    toolkit = envs["train"].domain.toolkit
    read_only = {t.name for t in toolkit.tools.values() if t.writes is False}
    maker = CallMaker(toolkit, rng)
    pool = _task_pool(envs["train"], rng, generated)
    digest = hashlib.blake2b(digest_size=16)
    pending = 0
    try:
        while report.calls < calls:
            split, options = _draw_task(pool, rng)
            env = envs["heldout" if split == "heldout" else "train"]
            obs, info = env.reset(seed=int(rng.integers(2**31 - 1)), options=options)
            report.episodes += 1
            report.splits[split] += 1
            episode = info["episode_id"]
            digest.update(obs.encode())
            maker.start(env.last_result, info["allowed_tools"])
            done = False
            while not done:
                kind, action = maker.action()
                report.kinds[kind] += 1
                before = env.state.content_hash()
                report.calls += 1
                pending += 1
                try:
                    obs, _, terminated, truncated, info = env.step(action)
                except Exception as exc:  # the worst outcome: record it and end the episode
                    report.raised += 1
                    report.add_problem(f"{episode} step {len(env.trace) + 1}: step raised {type(exc).__name__}: {exc}")
                    break
                done = terminated or truncated
                rec = env.trace[-1]
                step = rec["step"]
                report.statuses[info["result_status"]] += 1
                if info["error_code"]:
                    report.error_codes[info["error_code"]] += 1
                digest.update(obs.encode())
                if not env.observation_space.contains(obs):
                    report.add_problem(f"{episode} step {step}: observation outside observation_space")
                if info["error_code"] == "internal_error":
                    report.internal_errors += 1
                    report.add_problem(f"{episode} step {step}: internal_error in {rec['tool']} ({dumps(rec.get('sent', rec['args'])).decode()[:300]})")
                after = env.state.content_hash()
                if info["result_status"] == "error" and after != before:
                    report.add_problem(f"{episode} step {step}: an error result ({info['error_code']}) changed the content hash")
                if rec["tool"] in read_only and after != before:
                    report.add_problem(f"{episode} step {step}: read-only tool {rec['tool']} changed the content hash")
                if info["result_status"] == "ok":
                    maker.observe(env.last_result.get("result"))
                if done:
                    _check_terminal(report, episode, step, info)
                if progress is not None and pending >= 100:
                    progress(pending)
                    pending = 0
            env._trace_writer.flush()
            with open(path, "rb") as fh:
                data = fh.read()
            digest.update(data)
            if replay and done:
                replayer = replay_env(replayers, domain, info["task_id"])
                res = replay_episode(read_trace(path), replayer)
                report.replayed += 1
                if not res.ok or len(replayer.trace) != len(env.trace):
                    report.replay_mismatches += 1
                    report.add_problem(f"{episode}: replay diverged: {res.divergences[:3]}")
            os.truncate(path, 0)
    finally:
        for each in (*envs.values(), *replayers.values()):
            each.close()
        if os.path.exists(path):
            os.remove(path)
        if own_dir:
            os.rmdir(folder)
    if progress is not None and pending:
        progress(pending)
    report.digest = digest.hexdigest()
    return report


def _check_terminal(report: FuzzReport, episode: str, step: int, info: dict[str, Any]) -> None:
    missing = [k for k in TERMINAL_INFO_KEYS if k not in info]
    missing += [f"grade.{k}" for k in GRADE_KEYS if k not in info.get("grade", {})]
    if missing:
        report.add_problem(f"{episode} step {step}: terminal info lacks {missing}")
        return
    if not 0.0 <= info["score"] <= 1.0 or not isinstance(info["is_success"], bool):
        report.add_problem(f"{episode} step {step}: terminal score {info['score']!r} / is_success {info['is_success']!r}")
    try:
        plain = loads(dumps(info)) == info
    except Exception:
        plain = False
    if not plain:
        report.add_problem(f"{episode} step {step}: terminal info is not plain JSON data")


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")
