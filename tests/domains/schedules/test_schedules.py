"""Schedules domain: rules arithmetic, tool behaviour, and every failure code proven by its wrong
policy over the whole release (triggered exactly where the mistake is possible)."""

from __future__ import annotations

from datetime import date
from functools import cache

import pytest
from hypothesis import given, strategies as st

from backoffice.envs import make_native
from backoffice.envs.core.release import load_release
from backoffice.envs.schedules import DOMAIN
from backoffice.envs.schedules.generator import ALLOWED_TOOLS, generate
from backoffice.envs.schedules.tables import approval_needed, due_date, parts_meeting_minimum, reminder_send_on, split_amounts
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import split_envs, task_split

D = "schedules"


@cache
def release():
    return load_release(D)


def all_ids() -> tuple[str, ...]:
    rel = release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


@cache
def codes_of(policy: str) -> dict[str, tuple[str, ...]]:
    env_for = split_envs(D)
    return {t: tuple(run_episode(env_for(t), get_policy(D, policy), task_id=t).grade["failure_codes"]) for t in all_ids()}


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
    # (rules, instalments, first new due, received on, first due instalment it replaces)
    assert approval_needed(rules, 8, "2026-05-01", "2026-03-01", "2026-03-20") == ("instalment_count", "b")
    assert approval_needed(rules, 8, "2026-03-05", "2026-03-01", "2026-03-02") == ("short_notice", "a")
    assert approval_needed(rules, 3, "2026-05-01", "2026-03-01", "2026-03-20") == ("deferral", "c")
    # the deferral trigger: the change postpones collection (any kind), and the portfolio says so
    assert approval_needed(rules, 3, "2026-05-01", "2026-03-01", "2026-05-01") is None
    assert approval_needed({**rules, "deferral_needs_approval": False}, 3, "2026-05-01", "2026-03-01", "2026-03-20") is None
    assert approval_needed(rules, 3, "2026-05-01", "2026-03-01", None) is None
    # boundaries: "more than" max instalments, "fewer than" notice days
    assert approval_needed({**rules, "deferral_needs_approval": False}, 6, "2026-03-11", "2026-03-01", None) is None


def test_rule_document_is_one_entry_per_declared_rule_and_reads_back() -> None:
    from backoffice.envs.schedules.tables import RULE_FIELD, RULE_IDS, rules_from_document

    rel = release()
    for t in all_ids()[::37]:
        env = _env_at(t)
        doc = _call(env, "get_rules")["result"]
        assert set(doc) == {"rules", "tables"} and [r["id"] for r in doc["rules"]] == list(RULE_IDS) == list(DOMAIN.rules)
        row = rel.snapshot(t).table("rules")["RULES"]
        flat = rules_from_document(doc)
        assert {k: flat[k] for k in RULE_FIELD.values()} == {k: (list(row[k]) if isinstance(row[k], (list, tuple)) else row[k])
                                                            for k in RULE_FIELD.values()}
        roles = doc["tables"]["approval_roles"]
        assert {e["trigger"]: e["role"] for e in roles} == {tr: row[f"approval_role_{tr}"] for tr in ("deferral", "instalment_count", "short_notice")}
        assert [e["role"] for e in roles] == sorted(e["role"] for e in roles)  # the listing says nothing of the triggers
        assert all(isinstance(r["text"], str) and r["text"] and r["title"] for r in doc["rules"])


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


def test_allowed_tools_are_the_same_everywhere_and_checks_use_the_generic_kinds() -> None:
    rel = release()
    allowed = {tuple(rel.task(t).allowed_tools) for t in all_ids()}
    assert allowed == {tuple(ALLOWED_TOOLS)}, "allowed_tools must not depend on the answer"
    assert {"request_approval", "wait", "update_instruction", "submit"} <= set(ALLOWED_TOOLS)
    kinds = {c["kind"] for t in all_ids() for c in rel.answer_key(t)["checks"]}
    assert {"row_equals", "status_is", "no_change", "tool_called", "tool_not_called", "field_equals"} <= kinds
    for t in all_ids():
        key = rel.answer_key(t)
        assert key["defect_tags"][0] in DOMAIN.defect_tags


