"""Evaluation: run policies over a split's tasks and write one JSONL line per episode.

The pieces, each replaceable:

- :class:`Job`: one episode to run (domain, agent, task, attempt, run id).
- :class:`Runner`: a picklable callable that turns a job into its record, building envs and
  policies through two factories (by default the installed domains and built-in policies;
  tests plug in the toy domain the same way).
- an executor (:class:`SerialExecutor`, :class:`ProcessExecutor`, :class:`RayExecutor` or
  anything with the same interface, see :class:`Executor`): where the runner runs.
- :func:`evaluate`: resumable output. Episodes already in ``out`` (by run id, agent, domain,
  task and attempt) are skipped, a torn last line left by a killed run is cut off before
  appending, and no episode is ever written twice. Each record is one ``write`` of one line,
  flushed at once, so a ``SIGKILL`` loses at most the line being written.

A record depends only on its job: the lines are identical whatever the worker count or backend,
only their order in the file differs (compare them sorted).
"""

from __future__ import annotations

import fcntl
import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from backoffice.envs.core.canonical import dumps, loads

Record = dict[str, Any]
JobKey = tuple[str, str, str, str, int]

#: Fields every evaluation record has (plus the domain's report fields and ``end_state_hash``).
RECORD_FIELDS = (
    "run_id", "agent", "agent_version", "domain", "task_id", "seed", "split", "attempt", "pass", "score",
    "failure_codes", "checks", "process_metrics", "steps", "shaped_reward", "judge", "end_state_hash",
)

#: Key under which a runner with ``keep_trace=True`` returns the episode's trace lines.
TRACE_KEY = "_trace"
#: ... and the episode's diff.
DIFF_KEY = "_diff"


@dataclass(frozen=True)
class Job:
    """One episode to run: ``agent`` on task ``task_id`` of ``domain``, attempt ``attempt``."""

    domain: str
    agent: str
    task_id: str
    split: str
    run_id: str
    attempt: int = 0

    @property
    def key(self) -> JobKey:
        """The identity of the episode in an output file."""
        return (self.run_id, self.agent, self.domain, self.task_id, self.attempt)


def job_key(record: Mapping[str, Any]) -> JobKey:
    """The :attr:`Job.key` of a written record."""
    return (record["run_id"], record["agent"], record["domain"], record["task_id"], record.get("attempt", 0))


# -- building envs and policies ---------------------------------------------------------------
def default_make_env(domain: str, split: str, judge: str = "rubric") -> Any:
    """A native env of an installed domain (``judge``: ``rubric`` or ``model:<name>``)."""
    from backoffice.envs import make_native

    return make_native(domain, split=split, judge=judge)


def default_make_policy(domain: str, agent: str, seed: int) -> Any:
    """A built-in policy by name (``oracle``, ``random``, ``noop``, ``wrong:<code>``)."""
    from backoffice.training.policies import get_policy

    return get_policy(domain, agent, seed=seed)


def default_task_ids(domain: str, split: str) -> Sequence[str]:
    """The released task ids of a split of an installed domain."""
    from backoffice.envs.core.release import load_release

    return load_release(domain).split_ids[split]


