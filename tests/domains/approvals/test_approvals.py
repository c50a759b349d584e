"""Approvals domain: wrong policies, the desk's tricky rules, tool behaviour, world richness."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.approvals import authority as auth
from backoffice.envs.approvals.generator import DEFECT_TAGS, generate
from backoffice.envs.approvals.rules import AUTHORITY_CHECKS
from backoffice.envs.approvals.tables import add_days
from backoffice.envs.core import Episode, Snapshot, Store
from backoffice.envs.core.release import load_release
from backoffice.graders.approvals import grade
from backoffice.training.domains.approvals.policies import WRONG_POLICIES, Oracle
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import split_envs

DOMAIN = "approvals"


@cache
def release() -> Any:
    return load_release(DOMAIN)


def all_ids() -> tuple[str, ...]:
    rel = release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def key(task_id: str) -> dict[str, Any]:
    return release().answer_key(task_id)


@cache
def run(policy: str, task_id: str) -> dict[str, Any]:
    env = _env(task_id)
    return run_episode(env, get_policy(DOMAIN, policy), task_id=task_id).grade


_env = split_envs(DOMAIN)  # _env(task_id): a native env of the task's split


# -- wrong policies: each triggers its code wherever the mistake is possible ---------------------
@cache
def verdict(task_id: str) -> auth.Assessment:
    """The grader's verdict on the task's request and approver at the desk clock (what the
    tests below select tasks by; the answer key holds only what the grade checks)."""
    snap = release().snapshot(task_id)
    exp = key(task_id)["expected"]
    return auth.assess(auth.SnapshotReader(snap), snap.table("requests")[exp["request_id"]], exp["approver_id"],
                       snap.table("clock")["clock"]["now"])


def _near(task_id: str) -> list[tuple[str, str]]:
    """The near misses (id, the one authority rule it fails) of the task's approver."""
    return sorted((i, f[0]) for i, f in verdict(task_id).failures.items() if len(f) == 1)


def _problems(*problems: str):
    return lambda t: verdict(t).approver_problems == list(problems)


def _blocked_by(*checks: str):
    """Escalations where the approver has no authority, only a near miss failing one of ``checks``."""
    return lambda t: _problems("no_authority")(t) and {c for _, c in _near(t)} <= set(checks)


def _inactive_delegation(t: str) -> bool:
    """A delegation near miss not in effect (window, revocation, delegator) beside the authority
    or as the only near miss of an approver without authority."""
    return verdict(t).approver_problems in ([], ["no_authority"]) and any(
        i.startswith("DLG") and c in ("window", "revocation", "delegator_holds") for i, c in _near(t))


def _outcome(*outcomes: str):
    return lambda t: key(t)["outcome_class"] in outcomes


POSSIBLE = {
    "invalid_approver": lambda t: _problems("reporting_line")(t) or _blocked_by("role_type")(t),
    "self_approval": _problems("self"),
    "wrong_outcome": _outcome("escalate", "reject"),
    "side_effect_before_decision": _outcome("proceed"),
    "basis_missing_or_wrong": lambda t: True,
    "expired_delegation_used": _inactive_delegation,
    # a reject without an empty required field is recorded as a proceed; an approver whose only near miss falls short decides
    "over_limit": lambda t: (_outcome("reject")(t) and "missing_information" not in key(t)["defect_tags"])
    or _blocked_by("role_level", "role_limit", "delegation_cap")(t),
    "extra_decision": lambda t: True,
    "forbidden_write": lambda t: True,
}


def test_every_failure_code_has_a_wrong_policy() -> None:
    assert set(WRONG_POLICIES) == set(get_domain(DOMAIN).failure_codes) == set(POSSIBLE)


@pytest.mark.parametrize("code", sorted(POSSIBLE))
def test_wrong_policy_triggers_its_code_where_possible(code: str) -> None:
    possible = [t for t in all_ids() if POSSIBLE[code](t)]
    assert len(possible) >= 20
    missed = [t for t in possible if code not in run(f"wrong:{code}", t)["failure_codes"]]
    assert not missed, f"wrong:{code} misses {len(missed)} tasks, e.g. {missed[:5]}"
    assert all(not run(f"wrong:{code}", t)["pass"] for t in possible)


