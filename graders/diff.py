"""The differ: what an episode changed, table by table.

One function, :func:`diff_overlay`, compares an episode's overlay of written rows with the
snapshot it started from. Its cost is proportional to the rows written, not the snapshot size.
A row written back to its original content does not count as changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict


class TableDiff(TypedDict):
    created: list[str]
    updated: dict[str, dict[str, dict[str, Any]]]
    deleted: list[str]


Diff = dict[str, TableDiff]


def diff_overlay(
    base_table: Callable[[str], Mapping[str, Mapping[str, Any]]],
    overlay: Mapping[str, Mapping[str, Mapping[str, Any] | None]],
) -> Diff:
    """Diff of ``overlay`` (table -> id -> row, ``None`` for deleted) against the base tables.

    Returns only tables with changes, in table-name order; ids are sorted; ``updated`` holds
    ``{"before": old, "after": new}`` for each changed field (a missing field is ``None``).
    """
    out: Diff = {}
    for table in sorted(overlay):
        base = base_table(table)
        created: list[str] = []
        deleted: list[str] = []
        updated: dict[str, dict[str, dict[str, Any]]] = {}
        for rid in sorted(overlay[table]):
            after = overlay[table][rid]
            before = base.get(rid)
            if before is None and after is None:
                continue
            if before is None:
                created.append(rid)
            elif after is None:
                deleted.append(rid)
            elif after != before:
                fields = {}
                for key in sorted(set(before) | set(after)):
                    if before.get(key) != after.get(key):
                        fields[key] = {"before": before.get(key), "after": after.get(key)}
                updated[rid] = fields
        if created or deleted or updated:
            out[table] = {"created": created, "updated": updated, "deleted": deleted}
    return out


def changed_keys(diff: Diff) -> list[str]:
    """Every ``table:id`` the diff touches, sorted."""
    keys = []
    for table, d in diff.items():
        keys.extend(f"{table}:{rid}" for rid in d["created"])
        keys.extend(f"{table}:{rid}" for rid in d["updated"])
        keys.extend(f"{table}:{rid}" for rid in d["deleted"])
    return sorted(keys)