def test_checks_are_work_or_gate_and_noop_earns_nothing() -> None:
    """A check that doing nothing passes vacuously is a gate; every grade has work to do."""
    rel = release()
    env = make_native(D, split="heldout")
    from backoffice.training.policies.base import NoopPolicy

    for t in rel.split_ids["heldout"]:
        grade = run_episode(env, NoopPolicy(), task_id=t).grade
        work = [c for c in grade["checks"] if not c["gate"]]
        assert work and not any(c["pass"] for c in work), (t, [c["id"] for c in work if c["pass"]])
        assert grade["score"] == 0.0
    gates = {c["id"] for t in all_ids() for c in rel.answer_key(t)["checks"] if c.get("gate")}
    assert gates == {"sch.paid_untouched", "sch.no_commit_before_approval", "sch.other_accounts_unchanged", "sch.reminders"}


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
        return exp["reminder_send_on"] is not None
    if code == "reminder_on_cancelled":
        return bool(exp["scheduled_reminders_before"])
    if code in ("unneeded_approval", "extra_schedule"):
        return True
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
    # the new first instalment's reminder quotes its (drifted) amount: a reminder mismatch too
    assert all(set(got[t]) <= {"rounding_drift", "reminder_mismatch"} for t in uneven)


def test_oracle_never_triggers_a_failure_code() -> None:
    assert not any(codes_of("oracle").values())


# -- tools ---------------------------------------------------------------------------------
def _env_at(task_id: str):
    env = make_native(D, split=task_split(D, task_id), max_steps=200)
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
    return next(t for t in all_ids() if release().answer_key(t)["expected"]["approval_role"])


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
    listed = _call(env, "list_instalments", limit=3)["result"]  # every filter is optional: the book, paged
    assert len(listed["instalments"]) == 3 and listed["total"] > 3 and listed["next_cursor"] == listed["instalments"][-1]["id"]
    assert _call(env, "list_reminders", cursor="REM-nope")["code"] == "invalid_args"
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


# -- the whole trail -----------------------------------------------------------------------
def _task_where(pred) -> str:
    return next(t for t in release().split_ids["heldout"] if pred(release().answer_key(t)["expected"]))


def _run_with(task_id: str, hook):
    from backoffice.training.domains.schedules.policies import Oracle
    from backoffice.training.integrity.exploits import run_exploit

    return run_exploit(make_native(D, split=task_split(D, task_id), max_steps=200), Oracle(), hook, task_id).grade


def test_an_unneeded_or_second_approval_request_fails_as_a_gate() -> None:
    from backoffice.training.domains.schedules.policies import extra_approval_request

    for needed in (True, False):
        t = _task_where(lambda e, needed=needed: (e["approval_role"] is not None) == needed)
        grade = _run_with(t, extra_approval_request)
        assert grade["failure_codes"] == ["unneeded_approval"], (t, grade["failure_codes"])
        assert not grade["pass"] and grade["score"] <= 0.25


def test_a_reminder_left_on_a_cancelled_instalment_fails() -> None:
    got = codes_of("wrong:reminder_on_cancelled")
    for t in all_ids():
        if release().answer_key(t)["expected"]["scheduled_reminders_before"]:
            assert "reminder_on_cancelled" in got[t] and "reminder_mismatch" in got[t], t


def test_reminder_check_compares_amount_and_instalment() -> None:
    """A reminder re-created on the new first due date but quoting another amount fails."""
    rel = release()
    for t in all_ids():
        exp = rel.answer_key(t)["expected"]
        rows = [c for c in rel.answer_key(t)["checks"] if c["id"] == "sch.reminders"][0]["rows"]
        if exp["reminder_send_on"] is None:
            assert rows == []
        else:
            assert rows == [{"due_date": exp["first_due"], "amount": exp["first_amount"], "send_on": exp["reminder_send_on"]}]


def test_blind_policies_and_rule_policies_contract() -> None:
    from backoffice.training.domains.schedules import policies as P

    assert set(P.RULE_POLICIES) == set(DOMAIN.rules)
    assert set(P.EXPLOITS) == {"extra_decision", "extra_request", "repeated_write", "boundary_values",
                               "value_preserving_update", "formatting_only"}
    env = make_native(D, split="heldout", max_steps=200)
    ids = release().split_ids["heldout"]
    for name, cls in P.BLIND_POLICIES.items():
        grades = [run_episode(env, cls(), task_id=t).grade for t in ids]
        assert sum(g["pass"] for g in grades) <= 0.1 * len(ids), name
        assert sum(g["score"] for g in grades) / len(ids) <= 0.5, name