def test_oracle_never_triggers_any_code() -> None:
    codes = Counter(c for t in all_ids() for c in run("oracle", t)["failure_codes"])
    assert not codes
    assert all(run("oracle", t)["pass"] for t in all_ids())


# -- shortcuts fail ------------------------------------------------------------------------------
class TrustsAnyRole(Oracle):
    """Decides in the approver's name whenever they hold any role (or delegation) at all."""

    ignored = frozenset(AUTHORITY_CHECKS)

    def hard_limit_exceeded(self, request, rule):
        return False

    def is_self(self, request, approver_id):
        return False

    def line_breach(self, rule, request, line):
        return False


def test_trusting_any_role_fails_most_tasks() -> None:
    ids = release().split_ids["heldout"]
    passed = sum(run_episode(_env(t), TrustsAnyRole(), task_id=t).grade["pass"] for t in ids)
    assert passed / len(ids) < 0.5


def test_outcome_classes_are_mixed_in_every_split() -> None:
    for split in ("train", "heldout"):
        counts = Counter(key(t)["outcome_class"] for t in release().split_ids[split])
        assert set(counts) == {"proceed", "hold", "reject", "escalate"}
        assert max(counts.values()) / sum(counts.values()) <= 0.35, counts


def test_every_escalation_has_a_blocking_fact_and_every_decision_an_authority() -> None:
    for t in all_ids():
        exp = key(t)["expected"]
        if exp["outcome"] == "escalate":
            assert exp["blocking_ids"], t
        else:
            assert exp["authority_ids"] and not exp["blocking_ids"], t


def test_the_approver_is_checked_before_the_hard_limit_and_fields() -> None:
    """Escalations whose request also misses a required field exist (the approver comes first)."""
    for split in ("train", "heldout"):
        mixed = [t for t in release().split_ids[split]
                 if key(t)["outcome_class"] == "escalate" and "missing_information" in key(t)["defect_tags"]]
        assert len(mixed) >= 10, split


# -- the world is rich enough that shortcuts fail --------------------------------------------------
def test_every_world_holds_the_classic_traps() -> None:
    rel = release()
    look_alikes = 0
    for task_id in all_ids():
        snap = rel.snapshot(task_id)
        now = snap.table("clock")["clock"]["now"]
        yesterday = add_days(now[:10], -1)
        roles = snap.table("roles")
        types = {t for r in roles.values() for t in r["request_types"]}
        assert any(set(r["request_types"]) != types for r in roles.values())  # roles cover other types
        assert any(rh["valid_to"] == yesterday for rh in snap.table("role_holders").values())  # ended yesterday
        assert any(d["cap"] is not None for d in snap.table("delegations").values())  # capped delegation
        names = Counter(p["name"] for p in snap.table("people").values())
        params = rel.task(task_id).params
        look_alikes += names[params["approver_name"]] > 1
        pending = [r for r in snap.table("requests").values() if r["status"] in ("pending", "on_hold")]
        assert len(pending) >= 5
    assert look_alikes > len(all_ids()) // 2


def test_subordinate_tasks_have_the_approver_in_the_requesters_line() -> None:
    rel = release()
    for task_id in all_ids():
        k = key(task_id)
        if k["defect_tags"][0] != "approver_is_requesters_subordinate":
            continue
        tables = {n: rel.snapshot(task_id).table(n) for n in rel.snapshot(task_id).table_names}
        req = tables["requests"][k["expected"]["request_id"]]
        assert req["requester_id"] in auth.reporting_line(tables, k["expected"]["approver_id"])


def test_generator_is_pure_and_rejects_unknown_tags() -> None:
    for tag in DEFECT_TAGS:
        assert generate(11, tag) == generate(11, tag)
    with pytest.raises(ValueError):
        generate(1, "no_such_tag")


# -- tricky rules -------------------------------------------------------------------------------
NOW = "2026-03-02T09:00:00"


