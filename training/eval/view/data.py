"""What the episode viewer shows, as plain data: evaluation records (read as ``backoffice report``
reads them), the overview (:func:`backoffice.training.eval.report.build_report`), a compact column
index of every episode for the list, and per episode its record, trace, diff and problems.

Traces and diffs are read where the records point at them (``trace_location``,
``diff_location``, written by ``backoffice eval --trace``). A location whose file moved is looked
up again under ``--trace`` (a folder: the same file name in it; a ``.jsonl`` file: that trace
file and its diffs beside it). A record without a location has no trace and still shows its
grade; a location that cannot be read (missing file, unreadable or mismatched line) is named as a
problem of that episode, never skipped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from backoffice.envs.core.canonical import loads
from backoffice.training.eval.evaluate import job_key, scan_records, trace_files
from backoffice.training.eval.report import build_report

Record = dict[str, Any]

#: JavaScript numbers are doubles: integers beyond this lose digits, so they are embedded as text
_JS_SAFE = 2**53 - 1


@dataclass
class Loaded:
    """Records of the given files, deduplicated by job key like :func:`evaluate.load_records`
    (the first file that holds an episode wins), with the problems met on the way."""

    records: list[Record]
    sources: list[str]
    problems: list[str] = field(default_factory=list)
    #: per record, the file it was read from (relative trace paths are looked up beside it)
    origins: list[Path] = field(default_factory=list)


def load(files: Sequence[str | Path]) -> Loaded:
    """Read evaluation files line by line as ``backoffice report`` does (:func:`scan_records`: a
    torn last line ignored), but skip an unreadable or mistyped line and name it as a problem
    (the page still shows every good record)."""
    seen: dict[Any, tuple[Record, Path]] = {}
    problems: list[str] = []
    for f in files:
        path = Path(f)
        if not path.exists():
            problems.append(f"{path}: no such file")
            continue
        data = path.read_bytes()
        torn = data.rsplit(b"\n", 1)[-1]
        if torn.strip():
            problems.append(f"{path}: torn last line ignored ({len(torn)} bytes without a newline)")
        for number, rec, problem in scan_records(data):
            if rec is None:
                problems.append(f"{path}:{number}: {problem}, skipped")
                continue
            seen.setdefault(job_key(rec), (rec, path))
    return Loaded([r for r, _ in seen.values()], [str(f) for f in files], problems, [p for _, p in seen.values()])


class _Files:
    """Open trace and diff files, each opened once; a missing file is remembered."""

    def __init__(self, trace: Path | None):
        self.trace = trace
        self.handles: dict[Path, IO[bytes] | None] = {}

    def resolve(self, written: str, kind: str, origin: Path | None = None) -> tuple[Path | None, list[Path]]:
        """The file a location's ``path`` names: as written if it exists (a relative path: from the
        working directory, else from the records file's folder or the folders above it, where
        the evaluation may have run), else under ``--trace``."""
        p = Path(written)
        tried = [p]
        if not p.is_absolute() and origin is not None:
            tried += [base / p for base in list(origin.resolve().parents)[:3]]
        if self.trace is not None:
            if self.trace.suffix == ".jsonl":
                tried.append(trace_files(self.trace)[0 if kind == "trace" else 1])
            else:
                tried.append(self.trace / p.name)
        for cand in tried:
            if cand in self.handles:
                if self.handles[cand] is not None:
                    return cand, tried
                continue
            try:
                self.handles[cand] = open(cand, "rb")
                return cand, tried
            except OSError:
                self.handles[cand] = None
        return None, tried

    def read(self, path: Path, offset: int, lines: int) -> list[bytes]:
        fh = self.handles[path]
        assert fh is not None
        fh.seek(offset)
        return [fh.readline() for _ in range(lines)]

    def close(self) -> None:
        for fh in self.handles.values():
            if fh is not None:
                fh.close()


def _trace_of(rec: Mapping[str, Any], files: _Files, origin: Path | None = None) -> tuple[list[Any] | None, str | None]:
    loc = rec.get("trace_location")
    if not loc:
        return None, None
    try:
        path, tried = files.resolve(str(loc["path"]), "trace", origin)
        offset, count = int(loc["offset"]), int(loc["lines"])
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"trace_location is malformed ({exc!r})"
    if path is None:
        return None, f"trace file not found: {', '.join(map(str, dict.fromkeys(tried)))}"
    out: list[Any] = []
    for i, line in enumerate(files.read(path, offset, count)):
        if not line.endswith(b"\n"):
            return out or None, f"trace {path} is cut short: {i} of {count} lines at byte {offset}"
        try:
            step = loads(line)
        except Exception as exc:
            return out or None, f"trace {path}: line {i + 1} of the episode (from byte {offset}) is unreadable ({exc})"
        if not isinstance(step, dict) or step.get("task_id") != rec.get("task_id") or step.get("step") != i + 1:
            what = f"task {step.get('task_id')!r} step {step.get('step')!r}" if isinstance(step, dict) else type(step).__name__
            return out or None, (f"trace {path}: line {i + 1} at byte {offset} is not step {i + 1} of {rec.get('task_id')} "
                                 f"(found {what}): the file changed since the evaluation")
        out.append(step)
    return out, None


def _diff_of(rec: Mapping[str, Any], files: _Files, origin: Path | None = None) -> tuple[Any, str | None]:
    loc = rec.get("diff_location")
    if not loc:
        return None, None
    try:
        path, tried = files.resolve(str(loc["path"]), "diff", origin)
        offset = int(loc["offset"])
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"diff_location is malformed ({exc!r})"
    if path is None:
        return None, f"diff file not found: {', '.join(map(str, dict.fromkeys(tried)))}"
    line = files.read(path, offset, 1)[0]
    try:
        row = loads(line)
    except Exception as exc:
        return None, f"diff {path}: the line at byte {offset} is unreadable ({exc})"
    want = {"run_id": rec.get("run_id"), "agent": rec.get("agent"), "task_id": rec.get("task_id"), "attempt": rec.get("attempt", 0)}
    if not isinstance(row, dict) or any(row.get(k) != v for k, v in want.items()):
        return None, f"diff {path}: the line at byte {offset} belongs to another episode: the file changed since the evaluation"
    return row.get("diff"), None


class _Briefs:
    """Task briefs (the public start of a task) from the installed releases, where they exist."""

    def __init__(self) -> None:
        self.releases: dict[str, Any] = {}
        self.briefs: dict[str, Any] = {}

    def key(self, domain: str, task_id: str) -> str | None:
        k = f"{domain}/{task_id}"
        if k in self.briefs:
            return k if self.briefs[k] is not None else None
        brief = None
        if domain not in self.releases:
            try:
                from backoffice.envs.core.release import load_release

                self.releases[domain] = load_release(domain)
            except Exception:
                self.releases[domain] = None
        release = self.releases[domain]
        if release is not None and task_id in release.tasks:
            try:
                brief = release.task(task_id).brief()
            except Exception:
                brief = None
        self.briefs[k] = brief
        return k if brief is not None else None


def js_safe(value: Any) -> Any:
    """``value`` with integers that JavaScript would round (beyond 2^53) turned into text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_JS_SAFE <= value <= _JS_SAFE else str(value)
    if isinstance(value, dict):
        return {k: js_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_safe(v) for v in value]
    return value


