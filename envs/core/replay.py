"""Replay a trace against its tasks and confirm the end-state hash and the grade."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.core.release import is_generated_id
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


def replay_episode(records: Sequence[Mapping[str, Any]], env: Any = None) -> ReplayResult:
    """Re-run one episode's calls; compare each step's outcome and the recorded end. Without
    ``env``, on a native env of the task's own split."""
    first = records[0]
    env = env if env is not None else replay_env({}, first["domain"], first["task_id"])
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
    """Replay every episode in ``records`` (trace lines, any number of episodes), each on an env
    of its domain and its task's split."""
    envs: dict[tuple[str, str], Any] = {}
    out = []
    for ep in episodes(dict(r) for r in records):
        out.append(replay_episode(ep, replay_env(envs, ep[0]["domain"], ep[0]["task_id"])))
    return out