def _tables(**over: Any) -> dict[str, dict[str, dict[str, Any]]]:
    people = {
        "EMP-1": {"id": "EMP-1", "name": "Boss", "manager_id": None},
        "EMP-2": {"id": "EMP-2", "name": "Mid", "manager_id": "EMP-1"},
        "EMP-3": {"id": "EMP-3", "name": "Low", "manager_id": "EMP-2"},
        "EMP-4": {"id": "EMP-4", "name": "Other", "manager_id": None},
    }
    roles = {"R-1": {"id": "R-1", "name": "FM", "request_types": ["refund"], "amount_limit": 10_000_00, "level": 2}}
    rules = {
        "RULE-1": {"id": "RULE-1", "request_type": "refund", "min_amount": 1, "max_amount": 1_000_00, "required_role_id": "R-1",
                   "required_level": 1, "hard_limit": 5_000_00, "sod_not_requester": True, "sod_not_in_requester_line": True,
                   "required_fields": ["beneficiary_account"]},
        "RULE-2": {"id": "RULE-2", "request_type": "refund", "min_amount": 1_000_01, "max_amount": None, "required_role_id": "R-1",
                   "required_level": 2, "hard_limit": 5_000_00, "sod_not_requester": True, "sod_not_in_requester_line": True,
                   "required_fields": ["beneficiary_account"]},
    }
    holders = {"RH-1": {"id": "RH-1", "person_id": "EMP-4", "role_id": "R-1", "valid_from": "2025-01-01", "valid_to": None}}
    tables = {"people": people, "roles": roles, "rules": rules, "role_holders": holders, "delegations": {}}
    for name, rows in over.items():
        tables[name] = {**tables[name], **rows}
    return tables


REQ = {"id": "REQ-1", "type": "refund", "amount": 2_000_00, "requester_id": "EMP-1", "beneficiary_account": "ACC-1"}


def _delegation(**over: Any) -> dict[str, Any]:
    d = {"id": "DLG-1", "delegator_id": "EMP-4", "delegate_id": "EMP-3", "role_id": "R-1", "valid_from": "2026-03-01",
         "valid_to": "2026-03-02", "cap": None, "revoked_at": None}
    d.update(over)
    return d


@pytest.mark.parametrize("over,in_effect", [
    ({}, True),  # valid_to is today: inclusive
    ({"valid_from": "2026-03-02"}, True),  # starts today
    ({"valid_to": "2026-03-01"}, False),  # ended yesterday
    ({"valid_from": "2026-03-03", "valid_to": "2026-03-09"}, False),  # future
    ({"revoked_at": NOW}, False),  # revoked at this very instant
    ({"revoked_at": "2026-03-02T08:59:59"}, False),
    ({"revoked_at": "2026-03-02T09:00:01"}, True),  # revocation still to come
    ({"delegator_id": "EMP-2"}, False),  # the delegator does not hold the role
])
def test_delegation_windows(over: dict[str, Any], in_effect: bool) -> None:
    tables = _tables()
    assert auth.delegation_in_effect(tables, _delegation(**over), NOW) is in_effect


def test_assignment_ending_yesterday_gives_no_authority() -> None:
    ended = {"RH-2": {"id": "RH-2", "person_id": "EMP-4", "role_id": "R-1", "valid_from": "2025-01-01", "valid_to": "2026-03-01"}}
    tables = _tables(role_holders={"RH-1": {**ended["RH-2"], "id": "RH-1"}})
    req = {**REQ, "requester_id": "EMP-3"}
    assert auth.assess(tables, req, "EMP-4", NOW).approver_problems == [auth.NO_AUTHORITY]
    assert auth.assess(tables, req, "EMP-4", "2026-03-01T17:00:00").outcome == "proceed"


def test_bands_hard_limit_and_required_fields() -> None:
    tables = _tables()
    assert auth.applicable_rule(tables, "refund", 1_000_00)["id"] == "RULE-1"
    assert auth.applicable_rule(tables, "refund", 1_000_01)["id"] == "RULE-2"
    over = auth.assess(tables, {**REQ, "amount": 5_000_01, "requester_id": "EMP-3"}, "EMP-4", NOW)
    assert (over.rule_id, over.outcome) == ("RULE-2", "reject")
    assert auth.assess(tables, {**REQ, "amount": 5_000_00, "requester_id": "EMP-3"}, "EMP-4", NOW).outcome == "proceed"
    blank = auth.assess(tables, {**REQ, "requester_id": "EMP-3", "beneficiary_account": " "}, "EMP-4", NOW)
    assert blank.outcome == "hold"


