"""Tables of rows keyed by primary key: an immutable snapshot and a copy-on-write store.

A :class:`Snapshot` is loaded once and shared by every environment in the process. A
:class:`Store` is an episode's working copy: writes land in an overlay, so ``reset`` only drops
the overlay (O(1) in the snapshot's size) and :meth:`Store.diff` costs O(rows changed).

Rows are flat dicts with a string ``"id"`` primary key whose values are JSON scalars or tuples
of them. Lists are frozen to tuples on the way in so no caller can mutate shared data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from backoffice.envs.core.canonical import digest, dumps
from backoffice.graders.diff import Diff, diff_overlay

Row = dict[str, Any]
_DELETED = None  # overlay marker for a deleted row

_SCALARS = (str, int, float, bool, type(None))


def freeze(value: Any) -> Any:
    """Return ``value`` with lists turned into tuples; reject dicts and other containers."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    raise TypeError(f"row values must be JSON scalars or lists of them, got {type(value).__name__}")


def freeze_row(row: Mapping[str, Any]) -> Row:
    """A fresh row with frozen values; requires a string ``id``."""
    if not isinstance(row.get("id"), str):
        raise TypeError(f"every row needs a string 'id', got {row!r:.200}")
    return {k: freeze(v) for k, v in row.items()}


class Snapshot:
    """An immutable named set of tables. Share one instance between any number of stores."""

    __slots__ = ("snapshot_id", "_tables", "_table_hashes", "_hash")

    def __init__(self, snapshot_id: str, tables: Mapping[str, Iterable[Mapping[str, Any]]]):
        self.snapshot_id = snapshot_id
        built: dict[str, dict[str, Row]] = {}
        for name in sorted(tables):
            rows = sorted((freeze_row(r) for r in tables[name]), key=lambda r: r["id"])
            table = {r["id"]: r for r in rows}
            if len(table) != len(rows):
                raise ValueError(f"duplicate primary key in table {name!r} of {snapshot_id}")
            built[name] = table
        self._tables = built
        self._table_hashes: dict[str, str] = {}
        self._hash: str | None = None

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self._tables)

    def table(self, name: str) -> Mapping[str, Row]:
        """The rows of one table by id (read-only by contract: never mutate)."""
        return self._tables[name]

    def row_count(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self._tables.items()}

    def table_hash(self, name: str) -> str:
        if name not in self._table_hashes:
            self._table_hashes[name] = table_hash(self._tables[name].values())
        return self._table_hashes[name]

    def content_hash(self) -> str:
        if self._hash is None:
            self._hash = combine_hashes({n: self.table_hash(n) for n in self._tables})
        return self._hash

    def to_json(self) -> dict[str, list[Row]]:
        return {name: list(rows.values()) for name, rows in self._tables.items()}


def table_hash(rows_sorted_by_id: Iterable[Row]) -> str:
    return digest(b"\n".join(dumps(r) for r in rows_sorted_by_id))


def combine_hashes(table_hashes: Mapping[str, str]) -> str:
    return digest(dumps(sorted(table_hashes.items())))


