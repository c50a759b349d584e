"""Read-only row access for the sufficiency tools and grader: live rows, never copies.

``store.get`` and ``store.rows`` copy every row they return; the tools and the grader of this
domain only read the rows they look up (a tool's result is serialised once by the engine, which
never hands a store row to a caller), so they read the live rows instead. Treat every row these
helpers return as read-only: change rows through ``store.update`` / ``store.insert`` only.

:func:`rows_by` is :meth:`Store.rows` with one equality field (same rows, same id order): the
snapshot's shared index bucket merged with the rows the episode wrote, so its cost is
O(matching rows + rows written), never a scan of a table that grows with the world.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.core.store import Row, Store


def rows_by(store: Store, table: str, field: str, value: Any) -> list[Row]:
    """The live rows of ``table`` whose ``field`` equals ``value`` (hashable), in id order
    (read-only): ``store.rows(table, **{field: value})`` without the copies."""
    snap = store.snapshot
    base = snap.table(table)
    bucket = snap.index(table, field).get(value, ())
    written = store.written_ids(table)  # sorted
    if not written:
        return [base[rid] for rid in bucket]
    current = store.peek
    joined = []  # the written rows that match, by id
    for rid in written:
        r = current(table, rid)
        if r is not None and r.get(field) == value:
            joined.append(r)
    changed = set(written) if len(written) > 8 else written
    out = [base[rid] for rid in bucket if rid not in changed]
    if joined:
        late = bool(out) and out[-1]["id"] > joined[0]["id"]
        out.extend(joined)
        if late:  # the two id-ordered runs interleave
            out.sort(key=_row_id)
    return out


def _row_id(r: Row) -> str:
    return r["id"]