def test_separation_of_duties_and_caps() -> None:
    rh = {"RH-3": {"id": "RH-3", "person_id": "EMP-3", "role_id": "R-1", "valid_from": "2025-01-01", "valid_to": None}}
    tables = _tables(role_holders=rh)
    assert auth.assess(tables, {**REQ, "requester_id": "EMP-3"}, "EMP-3", NOW).approver_problems == [auth.SELF]
    # EMP-3 reports to EMP-2 who reports to EMP-1: an indirect report of the requester
    assert auth.assess(tables, REQ, "EMP-3", NOW).approver_problems == [auth.REPORTING_LINE]
    relaxed = {rid: {**r, "sod_not_in_requester_line": False} for rid, r in tables["rules"].items()}
    assert auth.assess({**tables, "rules": relaxed}, REQ, "EMP-3", NOW).outcome == "proceed"
    capped = _tables(delegations={"DLG-1": _delegation(delegate_id="EMP-2", cap=1_999_99)})
    verdict = auth.assess(capped, {**REQ, "requester_id": "EMP-3"}, "EMP-2", NOW)
    assert verdict.approver_problems == [auth.NO_AUTHORITY] and verdict.blocking == ["DLG-1"]
    assert verdict.failures == {"DLG-1": ["delegation_cap"]}
    exact = _tables(delegations={"DLG-1": _delegation(delegate_id="EMP-2", cap=2_000_00)})
    assert auth.assess(exact, {**REQ, "requester_id": "EMP-3"}, "EMP-2", NOW).authority_ids == ["DLG-1"]


ROLES = {
    "R-1": {"id": "R-1", "name": "FM", "request_types": ["refund"], "amount_limit": 10_000_00, "level": 2},
    "R-2": {"id": "R-2", "name": "Other", "request_types": ["purchase_order"], "amount_limit": 10_000_00, "level": 2},
    "R-3": {"id": "R-3", "name": "Junior", "request_types": ["refund"], "amount_limit": 10_000_00, "level": 1},
    "R-4": {"id": "R-4", "name": "Small", "request_types": ["refund"], "amount_limit": 1_000_00, "level": 2},
}


@pytest.mark.parametrize("over,failed", [
    ({}, []),
    ({"role_id": "R-2"}, ["role_type"]),
    ({"role_id": "R-3"}, ["role_level"]),
    ({"role_id": "R-4"}, ["role_limit"]),
    ({"valid_to": "2026-03-01"}, ["window"]),
    ({"valid_from": "2026-03-03", "valid_to": "2026-03-09"}, ["window"]),
    ({"revoked_at": "2026-03-02T08:59:59"}, ["revocation"]),
    ({"delegator_id": "EMP-2"}, ["delegator_holds"]),
    ({"cap": 1_999_99}, ["delegation_cap"]),
    ({"cap": 1_999_99, "role_id": "R-3"}, ["role_level", "delegation_cap"]),  # a far miss: fails two rules
])
def test_each_authority_rule_is_one_check(over: dict[str, Any], failed: list[str]) -> None:
    """Each authority rule of the rule document is one check of one delegation, and an
    approver whose only delegation fails exactly one of them is escalated citing it."""
    holders = {
        "RH-1": {"id": "RH-1", "person_id": "EMP-4", "role_id": "R-1", "valid_from": "2025-01-01", "valid_to": None},
        **{f"RH-{i}": {"id": f"RH-{i}", "person_id": "EMP-4", "role_id": f"R-{i}", "valid_from": "2025-01-01", "valid_to": None}
           for i in (2, 3, 4)},
    }
    tables = {**_tables(role_holders=holders, delegations={"DLG-1": _delegation(**over)}), "roles": ROLES}
    verdict = auth.assess(tables, {**REQ, "requester_id": "EMP-4"}, "EMP-3", NOW)
    assert verdict.failures == {"DLG-1": failed}
    if not failed:
        assert verdict.outcome == "proceed" and verdict.authority_ids == ["DLG-1"]
    else:
        assert verdict.outcome == "escalate" and verdict.blocking == (["DLG-1"] if len(failed) == 1 else ["EMP-3"])


