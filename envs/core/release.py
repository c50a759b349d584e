"""Released seed states: tasks, snapshots and (separately) answer keys of one domain.

Layout of ``seeds/<domain>/``::

    manifest.json        generator version, per task: split, snapshot id and hash, file digests
    tasks.jsonl.gz       public task files (brief, allowed tools, task seed)
    snapshots.jsonl.gz   world snapshots (tables of rows); several tasks may share one
    keys.jsonl.gz        answer keys: read only by graders, never by tools or observations

Loaded releases and snapshots are cached per process so that every environment shares them.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import dumps, hash_obj, loads
from backoffice.envs.core.store import Snapshot

SPLITS = ("train", "heldout")
FILES = ("tasks.jsonl.gz", "snapshots.jsonl.gz", "keys.jsonl.gz")


@dataclass(frozen=True)
class Task:
    """The public part of a task: everything an agent may know before it starts."""

    task_id: str
    domain: str
    split: str
    seed: int
    snapshot_id: str
    instructions: str
    allowed_tools: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Task:
        return cls(
            task_id=d["task_id"], domain=d["domain"], split=d["split"], seed=int(d["seed"]),
            snapshot_id=d["snapshot_id"], instructions=d["instructions"],
            allowed_tools=tuple(d["allowed_tools"]), params=dict(d.get("params") or {}),
            max_steps=d.get("max_steps"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id, "domain": self.domain, "split": self.split, "seed": self.seed,
            "snapshot_id": self.snapshot_id, "instructions": self.instructions,
            "allowed_tools": list(self.allowed_tools), "params": dict(self.params),
            "max_steps": self.max_steps,
        }

    def brief(self) -> dict[str, Any]:
        """What the agent sees after reset (no split, no seed, no answer-key content)."""
        return {
            "task_id": self.task_id, "domain": self.domain, "instructions": self.instructions,
            "allowed_tools": list(self.allowed_tools), "params": dict(self.params),
        }


def is_generated_id(task_id: str) -> bool:
    """Whether ``task_id`` names a generated task (``<PREFIX>-G<n>``) rather than a released one."""
    head, sep, tail = task_id.rpartition("-G")
    return bool(sep and head and tail.isdigit())


def seeds_root() -> Path:
    """The folder holding released seed states (package data of ``backoffice.seeds``)."""
    return Path(str(resources.files("backoffice.seeds")))


#: records per gzip member of the blocked files (snapshots, keys): a process that touches one
#: task decompresses and parses one block, not the whole file
BLOCK_SIZE = 32
BLOCKED_FILES = ("snapshots.jsonl.gz", "keys.jsonl.gz")


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return buf.getvalue()


def write_jsonl_gz(path: Path, records: list[Any], block_size: int | None = None) -> tuple[str, list[int] | None]:
    """Write canonical JSONL, gzip'd reproducibly (mtime 0); return the digest of the content and,
    with ``block_size``, the byte offsets of its gzip members (one per ``block_size`` records, plus
    the end of the file), which any gzip reader reads as one stream."""
    lines = [dumps(r) + b"\n" for r in records]
    data = b"".join(lines)
    if block_size is None:
        path.write_bytes(_gzip(data))
        return hash_obj(data.decode()), None
    offsets, members = [0], []
    for start in range(0, len(lines), block_size):
        members.append(_gzip(b"".join(lines[start:start + block_size])))
        offsets.append(offsets[-1] + len(members[-1]))
    path.write_bytes(b"".join(members))
    return hash_obj(data.decode()), offsets


def read_jsonl_gz(path: Path) -> Iterator[Any]:
    with gzip.open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield loads(line)


def read_block(path: Path, offsets: list[int], block: int) -> list[Any]:
    """The records of one gzip member (``block``) of a file written with ``block_size``."""
    with open(path, "rb") as fh:
        fh.seek(offsets[block])
        raw = fh.read(offsets[block + 1] - offsets[block])
    return [loads(line) for line in gzip.decompress(raw).splitlines() if line.strip()]


class Release:
    """One domain's release, loaded lazily and shared (see :func:`load_release`)."""

    def __init__(self, domain: str, root: Path | None = None):
        self.domain = domain
        self.path = (root or seeds_root()) / domain
        manifest_path = self.path / "manifest.json"
        if not manifest_path.exists():
            raise FileNotFoundError(
                f"no release for domain {domain!r} at {self.path}; build it with `backoffice seeds build`"
            )
        self.manifest: dict[str, Any] = loads(manifest_path.read_bytes())
        self.tasks: dict[str, Task] = {}
        for rec in read_jsonl_gz(self.path / "tasks.jsonl.gz"):
            task = Task.from_json(rec)
            self.tasks[task.task_id] = task
        self.split_ids: dict[str, tuple[str, ...]] = {
            split: tuple(t.task_id for t in self.tasks.values() if t.split == split) for split in SPLITS
        }
        self.snapshot_hashes: dict[str, str] = {
            t["task_id"]: t["snapshot_hash"] for t in self.manifest["tasks"]
        }
        self._blocks: dict[str, dict[str, Any]] = self.manifest.get("blocks", {})
        self._raw_snapshots: dict[str, Any] | None = None
        self._snapshots: dict[str, Snapshot] = {}
        self._keys: dict[str, dict[str, Any]] = {}
        self._all_keys_read = False
        # the position of each snapshot and task in the files (written in manifest order)
        self._snapshot_pos: dict[str, int] = {}
        for entry in self.manifest["tasks"]:
            self._snapshot_pos.setdefault(entry["snapshot_id"], len(self._snapshot_pos))
        self._task_pos = {entry["task_id"]: i for i, entry in enumerate(self.manifest["tasks"])}
        #: what the envs sharing this release derive alike from its tasks, by kind (a task's
        #: brief, its start state's end-state distance ...): computed once per process, not
        #: once per env (``backoffice train`` steps eight envs of one release)
        self.derived: dict[str, dict[Any, Any]] = {}

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise KeyError(f"unknown task id {task_id!r} in the {self.domain} release") from None

    def snapshot(self, snapshot_id: str) -> Snapshot:
        """One snapshot, parsed on first use (with its block of the file) and then shared."""
        snap = self._snapshots.get(snapshot_id)
        if snap is None:
            if self._raw_snapshots is None:
                self._raw_snapshots = {}
            if snapshot_id not in self._raw_snapshots:
                records = self._read("snapshots.jsonl.gz", "snapshot_id", self._snapshot_pos.get(snapshot_id))
                self._raw_snapshots.update((sid, r["tables"]) for sid, r in records.items() if sid not in self._snapshots)
            snap = Snapshot(snapshot_id, self._raw_snapshots.pop(snapshot_id))
            self._snapshots[snapshot_id] = snap
        return snap

    def _read(self, name: str, id_field: str, position: int | None) -> dict[str, Any]:
        """The records of ``name`` by ``id_field``: the block holding ``position`` when the file
        is blocked (and ``position`` known), else the whole file."""
        blocks = self._blocks.get(name)
        if blocks is None or position is None:
            return {r[id_field]: r for r in read_jsonl_gz(self.path / name)}
        records = read_block(self.path / name, blocks["offsets"], position // blocks["size"])
        return {r[id_field]: r for r in records}

    def checked_hash(self, task_id: str) -> str:
        """The content hash of ``task_id``'s snapshot, computed from its rows (once per loaded
        snapshot) and checked against the manifest; a mismatch means the release files were
        altered or mixed, and raises ``RuntimeError``."""
        task = self.task(task_id)
        computed = self.snapshot(task.snapshot_id).content_hash()
        if computed != self.snapshot_hashes[task_id]:
            raise RuntimeError(
                f"{self.domain} release: the snapshot of {task_id} hashes to {computed[:16]}..., the manifest "
                f"says {self.snapshot_hashes[task_id][:16]}...; rebuild with `backoffice seeds build`"
            )
        return computed

    def answer_key(self, task_id: str) -> dict[str, Any]:
        """The answer key of a task (its block of the keys file is parsed on first use). Only
        graders and reports call this."""
        key = self._keys.get(task_id)
        if key is None:
            position = self._task_pos.get(task_id)
            if "keys.jsonl.gz" in self._blocks and position is not None:
                self._keys.update(self._read("keys.jsonl.gz", "task_id", position))
            elif not self._all_keys_read:
                self._keys.update({r["task_id"]: r for r in read_jsonl_gz(self.path / "keys.jsonl.gz")})
                self._all_keys_read = True
            key = self._keys[task_id]
        return key


@cache
def load_release(domain: str) -> Release:
    """The installed release of ``domain``, loaded once per process (from ``backoffice.seeds``
    for this distribution's domains, from ``<package>/seeds`` for a third-party one)."""
    from backoffice.envs.core.registry import seeds_folder

    return Release(domain, seeds_folder(domain))
