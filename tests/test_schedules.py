"""Schedules domain: rules arithmetic, tool behaviour, and every failure code proven by its wrong
policy over the whole release (triggered exactly where the mistake is possible)."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backoffice.envs import make_native
from backoffice.envs.core.release import load_release
from backoffice.envs.schedules import DOMAIN
from backoffice.envs.schedules.generator import generate
from backoffice.envs.schedules.tables import (
    approval_needed, due_date, parts_meeting_minimum, reminder_send_on, split_amounts,
)
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode

D = "schedules"


@lru_cache(maxsize=None)
def release():
    return load_release(D)


def all_ids() -> tuple[str, ...]:
    rel = release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


@lru_cache(maxsize=None)
def codes_of(policy: str) -> dict[str, tuple[str, ...]]:
    env = make_native(D)
    return {t: tuple(run_episode(env, get_policy(D, policy), task_id=t).grade["failure_codes"]) for t in all_ids()}


# -- rules arithmetic ----------------------------------------------------------------------
def test_split_amounts_puts_remainder_where_the_rule_says() -> None:
    assert split_amounts(1003, 4, "remainder_to_first") == [253, 250, 250, 250]
    assert split_amounts(1003, 4, "remainder_to_last") == [250, 250, 250, 253]
    assert split_amounts(1003, 4, "spread_from_first") == [251, 251, 251, 250]
    assert split_amounts(1003, 4, "spread_from_last") == [250, 251, 251, 251]
    assert split_amounts(1000, 4, "spread_from_last") == [250] * 4


@given(total=st.integers(1, 10**8), parts=st.integers(1, 24), rule=st.sampled_from(
    ["remainder_to_first", "remainder_to_last", "spread_from_first", "spread_from_last"]))
def test_split_amounts_always_adds_up(total: int, parts: int, rule: str) -> None:
    amounts = split_amounts(total, parts, rule)
    assert sum(amounts) == total and len(amounts) == parts
    assert max(amounts) - min(amounts) <= (total % parts if rule.startswith("remainder") else 1)


def test_month_end_handling() -> None:
    assert due_date("2026-02", 31, "last_day_of_month") == "2026-02-28"
    assert due_date("2026-02", 29, "first_day_of_next_month") == "2026-03-01"
    assert due_date("2028-02", 30, "last_day_of_month") == "2028-02-29"  # leap year
    assert due_date("2026-04", 31, "first_day_of_next_month") == "2026-05-01"
    assert due_date("2026-12", 31, "first_day_of_next_month") == "2026-12-31"
    assert due_date("2026-06", 15, "first_day_of_next_month") == "2026-06-15"


def test_minimum_instalment_reduces_the_count() -> None:
    assert parts_meeting_minimum(30_000, 12, 5_000) == 6
    assert parts_meeting_minimum(30_000, 4, 5_000) == 4
    assert parts_meeting_minimum(3_000, 4, 5_000) == 1


def test_first_applicable_trigger_names_the_role() -> None:
    rules = {"approval_order": ["short_notice", "instalment_count", "deferral"], "deferral_needs_approval": True,
             "max_instalments_without_approval": 6, "min_notice_days": 10, "approval_role_short_notice": "a",
             "approval_role_instalment_count": "b", "approval_role_deferral": "c"}
    assert approval_needed(rules, "deferral", 8, "2026-05-01", "2026-03-01") == ("instalment_count", "b")
    assert approval_needed(rules, "deferral", 8, "2026-03-05", "2026-03-01") == ("short_notice", "a")
    assert approval_needed(rules, "deferral", 3, "2026-05-01", "2026-03-01") == ("deferral", "c")
    assert approval_needed(rules, "split", 3, "2026-05-01", "2026-03-01") is None


def test_late_reminder_rule() -> None:
    rules = {"reminder_lead_days": 7, "late_reminder": "send_today"}
    assert reminder_send_on(rules, "2026-03-20", "2026-03-02") == "2026-03-13"
    assert reminder_send_on(rules, "2026-03-05", "2026-03-02") == "2026-03-02"
    assert reminder_send_on({**rules, "late_reminder": "skip"}, "2026-03-05", "2026-03-02") is None


# -- generator and release -----------------------------------------------------------------
def test_generator_is_pure_and_rules_vary() -> None:
    a, b = generate(11, "rounding_remainder"), generate(11, "rounding_remainder")
    assert a == b
    rel = release()
    seen: dict[str, set] = {}
    for t in all_ids():
        rules = rel.snapshot(t).table("rules")["RULES"]
        for k, v in rules.items():
            seen.setdefault(k, set()).add(tuple(v) if isinstance(v, tuple) else v)
    for field in ("rounding", "month_end", "minimum_instalment_cents", "reminder_lead_days", "late_reminder",
                  "approval_order", "max_instalments_without_approval", "min_notice_days", "approval_role_deferral"):
        assert len(seen[field]) >= 2, field


def test_allowed_tools_vary_and_checks_use_the_generic_kinds() -> None:
    rel = release()
    without_mandate = [t for t in all_ids() if "update_instruction" not in rel.task(t).allowed_tools]
    assert without_mandate and len(without_mandate) < len(all_ids())
    kinds = {c["kind"] for t in all_ids() for c in rel.answer_key(t)["checks"]}
    assert {"row_equals", "status_is", "no_change", "tool_called", "tool_not_called", "field_equals"} <= kinds
    for t in all_ids():
        key = rel.answer_key(t)
        assert key["defect_tags"][0] in DOMAIN.defect_tags
        if key["expected"]["kind"] == "collection_day":
            assert "update_instruction" in rel.task(t).allowed_tools


def test_grade_reports_each_check() -> None:
    env = make_native(D)
    t = all_ids()[0]
    grade = run_episode(env, get_policy(D, "oracle"), task_id=t).grade
    ids = [c["id"] for c in grade["checks"]]
    assert "guardrail" in ids and "sch.amounts" in ids and "sch.prior_superseded" in ids
    assert grade["check_results"] == {c["id"]: c["pass"] for c in grade["checks"] if c["id"] != "guardrail"}
    assert grade["pass"] and all(c["pass"] for c in grade["checks"])


# -- every failure code, exactly where its mistake is possible -------------------------------
def _possible(code: str, task_id: str) -> bool:
    rel = release()
    key, snap = rel.answer_key(task_id), rel.snapshot(task_id)
    exp = key["expected"]
    if code == "rounding_drift":
        return exp["uneven_split"]
    if code == "outstanding_wrong":
        return exp["split"] and any(i["status"] == "paid" and i["schedule_id"] != exp["prior_schedule_id"] and i["policy_id"] == exp["policy_id"]
                   for i in snap.table("instalments").values())
    if code == "prior_not_superseded":
        return True
    if code == "paid_instalment_altered":
        return any(i["status"] == "paid" and i["schedule_id"] == exp["prior_schedule_id"] for i in snap.table("instalments").values())
    if code == "wrong_due_dates":
        return snap.table("rules")["RULES"]["month_end"] == "first_day_of_next_month" and exp["month_end_adjusted"]
    if code in ("approval_missing", "commit_before_approval"):
        return exp["approval_role"] is not None
    if code == "collateral_change":
        first_due = snap.table("instalments")[exp["prior_due_ids"][0]]["due_date"]
        return any(r["account_id"] != exp["account_id"] and r["status"] == "scheduled" and r["due_date"] == first_due
                   for r in snap.table("reminders").values())
    if code == "reminder_mismatch":
        return bool(exp["scheduled_reminders_before"])
    if code == "mandate_not_updated":
        return exp["kind"] == "collection_day"
    raise AssertionError(code)


@pytest.mark.parametrize("code", DOMAIN.failure_codes)
def test_wrong_policy_triggers_its_code_exactly_where_possible(code: str) -> None:
    got = codes_of(f"wrong:{code}")
    triggered = {t for t, codes in got.items() if code in codes}
    possible = {t for t in all_ids() if _possible(code, t)}
    assert len(possible) >= 10, f"{code}: the release offers too few chances ({len(possible)})"
    assert triggered == possible, (sorted(possible - triggered)[:5], sorted(triggered - possible)[:5])
    # where the mistake is not possible the wrong policy does the oracle's work
    assert all(not got[t] for t in all_ids() if t not in possible)


def test_even_split_dropping_the_remainder_is_rounding_drift_on_every_uneven_task() -> None:
    got = codes_of("wrong:rounding_drift")
    uneven = [t for t in all_ids() if release().answer_key(t)["expected"]["uneven_split"]]
    assert len(uneven) >= 100
    assert all("rounding_drift" in got[t] for t in uneven)
    assert all(got[t] == ("rounding_drift",) for t in uneven)


def test_oracle_never_triggers_a_failure_code() -> None:
    assert not any(codes_of("oracle").values())


# -- tools ---------------------------------------------------------------------------------
def _env_at(task_id: str):
    env = make_native(D, max_steps=200)
    env.reset(options={"task_id": task_id})
    return env


def _call(env, tool: str, **args):
    from backoffice.envs.core.canonical import loads

    before = env.state.content_hash()
    obs, *_ = env.step({"tool": tool, "args": args})
    out = loads(obs)
    if out["status"] == "error":
        assert env.state.content_hash() == before, f"{tool} error changed the state"
    return out


def _approval_task() -> str:
    return next(t for t in all_ids() if release().answer_key(t)["expected"]["approval_role"] and "request_approval" in release().task(t).allowed_tools)


def test_commit_requires_the_named_approval_and_wait_grants_it() -> None:
    t = _approval_task()
    exp = release().answer_key(t)["expected"]
    env = _env_at(t)
    assert _call(env, "wait")["code"] == "precondition_failed"
    draft = _call(env, "create_draft_schedule", policy_id=exp["policy_id"], frequency="monthly", change_type=exp["kind"])["result"]
    for row in exp["instalments"]:
        assert _call(env, "add_instalment", schedule_id=draft["id"], due_date=row["due_date"], amount=row["amount"])["status"] == "ok"
    refused = _call(env, "commit_schedule", schedule_id=draft["id"])
    assert refused["code"] == "approval_required" and refused["details"]["role"] == exp["approval_role"]
    other = next(r for r in ("collections_supervisor", "underwriting_manager", "finance_controller", "customer_care_lead") if r != exp["approval_role"])
    _call(env, "request_approval", policy_id=exp["policy_id"], role=other, reason="wrong role")
    assert _call(env, "wait")["status"] == "ok"
    assert _call(env, "commit_schedule", schedule_id=draft["id"])["code"] == "approval_required"
    assert _call(env, "request_approval", policy_id=exp["policy_id"], role=exp["approval_role"], reason="rule")["status"] == "ok"
    assert _call(env, "request_approval", policy_id=exp["policy_id"], role=exp["approval_role"], reason="again")["code"] == "conflict"
    assert _call(env, "commit_schedule", schedule_id=draft["id"])["code"] == "approval_required"
    waited = _call(env, "wait")["result"]
    assert waited["decided"][0]["status"] == "granted" and waited["today"] == waited["now"][:10]
    committed = _call(env, "commit_schedule", schedule_id=draft["id"])
    assert committed["status"] == "ok" and [r["seq"] for r in committed["result"]["instalments"]] == list(range(1, len(exp["instalments"]) + 1))
    assert _call(env, "commit_schedule", schedule_id=draft["id"])["code"] == "conflict"


def test_tool_errors_are_structured_and_leave_state_unchanged() -> None:
    t = all_ids()[1]
    exp = release().answer_key(t)["expected"]
    env = _env_at(t)
    assert _call(env, "get_policy", policy_id="POL-0000")["code"] == "not_found"
    assert _call(env, "list_instalments")["code"] == "invalid_args"
    assert _call(env, "supersede_schedule", schedule_id=exp["prior_schedule_id"])["code"] == "conflict"
    assert _call(env, "add_instalment", schedule_id=exp["prior_schedule_id"], due_date="2030-01-01", amount=5)["code"] == "conflict"
    draft = _call(env, "create_draft_schedule", policy_id=exp["policy_id"], frequency="custom", change_type=exp["kind"])["result"]
    assert _call(env, "add_instalment", schedule_id=draft["id"], due_date="2026-02-30", amount=5)["code"] == "invalid_args"
    assert _call(env, "add_instalment", schedule_id=draft["id"], due_date="tomorrow", amount=5)["code"] == "invalid_args"
    assert _call(env, "commit_schedule", schedule_id=draft["id"])["code"] == "precondition_failed"  # empty draft
    past = _call(env, "add_instalment", schedule_id=draft["id"], due_date="2020-01-15", amount=10**6)["result"]
    assert _call(env, "commit_schedule", schedule_id=draft["id"])["code"] == "precondition_failed"  # due in the past
    assert _call(env, "remove_instalment", instalment_id=past["id"])["status"] == "ok"
    paid_or_due = exp["prior_due_ids"][0]
    assert _call(env, "create_reminder", instalment_id=paid_or_due, send_on="2020-01-01")["code"] == "precondition_failed"
    assert _call(env, "cancel_reminder", reminder_id="REM-0000-01")["code"] == "not_found"
    assert _call(env, "request_approval", policy_id=exp["policy_id"], role="ceo", reason="x")["code"] == "not_found"


def test_cancelling_a_paid_instalment_is_possible_but_graded_as_altered() -> None:
    t = next(t for t in all_ids() if _possible("paid_instalment_altered", t))
    assert "paid_instalment_altered" in codes_of("wrong:paid_instalment_altered")[t]
    assert codes_of("wrong:paid_instalment_altered")[t] == ("paid_instalment_altered",)


def test_generated_tasks_are_solvable() -> None:
    env = make_native(D, split="generated")
    for n in range(12):
        res = run_episode(env, get_policy(D, "oracle"), task_id=f"SCH-G{n:04d}")
        assert res.grade["pass"], res.grade["failure_codes"]