def test_the_basis_is_exactly_what_the_rules_name() -> None:
    """A decision cites the band and its authority, nothing else; an escalation the band and the
    first blocking fact by the rule's precedence (the request before the reporting line before a
    near miss), nothing else."""
    rh = {"RH-3": {"id": "RH-3", "person_id": "EMP-3", "role_id": "R-1", "valid_from": "2025-01-01", "valid_to": None}}
    tables = _tables(role_holders=rh, delegations={"DLG-1": _delegation(cap=1_00)})
    ok = auth.assess(tables, {**REQ, "requester_id": "EMP-4"}, "EMP-3", NOW)
    assert ok.outcome == "proceed" and ok.authority_ids == ["RH-3"]
    assert auth.applies_as_basis(tables, ["RULE-2", "RH-3"], ok, "proceed", "EMP-3", NOW)[0]
    assert not auth.applies_as_basis(tables, ["RULE-2", "RH-3", "DLG-1"], ok, "proceed", "EMP-3", NOW)[0]
    assert not auth.applies_as_basis(tables, ["RH-3"], ok, "proceed", "EMP-3", NOW)[0]
    own = auth.assess(tables, {**REQ, "requester_id": "EMP-3"}, "EMP-3", NOW)  # their own request
    assert own.blocking == ["REQ-1"]
    assert auth.applies_as_basis(tables, ["RULE-2", "REQ-1"], own, "escalate", None, NOW)[0]
    assert not auth.applies_as_basis(tables, ["RULE-2", "REQ-1", "EMP-3"], own, "escalate", None, NOW)[0]
    line = auth.assess(tables, REQ, "EMP-3", NOW)  # EMP-3 reports (indirectly) to the requester EMP-1
    assert line.blocking == ["EMP-1"]
    assert not auth.applies_as_basis(tables, ["RULE-2", "REQ-1"], line, "escalate", None, NOW)[0]


def _oracle_episode(tag: str, outcome: str) -> tuple[Any, list[dict[str, Any]], str]:
    task_id = next(t for t in all_ids() if key(t)["defect_tags"][0] == tag and key(t)["outcome_class"] == outcome)
    env = _env(task_id)
    run_episode(env, get_policy(DOMAIN, "oracle"), task_id=task_id)
    return env, env.trace, task_id


def test_approver_validity_is_judged_at_the_decision_clock() -> None:
    """The same proceed, re-stamped after the delegation's window, is an expired delegation used."""
    env, trace, task_id = _oracle_episode("valid_via_delegation", "proceed")
    ep = Episode(env.task, key(task_id), env._snapshot, env.state, env.state.diff(), trace)
    assert grade(ep)["pass"]
    dlg_id = next(i for r in trace if r["tool"] == "record_decision" for i in r["args"]["basis_ids"] if i.startswith("DLG"))
    valid_to = env._snapshot.table("delegations")[dlg_id]["valid_to"]
    late = [dict(r, clock=f"{add_days(valid_to, 1)}T09:00:00") if r["tool"] == "record_decision" else r for r in trace]
    graded = grade(Episode(env.task, key(task_id), env._snapshot, env.state, env.state.diff(), late))
    assert not graded["approver_valid"] and "expired_delegation_used" in graded["failure_codes"]


def test_citing_an_inactive_delegation_beside_a_valid_one_is_caught() -> None:
    """The approver may approve (another authority is valid) but the decision rests on the
    expired delegation."""
    env, _, task_id = _oracle_episode("expired_delegation", "proceed")
    snap = env._snapshot
    approver = key(task_id)["expected"]["approver_id"]
    now = snap.table("clock")["clock"]["now"]
    tables = {n: snap.table(n) for n in snap.table_names}
    stale = next(d["id"] for d in snap.table("delegations").values()
                 if d["delegate_id"] == approver and not auth.delegation_in_effect(tables, d, now))
    class CitesStale(Oracle):
        def basis(self, rule_id, authority_id):
            return [rule_id, stale] if authority_id else [rule_id]

    graded = run_episode(env, CitesStale(), task_id=task_id).grade
    assert graded["approver_valid"] and not graded["basis_cited"]
    assert "expired_delegation_used" in graded["failure_codes"]