def _factory_key(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """A key naming a factory that survives pickling (a partial unpickles as a new object)."""
    if isinstance(fn, functools.partial):
        return (*_factory_key(fn.func), fn.args, tuple(sorted(fn.keywords.items())))
    return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", repr(fn)))


_LOCAL = threading.local()  # per process and thread: one env per (factory, domain, split)


@dataclass(frozen=True)
class Runner:
    """Runs one job and returns its record; picklable, so it runs in any worker process.

    Attributes:
        make_env: ``(domain, split) -> native env``; built once per process and thread, and
            reused (an env runs one episode at a time).
        make_policy: ``(domain, agent, seed) -> Policy``; the attempt number is the seed.
        keep_trace: also return the episode's trace lines under :data:`TRACE_KEY`.
    """

    make_env: Callable[[str, str], Any] = default_make_env
    make_policy: Callable[[str, str, int], Any] = default_make_policy
    keep_trace: bool = False

    def env(self, domain: str, split: str) -> Any:
        """The cached env of this process (and thread) for ``domain`` and ``split``."""
        envs: dict[tuple[Any, ...], Any] = _LOCAL.__dict__.setdefault("envs", {})
        key = (*_factory_key(self.make_env), domain, split)
        env = envs.get(key)
        if env is None:
            env = envs[key] = self.make_env(domain, split)
        return env

    def __call__(self, job: Job) -> Record:
        from backoffice.training.eval.rollout import run_episode

        env = self.env(job.domain, job.split)
        policy = self.make_policy(job.domain, job.agent, job.attempt)
        res = run_episode(env, policy, task_id=job.task_id)
        grade = res.grade
        unwrapped = env.unwrapped
        record: Record = {
            "run_id": job.run_id, "agent": job.agent, "agent_version": str(getattr(policy, "version", "1")),
            "domain": job.domain, "task_id": job.task_id, "seed": res.seed, "seed_str": str(res.seed), "split": job.split,
            "attempt": job.attempt, "pass": bool(grade["pass"]), "score": grade["score"],
            "failure_codes": grade["failure_codes"], "checks": grade["checks"],
            "process_metrics": grade["process_metrics"], "steps": res.steps,
            "shaped_reward": res.info["shaped_reward"], "judge": res.info.get("judge"),
            "end_state_hash": res.info["end_state_hash"],
        }
        key = unwrapped.release.answer_key(job.task_id)
        record.update(unwrapped.domain.report_fields(key, grade))
        if self.keep_trace:
            record[TRACE_KEY] = unwrapped.trace
            record[DIFF_KEY] = res.info["diff"]
        return record

    def run_batch(self, jobs: Sequence[Job]) -> list[Record]:
        """Run several jobs in a row (one round trip to a worker)."""
        return [self(job) for job in jobs]

    def run_batch_encoded(self, jobs: Sequence[Job]) -> list[bytes]:
        """:meth:`run_batch` with each record as canonical JSON: between processes, bytes
        travel several times faster than pickled nested dicts."""
        return [dumps(self(job)) for job in jobs]


def run_job(job: Job) -> Record:
    """Run one job with the default runner (installed domains, built-in policies)."""
    return Runner()(job)


def plan_jobs(
    domains: Sequence[str],
    agents: Sequence[str],
    split: str,
    run_id: str | None = None,
    limit: int | None = None,
    attempts: int = 1,
    task_ids: Callable[[str, str], Sequence[str]] = default_task_ids,
) -> list[Job]:
    """Every (domain, agent, task, attempt) of a split, in a fixed order.

    The run id defaults to ``<agent>-<split>`` so that reruns find their earlier records.
    """
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    jobs: list[Job] = []
    for domain in domains:
        ids = list(task_ids(domain, split))
        if limit is not None:
            ids = ids[:limit]
        for agent in agents:
            rid = run_id or f"{agent}-{split}"
            jobs.extend(Job(domain, agent, t, split, rid, a) for t in ids for a in range(attempts))
    return jobs


# -- executors --------------------------------------------------------------------------------
class Executor(Protocol):
    """Where jobs run. Used as a context manager (entering it twice must be harmless: the
    outer ``with`` owns the workers)."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[Record | bytes]:
        """Run every job with ``runner``; yield each record as soon as it is ready, in any
        order, as a dict or as its canonical JSON (what :meth:`Runner.run_batch_encoded`
        returns: cheaper to move between processes and written as is)."""
        ...


def batches(jobs: Sequence[Job], workers: int, most: int = 64) -> list[list[Job]]:
    """Split ``jobs`` into batches small enough to balance ``workers``, large enough to
    amortise a round trip. Jobs are grouped by domain and task first (every agent and attempt
    of a task in the same batch, neighbouring tasks together), so a worker parses the release
    blocks of its own tasks rather than every worker parsing every block."""
    ordered = sorted(jobs, key=lambda j: (j.domain, j.task_id))  # stable: agents keep their order
    size = max(1, min(most, len(ordered) // max(1, workers * 8)))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


class SerialExecutor:
    """Runs every job in this process, in order."""

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[Record]:
        for job in jobs:
            yield runner(job)


def _noop() -> None:
    return None


class PoolExecutor:
    """What the pooled executors share: one pool, started on the first ``__enter__`` (the
    context is re-entrant: the CLI starts it before :func:`evaluate` enters it again) and shut
    down on the last ``__exit__``. Subclasses say how the pool starts (:meth:`_start`)."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self._pool: Any = None
        self._depth = 0

    def _start(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def __enter__(self) -> Any:
        self._depth += 1
        if self._pool is None:
            self._pool = self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth <= 0 and self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _running(self) -> Any:
        if self._pool is None:
            raise RuntimeError("use the executor as a context manager")
        return self._pool


class ProcessExecutor(PoolExecutor):
    """Runs jobs in ``workers`` local processes (``concurrent.futures``), in batches.

    Workers start on ``__enter__`` (before any progress bar thread exists, which matters for
    ``fork``). ``mp_context`` is a :mod:`multiprocessing` start method; ``None`` uses ``fork``
    where available (fast, and workers see whatever the parent imported).
    """

    def __init__(self, workers: int = 2, mp_context: str | None = None):
        super().__init__(workers)
        self.mp_context = mp_context

    def _start(self) -> ProcessPoolExecutor:
        import multiprocessing

        method = self.mp_context or ("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context(method))
        pool.submit(_noop).result()  # start the workers now
        return pool

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[bytes]:
        pool = self._running()
        pending: set[Future[list[bytes]]] = {
            pool.submit(runner.run_batch_encoded, batch) for batch in batches(jobs, self.workers)
        }
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield from fut.result()


class RayExecutor:
    """Runs jobs as Ray tasks, in batches: on a running cluster (``address``: ``"auto"``,
    ``"ray://host:10001"`` ...) or, with ``address=None`` or ``"local"``, on a Ray instance
    started here with ``num_cpus`` CPUs. Needs the ``ray`` extra.

    ``runtime_env`` is passed to ``ray.init`` (e.g. ``{"env_vars": {"PYTHONPATH": ...}}`` so
    workers can import the modules that hold custom factories).
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 runtime_env: Mapping[str, Any] | None = None, batch_size: int = 16):
        self.address = None if address in (None, "", "local") else address
        self.num_cpus = num_cpus
        self.runtime_env = dict(runtime_env) if runtime_env else None
        self.batch_size = batch_size
        self._started = False
        self._depth = 0

    def __enter__(self) -> RayExecutor:
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError("Ray is not installed: pip install 'backoffice-gym[ray]'") from exc
        self._depth += 1
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                kwargs["num_cpus"] = self.num_cpus or os.cpu_count() or 1
            if self.runtime_env:
                kwargs["runtime_env"] = self.runtime_env
            ray.init(address=self.address, **kwargs)
            self._started = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth <= 0 and self._started:
            import ray

            ray.shutdown()
            self._started = False

    def imap_unordered(self, runner: Runner, jobs: Sequence[Job]) -> Iterator[bytes]:
        import ray

        remote = ray.remote(_ray_batch)
        workers = int(ray.cluster_resources().get("CPU", 1))
        pending = [remote.remote(runner, batch) for batch in batches(jobs, workers, self.batch_size)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done[0])


def _ray_batch(runner: Runner, jobs: Sequence[Job]) -> list[bytes]:
    return runner.run_batch_encoded(jobs)


def make_executor(workers: int = 1, ray: str | None = None) -> Executor:
    """The executor the CLI flags name: Ray if ``ray`` is given (an address or ``"local"``),
    else processes when ``workers > 1``, else serial."""
    if ray is not None:
        return RayExecutor(ray, num_cpus=workers if workers > 1 else None)
    if workers > 1:
        return ProcessExecutor(workers)
    return SerialExecutor()


# -- resumable output -------------------------------------------------------------------------
class CorruptOutput(ValueError):
    """An evaluation file has an unreadable line that is not a torn last line."""


class OutputLocked(RuntimeError):
    """Another evaluation holds the output file."""


#: the type every record field a reader relies on must have (``bool`` is not a number here)
RECORD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "run_id": ((str,), "string"), "agent": ((str,), "string"), "domain": ((str,), "string"),
    "task_id": ((str,), "string"), "pass": ((bool,), "boolean"), "score": ((int, float), "number"),
    "failure_codes": ((list,), "list"), "steps": ((int,), "integer"),
}


def record_problem(record: Any) -> str | None:
    """What makes ``record`` unusable as an evaluation record (a missing or mistyped field,
    ``"pass": "yes"``), or ``None``."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    for field, (types, name) in RECORD_TYPES.items():
        if field not in record:
            return f"no {field!r} field (is this an evaluation file? traces go to `backoffice replay`)"
        value = record[field]
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            return f"field {field!r} is {value!r}, not a {name}"
    if not 0.0 <= float(record["score"]) <= 1.0:
        return f"field 'score' is {record['score']!r}, not in [0, 1]"
    attempt = record.get("attempt", 0)
    if not isinstance(attempt, int) or isinstance(attempt, bool):
        return f"field 'attempt' is {attempt!r}, not an int"
    return None


def scan_records(data: bytes) -> Iterator[tuple[int, Record | None, str | None]]:
    """``(line number, record, problem)`` for each complete non-blank line of an evaluation
    file's bytes: the record when the line is a well-typed one (problem ``None``), else ``None``
    and what is wrong ("unreadable record (...)" or "not an evaluation record: ..."). A torn
    last line (no newline at the end: the writer was killed mid-line) is not a line."""
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: b"" or a torn line
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except Exception as exc:
            yield number, None, f"unreadable record ({exc})"
            continue
        problem = record_problem(rec)
        yield (number, rec, None) if problem is None else (number, None, f"not an evaluation record: {problem}")


def read_records(path: str | Path, strict: bool = False) -> list[Record]:
    """Records of an evaluation file (:func:`scan_records`: a torn last line is ignored). A
    complete line that is unreadable or not a well-typed record (:func:`record_problem`) raises
    :class:`CorruptOutput` naming the file and line when ``strict``, else it is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for number, rec, problem in scan_records(path.read_bytes()):
        if rec is None:
            if strict:
                raise CorruptOutput(f"{path}:{number}: {problem}")
            continue
        out.append(rec)
    return out


def supersedes(new: Record, old: Record) -> bool:
    """Whether ``new`` replaces ``old`` for the same job: an errored episode (an ``error``
    object: the endpoint failed) is replaced by its retry, a graded one never is."""
    return bool(old.get("error"))


def drop_torn_tail(path: Path) -> int:
    """Cut a torn last line (bytes after the last newline) off ``path``; return bytes cut."""
    if not path.exists():
        return 0
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        # read back from the end until a newline (records are small; files may be large)
        pos, tail = size, b""
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            tail = fh.read(step) + tail
            nl = tail.rfind(b"\n")
            if nl >= 0:
                cut = pos + nl + 1
                break
        else:
            cut = 0
        if cut < size:
            fh.truncate(cut)
        return size - cut


class _Output:
    """The open evaluation file: exclusive lock, torn tail dropped, known keys loaded."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fh: IO[bytes] = open(path, "ab")
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise OutputLocked(f"{path} is being written by another evaluation: wait for it to finish, "
                               "or give this one another --out") from None
        self.records: dict[JobKey, Record] = {}
        try:
            drop_torn_tail(path)
            for rec in read_records(path, strict=True):
                key = job_key(rec)
                if key not in self.records or supersedes(rec, self.records[key]):
                    self.records[key] = rec
        except BaseException:
            self.fh.close()
            raise

    def write(self, line: bytes) -> None:
        """Append one record's canonical JSON as one whole line, in one write."""
        self.fh.write(line + b"\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()  # releases the lock


def evaluate(
    jobs: Sequence[Job],
    out: str | Path | None = None,
    workers: int = 1,
    on_record: Callable[[Record], None] | None = None,
    executor: Executor | None = None,
    runner: Runner | None = None,
    trace: str | Path | None = None,
    retry_errors: bool = True,
) -> list[Record]:
    """Run ``jobs`` (skipping those already in ``out``); return the record of every distinct
    job, in job order. With ``retry_errors`` (the default) an episode whose record in ``out``
    is errored (an ``error`` object: the endpoint failed) runs again, and its new record
    supersedes the errored one (which stays in the file, earlier).

    Args:
        jobs: what to run (duplicates run once).
        out: JSONL file to append to; resumable (see the module docstring).
        workers: processes, when no ``executor`` is given.
        on_record: called with each new record as it arrives (e.g. a progress bar).
        executor: where to run (default: :func:`make_executor` with ``workers``). It is
            entered and exited here.
        runner: how to run one job (default: installed domains, built-in policies).
        trace: also keep every new episode's trace and diff: a folder (``trace.jsonl`` and
            ``diffs.jsonl`` in it) or a ``.jsonl`` file (its diffs beside it, ``<name>.diffs.jsonl``).
            Each record then points at them: ``trace_location`` (``path``, byte ``offset``,
            ``lines``) and ``diff_location`` (``path``, ``offset``). The trace replays with
            ``backoffice replay``.
    """
    runner = runner or Runner()
    if trace is not None and not runner.keep_trace:
        runner = Runner(runner.make_env, runner.make_policy, keep_trace=True)
    output = _Output(Path(out)) if out is not None else None
    done: dict[JobKey, Record] = ({k: r for k, r in output.records.items() if not (retry_errors and r.get("error"))}
                                  if output is not None else {})
    todo: list[Job] = []
    seen: set[JobKey] = set(done)
    for job in jobs:
        if job.key not in seen:
            seen.add(job.key)
            todo.append(job)
    sinks = None
    try:
        if trace is not None and todo:
            sinks = _TraceSinks(*trace_files(trace))
        if todo:
            with executor or make_executor(workers) as ex:
                for item in ex.imap_unordered(runner, todo):
                    record, line = (loads(item), item) if isinstance(item, bytes) else (item, None)
                    trace_lines = record.pop(TRACE_KEY, None)
                    diff = record.pop(DIFF_KEY, None)
                    key = job_key(record)
                    if key in done:  # an executor must not return a job twice; never write it twice
                        continue
                    if sinks is not None and trace_lines is not None:
                        record.update(sinks.write(record, trace_lines, diff))
                        line = None  # re-encode with the locations
                    done[key] = record
                    if output is not None:
                        output.write(line if line is not None else dumps(record))
                    if on_record is not None:
                        on_record(record)
    finally:
        if output is not None:
            output.close()
        if sinks is not None:
            sinks.close()
    keys = dict.fromkeys(j.key for j in jobs)
    return [done[k] for k in keys if k in done]


def trace_files(trace: str | Path) -> tuple[Path, Path]:
    """``(trace file, diffs file)`` of a ``--trace`` argument: a folder or a ``.jsonl`` file."""
    path = Path(trace)
    if path.suffix == ".jsonl":
        return path, path.with_name(path.name[: -len(".jsonl")] + ".diffs.jsonl")
    return path / "trace.jsonl", path / "diffs.jsonl"


class _TraceSinks:
    """Appends episodes' trace lines and diffs; returns where each went (byte offsets)."""

    def __init__(self, trace_path: Path, diff_path: Path):
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        self.trace_path, self.diff_path = trace_path, diff_path
        self.trace_fh, self.diff_fh = open(trace_path, "ab"), open(diff_path, "ab")

    def write(self, record: Record, trace_lines: Sequence[Any], diff: Any) -> dict[str, Any]:
        t_off, d_off = self.trace_fh.tell(), self.diff_fh.tell()
        self.trace_fh.write(b"".join(dumps(t) + b"\n" for t in trace_lines))
        self.diff_fh.write(dumps({"run_id": record["run_id"], "agent": record["agent"], "domain": record["domain"],
                                  "task_id": record["task_id"], "attempt": record.get("attempt", 0), "diff": diff}) + b"\n")
        self.trace_fh.flush()
        self.diff_fh.flush()
        return {
            "trace_location": {"path": str(self.trace_path), "offset": t_off, "lines": len(trace_lines)},
            "diff_location": {"path": str(self.diff_path), "offset": d_off},
        }

    def close(self) -> None:
        self.trace_fh.close()
        self.diff_fh.close()


def read_located(location: Mapping[str, Any]) -> Any:
    """What a record's ``trace_location`` (the trace lines) or ``diff_location`` (the diff) points at."""
    with open(location["path"], "rb") as fh:
        fh.seek(int(location["offset"]))
        if "lines" in location:
            return [loads(fh.readline()) for _ in range(int(location["lines"]))]
        return loads(fh.readline())["diff"]


def sorted_lines(path: str | Path) -> list[bytes]:
    """The complete lines of an evaluation file, sorted: equal for equal runs whatever the
    worker count or backend."""
    data = Path(path).read_bytes()
    return sorted(line for line in data.split(b"\n")[:-1] if line.strip())


def load_records(paths: Iterable[str | Path], notes: list[str] | None = None, strict: bool = True) -> list[Record]:
    """Records of several evaluation files (torn last lines ignored), deduplicated by job key:
    the first record of an episode wins, except that an errored one is superseded by its retry
    (:func:`supersedes`). With ``strict`` (the default) a corrupt or mistyped line raises
    :class:`CorruptOutput` naming its file and line. ``notes``, when given, receives one line
    per file about the records it duplicated (``"b.jsonl: 12 records duplicate ..."``)."""
    seen: dict[JobKey, Record] = {}
    origin: dict[JobKey, str] = {}
    for p in paths:
        dups: dict[str, int] = {}
        retried = 0
        for rec in read_records(p, strict=strict):
            key = job_key(rec)
            if key not in seen:
                seen[key], origin[key] = rec, str(p)
            elif supersedes(rec, seen[key]):
                seen[key], origin[key] = rec, str(p)
                retried += 1
            else:
                dups[origin[key]] = dups.get(origin[key], 0) + 1
        if notes is not None:
            for first, n in dups.items():
                where = "earlier in the same file" if first == str(p) else f"in {first}"
                notes.append(f"{p}: {n} record(s) repeat an episode already read {where} (run, agent, domain, task, "
                             "attempt); the first was kept")
            if retried:
                notes.append(f"{p}: {retried} errored episode(s) superseded by their retry")
    return list(seen.values())
