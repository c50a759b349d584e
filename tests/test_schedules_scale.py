"""Schedules at scale (issue 15): the scale tier of the generator (the scale-1 world inside every
scaled world, the same task and answer), pagination of the list tools (every row exactly once,
bad limits and cursors as structured errors), ids numbered per policy without a scan, no scan on
the tools' or the grader's path, and the oracle, wrong policies and the catalog in worlds 10x the
released size or with results spread over many pages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import task_seed
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.store import Store
from backoffice.envs.schedules.generator import DEFECT_TAGS, generate
from backoffice.envs.schedules.tables import ACCOUNT_TABLES
from backoffice.training.policies import get_policy
from backoffice.training.policies.base import Policy
from backoffice.training.policies.schedules import WRONG_POLICIES

D = "schedules"
#: the tables that grow with the book (rules, _approvers and clock are one document each)
GROWING = ACCOUNT_TABLES
SCALE = 10
#: one generated task per defect tag, then three more
INDICES = tuple(range(len(DEFECT_TAGS) + 3))


def _seed(i: int) -> int:
    return task_seed(D, "generated", i)


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


# -- the scale tier of the generator ---------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_scaled_world_holds_the_scale_1_world_and_the_same_task(tag: str) -> None:
    base = generate(_seed(4), tag)
    big = generate(_seed(4), tag, scale=SCALE)
    assert dumps(big.task) == dumps(base.task) and dumps(big.key) == dumps(base.key)
    for table, rows in base.snapshot.items():
        by_id = {r["id"]: r for r in big.snapshot[table]}
        assert len(by_id) == len(big.snapshot[table]), f"duplicate id in {table}"
        assert all(dumps(by_id[r["id"]]) == dumps(r) for r in rows), table  # every scale-1 row, unchanged
        if table not in GROWING:
            assert len(big.snapshot[table]) == len(rows), table
    # about SCALE times the people (a drawn customer with nothing due is left out) and requests
    n = len(base.snapshot["policies"])
    assert 0.8 * SCALE * n <= len(big.snapshot["policies"]) <= SCALE * n
    assert len(big.snapshot["requests"]) == SCALE
    for table in ("accounts", "schedules", "instalments", "reminders", "instructions"):
        assert len(big.snapshot[table]) >= 0.5 * SCALE * len(base.snapshot[table]), table
    # the added customers are nobody the task may touch: another account, ids outside the
    # key's targets, and no approval awaiting a decision (wait decides the episode's only)
    acc = base.key["expected"]["account_id"]
    targets = [t.split(":", 1) for t in base.key["targets"]]
    for table in GROWING:
        old = {r["id"] for r in base.snapshot[table]}
        for row in big.snapshot[table]:
            if row["id"] in old:
                continue
            assert row["account_id"] != acc, (table, row["id"])
            assert not any(t == table and fnmatchcase(row["id"], pattern) for t, pattern in targets), (table, row["id"])
    assert all(r["status"] != "pending" for r in big.snapshot["approvals"])


def test_scale_is_pure_and_checked() -> None:
    tag = DEFECT_TAGS[2]
    assert dumps(generate(_seed(3), tag, scale=3)) == dumps(generate(_seed(3), tag, scale=3))
    assert dumps(generate(_seed(3), tag, scale=1)) == dumps(generate(_seed(3), tag))
    for bad in (0, -2, True, 1.5):
        with pytest.raises(ValueError):
            generate(_seed(3), tag, scale=bad)  # type: ignore[arg-type]


def test_a_thousandfold_world_builds_in_seconds() -> None:
    import time

    start = time.perf_counter()
    big = generate(_seed(1), DEFECT_TAGS[1], scale=1000)
    assert time.perf_counter() - start < 20  # about half a second on the 2-core machine
    assert len(big.snapshot["policies"]) >= 800 * len(generate(_seed(1), DEFECT_TAGS[1]).snapshot["policies"])


# -- pagination -----------------------------------------------------------------------------------
def _all_pages(env: Any, tool: str, key: str, limit: int, **args: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    for _ in range(10_000):
        got = _step(env, tool, **args, limit=limit, **({"cursor": cursor} if cursor else {}))
        assert got["status"] == "ok", got
        rows = got["result"][key]
        assert len(rows) <= limit
        ids.extend(r["id"] for r in rows)
        cursor = got["result"]["next_cursor"]
        if cursor is None:
            return ids
        assert rows and cursor == max(r["id"] for r in rows)
    raise AssertionError("pagination never ended")


def test_every_list_tool_returns_every_row_exactly_once_across_pages() -> None:
    env = make_native(D, split="generated", max_steps=100_000)
    env.reset(seed=0, options={"generate": 3, "scale": 3 * SCALE})
    policy_id = env.task.params["policy_id"]
    for role in ("finance_controller", "customer_care_lead", "underwriting_manager"):  # three rows to page through
        assert _step(env, "request_approval", policy_id=policy_id, role=role, reason="paging")["status"] == "ok"
    due_date = env.state.rows("reminders", policy_id=policy_id)[0]["due_date"]
    calls = {
        ("list_reminders", "reminders"): ({"status": "scheduled"}, env.state.rows("reminders", status="scheduled")),
        ("list_reminders", "reminders", "date"): ({"due_date": due_date}, env.state.rows("reminders", due_date=due_date)),
        ("list_instalments", "instalments"): ({"policy_id": policy_id}, env.state.rows("instalments", policy_id=policy_id)),
        ("list_approvals", "approvals"): ({"policy_id": policy_id}, env.state.rows("approvals", policy_id=policy_id)),
    }
    assert len(calls["list_reminders", "reminders"][1]) > 50  # more than a default page at this scale
    for (tool, key, *_), (args, rows) in calls.items():
        want = [r["id"] for r in rows]  # id order
        for limit in (1, 2, 7, 200):
            got = _all_pages(env, tool, key, limit, **args)
            assert len(got) == len(set(got)) and sorted(got) == want, (tool, args, limit)
            if limit == 1:
                assert got == want  # pages follow id order
        first = _step(env, tool, **args)["result"]  # the default page: 50 rows
        assert sorted(r["id"] for r in first[key]) == want[:50]
        assert first["next_cursor"] == (want[49] if len(want) > 50 else None)
        if "total" in first:
            assert first["total"] == len(want)


@pytest.mark.parametrize("bad", [{"limit": 0}, {"limit": 201}, {"limit": "many"}, {"limit": None},
                                 {"cursor": 12}, {"cursor": "x" * 500}, {"cursor": ["INS-1"]}])
def test_bad_limits_and_cursors_are_tool_errors(bad: dict[str, Any]) -> None:
    env = make_native(D, split="generated")
    env.reset(seed=0, options={"generate": 5})
    policy_id = env.task.params["policy_id"]
    for tool, args in (("list_instalments", {"policy_id": policy_id}), ("list_reminders", {"policy_id": policy_id}),
                       ("list_approvals", {"policy_id": policy_id})):
        before = env.state.content_hash()
        got = _step(env, tool, **args, **bad)
        assert got["status"] == "error" and got["code"] == "invalid_args", (tool, bad, got)
        assert env.state.content_hash() == before


def test_a_cursor_past_the_end_is_an_empty_last_page_and_reminders_need_a_filter() -> None:
    env = make_native(D, split="generated")
    env.reset(seed=0, options={"generate": 5})
    policy_id = env.task.params["policy_id"]
    got = _step(env, "list_instalments", policy_id=policy_id, cursor="~")
    assert got["status"] == "ok" and got["result"]["instalments"] == [] and got["result"]["next_cursor"] is None
    assert _step(env, "list_reminders")["code"] == "invalid_args"  # the whole book is not listed
    assert _step(env, "list_instalments", policy_id="POL-0000")["code"] == "not_found"


# -- ids numbered per policy ----------------------------------------------------------------------
def _by_prefix_count(store: Store, table: str, prefix: str) -> str:
    """The id the tools gave before issue 15: one more than the ids under ``prefix`` (a scan)."""
    n = 1 + sum(1 for rid in store.ids(table) if rid.startswith(prefix + "-"))
    while store.exists(table, f"{prefix}-{n:02d}"):
        n += 1
    return f"{prefix}-{n:02d}"


def test_new_approval_and_reminder_ids_are_the_ones_a_prefix_count_gave() -> None:
    env = make_native(D, split="generated", max_steps=500)
    env.reset(seed=0, options={"generate": 6, "scale": 3})
    state = env.state
    policy_id = env.task.params["policy_id"]
    other = next(r for r in state.rows("approvals", status="granted"))["policy_id"]  # a neighbour with an approval
    for pid in (policy_id, other, policy_id):
        number = pid.split("-", 1)[1]
        want = _by_prefix_count(state, "approvals", f"APV-{number}")
        role = next(r for r in ("finance_controller", "customer_care_lead", "underwriting_manager", "collections_supervisor")
                    if not state.rows("approvals", policy_id=pid, role=r))
        got = _step(env, "request_approval", policy_id=pid, role=role, reason="numbering")
        assert got["status"] == "ok" and got["result"]["id"] == want
    due = [r for r in state.rows("instalments", policy_id=policy_id, status="due")
           if not state.rows("reminders", instalment_id=r["id"], status="scheduled")]
    today = env.state.get("clock", "clock")["now"][:10]
    for inst in due[:2]:
        want = _by_prefix_count(state, "reminders", f"REM-{policy_id.split('-', 1)[1]}")
        got = _step(env, "create_reminder", instalment_id=inst["id"], send_on=today)
        assert got["status"] == "ok" and got["result"]["id"] == want


# -- no scans on the tools' and the grader's path ---------------------------------------------------
@contextmanager
def _no_scans() -> Iterator[list[str]]:
    """Record every full read of a growing table (a scan) while the body runs: ``ids`` and
    ``iter_rows``, which is what ``select`` / ``select_where`` fall back to without an index."""
    scans: list[str] = []
    original = {name: getattr(Store, name) for name in ("iter_rows", "ids")}

    def iter_rows(self: Store, table: str) -> Any:
        if table in GROWING:
            scans.append(f"iter_rows({table})")
        return original["iter_rows"](self, table)

    def ids(self: Store, table: str) -> Any:
        if table in GROWING:
            scans.append(f"ids({table})")
        return original["ids"](self, table)

    Store.iter_rows, Store.ids = iter_rows, ids  # type: ignore[method-assign]
    try:
        yield scans
    finally:
        for name, fn in original.items():
            setattr(Store, name, fn)


def test_tools_and_grader_never_scan_a_growing_table() -> None:
    """Every tool call of the oracle's and some wrong policies' episodes (and the reads the oracle
    skips) and the grade read growing tables through a primary key or an index only."""
    env = make_native(D, split="generated", max_steps=200)
    for index in (2, 3, 4, 6):  # paid instalments, approval, collection day, short notice
        env.reset(seed=0, options={"generate": index, "scale": 3})
        policy_id = env.task.params["policy_id"]
        active = env.state.rows("schedules", policy_id=policy_id, status="active")[0]
        with _no_scans() as scans:
            _step(env, "get_schedule", schedule_id=active["id"])
            _step(env, "list_approvals", policy_id=policy_id)
            _step(env, "list_reminders", status="scheduled")
            draft = _step(env, "create_draft_schedule", policy_id=policy_id, frequency="custom", change_type="split")
            added = _step(env, "add_instalment", schedule_id=draft["result"]["id"], due_date="2030-01-15", amount=100)
            _step(env, "remove_instalment", instalment_id=added["result"]["id"])
        assert scans == [], scans
        for policy in (get_policy(D, "oracle"), WRONG_POLICIES["collateral_change"](),
                       WRONG_POLICIES["unneeded_approval"](), WRONG_POLICIES["reminder_on_cancelled"]()):
            with _no_scans() as scans:
                info = _play(env, policy, index, 3)
            assert "grade" in info
            assert scans == [], (index, policy.name, scans)


# -- policies at scale --------------------------------------------------------------------------------
@cache
def _oracle_grades(scale: int) -> dict[int, dict[str, Any]]:
    env = make_native(D, split="generated")
    return {i: _play(env, get_policy(D, "oracle"), i, scale)["grade"] for i in INDICES}


def test_oracle_passes_at_scale_10_with_the_grade_of_scale_1() -> None:
    big, base = _oracle_grades(SCALE), _oracle_grades(1)
    for i in INDICES:
        assert big[i]["pass"], (i, big[i]["failure_codes"])
        assert big[i]["checks"] == base[i]["checks"], i


@pytest.mark.parametrize("code", ["collateral_change", "rounding_drift", "unneeded_approval", "reminder_on_cancelled"])
def test_wrong_policies_still_fail_at_scale(code: str) -> None:
    env = make_native(D, split="generated")
    failed = [code in _play(env, WRONG_POLICIES[code](), i, SCALE)["grade"]["failure_codes"] for i in INDICES]
    assert any(failed), code


def _play_catalog(env: Any, index: int, scale: int) -> dict[str, Any]:
    from backoffice.training.catalog.schedules import feature_policy

    policy = feature_policy(env.agent)
    obs, info = env.reset(options={"generate": index, "scale": scale})
    while True:
        mask = env.action_masks()
        action = policy(obs, mask)
        assert mask[action]
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


def test_catalog_feature_policy_passes_at_scale_10() -> None:
    from backoffice.training.catalog import make_catalog_env

    env = make_catalog_env(D, split="generated")
    for i in INDICES[:7]:
        info = _play_catalog(env, i, SCALE)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])


def test_paginated_reads_are_followed_when_a_result_spans_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a page of 1 row (the default forced down), the oracle and the catalog read every page
    and still pass: they do not depend on a result fitting in one page."""
    from backoffice.envs.core import tools as core_tools
    from backoffice.training.catalog import make_catalog_env

    real_page = core_tools.page

    def tiny_page(store: Any, table: str, args: Any, where: Any = None, **equals: Any) -> Any:
        return real_page(store, table, args.model_copy(update={"limit": 1}), where, **equals)

    monkeypatch.setattr("backoffice.envs.schedules.tools.page", tiny_page)
    env = make_native(D, split="generated", max_steps=200)
    for i in (2, 4, 5):  # paid instalments (two versions), collection day, lookalike neighbours
        info = _play(env, get_policy(D, "oracle"), i, 1)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])
        policy_id = env.task.params["policy_id"]
        listed = sum(1 for rec in env.trace if rec["tool"] == "list_instalments")
        assert listed == sum(1 for r in env.state.rows("instalments", policy_id=policy_id)
                             if r["id"] not in env.state.diff().get("instalments", {}).get("created", ()))
    catalog = make_catalog_env(D, split="generated", max_steps=200)
    for i in (2, 4, 5):
        info = _play_catalog(catalog, i, 1)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])