# -- tools ----------------------------------------------------------------------------------------
def _fresh(task_id: str | None = None) -> Any:
    env = make_native(DOMAIN, max_steps=1000)
    env.reset(options={"task_id": task_id or all_ids()[0]})
    return env


@pytest.mark.parametrize("action,code", [
    ({"tool": "record_decision", "args": {"request_id": "REQ-0000", "outcome": "hold", "approver_id": "EMP-0001"}}, "not_found"),
    ({"tool": "record_decision", "args": {"request_id": "REQ-0000", "outcome": "hold"}}, "invalid_args"),  # approver_id is required
    ({"tool": "get_person", "args": {"person_id": "EMP-0000"}}, "not_found"),
    ({"tool": "lookup_role_holders", "args": {"role_id": "R-000"}}, "not_found"),
    ({"tool": "release_order", "args": {"order_id": "PO-00000"}}, "not_found"),
    ({"tool": "get_rules", "args": {"request_type": "bribe"}}, "invalid_args"),
    ({"tool": "record_decision", "args": {"request_id": "REQ-0000", "outcome": "escalate"}}, "invalid_args"),
])
def test_tool_errors_are_structured_and_change_nothing(action: dict[str, Any], code: str) -> None:
    env = _fresh()
    before = env.state.content_hash()
    _, _, _, _, info = env.step(action)
    assert info["error_code"] == code
    assert env.state.content_hash() == before


def test_tool_preconditions() -> None:
    task_id = next(t for t in all_ids() if key(t)["outcome_class"] == "proceed" and key(t)["expected"]["downstream"]["kind"] == "order")
    env = _fresh(task_id)
    exp = key(task_id)["expected"]
    rid, order = exp["request_id"], exp["downstream"]["order_id"]

    def step(tool: str, **args: Any) -> dict[str, Any]:
        before = env.state.content_hash()
        _, _, _, _, info = env.step({"tool": tool, "args": args})
        if info["result_status"] == "error":
            assert env.state.content_hash() == before
        return info

    assert step("lookup_delegations", person_id=exp["approver_id"], as_of="2026-13-45")["error_code"] == "invalid_args"
    assert step("record_decision", request_id=rid, outcome="proceed")["error_code"] == "invalid_args"  # no approver_id
    assert step("post_ledger_entry", request_id=rid, account="ACC-1", amount=5)["error_code"] == "precondition_failed"
    assert step("escalate", request_id=rid, role_id="R-000")["error_code"] == "not_found"
    assert step("release_order", order_id=order)["result_status"] == "ok"
    assert step("release_order", order_id=order)["error_code"] == "conflict"
    assert step("record_decision", request_id=rid, outcome="hold", basis_ids=[exp["rule_id"]])["error_code"] == "invalid_args"
    assert step("record_decision", request_id=rid, outcome="hold", approver_id=exp["approver_id"],
                basis_ids=[exp["rule_id"]])["result_status"] == "ok"
    assert step("record_decision", request_id=rid, outcome="proceed", approver_id=exp["approver_id"])["result_status"] == "ok"
    assert step("escalate", request_id=rid, role_id=exp["required_role_id"])["error_code"] == "conflict"
    assert env.state.get("requests", rid)["status"] == "approved"


