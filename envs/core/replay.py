"""Replay a trace against its tasks and confirm every step, the end-state hash and the grade."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.core.release import is_generated_id
from backoffice.envs.core.trace import decode_sent, episodes, has_opaque

_INVALID = "<not an action>"  # a malformed action of an old trace that kept no tool name
#: what replay sends as the arguments of a malformed call of an old trace (one written before
#: ``sent``): any arguments that are not an object are malformed the same way
_NOT_ARGS = "<not an object>"
#: the fields of each step a replay must reproduce
STEP_FIELDS = ("tool", "result_status", "error_code", "changed_ids", "clock")


@dataclass
class ReplayResult:
    episode_id: str
    task_id: str
    ok: bool
    end_state_hash: str | None
    grade: dict[str, Any] | None
    divergences: list[str] = field(default_factory=list)


def replay_env(envs: dict[tuple[str, str], Any], domain: str, task_id: str) -> Any:
    """A native env of ``domain`` that serves ``task_id``, from ``envs`` (keyed by domain and
    split; built on first use): an env serves only the released tasks of its own split, so a
    trace of train and heldout episodes replays on an env per split (a generated task on train)."""
    from backoffice.envs import make_native

    if (domain, "train") not in envs:
        envs[domain, "train"] = make_native(domain)
    split = "train" if is_generated_id(task_id) else envs[domain, "train"].release.task(task_id).split
    if (domain, split) not in envs:
        envs[domain, split] = make_native(domain, split=split)
    return envs[domain, split]


def action_of(record: Mapping[str, Any]) -> Any:
    """The action a trace line records, as replay sends it: ``sent`` decoded when the line has
    it, else ``{"tool", "args"}``. A malformed call of a trace written before ``sent`` replays
    with its tool name (if one was kept) and arguments that are not an object, which the env
    rejects the same way (``invalid_action``)."""
    if "sent" in record:
        return decode_sent(record["sent"])
    tool, args = record.get("tool"), record.get("args")
    if record.get("error_code") == "invalid_action" or args is None:
        return {"tool": tool, "args": _NOT_ARGS} if isinstance(tool, str) and tool else _INVALID
    return {"tool": tool, "args": args}


def replay_episode(records: Sequence[Mapping[str, Any]], env: Any = None) -> ReplayResult:
    """Re-run one episode's calls; compare each step's outcome (:data:`STEP_FIELDS`) and the
    recorded end (hash and grade). The episode is reset with the recorded task, seed and, when
    the terminal line names them, step limit (``max_steps``) and ``scale``; without ``env``, on a
    native env of the task's own split."""
    first, last = records[0], records[-1]
    env = env if env is not None else replay_env({}, first["domain"], first["task_id"])
    options: dict[str, Any] = {"task_id": first["task_id"]}
    if last.get("scale", 1) != 1:
        options["scale"] = last["scale"]
    saved = env.max_steps, getattr(env, "time_limit", None)
    if "max_steps" in last:
        env.max_steps, env.time_limit = int(last["max_steps"]), None
    try:
        env.reset(seed=first["seed"], options=options)
    finally:
        env.max_steps, env.time_limit = saved
    divergences: list[str] = []
    info: dict[str, Any] = {}
    for rec in records:
        try:
            action = action_of(rec)
        except Exception as exc:  # a hand-edited or foreign line
            divergences.append(f"step {rec['step']}: the recorded call cannot be rebuilt ({type(exc).__name__}: {exc})")
            break
        _, _, terminated, truncated, info = env.step(action)
        got = env._trace[-1]
        bad = [name for name in STEP_FIELDS if got.get(name) != rec.get(name)]
        for name in bad:
            divergences.append(f"step {rec['step']}: {name} recorded {rec.get(name)!r}, replayed {got.get(name)!r}")
        if bad and has_opaque(rec.get("sent")):
            divergences.append(f"step {rec['step']}: the call held a value no trace can rebuild ($opaque in 'sent')")
        if terminated or truncated:
            break
    end_hash = info.get("end_state_hash")
    grade = info.get("grade")
    if "end_state_hash" in last:
        if last["end_state_hash"] != end_hash:
            divergences.append(f"end_state_hash recorded {last['end_state_hash']}, replayed {end_hash}")
        if last.get("grade") != grade:
            diffs = sorted(k for k in set(last.get("grade") or {}) | set(grade or {}) if (last.get("grade") or {}).get(k) != (grade or {}).get(k))
            divergences.append(f"grade differs in {diffs}")
    else:
        divergences.append("the recorded episode has no terminal line (it never ended)")
    return ReplayResult(first["episode_id"], first["task_id"], not divergences, end_hash, grade, divergences)


def replay(records: Iterable[Mapping[str, Any]]) -> list[ReplayResult]:
    """Replay every episode in ``records`` (trace lines, any number of episodes), each on an env
    of its domain and its task's split."""
    envs: dict[tuple[str, str], Any] = {}
    out = []
    for ep in episodes(dict(r) for r in records):
        out.append(replay_episode(ep, replay_env(envs, ep[0]["domain"], ep[0]["task_id"])))
    return out
