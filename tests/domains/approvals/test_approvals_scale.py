"""Approvals at scale: scale 1 rebuilds the release and a scaled world grows every table of the
organisation, a decision leaves the pages of the queue, the policies and the catalog read every
page, the name index answers like the scan it replaces, and the verdict reads a store like it
reads dicts. (What every domain does at scale, approvals included: ``test_scale.py``.)"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import pytest

from backoffice.envs import make_native
from backoffice.envs.approvals import DOMAIN, authority as auth
from backoffice.envs.approvals.generator import DEFECT_TAGS, OTHER_DESK_ROLES
from backoffice.envs.approvals.names import find_people_ids, matches
from backoffice.envs.core import Snapshot, Store
from backoffice.envs.core.build import make_task
from backoffice.envs.core.release import load_release
from backoffice.training.catalog import spec_class
from backoffice.training.domains.approvals.policies import _find_person
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from backoffice.training.policies.base import every_page
from paging import all_pages, generated, step

#: tables that grow with the organisation (roles and rules are the desk's catalogue)
GROWING = ("people", "role_holders", "delegations", "requests", "decisions", "ledger_entries", "orders")


@cache
def _scaled(index: int, scale: int) -> tuple[Any, Snapshot, dict[str, Any]]:
    return make_task(DOMAIN, "generated", index, scale)


# -- scale 1 is the release; scale k is the same task in a larger world -----------------------------
def test_scale_one_rebuilds_the_released_tasks() -> None:
    rel = load_release("approvals")
    for split in ("train", "heldout"):
        for index in range(len(DEFECT_TAGS)):
            task, snap, key = make_task(DOMAIN, split, index)
            assert task.to_json() == rel.task(task.task_id).to_json()
            assert snap.content_hash() == rel.snapshot(task.task_id).content_hash()
            assert key == rel.answer_key(task.task_id)


@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_a_scaled_world_grows_every_table_of_the_organisation(tag: str) -> None:
    """Every table of the organisation grows (one task's own counts vary), the desk's catalogue
    gains the other desks' roles and keeps its rules. (The same task, every released row
    unchanged, a pure generator: ``test_scale.py``.)"""
    small, large = generated(DOMAIN.name, DEFECT_TAGS.index(tag)), generated(DOMAIN.name, DEFECT_TAGS.index(tag), 10)
    for table in GROWING:
        assert len(large.snapshot[table]) >= len(small.snapshot[table]) + 5, table
    n_small, n_large = (sum(len(gen.snapshot[t]) for t in GROWING) for gen in (small, large))
    assert 7 * n_small <= n_large <= 13 * n_small, (n_small, n_large)
    assert len(large.snapshot["roles"]) == len(small.snapshot["roles"]) + len(OTHER_DESK_ROLES)
    assert large.snapshot["rules"] == small.snapshot["rules"]


# -- pagination (every list tool of every domain: test_scale.py) -------------------------------------
def test_a_decided_request_leaves_the_pages_of_the_queue() -> None:
    """A page after a decision: the written request leaves the queue, nothing else moves."""
    env = make_native("approvals", split="generated", max_steps=10_000)
    env.reset(options={"generate": 1, "scale": 30})
    call = partial(step, env)
    pending = [r["id"] for r in all_pages(call, "list_pending", "requests", limit=7)]
    decided = pending[3]
    env.step({"tool": "escalate", "args": {"request_id": decided, "role_id": min(env.unwrapped.state.ids("roles"))}})
    assert [r["id"] for r in all_pages(call, "list_pending", "requests", limit=9)] == [r for r in pending if r != decided]


def test_the_policies_follow_next_cursor() -> None:
    pages = [{"roles": [{"id": "R-1"}, {"id": "R-2"}], "next_cursor": "R-2"}, {"roles": [{"id": "R-3"}], "next_cursor": None}]
    gen = every_page("list_roles", "roles")
    calls = [next(gen)]
    with pytest.raises(StopIteration) as done:
        for page in pages:
            calls.append(gen.send({"status": "ok", "result": page}))
    assert [c["args"] for c in calls[:2]] == [{}, {"cursor": "R-2"}]
    assert [r["id"] for r in done.value.value] == ["R-1", "R-2", "R-3"]
    people = [{"people": [{"id": "EMP-1", "name": "A B", "department": "Sales"}], "next_cursor": "EMP-1"},
              {"people": [{"id": "EMP-2", "name": "A B", "department": "Finance"}], "next_cursor": "EMP-2"}]
    gen = _find_person("A B", "Finance")
    next(gen)
    assert gen.send({"status": "ok", "result": people[0]})["args"] == {"name": "A B", "cursor": "EMP-1"}
    with pytest.raises(StopIteration) as found:
        gen.send({"status": "ok", "result": people[1]})
    assert found.value.value == "EMP-2"  # found on the second page: no third call


def test_the_catalog_reads_every_page_before_it_knows() -> None:
    cls = spec_class("approvals")  # the conclusions tier
    index = {a.name: i for i, a in enumerate(cls.actions)}
    A_ROLES, A_FIND, A_HOLDERS = index["list_roles"], index["find_people"], [index["lookup_role_holders[0]"]]
    spec = cls()
    desk = spec.desk  # type: ignore[attr-defined]
    spec.reset({"params": {"request_id": "REQ-1", "approver_name": "A B", "approver_department": "Finance"}}, {})
    ok = "ok"
    spec.observe(A_ROLES, spec.to_call(A_ROLES) or {}, {"status": ok, "result": {"roles": [{"id": "R-1"}], "next_cursor": "R-1"}})
    assert desk.roles is None and spec.mask()[A_ROLES] and spec.to_call(A_ROLES) == {"tool": "list_roles", "args": {"cursor": "R-1"}}
    spec.observe(A_ROLES, spec.to_call(A_ROLES) or {}, {"status": ok, "result": {"roles": [{"id": "R-2"}], "next_cursor": None}})
    assert [r["id"] for r in desk.roles or []] == ["R-1", "R-2"] and not spec.mask()[A_ROLES]
    first = {"people": [{"id": "EMP-1", "name": "A B", "department": "Finance"}], "next_cursor": "EMP-1"}
    spec.observe(A_FIND, spec.to_call(A_FIND) or {}, {"status": ok, "result": first})
    assert desk.approver_id is None and spec.mask()[A_FIND]
    assert (spec.to_call(A_FIND) or {})["args"] == {"name": "A B", "cursor": "EMP-1"}
    spec.observe(A_FIND, spec.to_call(A_FIND) or {}, {"status": ok, "result": {"people": [], "next_cursor": None}})
    assert desk.approver_id == "EMP-1" and not spec.mask()[A_FIND]
    call = {"tool": "lookup_role_holders", "args": {"role_id": "R-2"}}
    spec.observe(A_HOLDERS[0], call, {"status": ok, "result": {"holders": [{"person_id": "EMP-7"}], "next_cursor": "RH-1"}})
    assert "R-2" not in desk.holders
    spec.observe(A_HOLDERS[0], {**call, "args": {"role_id": "R-2", "cursor": "RH-1"}},
                 {"status": ok, "result": {"holders": [{"person_id": "EMP-8"}], "next_cursor": None}})
    assert [h["person_id"] for h in desk.holders["R-2"]] == ["EMP-7", "EMP-8"]


# -- the indexes answer like the scans they replace ---------------------------------------------------
QUERIES = (
    "an", "AN", "  an  ", "  ", "ai", "a b", "sha bian", "Costa", "costa", "x y z", "Aisha", "son", "berg",
    "e", "ll", "ia  b", "o.", "Dubois", "ne Fi",
)


def test_find_people_answers_like_the_scan() -> None:
    _, snap, _ = _scaled(2, 20)
    store = Store(snap)
    names = [p["name"] for p in snap.table("people").values()]
    queries = (*QUERIES, *names[:15], *(n.split()[-1] for n in names[:15]), *(n[2:9] for n in names[:15]))
    for query in queries:
        expected = [pid for pid, p in snap.table("people").items() if matches(query, p["name"])]
        assert find_people_ids(store, query) == expected, query
    # people written by the episode are merged in
    pid = next(iter(snap.table("people")))
    store.update("people", pid, {"name": "Zebedee Quux"})
    store.insert("people", {"id": "EMP-0001", "name": "Quentin Quux", "title": "t", "department": "d", "email": "e", "manager_id": None})
    assert find_people_ids(store, "quux") == sorted(["EMP-0001", pid])


def test_the_verdict_reads_a_store_like_dicts() -> None:
    rel = load_release("approvals")
    for task_id in rel.split_ids["heldout"][:48]:
        snap = rel.snapshot(task_id)
        exp = rel.answer_key(task_id)["expected"]
        tables = {n: snap.table(n) for n in snap.table_names}
        request = tables["requests"][exp["request_id"]]
        now = tables["clock"]["clock"]["now"]
        by_store = auth.assess(Store(snap), request, exp["approver_id"], now)
        assert by_store == auth.assess(tables, request, exp["approver_id"], now), task_id
        assert by_store == auth.assess(auth.SnapshotReader(snap), request, exp["approver_id"], now), task_id
        assert by_store.outcome == exp["outcome"]


def test_the_snapshot_reader_answers_like_a_store() -> None:
    """The grader's reader (live snapshot rows, no copies) returns what a store without writes
    returns, for every look-up the verdict makes."""
    _, snap, _ = _scaled(3, 10)
    store, live = Store(snap), auth.SnapshotReader(snap)
    for table, field in (("role_holders", "person_id"), ("role_holders", "role_id"), ("delegations", "delegate_id"),
                         ("delegations", "delegator_id"), ("rules", "request_type")):
        for value in [*list(snap.index(table, field))[:40], "nobody"]:
            assert live.rows(table, **{field: value}) == store.rows(table, **{field: value}), (table, field, value)
    rh = next(iter(snap.table("role_holders").values()))
    assert live.rows("role_holders", person_id=rh["person_id"], role_id=rh["role_id"]) == \
        store.rows("role_holders", person_id=rh["person_id"], role_id=rh["role_id"])
    assert live.rows("role_holders", lambda r: r["valid_to"] is None, role_id=rh["role_id"]) == \
        store.rows("role_holders", lambda r: r["valid_to"] is None, role_id=rh["role_id"])
    assert live.rows("roles") == store.rows("roles")
    assert live.get("people", rh["person_id"]) == store.get("people", rh["person_id"])
    assert live.get("people", "EMP-NOBODY") is None


def test_per_snapshot_reads_follow_the_episodes_writes() -> None:
    """The read tools answer from per-snapshot structures (queue, rules, roles, name index,
    person cards) only while the episode has not written the table they come from: a write
    (no desk tool makes one to the reference tables, but the store allows it) is seen at once,
    and the next episode on the same snapshot sees the snapshot again."""
    rel = load_release("approvals")
    task_id = rel.split_ids["heldout"][0]
    env = make_native("approvals", split="heldout", max_steps=10_000)

    def call(tool: str, **args: Any) -> dict[str, Any]:
        env.step({"tool": tool, "args": args})
        assert env.last_result["status"] == "ok", env.last_result
        return env.last_result["result"]

    def snapshot_answers() -> dict[str, Any]:
        return {
            "queue": call("list_pending"), "rules": call("get_rules", request_type="refund"),
            "roles": call("list_roles"), "people": call("find_people", name=person["name"]),
            "person": call("get_person", person_id=person["id"]),
        }

    env.reset(options={"task_id": task_id})
    snap = rel.snapshot(task_id)
    person = next(p for p in snap.table("people").values() if p["manager_id"])
    first = snapshot_answers()
    store = env.state
    opened = first["queue"]["requests"][0]["id"]
    store.update("requests", opened, {"status": "rejected"})
    store.update("people", person["id"], {"manager_id": None, "name": "Zebedee Quux"})
    store.insert("role_holders", {"id": "RH-ZZZZ", "person_id": person["id"], "role_id": first["roles"]["roles"][0]["id"],
                                  "valid_from": "2020-01-01", "valid_to": None})
    low = first["rules"]["tables"]["bands"][0]["id"]
    store.update("rules", low, {"hard_limit": 10**12})
    store.delete("roles", first["roles"]["roles"][0]["id"])
    assert opened not in [r["id"] for r in call("list_pending")["requests"]]
    bands = call("get_rules", request_type="refund")["tables"]["bands"]
    assert [b["id"] for b in bands] == [b["id"] for b in first["rules"]["tables"]["bands"]] and bands[0]["hard_limit"] == 10**12
    assert [r["id"] for r in call("list_roles")["roles"]] == [r["id"] for r in first["roles"]["roles"][1:]]
    assert [p["id"] for p in call("find_people", name="quux")["people"]] == [person["id"]]
    card = call("get_person", person_id=person["id"])
    assert card["reporting_line"] == [] and card["assignments"][-1]["id"] == "RH-ZZZZ"
    env.reset(options={"task_id": task_id})
    assert snapshot_answers() == first


def test_the_grade_is_the_same_when_its_judgements_are_remembered() -> None:
    """The grader remembers its verdicts per snapshot: grading again (remembered) or with the
    memory dropped gives the same grade, for the oracle and a wrong policy."""
    import backoffice.graders.approvals as grader

    rel = load_release("approvals")
    env = make_native("approvals", split="heldout")
    for name in ("oracle", "wrong:invalid_approver", "wrong:basis_missing_or_wrong"):
        for task_id in rel.split_ids["heldout"][:12]:
            first = run_episode(env, get_policy("approvals", name), task_id=task_id).grade
            assert env.grade_now() == first
            rel.snapshot(task_id)._memo.pop("approvals.grader.judgements", None)
            assert env.grade_now() == first
    small = grader.MEMO_SIZE
    try:
        grader.MEMO_SIZE = 1  # every judgement evicts the last one
        assert env.grade_now() == first
    finally:
        grader.MEMO_SIZE = small
