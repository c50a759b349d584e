"""Evaluation: run policies over a split's tasks and write one JSONL line per episode.

Output is resumable: episodes already present in ``out`` (by run id, agent, domain, task and
attempt) are skipped, and a torn last line left by a killed run is dropped before appending.
With ``workers > 1`` episodes run in worker processes; the lines are identical whatever the
worker count, only their order in the file may differ.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps, loads

RECORD_FIELDS = (
    "run_id", "agent", "agent_version", "domain", "task_id", "seed", "split", "attempt", "pass", "score",
    "failure_codes", "checks", "process_metrics", "steps", "shaped_reward", "judge",
)


@dataclass(frozen=True)
class Job:
    """One episode to run."""

    domain: str
    agent: str
    task_id: str
    split: str
    run_id: str
    attempt: int = 0

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        return (self.run_id, self.agent, self.domain, self.task_id, self.attempt)


_ENVS: dict[str, Any] = {}


def run_job(job: Job) -> dict[str, Any]:
    """Run one episode and return its evaluation record."""
    from backoffice.envs import make_native
    from backoffice.training.policies import get_policy
    from backoffice.training.rollout import run_episode

    env = _ENVS.get(job.domain)
    if env is None:
        env = _ENVS[job.domain] = make_native(job.domain, split=job.split)
    policy = get_policy(job.domain, job.agent, seed=job.attempt)
    res = run_episode(env, policy, task_id=job.task_id)
    grade = res.grade
    key = env.release.answer_key(job.task_id)
    record = {
        "run_id": job.run_id, "agent": job.agent, "agent_version": getattr(policy, "version", "1"),
        "domain": job.domain, "task_id": job.task_id, "seed": res.seed, "split": job.split,
        "attempt": job.attempt, "pass": grade["pass"], "score": grade["score"],
        "failure_codes": grade["failure_codes"], "checks": grade["checks"],
        "process_metrics": grade["process_metrics"], "steps": res.steps,
        "shaped_reward": res.info["shaped_reward"], "judge": res.info.get("judge"),
        "end_state_hash": res.info["end_state_hash"],
    }
    record.update(env.domain.report_fields(key, grade))
    return record


def plan_jobs(domains: Sequence[str], agents: Sequence[str], split: str, run_id: str | None = None,
              limit: int | None = None, attempts: int = 1) -> list[Job]:
    """Every (domain, agent, task, attempt) of a split, in a fixed order."""
    from backoffice.envs.core.release import load_release

    jobs = []
    for domain in domains:
        ids = load_release(domain).split_ids[split]
        if limit is not None:
            ids = ids[:limit]
        for agent in agents:
            rid = run_id or f"{agent}-{split}"
            jobs.extend(Job(domain, agent, t, split, rid, a) for t in ids for a in range(attempts))
    return jobs


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of an evaluation file; a torn (unparseable) last line is ignored."""
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(loads(line))
        except Exception:
            break
    return out


def _truncate_torn_tail(path: Path) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)


def job_key(record: dict[str, Any]) -> tuple[str, str, str, str, int]:
    return (record["run_id"], record["agent"], record["domain"], record["task_id"], record.get("attempt", 0))


def evaluate(
    jobs: Sequence[Job],
    out: Path | None = None,
    workers: int = 1,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``jobs`` (skipping those already in ``out``); return every record of these jobs."""
    done: dict[tuple, dict[str, Any]] = {}
    fh = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        _truncate_torn_tail(out)
        done = {job_key(r): r for r in read_records(out)}
        fh = open(out, "ab")
    todo = [j for j in jobs if j.key not in done]
    try:
        for record in _run(todo, workers):
            done[job_key(record)] = record
            if fh is not None:
                fh.write(dumps(record) + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            if on_record is not None:
                on_record(record)
    finally:
        if fh is not None:
            fh.close()
    return [done[j.key] for j in jobs if j.key in done]


def _run(jobs: Sequence[Job], workers: int) -> Iterable[dict[str, Any]]:
    if workers <= 1 or len(jobs) < 2:
        for job in jobs:
            yield run_job(job)
        return
    chunk = max(1, min(32, len(jobs) // (workers * 4)))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(run_job, jobs, chunksize=chunk)