def _dim(values: Iterable[Any]) -> tuple[list[str], dict[str, int]]:
    names = sorted({str(v) for v in values})
    return names, {n: i for i, n in enumerate(names)}


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def build(files: Sequence[str | Path], trace: str | Path | None = None, loaded: Loaded | None = None) -> dict[str, Any]:
    """Everything the page embeds: ``meta``, ``report`` (as ``backoffice report --json``
    prints it, without plots), ``index`` (one column per field, one entry per episode),
    ``details`` (per episode: record, trace, diff, problems) and ``briefs``."""
    loaded = loaded if loaded is not None else load(files)
    records = loaded.records
    report = build_report(records) if records else None
    dims: dict[str, list[str]] = {}
    lookup: dict[str, dict[str, int]] = {}
    for name, getter in (("domain", lambda r: [r.get("domain")]), ("agent", lambda r: [r.get("agent")]),
                         ("split", lambda r: [r.get("split")]), ("run", lambda r: [r.get("run_id")]),
                         ("code", lambda r: _listed(r.get("failure_codes"))), ("tag", lambda r: _listed(r.get("defect_tags"))),
                         ("outcome", lambda r: _listed(r.get("outcome_class")))):
        dims[name], lookup[name] = _dim(v for r in records for v in getter(r))
    files_ = _Files(Path(trace) if trace is not None else None)
    briefs = _Briefs()
    cols: dict[str, list[Any]] = {k: [] for k in ("domain", "agent", "split", "run", "task", "attempt", "pass", "score",
                                                    "steps", "codes", "tags", "outcome", "trace")}
    details: list[dict[str, Any]] = []
    trace_problems = 0
    try:
        for rec, origin in zip(records, loaded.origins):
            cols["domain"].append(lookup["domain"][str(rec.get("domain"))])
            cols["agent"].append(lookup["agent"][str(rec.get("agent"))])
            cols["split"].append(lookup["split"][str(rec.get("split"))])
            cols["run"].append(lookup["run"][str(rec.get("run_id"))])
            cols["task"].append(str(rec.get("task_id")))
            cols["attempt"].append(int(rec.get("attempt", 0)))
            cols["pass"].append(1 if rec.get("pass") else 0)
            cols["score"].append(float(rec.get("score", 0.0)))
            cols["steps"].append(int(rec.get("steps", 0)))
            cols["codes"].append(sorted({lookup["code"][c] for c in _listed(rec.get("failure_codes"))}))
            cols["tags"].append(sorted({lookup["tag"][c] for c in _listed(rec.get("defect_tags"))}))
            outcome = _listed(rec.get("outcome_class"))
            cols["outcome"].append(lookup["outcome"][outcome[0]] if outcome else -1)
            steps, trace_problem = _trace_of(rec, files_, origin)
            diff, diff_problem = _diff_of(rec, files_, origin)
            problems = [p for p in (trace_problem, diff_problem) if p]
            trace_problems += bool(problems)
            # 0: no trace recorded, 1: trace read, 2: a problem
            cols["trace"].append(2 if problems else (1 if steps is not None else 0))
            details.append({
                # the record's own integers (seed) shallowly: walking 50,000 records' checks costs seconds,
                # and nested record values are small (cents, counts); traces and diffs are walked whole
                "record": {k: js_safe(v) if isinstance(v, int) else v for k, v in rec.items()},
                "trace": js_safe(steps) if steps is not None else None,
                "diff": js_safe(diff) if diff is not None else None,
                "problems": problems,
                "brief": briefs.key(str(rec.get("domain")), str(rec.get("task_id"))),
                "has_trace_location": bool(rec.get("trace_location")),
                "has_diff_location": bool(rec.get("diff_location")),
            })
    finally:
        files_.close()
    meta = {
        "sources": loaded.sources, "episodes": len(records), "problems": loaded.problems,
        "episodes_with_trace_problems": trace_problems, "trace_dir": None if trace is None else str(trace),
    }
    return {
        "meta": meta, "report": js_safe(report) if report is not None else None, "dims": dims,
        "index": cols, "details": details, "briefs": {k: js_safe(v) for k, v in briefs.briefs.items() if v is not None},
    }