# -- generator invariants over the whole release ---------------------------------------------
def test_generator_invariants_hold_over_the_release() -> None:
    rel = release()
    for t in all_ids():
        key, snap = rel.answer_key(t), rel.snapshot(t)
        exp = key["expected"]
        today = snap.table("clock")["clock"]["now"][:10]
        req = next(iter(snap.table("requests").values()))
        assert req["received_on"] == today
        policies, accounts = snap.table("policies"), snap.table("accounts")
        for pol in policies.values():
            assert pol["term_start"] < pol["term_end"] and accounts[pol["account_id"]]["holder"] == pol["holder"]
            assert snap.table("instructions")[pol["instruction_id"]]["policy_id"] == pol["id"]
        for inst in snap.table("instalments").values():
            pol = policies[inst["policy_id"]]
            assert inst["account_id"] == pol["account_id"]
            if inst["status"] == "paid":
                assert inst["paid_on"] is not None and inst["paid_on"] <= today
            else:
                assert inst["paid_on"] is None
            if inst["status"] == "due":
                assert inst["due_date"] >= today
        for rem in snap.table("reminders").values():
            inst = snap.table("instalments")[rem["instalment_id"]]
            assert (rem["due_date"], rem["amount"], rem["policy_id"]) == (inst["due_date"], inst["amount"], inst["policy_id"])
            assert rem["send_on"] <= rem["due_date"]
            if rem["status"] == "scheduled":
                assert inst["status"] == "due" and rem["send_on"] >= today
        # every policy's premium is its paid plus due instalments (cancelled ones are history)
        for pol in policies.values():
            live = [i for i in snap.table("instalments").values() if i["policy_id"] == pol["id"] and i["status"] in ("paid", "due")]
            assert sum(i["amount"] for i in live) == pol["annual_premium"], (t, pol["id"])
        # the expected schedule: ordered dates after today, amounts summing to the outstanding premium
        rows = exp["instalments"]
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
        assert all(a["due_date"] < b["due_date"] for a, b in zip(rows, rows[1:]))
        assert rows[0]["due_date"] > today and sum(r["amount"] for r in rows) == exp["outstanding"]
        rules = snap.table("rules")["RULES"]
        assert all(r["amount"] >= rules["minimum_instalment_cents"] for r in rows)
        if exp["reminder_send_on"] is not None:
            assert today <= exp["reminder_send_on"] <= exp["first_due"]
        # the key's outcome and approval agree with the rules document
        due_prior = sorted(i["due_date"] for i in snap.table("instalments").values()
                           if i["schedule_id"] == exp["prior_schedule_id"] and i["status"] == "due")
        assert exp["replaced_first_due"] == due_prior[0]
        need = approval_needed(rules, len(rows), rows[0]["due_date"], today, due_prior[0])
        assert (need[0] if need else None, need[1] if need else None) == (exp["approval_trigger"], exp["approval_role"])
        # the outcome class is the decision: the approval route and where the new reminder goes
        send = reminder_send_on(rules, rows[0]["due_date"], today)
        route = "no_reminder" if send is None else ("reminder_today" if send == today and
                                                     reminder_send_on({**rules, "late_reminder": "skip"}, rows[0]["due_date"], today) is None
                                                     else "reminder_at_lead")
        assert key["outcome_class"] == ("approval+" if need else "no_approval+") + route == (
            ("approval+" if need else "no_approval+") + exp["reminder_route"])
        assert 3 <= (date.fromisoformat(rows[0]["due_date"]) - date.fromisoformat(today)).days <= 55
        # lookalike neighbours share the surname but never the account
        target = policies[exp["policy_id"]]
        assert sum(1 for p in policies.values() if p["account_id"] == target["account_id"]) == 1