def test_lookups_read_the_clock_and_honour_as_of() -> None:
    """A blocking delegation that has expired is not in effect now; where it still was when the
    request came in, ``as_of`` that day shows it (at least one released task is such a case)."""
    tasks = [t for t in all_ids() if "-T" in t and key(t)["defect_tags"][0] == "expired_delegation" and key(t)["outcome_class"] == "escalate"]
    shown_as_of = 0
    for task_id in tasks:
        env = _fresh(task_id)
        exp = key(task_id)["expected"]
        submitted = env.state.get("requests", exp["request_id"])["submitted_at"]

        def received(env: Any = env, person: str = exp["approver_id"], **args: Any) -> list[str]:
            obs, *_ = env.step({"tool": "lookup_delegations", "args": {"person_id": person, **args}})
            return [d["id"] for d in json.loads(obs)["result"]["delegations"]]

        blocking = set(exp["blocking_ids"])
        if not blocking or blocking & set(received()):  # blocked by another rule than the window
            continue
        assert blocking <= set(received(include_inactive=True))
        shown_as_of += blocking <= set(received(as_of=submitted))  # in effect when the request came in
    assert tasks and shown_as_of, "no expired delegation was still in effect when its request came in"


def test_snapshot_store_round_trip_of_a_generated_task() -> None:
    gen = generate(5, "clean")
    snap = Snapshot("x", gen.snapshot)
    store = Store(snap)
    assert store.content_hash() == snap.content_hash()
    assert set(snap.table_names) == {
        "people", "roles", "role_holders", "delegations", "rules", "requests", "decisions", "ledger_entries", "orders", "clock",
    }


# -- the whole trail is graded ---------------------------------------------------------------------
def _exploit(hook_name: str, task_id: str) -> Any:
    from backoffice.training.domains.approvals.policies import EXPLOITS
    from backoffice.training.integrity.exploits import run_exploit

    return run_exploit(_env(task_id), Oracle(), EXPLOITS[hook_name], task_id)


@pytest.mark.parametrize("outcome", ["proceed", "hold", "reject", "escalate"])
def test_a_hold_before_the_real_decision_fails(outcome: str) -> None:
    for task_id in [t for t in release().split_ids["heldout"] if key(t)["outcome_class"] == outcome][:5]:
        run = _exploit("extra_decision", task_id)
        assert run.applied and not run.grade["pass"], task_id
        assert "extra_decision" in run.grade["failure_codes"]
        assert run.grade["score"] <= 0.25


def test_an_escalation_after_a_hold_fails_and_after_a_closing_decision_is_refused() -> None:
    for task_id in release().split_ids["heldout"][:24]:
        run = _exploit("extra_request", task_id)
        if key(task_id)["outcome_class"] == "hold":
            assert run.applied and "extra_decision" in run.grade["failure_codes"], task_id
        else:
            assert not run.applied and run.grade["pass"], task_id
            assert run.injected[0]["error_code"] == "conflict"


def test_a_duplicate_hold_fails() -> None:
    task_id = next(t for t in release().split_ids["heldout"] if key(t)["outcome_class"] == "hold")
    run = _exploit("repeated_write", task_id)
    assert run.applied and run.grade["failure_codes"] == ["extra_decision"]


def test_escalating_with_the_rule_alone_fails_every_escalation() -> None:
    from backoffice.training.domains.approvals.policies import RULE_POLICIES

    for task_id in [t for t in release().split_ids["heldout"] if key(t)["outcome_class"] == "escalate"][:15]:
        g = run_episode(_env(task_id), RULE_POLICIES["blocking_fact"](), task_id=task_id).grade
        assert g["failure_codes"] == ["basis_missing_or_wrong"], task_id
        assert g["score"] == 0.5


def test_checks_are_classified_as_work_or_gate() -> None:
    g = run("oracle", release().split_ids["heldout"][0])
    gates = {c["id"] for c in g["checks"] if c["gate"]}
    work = {c["id"] for c in g["checks"] if not c["gate"]}
    assert gates == {"approver_valid", "single_decision", "side_effects", "guardrail"}
    assert work <= {"outcome_match", "basis_cited", "downstream_released"} and {"outcome_match", "basis_cited"} <= work


