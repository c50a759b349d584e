"""Tests of the refunds domain beyond the generic ones (the suite's generic tests run for every
discovered domain)."""

from __future__ import annotations

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.release import load_release
from backoffice.envs.refunds.tables import decide
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy

NAME = "refunds"
DESK = {"restocking_pct": 10, "double_from": 15, "triple_from": 25, "last_day": 30}


def _row(**fields: int) -> dict:
    row = {"amount_cents": 10_000, "paid_cents": 10_000, "refunded_cents": 0, "days_since_delivery": 3}
    row.update(fields)
    return row


@pytest.mark.parametrize(("row", "desk", "want"), [
    (_row(), DESK, ("approve", 9_000)),  # 10 % of 10000 cents
    (_row(amount_cents=999), {**DESK, "restocking_pct": 5}, ("approve", 950)),  # 49.95 rounded down to 49
    (_row(paid_cents=8_000, refunded_cents=1_000), DESK, ("approve", 6_300)),  # capped at 7000, less 700
    (_row(amount_cents=12_000), {**DESK, "restocking_pct": 0}, ("approve", 10_000)),  # capped, no fee
    (_row(days_since_delivery=15), DESK, ("approve", 8_000)),  # the fee doubles from day 15 ...
    (_row(days_since_delivery=25), DESK, ("approve", 7_000)),  # ... and triples from day 25
    (_row(days_since_delivery=30), DESK, ("approve", 7_000)),  # the last day
    (_row(days_since_delivery=31), DESK, ("reject", 0)),  # after it: reject
])
def test_the_refund_rules_on_hand_computed_examples(row: dict, desk: dict, want: tuple) -> None:
    assert decide(row, desk) == want


def test_each_wrong_policy_commits_exactly_its_failure() -> None:
    env = make_native(NAME, split="heldout")
    ids = load_release(NAME).split_ids["heldout"][:30]
    for code in get_domain(NAME).failure_codes:
        for task_id in ids:
            grade = run_episode(env, get_policy(NAME, f"wrong:{code}"), task_id=task_id).grade
            assert grade["failure_codes"] == [code], (code, task_id, grade["failure_codes"])
    for task_id in ids:
        assert run_episode(env, get_policy(NAME, "oracle"), task_id=task_id).grade["pass"]


def test_tool_errors_are_structured_and_change_nothing() -> None:
    env = make_native(NAME)
    env.reset(seed=0)
    rows = env.state.rows("requests", customer=env.task.params["customer"])
    rid = rows[0]["id"]
    before = env.state.content_hash()
    for action, code in (
        ({"tool": "get_request", "args": {"request_id": "REF-0"}}, "not_found"),
        ({"tool": "decide_refund", "args": {"request_id": "REF-0", "outcome": "reject", "amount_cents": 0}}, "not_found"),
        ({"tool": "decide_refund", "args": {"request_id": rid, "outcome": "reject", "amount_cents": 5}}, "precondition_failed"),
        ({"tool": "decide_refund", "args": {"request_id": rid, "outcome": "approve", "amount_cents": -1}}, "invalid_args"),
        ({"tool": "list_requests", "args": {"customer": "CUS-1", "cursor": "nope"}}, "invalid_args"),
    ):
        _, _, _, _, info = env.step(action)
        assert info["error_code"] == code, (action, info)
        assert env.state.content_hash() == before


def test_a_second_decision_is_applied_and_graded() -> None:
    env = make_native(NAME)
    env.reset(seed=1)
    params = env.task.params
    rid = next(r["id"] for r in env.state.rows("requests", customer=params["customer"]) if r["order_id"] == params["order_id"])
    for outcome, amount in (("approve", 100), ("reject", 0)):
        env.step({"tool": "decide_refund", "args": {"request_id": rid, "outcome": outcome, "amount_cents": amount}})
    assert env.state.get("requests", rid)["status"] == "rejected"
    *_, info = env.step({"tool": "submit", "args": {}})
    assert "extra_decision" in info["grade"]["failure_codes"] and info["grade"]["decisions"] == 2