def test_every_rule_binds_and_no_outcome_class_dominates() -> None:
    from backoffice.training.domains.schedules import policies as P

    rel = release()
    for split in ("train", "heldout"):
        env = make_native(D, split=split, max_steps=200)
        ids = rel.split_ids[split]
        classes: dict[str, int] = {}
        for t in ids:
            c = rel.answer_key(t)["outcome_class"]
            classes[c] = classes.get(c, 0) + 1
        assert max(classes.values()) <= 0.35 * len(ids), classes
        for rule, cls in P.RULE_POLICIES.items():
            fails = sum(not run_episode(env, cls(), task_id=t).grade["pass"] for t in ids)
            assert fails >= 20, (split, rule, fails)


def test_no_approval_position_or_role_is_favoured() -> None:
    """The "constant answer" attack on the approval rules: always asking the role of the trigger at
    one position of approval_order, or one fixed role, passes only where that is the first applying
    trigger's; no position or role may hold more than 10 % of heldout, while every trigger is the
    first applying one in >= 20 tasks of each split (its rule binds)."""
    rel = release()
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        positions: dict[int, int] = {}
        roles: dict[str, int] = {}
        triggers: dict[str, int] = {}
        for t in ids:
            exp = rel.answer_key(t)["expected"]
            if exp["approval_trigger"] is None:
                continue
            order = rel.snapshot(t).table("rules")["RULES"]["approval_order"]
            positions[order.index(exp["approval_trigger"])] = positions.get(order.index(exp["approval_trigger"]), 0) + 1
            roles[exp["approval_role"]] = roles.get(exp["approval_role"], 0) + 1
            triggers[exp["approval_trigger"]] = triggers.get(exp["approval_trigger"], 0) + 1
        assert min(triggers.get(tr, 0) for tr in ("deferral", "instalment_count", "short_notice")) >= 20, (split, triggers)
        if split == "heldout":
            assert max(positions.values()) <= 0.1 * len(ids), positions
            assert max(roles.values()) <= 0.1 * len(ids), roles


def test_late_reminder_rule_binds_both_ways() -> None:
    """Where the lead time reaches back before today, send_today and skip give different answers:
    each value must be the rule in >= 20 such tasks per split, so neither constant passes them."""
    rel = release()
    for split in ("train", "heldout"):
        late: dict[str, int] = {}
        for t in rel.split_ids[split]:
            exp, rules = rel.answer_key(t)["expected"], rel.snapshot(t).table("rules")["RULES"]
            today = rel.snapshot(t).table("clock")["clock"]["now"][:10]
            if reminder_send_on({**rules, "late_reminder": "skip"}, exp["first_due"], today) is None:
                late[rules["late_reminder"]] = late.get(rules["late_reminder"], 0) + 1
                assert exp["reminder_send_on"] == (today if rules["late_reminder"] == "send_today" else None)
        assert min(late.get("send_today", 0), late.get("skip", 0)) >= 20, (split, late)


def test_asking_the_wrong_role_then_committing_is_a_commit_before_approval() -> None:
    """Grades v2 item 11: ask another role than the required one, wait for its decision, try to
    commit (refused). The commit came before the required approval: commit_before_approval is
    reported, not only unneeded_approval (the check was anchored on any successful wait)."""
    from backoffice.envs.schedules.tables import ROLES
    from backoffice.training.domains.schedules.policies import Oracle

    class AsksTheWrongRole(Oracle):
        def roles_to_ask(self, need, rules, applies):
            return [next(r for r in ROLES if r != need[1])] if need else []

    rel = load_release("schedules")
    env = make_native("schedules", split="heldout")
    needing = [t for t in rel.split_ids["heldout"] if rel.answer_key(t)["expected"]["approval_role"]][:12]
    assert needing
    for task_id in needing:
        g = run_episode(env, AsksTheWrongRole(), task_id=task_id).grade
        assert {"commit_before_approval", "unneeded_approval"} <= set(g["failure_codes"]), (task_id, g["failure_codes"])
        assert any(r["tool"] == "wait" and r["result_status"] == "ok" for r in env.trace)  # it did wait
        g = run_episode(env, get_policy("schedules", "oracle"), task_id=task_id).grade
        assert g["pass"], task_id  # asking the required role, waiting, then committing holds the gate