# -- generator invariants over the whole release -----------------------------------------------------
def test_generator_invariants_hold_over_the_release() -> None:
    rel = release()
    allowed = {tuple(rel.task(t).allowed_tools) for t in all_ids()}
    assert len(allowed) == 1  # the same tools for every task: nothing to read from them
    for task_id in all_ids():
        snap = rel.snapshot(task_id)
        tables = {n: snap.table(n) for n in snap.table_names}
        now = tables["clock"]["clock"]["now"]
        today = now[:10]
        people = tables["people"]
        for p in people.values():  # the hierarchy: managers exist, no cycle
            assert p["manager_id"] is None or p["manager_id"] in people
            assert len(auth.reporting_line(tables, p["id"])) < len(people)
        assert len({(p["name"], p["department"]) for p in people.values()}) == len(people), task_id
        for rh in tables["role_holders"].values():
            assert rh["person_id"] in people and rh["role_id"] in tables["roles"]
            assert rh["valid_to"] is None or rh["valid_from"] <= rh["valid_to"], (task_id, rh)
        for d in tables["delegations"].values():
            assert d["delegator_id"] != d["delegate_id"] and d["role_id"] in tables["roles"]
            assert d["valid_from"] <= d["valid_to"], (task_id, d)
            assert d["revoked_at"] is None or (d["valid_from"] <= d["revoked_at"][:10] and d["revoked_at"] <= now), (task_id, d)
        for r in tables["requests"].values():
            assert r["amount"] > 0 and r["submitted_at"] < now and r["requester_id"] in people
            if r["order_id"]:
                assert tables["orders"][r["order_id"]]["amount"] == r["amount"]
        for dec in tables["decisions"].values():
            req = tables["requests"][dec["request_id"]]
            assert req["submitted_at"] < dec["decided_at"] <= now
        for le in tables["ledger_entries"].values():
            assert le["posted_at"] <= now
        for rule in tables["rules"].values():
            assert rule["max_amount"] is None or rule["min_amount"] <= rule["max_amount"]
        k = key(task_id)
        exp = k["expected"]
        params = rel.task(task_id).params
        named = [p for p in people.values() if p["name"] == params["approver_name"] and p["department"] == params["approver_department"]]
        assert [p["id"] for p in named] == [exp["approver_id"]]
        verdict = auth.assess(tables, tables["requests"][exp["request_id"]], exp["approver_id"], now)
        assert verdict.outcome == exp["outcome"] == k["outcome_class"]
        assert sorted(verdict.blocking_ids) == exp["blocking_ids"]
        if exp["outcome"] == "escalate" and tables["requests"][exp["request_id"]]["amount"] <= tables["rules"][exp["rule_id"]]["hard_limit"]:
            assert exp["required_role_id"] in exp["accepted_roles"]  # the required role may approve the amount
        assert today >= tables["requests"][exp["request_id"]]["submitted_at"][:10]


def test_a_decision_with_an_empty_basis_fails() -> None:
    for task_id in release().split_ids["heldout"][:12]:
        run = _exploit("boundary_values", task_id)
        assert run.applied and not run.grade["pass"] and "basis_missing_or_wrong" in run.grade["failure_codes"], task_id


class EscalatesToTheMostSeniorCoveringRole(Oracle):
    """The attacker of grades v2 item 5: the oracle's decision, but an escalation goes to the most
    senior role that covers the request type (an approver for it, not the one the procedure names)."""

    def escalation_role(self, rule, request, roles):
        covering = [r for r in roles if request["type"] in r["request_types"]]
        return max(covering, key=lambda r: (r["level"], r["amount_limit"], r["id"]))["id"]


def test_escalation_goes_to_the_rule_s_required_role_only() -> None:
    """The procedure says to escalate to the rule's required_role_id; a role that could approve
    too is not what the text asks for: it fails outcome_match (wrong_outcome)."""
    env = make_native("approvals", split="heldout")
    tasks = [t for t in release().split_ids["heldout"]
             if key(t)["expected"]["outcome"] == "escalate"
             and set(key(t)["expected"]["accepted_roles"]) - {key(t)["expected"]["required_role_id"]}]
    assert len(tasks) >= 20
    failed = 0
    for task_id in tasks:
        res = run_episode(env, EscalatesToTheMostSeniorCoveringRole(), task_id=task_id)
        escalated = next(r["args"]["role_id"] for r in env.trace if r["tool"] == "escalate")
        if escalated != key(task_id)["expected"]["required_role_id"]:
            failed += 1
            assert not res.grade["pass"] and "wrong_outcome" in res.grade["failure_codes"], task_id
    assert failed >= 20  # the attacker really went elsewhere on most of them
