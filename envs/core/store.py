"""Tables of rows keyed by primary key: an immutable snapshot and a copy-on-write store.

A :class:`Snapshot` is loaded once and shared by every environment in the process. A
:class:`Store` is an episode's working copy: writes land in an overlay, so ``reset`` only drops
the overlay (O(1) in the snapshot's size), and :meth:`Store.diff` and
:meth:`Store.content_hash` cost O(rows changed).

Reads that are not by primary key go through :meth:`Store.select`: with an equality field it
uses a secondary index built lazily on the shared snapshot (once per snapshot and field) and
merged with the episode's overlay, so it costs O(matching rows + rows written), not O(table).

Rows are flat dicts with a string ``"id"`` primary key whose values are JSON scalars or tuples
of them. Lists are frozen to tuples on the way in so no caller can mutate shared data.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from backoffice.envs.core.canonical import digest, dumps
from backoffice.graders.diff import Diff, TableDiff, diff_overlay, diff_table

Row = dict[str, Any]
Where = Callable[[Row], bool]
_DELETED = None  # overlay marker for a deleted row

_SCALARS = (str, int, float, bool, type(None))
_MOD = 1 << 128  # table hashes are sums of 128-bit row digests modulo 2**128


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


def row_digest(row: Mapping[str, Any]) -> int:
    """A row's 128-bit digest (blake2b of its canonical JSON) as an integer."""
    return int.from_bytes(hashlib.blake2b(dumps(row), digest_size=16).digest(), "big")


def table_hash_of(digest_sum: int) -> str:
    """A table's hash from the sum (mod 2**128) of its row digests: independent of row order,
    so a store updates it from the rows it changed."""
    return f"{digest_sum % _MOD:032x}"


def table_hash(rows: Iterable[Mapping[str, Any]]) -> str:
    """The hash of a table with these rows (any order)."""
    return table_hash_of(sum(row_digest(r) for r in rows))