# -- seeds v2: decoys, the decision, the deferral trigger, what the customer is charged --------------
def test_every_choice_has_decoys_and_the_active_version_stands_anywhere() -> None:
    """The version to supersede is one of 2-4 (superseded ones before it, abandoned drafts after
    it) at a uniform place; every scheduled reminder of the target stands beside a sent or
    cancelled one, in an id order that does not follow the instalments."""
    rel = release()
    places: dict[int, int] = {}
    for t in all_ids():
        exp, snap = rel.answer_key(t)["expected"], rel.snapshot(t)
        versions = sorted((s for s in snap.table("schedules").values() if s["policy_id"] == exp["policy_id"]),
                          key=lambda s: s["version"])
        assert 2 <= len(versions) <= 4
        statuses = [s["status"] for s in versions]
        place = statuses.index("active")
        assert statuses.count("active") == 1 and set(statuses[:place]) <= {"superseded"} and set(statuses[place + 1:]) <= {"draft"}
        assert versions[place]["id"] == exp["prior_schedule_id"]
        places[place] = places.get(place, 0) + 1
        # an abandoned draft never holds the expected schedule
        for s in versions[place + 1:]:
            rows = sorted((i for i in snap.table("instalments").values() if i["schedule_id"] == s["id"]), key=lambda i: i["seq"])
            assert rows and [(i["due_date"], i["amount"]) for i in rows] != [(r["due_date"], r["amount"]) for r in exp["instalments"]]
        reminders = [r for r in snap.table("reminders").values() if r["policy_id"] == exp["policy_id"]]
        if any(r["status"] == "scheduled" for r in reminders):
            assert any(r["status"] != "scheduled" for r in reminders), t
    n = len(all_ids())
    assert len(places) == 4 and places[0] / n < 0.5 and places[1] / n > 0.2, places


def test_the_decision_is_balanced_over_its_two_parts() -> None:
    """The outcome class is the decision: an approval in about a quarter of the tasks, and each of
    the three reminder routes in about a third; every class in each split."""
    rel = release()
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        classes: dict[str, int] = {}
        for t in ids:
            c = rel.answer_key(t)["outcome_class"]
            classes[c] = classes.get(c, 0) + 1
        assert len(classes) == 6, classes
        approval = sum(v for c, v in classes.items() if c.startswith("approval+")) / len(ids)
        assert 0.15 <= approval <= 0.30, approval
        for route in ("reminder_at_lead", "reminder_today", "no_reminder"):
            share = sum(v for c, v in classes.items() if c.endswith("+" + route)) / len(ids)
            assert 0.25 <= share <= 0.42, (route, share)


def test_the_deferral_trigger_reads_the_episode_start() -> None:
    """Cancelling the prior instalments before the commit does not dodge the deferral trigger:
    the tool compares with the first instalment still due when the episode began."""
    rel = release()
    t = next(t for t in all_ids() if rel.answer_key(t)["expected"]["approval_trigger"] == "deferral")
    exp = rel.answer_key(t)["expected"]
    env = _env_at(t)
    draft = _call(env, "create_draft_schedule", policy_id=exp["policy_id"], frequency="monthly", change_type=exp["kind"])["result"]
    for row in exp["instalments"]:
        _call(env, "add_instalment", schedule_id=draft["id"], due_date=row["due_date"], amount=row["amount"])
    assert _call(env, "cancel_instalments", instalment_ids=exp["prior_due_ids"])["status"] == "ok"
    refused = _call(env, "commit_schedule", schedule_id=draft["id"])
    assert refused["code"] == "approval_required" and refused["details"]["trigger"] == "deferral"


def test_a_prior_instalment_left_due_fails_what_the_customer_is_charged() -> None:
    """Superseding the prior version but leaving its instalments due charges the customer twice:
    sch.amounts and sch.due_dates fail (prior_not_superseded), sch.prior_superseded passes."""
    from backoffice.training.domains.schedules.policies import Oracle

    class ForgetsToCancel(Oracle):
        def to_cancel(self, prior_rows):
            return []

    rel = release()
    env = make_native(D, split="heldout")
    for t in rel.split_ids["heldout"][:15]:
        g = run_episode(env, ForgetsToCancel(), task_id=t).grade
        by = {c["id"]: c for c in g["checks"]}
        assert not by["sch.amounts"]["pass"] and not by["sch.due_dates"]["pass"] and by["sch.prior_superseded"]["pass"], t
        assert by["sch.amounts"]["failure_code"] == "prior_not_superseded" and "prior_not_superseded" in g["failure_codes"]
