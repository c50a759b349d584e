"""Replay a trace against its tasks and confirm the end-state hash and the grade."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.core.trace import episodes

_INVALID = "<not an action>"  # any malformed action replays as an invalid one


@dataclass
class ReplayResult:
    episode_id: str
    task_id: str
    ok: bool
    end_state_hash: str | None
    grade: dict[str, Any] | None
    divergences: list[str] = field(default_factory=list)


def split_of(domain: str, task_id: str) -> str:
    """The split whose env serves ``task_id`` (an env serves its own split only)."""
    from backoffice.envs.core.release import is_generated_id, load_release

    return "generated" if is_generated_id(task_id) else load_release(domain).task(task_id).split


def replay_episode(records: Sequence[Mapping[str, Any]], env: Any = None) -> ReplayResult:
    """Re-run one episode's calls; compare each step's outcome and the recorded end. ``env``
    must serve the task's split (default: a fresh native env of it)."""
    from backoffice.envs import make_native

    first = records[0]
    env = env if env is not None else make_native(first["domain"], split=split_of(first["domain"], first["task_id"]))
    env.reset(seed=first["seed"], options={"task_id": first["task_id"]})
    divergences: list[str] = []
    info: dict[str, Any] = {}
    for rec in records:
        action = {"tool": rec["tool"], "args": rec["args"]} if rec["tool"] is not None and rec["args"] is not None else _INVALID
        if rec["error_code"] == "invalid_action":
            action = _INVALID
        _, _, terminated, truncated, info = env.step(action)
        got = env._trace[-1]
        for name in ("result_status", "error_code", "changed_ids", "clock"):
            if got[name] != rec[name]:
                divergences.append(f"step {rec['step']}: {name} recorded {rec[name]!r}, replayed {got[name]!r}")
        if terminated or truncated:
            break
    last = records[-1]
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
    """Replay every episode in ``records`` (trace lines, any number of episodes)."""
    from backoffice.envs import make_native

    envs: dict[tuple[str, str], Any] = {}
    out = []
    for ep in episodes(dict(r) for r in records):
        key = (ep[0]["domain"], split_of(ep[0]["domain"], ep[0]["task_id"]))
        if key not in envs:
            envs[key] = make_native(key[0], split=key[1])
        out.append(replay_episode(ep, envs[key]))
    return out
