"""The indexed store: ``select``/``count``/``page`` agree with a plain scan, and the O(changed)
content hash equals the hash of the end state built from scratch, after any sequence of writes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from backoffice.envs.core.store import Snapshot, Store, table_hash
from backoffice.envs.core.tools import PageArgs, page

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["a", "b", ""]), st.just((1, 2)))
IDS = st.sampled_from([f"R-{i:02d}" for i in range(12)])


def _rows(draw: Any) -> list[dict[str, Any]]:
    ids = draw(st.lists(IDS, unique=True, max_size=10))
    rows = []
    for rid in ids:
        row = {"id": rid, "k": draw(VALUES), "g": draw(st.sampled_from(["x", "y"]))}
        if draw(st.booleans()):
            row["opt"] = draw(VALUES)
        rows.append(row)
    return rows


@st.composite
def scenario(draw: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str, Any]]]:
    rows = _rows(draw)
    ops = draw(st.lists(st.tuples(st.sampled_from(["insert", "update", "delete", "rollback"]), IDS, VALUES), max_size=12))
    return rows, ops


def _apply(store: Store, ops: list[tuple[str, str, Any]]) -> None:
    for op, rid, value in ops:
        store.begin()
        try:
            if op == "insert":
                store.insert("t", {"id": rid, "k": value, "g": "x"})
            elif op == "update":
                store.update("t", rid, {"k": value, "opt": value})
            elif op == "delete":
                store.delete("t", rid)
            elif op == "rollback":
                store.update("t", rid, {"k": "gone"})
                store.rollback()
                continue
        except KeyError:
            store.rollback()
            continue
        store.commit()


def _scan(store: Store, **equals: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in store.iter_rows("t") if all(r.get(k) == v for k, v in equals.items())]


@settings(max_examples=200, deadline=None)
@given(scenario(), st.dictionaries(st.sampled_from(["k", "g", "opt", "missing"]), VALUES, max_size=2))
def test_select_and_count_equal_a_scan(case: Any, equals: dict[str, Any]) -> None:
    rows, ops = case
    snap = Snapshot("S", {"t": rows})
    store = Store(snap)
    store.select("t", **equals)  # warm the index before the writes: it must stay consistent
    _apply(store, ops)
    expected = _scan(store, **equals)
    assert store.select("t", **equals) == expected
    assert store.rows("t", **equals) == expected
    assert store.count("t", **equals) == len(expected)
    assert store.count("t") == len(_scan(store))
    for after in [None, "R-03", "R-99", ""]:
        want = [r for r in expected if after is None or r["id"] > after]
        assert store.select("t", after=after, limit=3, **equals) == want[:3]
        in_x = [r for r in want if r.get("g") == "x"]
        assert store.select("t", lambda r: r.get("g") == "x", after=after, **equals) == in_x
        assert store.select_where("t", equals, after=after, limit=1) == want[:1]
    diff = store.diff().get("t", {})
    changed = {*diff.get("created", ()), *diff.get("updated", ()), *diff.get("deleted", ())}
    assert changed <= set(store.written_ids("t")) <= {rid for op, rid, _ in ops if op != "rollback"}


@settings(max_examples=200, deadline=None)
@given(scenario())
def test_content_hash_is_the_hash_of_the_end_state(case: Any) -> None:
    rows, ops = case
    snap = Snapshot("S", {"t": rows, "other": [{"id": "O-1", "v": 1}]})
    store = Store(snap)
    _apply(store, ops)
    rebuilt = Snapshot("S2", store.to_json())
    assert store.content_hash() == rebuilt.content_hash()
    assert (store.content_hash() == snap.content_hash()) == (store.to_json() == snap.to_json())


def test_table_hash_ignores_row_order_and_sees_every_field() -> None:
    a, b = {"id": "A", "v": 1}, {"id": "B", "v": 2}
    assert table_hash([a, b]) == table_hash([b, a])
    assert table_hash([a, b]) != table_hash([a, {"id": "B", "v": 3}])
    assert table_hash([a, a]) != table_hash([a])  # a multiset: duplicates are not cancelled


def test_list_equality_values_keep_scan_semantics() -> None:
    store = Store(Snapshot("S", {"t": [{"id": "A", "k": (1, 2)}]}))
    assert store.select("t", k=(1, 2)) and store.select("t", k=[1, 2]) == []


@pytest.mark.parametrize("limit", [1, 2, 3, 7])
def test_page_returns_every_row_once(limit: int) -> None:
    snap = Snapshot("S", {"t": [{"id": f"R-{i:02d}", "g": i % 2} for i in range(7)]})
    store = Store(snap)
    store.begin()
    store.insert("t", {"id": "R-03a", "g": 1})
    store.delete("t", "R-05")
    store.commit()
    seen, cursor, pages = [], None, 0
    while True:
        rows, cursor = page(store, "t", PageArgs(limit=limit, cursor=cursor), g=1)
        seen += [r["id"] for r in rows]
        pages += 1
        if cursor is None:
            break
    assert seen == ["R-01", "R-03", "R-03a"]
    assert pages == -(-len(seen) // limit)  # no empty last page