def combine_hashes(table_hashes: Mapping[str, str]) -> str:
    """The content hash of a set of named tables from their table hashes."""
    return digest(dumps(sorted(table_hashes.items())))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class Snapshot:
    """An immutable named set of tables. Share one instance between any number of stores."""

    __slots__ = ("snapshot_id", "_tables", "_ids", "_sums", "_digests", "_table_hashes", "_hash", "_indexes", "_memo")

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
        self._ids: dict[str, tuple[str, ...]] = {}
        self._sums: dict[str, int] = {}
        self._digests: dict[str, dict[str, int]] = {}
        self._memo: dict[Hashable, Any] = {}
        self._table_hashes: dict[str, str] = {}
        self._hash: str | None = None
        self._indexes: dict[tuple[str, str], dict[Any, tuple[str, ...]]] = {}

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self._tables)

    def table(self, name: str) -> Mapping[str, Row]:
        """The rows of one table by id, in id order (read-only by contract: never mutate)."""
        return self._tables[name]

    def ids(self, name: str) -> tuple[str, ...]:
        """The sorted ids of one table (cached)."""
        ids = self._ids.get(name)
        if ids is None:
            ids = self._ids[name] = tuple(self._tables[name])
        return ids

    def index(self, name: str, field: str) -> Mapping[Any, tuple[str, ...]]:
        """``value -> sorted ids`` of the rows of ``name`` by ``row.get(field)``, built on first
        use and shared by every store of this snapshot."""
        key = (name, field)
        index = self._indexes.get(key)
        if index is None:
            groups: dict[Any, list[str]] = {}
            for rid, row in self._tables[name].items():
                groups.setdefault(row.get(field), []).append(rid)
            index = self._indexes[key] = {v: tuple(ids) for v, ids in groups.items()}
        return index

    def memo(self, key: Hashable, factory: Callable[[Snapshot], Any]) -> Any:
        """``factory(self)``, computed once per snapshot and ``key``: where a domain keeps a
        derived read-only structure (e.g. a word index of names) that lives as long as the
        snapshot. The factory must not mutate the snapshot."""
        if key not in self._memo:
            self._memo[key] = factory(self)
        return self._memo[key]

    def row_count(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self._tables.items()}

    def digest_sum(self, name: str) -> int:
        """The sum of the row digests of one table (computed once)."""
        s = self._sums.get(name)
        if s is None:
            digests = self._digests[name] = {rid: row_digest(r) for rid, r in self._tables[name].items()}
            s = self._sums[name] = sum(digests.values()) % _MOD
        return s

    def row_digest(self, name: str, rid: str) -> int:
        """The digest of one row of the snapshot (kept from :meth:`digest_sum`)."""
        if name not in self._digests:
            self.digest_sum(name)
        return self._digests[name][rid]

    def table_hash(self, name: str) -> str:
        h = self._table_hashes.get(name)
        if h is None:
            h = self._table_hashes[name] = table_hash_of(self.digest_sum(name))
        return h

    def content_hash(self) -> str:
        if self._hash is None:
            self._hash = combine_hashes({n: self.table_hash(n) for n in self._tables})
        return self._hash

    def to_json(self) -> dict[str, list[Row]]:
        return {name: list(rows.values()) for name, rows in self._tables.items()}


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
        self._versions: dict[str, int] = {}
        self._diff_parts: dict[str, tuple[int, TableDiff | None]] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def reset(self, snapshot: Snapshot | None = None) -> None:
        """Drop every write (and switch snapshot if given). O(1) in the snapshot's size."""
        if snapshot is not None:
            self._snap = snapshot
        self._overlay = {}
        self._undo = None
        self._touched = []
        self._versions = {}
        self._diff_parts = {}

    @property
    def snapshot(self) -> Snapshot:
        return self._snap

    def begin(self) -> None:
        """Start recording writes so they can be rolled back."""
        self._undo = []
        self._touched = []

    def commit(self) -> list[str]:
        """Keep the writes since :meth:`begin`; return the ``table:id`` keys they touched."""
        touched = sorted(set(self._touched)) if self._touched else []
        self._undo = None
        self._touched = []
        return touched

    def rollback(self) -> None:
        """Undo every write since :meth:`begin`."""
        versions = self._versions
        for table, rid, had, previous in reversed(self._undo or []):
            versions[table] = versions.get(table, 0) + 1
            layer = self._overlay[table]
            if had:
                layer[rid] = previous
            else:
                del layer[rid]
        self._undo = None
        self._touched = []

    # -- reads -----------------------------------------------------------------------------
    def version(self, table: str) -> int:
        """A counter of ``table``'s writes (and undone writes) since the last :meth:`reset`:
        what was computed from the table at one version holds while it stays the same."""
        return self._versions.get(table, 0)

    def has_table(self, table: str) -> bool:
        return table in self._snap._tables

    def _base(self, table: str) -> Mapping[str, Row]:
        try:
            return self._snap.table(table)
        except KeyError:
            raise KeyError(f"unknown table {table!r}") from None

    def peek(self, table: str, rid: str) -> Row | None:
        """The live row ``rid`` of ``table``, read in place (O(1), no copy), or ``None``. Never
        mutate it (change rows with :meth:`update`); a tool may return it, the toolkit serialises
        every result. :meth:`get` is the copying read."""
        layer = self._overlay.get(table)
        if layer is not None and rid in layer:
            return layer[rid]
        return self._base(table).get(rid)

    def written_ids(self, table: str) -> list[str]:
        """The ids of ``table`` this episode created, changed or deleted, sorted: O(rows written)."""
        self._base(table)
        return sorted(self._overlay.get(table) or ())

    def get(self, table: str, rid: str) -> Row | None:
        """A copy of one row, or ``None``."""
        row = self.peek(table, rid)
        return dict(row) if row is not None else None

    def exists(self, table: str, rid: str) -> bool:
        return self.peek(table, rid) is not None

    def known_id(self, table: str, rid: str) -> bool:
        """Whether ``rid`` is an id of ``table`` in the snapshot or written by this episode
        (deleted ones included): what a list tool's ``next_cursor`` can be. O(1)."""
        return rid in self._base(table) or rid in (self._overlay.get(table) or ())

    def _live_ids(self, table: str, base_ids: Sequence[str], matches: Callable[[Row], bool] | None) -> Sequence[str]:
        """``base_ids`` (sorted, from the snapshot; returned as is when the table has no writes)
        merged with the overlay: ids the episode deleted or changed so they no longer match
        drop out, written rows that match join in."""
        layer = self._overlay.get(table)
        if not layer:
            return base_ids
        out = [rid for rid in base_ids if rid not in layer]
        joined = [rid for rid, row in layer.items() if row is not None and (matches is None or matches(row))]
        if joined:
            out.extend(joined)
            out.sort()
        return out

    def ids(self, table: str) -> list[str]:
        """Every live id of a table, sorted."""
        self._base(table)
        return list(self._live_ids(table, self._snap.ids(table), None))

    def iter_rows(self, table: str) -> Iterator[Row]:
        """Live rows (not copies: treat as read-only) in id order. A full scan: tools and graders
        use :meth:`select` with an equality field instead."""
        base = self._base(table)
        layer = self._overlay.get(table)
        if not layer:
            yield from base.values()
            return
        for rid in self.ids(table):
            row = layer[rid] if rid in layer else base[rid]
            if row is not None:
                yield row

    def select(self, table: str, where: Where | None = None, *, after: str | None = None,
               limit: int | None = None, **equals: Any) -> list[Row]:
        """Copies of the live rows whose fields equal every ``field=value`` in ``equals`` and for
        which ``where(row)`` holds, in id order; only ids greater than ``after`` when given, and
        at most ``limit`` rows.

        With an equality field this reads a lazy secondary index of the snapshot merged with
        the episode's writes: O(matching rows + rows written). Without one it scans the table.
        (:meth:`select_where` takes the equalities as a mapping, for field names such as
        ``limit`` that are also parameters here.)
        """
        return self.select_where(table, equals, where, after=after, limit=limit)

    def select_where(self, table: str, equals: Mapping[str, Any], where: Where | None = None, *,
                     after: str | None = None, limit: int | None = None) -> list[Row]:
        """:meth:`select` with the ``field: value`` equalities given as a mapping.

        Walks the most selective index bucket from ``after`` (a bisection) and merges in the
        episode's written rows on the way, so a page costs O(page + rows written)."""
        base = self._base(table)
        layer = self._overlay.get(table)
        base_ids: Sequence[str] = self._snap.ids(table)
        chosen = None  # the field whose bucket is walked: its equality holds for every base id
        for field, value in equals.items():
            if not _hashable(value):
                continue
            bucket = self._snap.index(table, field).get(value, ())
            if len(bucket) < len(base_ids) or chosen is None:
                base_ids, chosen = bucket, field
            if not base_ids:
                break
        rest = [(k, v) for k, v in equals.items() if k != chosen]
        start = bisect_right(base_ids, after) if after is not None else 0
        stop = len(base_ids)
        if not layer and not rest and where is None:  # the common case: the bucket is the answer
            if limit is not None:
                stop = min(stop, start + limit)
            return [dict(base[base_ids[i]]) for i in range(start, stop)]
        written: list[str] = []
        if layer:
            items = list(equals.items())
            written = sorted(rid for rid, row in layer.items()
                             if row is not None and (after is None or rid > after)
                             and all(row.get(k) == v for k, v in items))
        out: list[Row] = []
        want = limit if limit is not None else -1
        j, n_written = 0, len(written)
        for i in range(start, stop):
            rid = base_ids[i]
            while j < n_written and written[j] < rid:
                row = layer[written[j]]  # type: ignore[index]
                j += 1
                if where is None or where(row):  # type: ignore[arg-type]
                    out.append(dict(row))  # type: ignore[arg-type]
                    if len(out) == want:
                        return out
            if layer and rid in layer:
                continue  # written this episode: merged from ``written`` if it still matches
            row = base[rid]
            if rest and any(row.get(k) != v for k, v in rest):
                continue
            if where is None or where(row):
                out.append(dict(row))
                if len(out) == want:
                    return out
        for rid in written[j:]:
            row = layer[rid]  # type: ignore[index]
            if where is None or where(row):  # type: ignore[arg-type]
                out.append(dict(row))  # type: ignore[arg-type]
                if len(out) == want:
                    return out
        return out

    def rows(self, table: str, where: Where | None = None, **equals: Any) -> list[Row]:
        """Copies of the rows matching ``where`` and every ``field=value`` in ``equals``, by id
        (:meth:`select` without paging)."""
        return self.select(table, where, **equals)

    def count(self, table: str, **equals: Any) -> int:
        """The number of live rows matching every ``field=value`` in ``equals`` (O(rows written)
        without ``equals``)."""
        base = self._base(table)
        layer = self._overlay.get(table)
        if equals:
            if len(equals) == 1:
                ((field, value),) = equals.items()
                if _hashable(value):
                    # the index bucket's size, corrected by the rows this episode wrote: O(rows written)
                    n = len(self._snap.index(table, field).get(value, ()))
                    for rid, row in (layer or {}).items():
                        old = base.get(rid)
                        n += (row is not None and row.get(field) == value) - (old is not None and old.get(field) == value)
                    return n
            return len(self.select_where(table, equals))
        n = len(base)
        for rid, row in (layer or {}).items():
            n += (row is not None) - (rid in base)
        return n

    # -- writes ----------------------------------------------------------------------------
    def _write(self, table: str, rid: str, row: Row | None) -> None:
        self._base(table)
        layer = self._overlay.setdefault(table, {})
        if self._undo is not None:
            self._undo.append((table, rid, rid in layer, layer.get(rid)))
        layer[rid] = row
        self._touched.append(f"{table}:{rid}")
        self._versions[table] = self._versions.get(table, 0) + 1

    def insert(self, table: str, row: Mapping[str, Any]) -> Row:
        """Insert a new row. Raises ``KeyError`` if the id already exists."""
        frozen = freeze_row(row)
        if self.exists(table, frozen["id"]):
            raise KeyError(f"{table}:{frozen['id']} already exists")
        self._write(table, frozen["id"], frozen)
        return dict(frozen)

    def update(self, table: str, rid: str, changes: Mapping[str, Any]) -> Row:
        """Change some fields of an existing row; returns the new row. ``KeyError`` if missing."""
        current = self.peek(table, rid)
        if current is None:
            raise KeyError(f"{table}:{rid} does not exist")
        if "id" in changes and changes["id"] != rid:
            raise ValueError("the primary key cannot change")
        new = dict(current)
        new.update((k, freeze(v)) for k, v in changes.items())
        self._write(table, rid, new)
        return dict(new)

    def delete(self, table: str, rid: str) -> None:
        if self.peek(table, rid) is None:
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

    def shared_diff(self) -> Diff:
        """:meth:`diff`, each table's part kept until the table is written again (see
        :meth:`version`): O(rows written by the step), for grading after every step. The parts
        are shared between calls: read it, never change it (:meth:`diff` is fresh)."""
        kept = self._diff_parts
        out: Diff = {}
        for table in sorted(self._overlay):
            version = self._versions.get(table, 0)
            part = kept.get(table)
            if part is None or part[0] != version:
                part = kept[table] = (version, diff_table(self._snap.table(table), self._overlay[table]))
            if part[1] is not None:
                out[table] = part[1]
        return out

    def content_hash(self) -> str:
        """Stable hash of every table; equals the snapshot's hash when nothing changed.

        A table's hash is the sum of its row digests, so a written table's hash is the
        snapshot's sum minus the digests of the rows it replaced plus those of their current
        versions: O(rows written), whatever the table's size."""
        snap = self._snap
        if not self._overlay:
            return snap.content_hash()
        hashes = {}
        for name in snap.table_names:
            layer = self._overlay.get(name)
            if not layer:
                hashes[name] = snap.table_hash(name)
                continue
            base = snap.table(name)
            total = snap.digest_sum(name)
            for rid, row in layer.items():
                old = base.get(rid)
                if old is row:
                    continue
                if old is not None:
                    total -= snap.row_digest(name, rid)
                if row is not None:
                    total += row_digest(row)
            hashes[name] = table_hash_of(total)
        return combine_hashes(hashes)

    def to_json(self) -> dict[str, list[Row]]:
        """Every table as lists of rows (a full read-only snapshot of the end state)."""
        return {name: [dict(r) for r in self.iter_rows(name)] for name in self._snap.table_names}