class Store:
    """An episode's working copy of a snapshot.

    Reads merge the overlay over the snapshot; writes go to the overlay only. Every write made
    between :meth:`begin` and :meth:`commit` can be undone by :meth:`rollback`, which is how a
    failing tool call leaves the state exactly as it was.
    """

    def __init__(self, snapshot: Snapshot):
        self._snap = snapshot
        self._overlay: dict[str, dict[str, Row | None]] = {}
        self._undo: list[tuple[str, str, bool, Row | None]] | None = None
        self._touched: list[str] = []

    # -- lifecycle -------------------------------------------------------------------------
    def reset(self, snapshot: Snapshot | None = None) -> None:
        """Drop every write (and switch snapshot if given). O(1) in the snapshot's size."""
        if snapshot is not None:
            self._snap = snapshot
        self._overlay = {}
        self._undo = None
        self._touched = []

    @property
    def snapshot(self) -> Snapshot:
        return self._snap

    def begin(self) -> None:
        """Start recording writes so they can be rolled back."""
        self._undo = []
        self._touched = []

    def commit(self) -> list[str]:
        """Keep the writes since :meth:`begin`; return the ``table:id`` keys they touched."""
        touched = sorted(set(self._touched))
        self._undo = None
        self._touched = []
        return touched

    def rollback(self) -> None:
        """Undo every write since :meth:`begin`."""
        for table, rid, had, previous in reversed(self._undo or []):
            layer = self._overlay[table]
            if had:
                layer[rid] = previous
            else:
                del layer[rid]
        self._undo = None
        self._touched = []

    # -- reads -----------------------------------------------------------------------------
    def has_table(self, table: str) -> bool:
        return table in self._snap.table_names

    def _base(self, table: str) -> Mapping[str, Row]:
        try:
            return self._snap.table(table)
        except KeyError:
            raise KeyError(f"unknown table {table!r}") from None

    def _current(self, table: str, rid: str) -> Row | None:
        layer = self._overlay.get(table)
        if layer is not None and rid in layer:
            return layer[rid]
        return self._base(table).get(rid)

    def get(self, table: str, rid: str) -> Row | None:
        """A copy of one row, or ``None``."""
        row = self._current(table, rid)
        return dict(row) if row is not None else None

    def exists(self, table: str, rid: str) -> bool:
        return self._current(table, rid) is not None

    def ids(self, table: str) -> list[str]:
        """Every live id of a table, sorted."""
        base = self._base(table)
        layer = self._overlay.get(table)
        if not layer:
            return list(base)
        ids = set(base)
        for rid, row in layer.items():
            if row is None:
                ids.discard(rid)
            else:
                ids.add(rid)
        return sorted(ids)

    def iter_rows(self, table: str) -> Iterator[Row]:
        """Live rows (not copies: treat as read-only) in id order."""
        base = self._base(table)
        layer = self._overlay.get(table)
        if not layer:
            yield from base.values()
            return
        for rid in self.ids(table):
            row = layer[rid] if rid in layer else base[rid]
            if row is not None:
                yield row

    def rows(self, table: str, where: Callable[[Row], bool] | None = None, **equals: Any) -> list[Row]:
        """Copies of the rows matching ``where`` and every ``field=value`` in ``equals``, by id."""
        out = []
        for row in self.iter_rows(table):
            if equals and any(row.get(k) != v for k, v in equals.items()):
                continue
            if where is not None and not where(row):
                continue
            out.append(dict(row))
        return out

    def count(self, table: str) -> int:
        return len(self.ids(table))

    # -- writes ----------------------------------------------------------------------------
    def _write(self, table: str, rid: str, row: Row | None) -> None:
        self._base(table)
        layer = self._overlay.setdefault(table, {})
        if self._undo is not None:
            self._undo.append((table, rid, rid in layer, layer.get(rid)))
        layer[rid] = row
        self._touched.append(f"{table}:{rid}")

    def insert(self, table: str, row: Mapping[str, Any]) -> Row:
        """Insert a new row. Raises ``KeyError`` if the id already exists."""
        frozen = freeze_row(row)
        if self.exists(table, frozen["id"]):
            raise KeyError(f"{table}:{frozen['id']} already exists")
        self._write(table, frozen["id"], frozen)
        return dict(frozen)

    def update(self, table: str, rid: str, changes: Mapping[str, Any]) -> Row:
        """Change some fields of an existing row; returns the new row. ``KeyError`` if missing."""
        current = self._current(table, rid)
        if current is None:
            raise KeyError(f"{table}:{rid} does not exist")
        if "id" in changes and changes["id"] != rid:
            raise ValueError("the primary key cannot change")
        new = dict(current)
        new.update((k, freeze(v)) for k, v in changes.items())
        self._write(table, rid, new)
        return dict(new)

    def delete(self, table: str, rid: str) -> None:
        if self._current(table, rid) is None:
            raise KeyError(f"{table}:{rid} does not exist")
        self._write(table, rid, _DELETED)

    def next_id(self, table: str, prefix: str) -> str:
        """The next free id of the form ``PREFIX-0001`` in ``table`` (deterministic)."""
        n = self.count(table) + 1
        while self.exists(table, f"{prefix}-{n:04d}"):
            n += 1
        return f"{prefix}-{n:04d}"

    # -- diff and hash ---------------------------------------------------------------------
    def diff(self) -> Diff:
        """Per table: ``created`` ids, ``updated`` {id: {field: {before, after}}}, ``deleted`` ids."""
        return diff_overlay(self._snap.table, self._overlay)

    def content_hash(self) -> str:
        """Stable hash of every table; equals the snapshot's hash when nothing changed."""
        hashes = {}
        for name in self._snap.table_names:
            layer = self._overlay.get(name)
            if layer:
                hashes[name] = table_hash(self.iter_rows(name))
            else:
                hashes[name] = self._snap.table_hash(name)
        return combine_hashes(hashes)

    def to_json(self) -> dict[str, list[Row]]:
        """Every table as lists of rows (a full read-only snapshot of the end state)."""
        return {name: [dict(r) for r in self.iter_rows(name)] for name in self._snap.table_names}
