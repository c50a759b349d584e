"""Evaluating LLM agents (``backoffice eval --policy openai:<model>``) so that the run survives
its endpoint.

- :class:`LLMRunner`: the evaluation :class:`~backoffice.training.eval.evaluate.Runner` for chat
  agents. An episode whose endpoint fails (a persistent 5xx, a 400 "context length exceeded", a
  timeout, after the client's retries) gets a record with an ``error`` object (``type``,
  ``message``, ``status_code``, ``step``), ``pass: false`` and ``score: 0.0``, and the run goes
  on. Every chat record also has ``llm``: requests, summed token ``usage`` and
  ``finish_reasons``. With ``transcript_path`` each episode's transcript (one canonical JSON line
  per message, joined to the trace by ``episode_id`` and ``step``) is appended there.
- :class:`ThreadExecutor`: ``--concurrency N`` episodes at once in threads (LLM episodes wait on
  the network, not the CPU); each thread has its own env.
- :func:`error_summary`: the one line the CLI prints (and exits 1 on) when episodes errored.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps
from backoffice.training.agents.chat import ChatAgent, EndpointError
from backoffice.training.eval.evaluate import DIFF_KEY, TRACE_KEY, Job, PoolExecutor, Record, Runner, default_make_policy


def llm_make_policy(domain: str, agent: str, seed: int, timeout: float | None = None, retries: int | None = None) -> Any:
    """``openai:<model>`` with the given client timeout and retries; any other name as usual."""
    if agent.startswith("openai:"):
        from backoffice.training.agents.openai_chat import openai_policy

        return openai_policy(agent.split(":", 1)[1], seed=seed, timeout=timeout, max_retries=retries)
    return default_make_policy(domain, agent, seed)


@dataclass(frozen=True)
class LLMRunner(Runner):
    """A :class:`Runner` that turns endpoint failures into error records and adds LLM stats
    (see the module docstring); picklable like its parent."""

    transcript_path: str | None = None

    def __call__(self, job: Job) -> Record:
        created: list[Any] = []

        def make_policy(domain: str, agent: str, seed: int) -> Any:
            created.append(self.make_policy(domain, agent, seed))
            return created[-1]

        inner = Runner(self.make_env, make_policy, self.keep_trace)
        try:
            record = inner(job)
        except EndpointError as exc:
            record = self.error_record(job, exc, created[-1] if created else None)
        agent = created[-1] if created else None
        if isinstance(agent, ChatAgent):
            record["llm"] = agent.stats()
            if self.transcript_path is not None and agent.transcript:
                record["transcript_path"] = self.write_transcript(job, agent)
        return record

    def error_record(self, job: Job, exc: EndpointError, agent: Any) -> Record:
        """The record of an episode the endpoint cut short: no grade, an ``error`` object."""
        unwrapped = self.env(job.domain, job.split).unwrapped
        record: Record = {
            "run_id": job.run_id, "agent": job.agent, "agent_version": str(getattr(agent, "version", "1")),
            "domain": job.domain, "task_id": job.task_id, "seed": unwrapped.release.task(job.task_id).seed,
            "split": job.split, "attempt": job.attempt, "pass": False, "score": 0.0, "failure_codes": [],
            "checks": [], "process_metrics": {}, "steps": exc.step, "shaped_reward": 0.0, "judge": None,
            "end_state_hash": None, "error": exc.describe(),
        }
        if self.keep_trace:
            record[TRACE_KEY] = unwrapped.trace
            record[DIFF_KEY] = {}
        return record

    def write_transcript(self, job: Job, agent: ChatAgent) -> str:
        """Append the episode's transcript in one write (safe across threads and processes)."""
        episode = f"{job.task_id}#{job.attempt}"
        head = {"run_id": job.run_id, "agent": job.agent, "domain": job.domain, "task_id": job.task_id,
                "attempt": job.attempt, "episode": episode}
        data = b"".join(dumps({**head, "index": i, **m}) + b"\n" for i, m in enumerate(agent.transcript))
        path = Path(self.transcript_path)  # type: ignore[arg-type]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return str(path)


def llm_runner(base: Runner | None, timeout: float | None = None, retries: int | None = None,
               transcript_path: str | Path | None = None) -> LLMRunner:
    """The :class:`LLMRunner` the CLI uses: ``base``'s env factory (e.g. with a judge)."""
    base = base or Runner()
    # keep_trace with a transcript: evaluate(trace=...) would otherwise rebuild a plain Runner
    return LLMRunner(base.make_env, functools.partial(llm_make_policy, timeout=timeout, retries=retries),
                     base.keep_trace or transcript_path is not None,
                     str(transcript_path) if transcript_path is not None else None)


class ThreadExecutor(PoolExecutor):
    """Runs jobs in ``workers`` threads of this process (an :class:`~backoffice.training.eval.evaluate.Executor`)."""

    def __init__(self, workers: int = 4):
        super().__init__(workers)

    def _start(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="backoffice-eval")

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[Record]:
        pending: set[Future[Record]] = {self._running().submit(runner, job) for job in jobs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def error_summary(records: Sequence[Record]) -> str | None:
    """``"3 of 20 episodes errored (endpoint): APIStatusError x3 (HTTP 500); first: <task>"``, or ``None``."""
    errored = [r for r in records if r.get("error")]
    if not errored:
        return None
    kinds: dict[str, int] = {}
    for r in errored:
        err = r["error"]
        label = err["type"] + (f" (HTTP {err['status_code']})" if err.get("status_code") else "")
        kinds[label] = kinds.get(label, 0) + 1
    described = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
    first = errored[0]
    return (f"{len(errored)} of {len(records)} episodes errored (endpoint): {described}; "
            f"first: {first['domain']} {first['task_id']} at step {first['error']['step']}: {first['error']['message'][:120]}")
