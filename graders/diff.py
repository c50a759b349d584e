"""The differ: what an episode changed, table by table.

One function, :func:`diff_overlay`, compares an episode's overlay of written rows with the
snapshot it started from. Its cost is proportional to the rows written, not the snapshot size.
A row written back to its original content does not count as changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypedDict


class TableDiff(TypedDict):
    created: list[str]
    updated: dict[str, dict[str, dict[str, Any]]]
    deleted: list[str]
    created_rows: dict[str, dict[str, Any]]
    deleted_rows: dict[str, dict[str, Any]]


Diff = dict[str, TableDiff]

#: the diff of a table an episode did not change, as a read-only default: ``diff.get(table, NO_CHANGES)``
NO_CHANGES: Mapping[str, Any] = MappingProxyType({})


def diff_overlay(
    base_table: Callable[[str], Mapping[str, Mapping[str, Any]]],
    overlay: Mapping[str, Mapping[str, Mapping[str, Any] | None]],
) -> Diff:
    """Diff of ``overlay`` (table -> id -> row, ``None`` for deleted) against the base tables.

    Returns only tables with changes, in table-name order; ids are sorted; ``updated`` holds
    ``{"before": old, "after": new}`` for each changed field (a missing field is ``None``);
    ``created_rows`` and ``deleted_rows`` carry the content of the created rows (as they are at
    the end) and of the deleted rows (as they were in the snapshot), by id. Everything in it is
    plain, fresh JSON data (lists, not the store's tuples), shared with no store.
    """
    out: Diff = {}
    for table in sorted(overlay):
        d = diff_table(base_table(table), overlay[table])
        if d is not None:
            out[table] = d
    return out


def diff_table(base: Mapping[str, Mapping[str, Any]], written: Mapping[str, Mapping[str, Any] | None]) -> TableDiff | None:
    """One table's part of :func:`diff_overlay`: ``written`` (id -> row, ``None`` for deleted)
    against ``base``; ``None`` when nothing differs."""
    created: list[str] = []
    deleted: list[str] = []
    created_rows: dict[str, dict[str, Any]] = {}
    deleted_rows: dict[str, dict[str, Any]] = {}
    updated: dict[str, dict[str, dict[str, Any]]] = {}
    for rid in sorted(written):
        after = written[rid]
        before = base.get(rid)
        if before is None:
            if after is None:
                continue
            created.append(rid)
            created_rows[rid] = _plain_row(after)
        elif after is None:
            deleted.append(rid)
            deleted_rows[rid] = _plain_row(before)
        elif after != before:
            fields = {}
            for key in sorted(before.keys() | after.keys()):
                old, new = before.get(key), after.get(key)
                if old != new:
                    fields[key] = {"before": _plain(old), "after": _plain(new)}
            updated[rid] = fields
    if created or deleted or updated:
        return {"created": created, "updated": updated, "deleted": deleted,
                "created_rows": created_rows, "deleted_rows": deleted_rows}
    return None


_FLAT = frozenset((str, int, float, bool, type(None)))


def _plain_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A store row (frozen: tuples for lists) as plain JSON data (a fresh dict)."""
    return {k: v if type(v) in _FLAT else _plain(v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    if type(value) in _FLAT:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def changed_keys(diff: Diff) -> list[str]:
    """Every ``table:id`` the diff touches, sorted."""
    keys: list[str] = []
    for table, d in diff.items():
        keys.extend(f"{table}:{rid}" for rid in d["created"])
        keys.extend(f"{table}:{rid}" for rid in d["updated"])
        keys.extend(f"{table}:{rid}" for rid in d["deleted"])
    return sorted(keys)
