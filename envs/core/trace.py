"""The trace: one JSONL line per tool call, written with orjson.

Fields: ``episode_id``, ``domain``, ``task_id``, ``seed``, ``step``, ``clock`` (simulated time
before the call), ``tool``, ``args``, ``result_status``, ``error_code``, ``changed_ids``
(``table:id``) and ``result`` (what the tool returned). The line of the step that ends the
episode also carries ``end_state_hash`` and ``grade`` so a replay can be checked against it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from backoffice.envs.core.canonical import dumps, loads

TRACE_FIELDS = (
    "episode_id", "domain", "task_id", "seed", "step", "clock", "tool", "args",
    "result_status", "error_code", "changed_ids", "result",
)


class TraceWriter:
    """Appends trace records to a JSONL file, opened lazily and flushed per episode."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fh: IO[bytes] | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
        self._fh.write(dumps(record) + b"\n")

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """All records of a trace file (a torn last line is ignored)."""
    records = []
    with open(path, "rb") as fh:
        for line in fh:
            try:
                records.append(loads(line))
            except Exception:
                break
    return records


def episodes(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Group trace records by ``episode_id`` (first-seen order), each sorted by step.

    A reset to the same task and seed reuses an episode id, so a new episode also starts
    whenever ``step`` goes back to 1.
    """
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    run: dict[str, int] = defaultdict(int)
    order: list[tuple[str, int]] = []
    for rec in records:
        eid = rec["episode_id"]
        if rec["step"] == 1:
            run[eid] += 1
        key = (eid, run[eid])
        if key not in groups:
            order.append(key)
        groups[key].append(rec)
    for key in order:
        yield sorted(groups[key], key=lambda r: r["step"])
