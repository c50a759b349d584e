"""Schedules at scale (issue 15): what the scale tier of the generator adds (the book's tables
grow, with customers the task may not touch; a thousandfold world in seconds), the list tools'
filters, ids numbered per policy without a scan, no scan in the reads the oracle skips, and the
oracle listing every instalment one row a page. (The scale option, pagination, no scans and the
policies at scale, for every domain: ``test_scale.py``.)"""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import task_seed
from backoffice.envs.core.store import Store
from backoffice.envs.schedules.generator import DEFECT_TAGS, generate
from backoffice.envs.schedules.tables import ACCOUNT_TABLES
from paging import no_scans, oracle_on_one_row_pages, step

D = "schedules"
#: the tables that grow with the book (rules, _approvers and clock are one document each)
GROWING = ACCOUNT_TABLES
SCALE = 10


def _seed(i: int) -> int:
    return task_seed(D, "generated", i)


# -- the scale tier of the generator ---------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_a_scaled_world_grows_the_book_with_customers_the_task_may_not_touch(tag: str) -> None:
    """Only the book's tables grow, by about SCALE times, with customers the task may not touch.
    (The same task and answer, every scale-1 row unchanged, unique ids, a pure generator:
    ``test_scale.py``.)"""
    base = generate(_seed(4), tag)
    big = generate(_seed(4), tag, scale=SCALE)
    assert all(len(big.snapshot[table]) == len(rows) for table, rows in base.snapshot.items() if table not in GROWING)
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


def test_a_thousandfold_world_builds_in_seconds() -> None:
    import time

    start = time.perf_counter()
    big = generate(_seed(1), DEFECT_TAGS[1], scale=1000)
    assert time.perf_counter() - start < 20  # about half a second on the 2-core machine
    assert len(big.snapshot["policies"]) >= 800 * len(generate(_seed(1), DEFECT_TAGS[1]).snapshot["policies"])


# -- pagination (every list tool of every domain: test_scale.py) -----------------------------------
def test_every_filter_is_optional_and_a_filter_matching_nothing_is_an_empty_page() -> None:
    """Seeds v2: every list tool pages the same way (``limit``, ``cursor``, ``next_cursor``,
    ``total``) and takes its filters as options: without one it pages the book, in id order."""
    env = make_native(D, split="generated")
    env.reset(seed=0, options={"generate": 5, "scale": 3})
    book = step(env, "list_reminders", limit=7)["result"]
    assert len(book["reminders"]) == 7 and book["total"] == len(env.state.rows("reminders"))
    assert [r["id"] for r in book["reminders"]] == sorted(r["id"] for r in book["reminders"])
    following = step(env, "list_reminders", limit=7, cursor=book["next_cursor"])["result"]
    assert following["reminders"][0]["id"] > book["reminders"][-1]["id"] and following["total"] == book["total"]
    for tool, key in (("list_instalments", "instalments"), ("list_reminders", "reminders"), ("list_approvals", "approvals")):
        empty = step(env, tool, policy_id="POL-0000")["result"]
        assert empty == {key: [], "next_cursor": None, "total": 0}, tool


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
        got = step(env, "request_approval", policy_id=pid, role=role, reason="numbering")
        assert got["status"] == "ok" and got["result"]["id"] == want
    due = [r for r in state.rows("instalments", policy_id=policy_id, status="due")
           if not state.rows("reminders", instalment_id=r["id"], status="scheduled")]
    today = env.state.get("clock", "clock")["now"][:10]
    for inst in due[:2]:
        want = _by_prefix_count(state, "reminders", f"REM-{policy_id.split('-', 1)[1]}")
        got = step(env, "create_reminder", instalment_id=inst["id"], send_on=today)
        assert got["status"] == "ok" and got["result"]["id"] == want


# -- no scans on the tools' and the grader's path (every domain's policies: test_scale.py) --------
def test_the_reads_the_oracle_skips_never_scan_a_growing_table() -> None:
    """The reads and writes the oracle skips (a schedule, the approvals and the book's scheduled
    reminders, a draft with an instalment added and removed) read growing tables through a
    primary key or an index only."""
    env = make_native(D, split="generated", max_steps=200)
    for index in (2, 3, 4, 6):  # paid instalments, approval, collection day, short notice
        env.reset(seed=0, options={"generate": index, "scale": 3})
        policy_id = env.task.params["policy_id"]
        active = env.state.rows("schedules", policy_id=policy_id, status="active")[0]
        with no_scans(GROWING) as scans:
            step(env, "get_schedule", schedule_id=active["id"])
            step(env, "list_approvals", policy_id=policy_id)
            step(env, "list_reminders", status="scheduled")
            draft = step(env, "create_draft_schedule", policy_id=policy_id, frequency="custom", change_type="split")
            added = step(env, "add_instalment", schedule_id=draft["result"]["id"], due_date="2030-01-15", amount=100)
            step(env, "remove_instalment", instalment_id=added["result"]["id"])
        assert scans == [], scans


# -- policies at scale (every domain: test_scale.py) ----------------------------------------------------
def test_one_row_pages_list_every_instalment_of_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one row a page, the oracle lists the policy's instalments page by page: one call per
    instalment it did not create."""
    # paid instalments (two versions), collection day, lookalike neighbours
    for env in oracle_on_one_row_pages(monkeypatch, D, (2, 4, 5), max_steps=200):
        created = env.state.diff().get("instalments", {}).get("created", ())
        listed = sum(1 for rec in env.trace if rec["tool"] == "list_instalments")
        assert listed == sum(1 for r in env.state.rows("instalments", policy_id=env.task.params["policy_id"]) if r["id"] not in created)
