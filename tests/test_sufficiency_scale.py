"""Sufficiency at scale (issue 15): the scale tier of the generator (the scale-1 world inside
every scaled world, the same answer), pagination of the list tools (every row exactly once,
bad limits and cursors as structured errors), no scan on the tools' or the grader's path, and
the oracle, the wrong policies and the catalog's feature policy in worlds 10x the released size."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import task_seed
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.store import Store
from backoffice.envs.sufficiency.generator import DEFECT_TAGS, generate
from backoffice.training.policies import get_policy
from backoffice.training.policies.base import Policy
from backoffice.training.policies.sufficiency import WRONG_POLICIES

pytestmark = pytest.mark.xdist_group("sufficiency")

DOMAIN = "sufficiency"
#: the tables that grow with the desk (every other table is the same in every snapshot)
GROWING = ("cases", "documents", "held_records", "item_requests", "notes", "_events", "_uploads")
SCALE = 10
#: one generated task per defect tag
INDICES = tuple(range(len(DEFECT_TAGS)))


def _seed(i: int) -> int:
    return task_seed(DOMAIN, "generated", i)


def _play(env: Any, policy: Policy, index: int, scale: int) -> dict[str, Any]:
    """One episode of ``policy`` on generated task ``index`` built at ``scale``; the terminal info."""
    obs, info = env.reset(seed=0, options={"generate": index, "scale": scale})
    policy.reset(obs, info)
    while True:
        obs, _, terminated, truncated, step_info = env.step(policy.act(obs))
        if terminated or truncated:
            return step_info


def _step(env: Any, tool: str, **args: Any) -> dict[str, Any]:
    obs, *_ = env.step({"tool": tool, "args": args})
    return loads(obs)


@cache
def _env() -> Any:
    return make_native(DOMAIN, split="train")


# -- the scale tier of the generator ---------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS[:4])
def test_scaled_world_holds_the_scale_1_world_and_the_same_task(tag: str) -> None:
    base = generate(_seed(7), tag)
    big = generate(_seed(7), tag, scale=SCALE)
    assert dumps(big.task) == dumps(base.task) and dumps(big.key) == dumps(base.key)
    for table, rows in base.snapshot.items():
        by_id = {r["id"]: r for r in big.snapshot[table]}
        assert len(by_id) == len(big.snapshot[table]), f"duplicate id in {table}"
        assert all(dumps(by_id[r["id"]]) == dumps(r) for r in rows), table  # every scale-1 row, unchanged
        if table not in GROWING:
            assert len(big.snapshot[table]) == len(rows), table
    # about SCALE times the cases (exactly: the scale-1 world's cases times SCALE), more of the rest
    assert len(big.snapshot["cases"]) == SCALE * len(base.snapshot["cases"])
    for table in GROWING:
        assert len(big.snapshot[table]) >= 2 * len(base.snapshot[table]), table
    # no distractor is the task's applicant, or a row of the task's case
    applicant = next(c for c in base.snapshot["cases"] if c["id"] == base.key["case_id"])["applicant_id"]
    new_held = [h for h in big.snapshot["held_records"] if h not in base.snapshot["held_records"]]
    assert all(h["applicant_id"] != applicant for h in new_held)
    number = base.key["case_id"].split("-", 1)[1]
    for table in ("documents", "item_requests", "notes", "_events"):
        mine = [r["id"] for r in big.snapshot[table] if r["case_id"] == base.key["case_id"]]
        assert mine == [r["id"] for r in base.snapshot[table] if r["case_id"] == base.key["case_id"]]
        assert all(f"-{number}-" in rid for rid in mine)


def test_scale_is_pure_and_checked() -> None:
    assert dumps(generate(_seed(3), "missing_item", scale=3)) == dumps(generate(_seed(3), "missing_item", scale=3))
    assert dumps(generate(_seed(3), "missing_item", scale=1)) == dumps(generate(_seed(3), "missing_item"))
    for bad in (0, -2, True, 1.5):
        with pytest.raises(ValueError):
            generate(_seed(3), "missing_item", scale=bad)  # type: ignore[arg-type]


# -- pagination -----------------------------------------------------------------------------------
def _all_pages(env: Any, tool: str, key: str, limit: int, **args: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    for _ in range(1000):
        page_args = {**args, "limit": limit, **({"cursor": cursor} if cursor else {})}
        got = _step(env, tool, **page_args)
        assert got["status"] == "ok", got
        rows = got["result"][key]
        assert len(rows) <= limit
        ids.extend(r["id"] for r in rows)
        cursor = got["result"]["next_cursor"]
        if cursor is None:
            return ids
        assert rows and cursor == rows[-1]["id"]
    raise AssertionError("pagination never ended")


def test_every_list_tool_returns_every_row_exactly_once_across_pages() -> None:
    env = make_native(DOMAIN, split="train", max_steps=100_000)
    env.reset(seed=0, options={"generate": 5, "scale": 3 * SCALE})
    cid = env.task.params["case_id"]
    case = env.state.get("cases", cid)
    want = {
        "list_cases": [r["id"] for r in env.state.rows("cases", queue="intake")],
        "list_documents": [r["id"] for r in env.state.rows("documents", case_id=cid)],
        "search_held_records": [r["id"] for r in env.state.rows("held_records", applicant_id=case["applicant_id"])],
    }
    assert len(want["list_cases"]) > 50  # more than a default page at this scale
    calls = {"list_cases": ("cases", {"queue": "intake"}), "list_documents": ("documents", {"case_id": cid}),
             "search_held_records": ("records", {"case_id": cid})}
    for tool, (key, args) in calls.items():
        for limit in (1, 2, 7, 200):
            got = _all_pages(env, tool, key, limit, **args)
            assert got == want[tool], (tool, limit)  # each row once, in id order
        first = _step(env, tool, **args)["result"]  # the default page: 50 rows
        assert [r["id"] for r in first[key]] == want[tool][:50]
        assert first["next_cursor"] == (want[tool][49] if len(want[tool]) > 50 else None)
    # the item-type filter pages the same way
    item = env.state.rows("held_records", applicant_id=case["applicant_id"])[0]["item_type"]
    got = _all_pages(env, "search_held_records", "records", 1, case_id=cid, item_type=item)
    assert got == [r["id"] for r in env.state.rows("held_records", applicant_id=case["applicant_id"], item_type=item)]


@pytest.mark.parametrize("bad", [{"limit": 0}, {"limit": 201}, {"limit": "many"}, {"limit": None},
                                 {"cursor": 12}, {"cursor": "x" * 500}, {"cursor": ["CASE-1"]}])
def test_bad_limits_and_cursors_are_tool_errors(bad: dict[str, Any]) -> None:
    env = _env()
    env.reset(seed=0, options={"generate": 5})
    cid = env.task.params["case_id"]
    for tool, args in (("list_cases", {"queue": "intake"}), ("list_documents", {"case_id": cid}),
                       ("search_held_records", {"case_id": cid})):
        before = env.state.content_hash()
        got = _step(env, tool, **args, **bad)
        assert got["status"] == "error" and got["code"] == "invalid_args", (tool, bad, got)
        assert env.state.content_hash() == before
    # a cursor past every id is a last, empty page (not an error)
    got = _step(env, "list_cases", queue="intake", cursor="~")
    assert got["status"] == "ok" and got["result"]["cases"] == [] and got["result"]["next_cursor"] is None


# -- no scans on the tools' and the grader's path ---------------------------------------------------
@contextmanager
def _no_scans() -> Iterator[list[str]]:
    """Fail any full read of a growing table (a scan) while the body runs."""
    scans: list[str] = []
    names = [n for n in ("iter_rows", "ids", "select", "select_where") if hasattr(Store, n)]
    original = {name: getattr(Store, name) for name in names}

    def iter_rows(self: Store, table: str) -> Any:
        if table in GROWING:
            scans.append(f"iter_rows({table})")
        return original["iter_rows"](self, table)

    def ids(self: Store, table: str) -> Any:
        if table in GROWING:
            scans.append(f"ids({table})")
        return original["ids"](self, table)

    def select(self: Store, table: str, where: Any = None, **kw: Any) -> Any:
        equals = {k: v for k, v in kw.items() if k not in ("after", "limit")}
        if table in GROWING and not equals:
            scans.append(f"select({table})")
        return original["select"](self, table, where, **kw)

    def select_where(self: Store, table: str, equals: Any, where: Any = None, **kw: Any) -> Any:
        if table in GROWING and not equals:
            scans.append(f"select_where({table})")
        return original["select_where"](self, table, equals, where, **kw)

    patched = {"iter_rows": iter_rows, "ids": ids, "select": select, "select_where": select_where}
    for name in names:
        setattr(Store, name, patched[name])
    try:
        yield scans
    finally:
        for name, fn in original.items():
            setattr(Store, name, fn)


def test_tools_and_grader_never_scan_a_growing_table() -> None:
    """Every tool call of the oracle's episodes (and of list_cases, add_note, the wrong policies'
    extra calls) and the grade read growing tables through an index only."""
    env = _env()
    for index in (2, 6, 8, 10):  # expired_document, held_record_available, reply_incomplete, awaiting_applicant
        env.reset(seed=0, options={"generate": index, "scale": 3})
        cid = env.task.params["case_id"]
        with _no_scans() as scans:
            _step(env, "list_cases", queue="intake")
            _step(env, "add_note", case_id=cid, text="Reviewed.")
            _step(env, "search_held_records", case_id=cid, item_type="identity_document")
        assert scans == [], scans
        for policy in (get_policy(DOMAIN, "oracle"), WRONG_POLICIES["irrelevant_attachment"](),
                       WRONG_POLICIES["duplicate_request"]()):
            with _no_scans() as scans:
                info = _play(env, policy, index, 3)
            assert "grade" in info
            assert scans == [], (index, policy.name, scans)


# -- policies at scale --------------------------------------------------------------------------------
@cache
def _oracle_grades(scale: int) -> dict[int, dict[str, Any]]:
    env = make_native(DOMAIN, split="train")
    return {i: _play(env, get_policy(DOMAIN, "oracle"), i, scale)["grade"] for i in INDICES}


def test_oracle_passes_at_scale_10_with_the_grade_of_scale_1() -> None:
    big, base = _oracle_grades(SCALE), _oracle_grades(1)
    for i in INDICES:
        assert big[i]["pass"], (i, big[i]["failure_codes"])
        assert dumps(big[i]["rounds"]) == dumps(base[i]["rounds"]), i
        assert big[i]["checks"] == base[i]["checks"], i


@pytest.mark.parametrize("code", ["forbidden_write", "irrelevant_attachment", "wrong_queue", "ignored_held_record"])
def test_wrong_policies_still_fail_at_scale(code: str) -> None:
    env = make_native(DOMAIN, split="train")
    failed = [code in _play(env, WRONG_POLICIES[code](), i, SCALE)["grade"]["failure_codes"] for i in INDICES]
    assert any(failed), code


def test_catalog_feature_policy_passes_at_scale_10() -> None:
    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.catalog.sufficiency import feature_policy

    env = make_catalog_env(DOMAIN, split="train")
    policy = feature_policy(env.agent)
    for i in INDICES[:6]:
        obs, info = env.reset(options={"generate": i, "scale": SCALE})
        while True:
            mask = env.action_masks()
            action = policy(obs, mask)
            assert mask[action]
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])


def test_paginated_reads_are_followed_when_a_result_spans_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a page of 1 row (the default forced down), the oracle and the catalog read every page
    and still pass: they do not depend on a result fitting in one page."""
    from backoffice.envs.core import tools as core_tools

    real_page = core_tools.page

    def tiny_page(store: Any, table: str, args: Any, where: Any = None, **equals: Any) -> Any:
        return real_page(store, table, args.model_copy(update={"limit": 1}), where, **equals)

    monkeypatch.setattr("backoffice.envs.sufficiency.tools.page", tiny_page)
    env = make_native(DOMAIN, split="train")
    for i in (0, 6, 7):  # complete_on_arrival, held_record_available, stale_held_record
        info = _play(env, get_policy(DOMAIN, "oracle"), i, 1)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])
        case = env.state.get("cases", env.task.params["case_id"])
        held = env.state.count("held_records", applicant_id=case["applicant_id"])
        assert sum(1 for rec in env.trace if rec["tool"] == "search_held_records") == max(held, 1)
        assert sum(1 for rec in env.trace if rec["tool"] == "list_documents") > 1

    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.catalog.sufficiency import feature_policy

    cat = make_catalog_env(DOMAIN, split="train")
    policy = feature_policy(cat.agent)
    for i in (0, 6):
        obs, info = cat.reset(options={"generate": i})
        while True:
            obs, _, terminated, truncated, info = cat.step(policy(obs, cat.action_masks()))
            if terminated or truncated:
                break
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])
