"""Policies of the approvals domain: the oracle, one wrong policy per failure code, blind
policies, rule policies (the oracle ignoring one documented rule) and exploit hooks.

The oracle reads only the brief and tool results, following ``next_cursor`` wherever it needs
every row of a paginated read (roles, a role's holders; people until the approver appears), so
it stays right in worlds far larger than the release. It follows the desk procedure that
``get_rules`` returns: find the rule, identify the named approver (name *and* department),
check separation of duties and their authority now (role assignments and delegations in effect,
level, limits, caps); if they may not decide, escalate citing the rule and the blocking fact;
otherwise record their decision (reject above the hard limit, hold when a required field is
empty, else proceed) citing the rule and their authority, and release downstream only after a
proceed.

Each wrong policy overrides one judgement of the oracle and so commits one kind of mistake
(``WRONG_POLICIES`` maps the failure code to it).

Rule-sharing policy: the oracle and the catalog (``training.catalog.approvals``) share the
domain's public rule helpers, :mod:`backoffice.envs.approvals.rules` (the band lookup, the
missing-field test, date windows, delegated limits, ledger types, the order of blocking facts),
each computing what the rules document says from rows the tools returned. The oracle never
imports the grader (``backoffice.graders.approvals``) nor the whole-snapshot verdict it judges
with (``backoffice.envs.approvals.authority``), and the grader never imports this module: the
oracle passing checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from backoffice.envs.approvals.rules import (
    applicable_rule,
    blocking_fact,
    delegated_limit,
    in_window,
    is_ledger_type,
    line_breach,
    missing_fields,
)
from backoffice.training.integrity.exploits import repeat_last_write
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call


def _pages(tool: str, key: str, **args: Any) -> Any:
    """Every row of a paginated read: calls ``tool`` again with each ``next_cursor`` until the
    last page; returns the rows under ``key``. A generator of calls (``yield from`` it)."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        got = (yield call(tool, **args, cursor=cursor))["result"]
        rows.extend(got[key])
        cursor = got.get("next_cursor")
        if cursor is None:
            return rows


def _find_person(name: str, department: str) -> Any:
    """The id of the person called ``name`` in ``department``: ``find_people`` page by page
    until they appear (``None`` if no page has them). A generator of calls."""
    cursor: str | None = None
    while True:
        got = (yield call("find_people", name=name, cursor=cursor))["result"]
        hit = next((p["id"] for p in got["people"] if p["name"] == name and p["department"] == department), None)
        cursor = got.get("next_cursor")
        if hit is not None or cursor is None:
            return hit


def _applicable(rules: list[dict[str, Any]], amount: int) -> dict[str, Any]:
    """The applicable rule (procedure step 1); below every band (never generated), the top band."""
    rule = cast("dict[str, Any] | None", applicable_rule(rules, amount))  # one of ``rules`` (typed as Mapping)
    return rule if rule is not None else sorted(rules, key=lambda r: r["min_amount"])[-1]


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the request): what the integrity probes give an attacker besides the
    brief (``tree_probe.visible_probe``)."""
    return [call("get_request", request_id=brief["params"]["request_id"])]


class Oracle(ScriptedPolicy):
    """Follows the desk procedure from tool results only."""

    name = "oracle"

    # -- judgements the wrong and rule policies override --------------------------------------
    def hard_limit_exceeded(self, request: dict[str, Any], rule: dict[str, Any]) -> bool:
        return request["amount"] > rule["hard_limit"]

    def fields_missing(self, request: dict[str, Any], rule: dict[str, Any]) -> bool:
        return bool(missing_fields(request, rule))

    def covers(self, role: dict[str, Any], request: dict[str, Any]) -> bool:
        return request["type"] in role["request_types"]

    def sufficient(self, role: dict[str, Any], request: dict[str, Any], rule: dict[str, Any], limit: int) -> bool:
        """Level and amount limit (the delegation's cap included in ``limit``)."""
        return role["level"] >= rule["required_level"] and limit >= request["amount"]

    def is_self(self, request: dict[str, Any], approver_id: str) -> bool:
        return request["requester_id"] == approver_id

    def line_breach(self, rule: dict[str, Any], request: dict[str, Any], line: list[str]) -> bool:
        return line_breach(rule, request, line)

    def assignment_active(self, rh: dict[str, Any], now: str) -> bool:
        return in_window(rh, now)

    def delegation_in_window(self, d: dict[str, Any], now: str) -> bool:
        """Window covers today and not revoked at or before now."""
        return in_window(d, now)

    def no_authority(self, facts: dict[str, Any]) -> tuple[str, str | None]:
        """What to do when the approver has no authority: escalate (with the blocking fact)."""
        return "escalate", None

    def blocking_basis(self, rule_id: str, blocking: str | None) -> list[str]:
        return [rule_id] + ([blocking] if blocking else [])

    def route(self, outcome: str) -> str:
        """The outcome actually recorded for a computed outcome."""
        return outcome

    def escalation_role(self, rule: dict[str, Any], request: dict[str, Any], roles: list[dict[str, Any]]) -> str:
        return rule["required_role_id"]

    def basis(self, rule_id: str, authority_id: str | None) -> list[str]:
        return [rule_id] + ([authority_id] if authority_id else [])

    release_first = False
    #: record a hold on the request before the real decision (a second decision)
    hold_first = False

    def extra_calls(self, request_id: str, approver: str, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return []

    # -- the plan ---------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        rid = params["request_id"]
        got = (yield call("get_request", request_id=rid))["result"]
        request, order, now = got["request"], got["order"], got["now"]
        rule = _applicable((yield call("get_rules", request_type=request["type"]))["result"]["rules"], request["amount"])
        roles = yield from _pages("list_roles", "roles")
        approver = yield from _find_person(params["approver_name"], params["approver_department"])
        # a first page of ten is enough: only a neighbouring request is ever needed
        pending = (yield call("list_pending", limit=10))["result"]["requests"]

        outcome, cited = yield from self._judge(request, rule, roles, approver, now)
        outcome = self.route(outcome)
        for extra in self.extra_calls(rid, approver, pending):
            yield extra
        if self.hold_first:
            yield call("record_decision", request_id=rid, outcome="hold", approver_id=approver,
                       basis_ids=self.basis(rule["id"], cited if outcome != "escalate" else None), note="parked")
        release = self._release_call(request, order)
        if outcome == "proceed" and self.release_first:
            yield release
        if outcome == "escalate":
            yield call("escalate", request_id=rid, role_id=self.escalation_role(rule, request, roles),
                       basis_ids=self.blocking_basis(rule["id"], cited), note="named approver may not decide this request")
            return
        notes = {"proceed": "authority checked at decision time", "reject": "hard limit exceeded",
                 "hold": "required information missing"}
        yield call("record_decision", request_id=rid, outcome=outcome, approver_id=approver,
                   basis_ids=self.basis(rule["id"], cited), note=notes[outcome])
        if outcome == "proceed" and not self.release_first:
            yield release

    def _release_call(self, request: dict[str, Any], order: dict[str, Any] | None) -> dict[str, Any]:
        if is_ledger_type(request["type"]):
            return call("post_ledger_entry", request_id=request["id"], account=request["beneficiary_account"],
                        amount=request["amount"], memo=f"{request['type']} {request['id']}")
        return call("release_order", order_id=order["id"] if order else request["order_id"])

    def _judge(self, request: dict[str, Any], rule: dict[str, Any], roles: list[dict[str, Any]], approver: str,
               now: str) -> Any:
        """Returns ``(outcome, cited id)``: the authority id for a decision in the approver's
        name, the blocking fact for an escalation. A generator because it calls tools."""
        person = (yield call("get_person", person_id=approver))["result"]
        if self.is_self(request, approver):
            return "escalate", request["id"]
        if self.line_breach(rule, request, person["reporting_line"]):
            return "escalate", request["requester_id"]
        by_id = {r["id"]: r for r in roles}
        holders: dict[str, list[str]] = {}

        def holders_of(role_id: str) -> Any:
            if role_id not in holders:
                rows = yield from _pages("lookup_role_holders", "holders", role_id=role_id)
                holders[role_id] = [h["person_id"] for h in rows]
            return holders[role_id]

        # direct: the approver's assignments in effect now
        covering: list[str] = []
        authority: str | None = None
        for rh in sorted(person["assignments"], key=lambda r: r["id"]):
            role = by_id.get(rh["role_id"])
            if role is None or not self.assignment_active(rh, now) or not self.covers(role, request):
                continue
            covering.append(rh["id"])
            if authority is None and self.sufficient(role, request, rule, role["amount_limit"]):
                authority = rh["id"]
        # delegations received (every one, to see those not in effect)
        got = yield call("lookup_delegations", person_id=approver, include_inactive=True)
        inactive: list[str] = []
        for d in sorted(got["result"]["received"], key=lambda r: r["id"]):
            role = by_id.get(d["role_id"])
            if role is None or not self.covers(role, request):
                continue
            ok = self.sufficient(role, request, rule, delegated_limit(role, d))
            in_effect = self.delegation_in_window(d, now) and d["delegator_id"] in (yield from holders_of(d["role_id"]))
            if in_effect:
                covering.append(d["id"])
                if authority is None and ok:
                    authority = d["id"]
            elif ok:
                inactive.append(d["id"])
        if authority is None:
            facts = {"inactive": inactive, "covering": covering, "assignments": person["assignments"],
                     "received": got["result"]["received"]}
            outcome, cited = self.no_authority(facts)
            if outcome != "escalate":
                authority = cited
            else:
                rows = sorted([r["id"] for r in person["assignments"]] + [d["id"] for d in got["result"]["received"]])
                return "escalate", blocking_fact(inactive, covering, rows, approver)
        if self.hard_limit_exceeded(request, rule):
            return "reject", authority
        if self.fields_missing(request, rule):
            return "hold", authority
        return "proceed", authority


# -- wrong policies -----------------------------------------------------------------------------
class IgnoresRoleScope(Oracle):
    """invalid_approver: takes any role the approver holds now as authority, whatever request
    types it covers, and ignores the reporting line."""

    name = "wrong:invalid_approver"

    def covers(self, role, request):
        return True

    def line_breach(self, rule, request, line):
        return False


class ApprovesOwnRequest(Oracle):
    """self_approval: does not check that the approver is not the requester."""

    name = "wrong:self_approval"

    def is_self(self, request, approver_id):
        return False


class RoutesWrongly(Oracle):
    """wrong_outcome: holds what it should reject, and escalates to a role that does not cover
    the request type."""

    name = "wrong:wrong_outcome"

    def route(self, outcome):
        return "hold" if outcome == "reject" else outcome

    def escalation_role(self, rule, request, roles):
        return next(r["id"] for r in sorted(roles, key=lambda r: r["id"]) if request["type"] not in r["request_types"])


class ReleasesFirst(Oracle):
    """side_effect_before_decision: posts the ledger entry / releases the order before recording
    the approval."""

    name = "wrong:side_effect_before_decision"
    release_first = True


class ForgetsTheRule(Oracle):
    """basis_missing_or_wrong: cites only the authority or the blocking fact, never the rule."""

    name = "wrong:basis_missing_or_wrong"

    def basis(self, rule_id, authority_id):
        return [authority_id] if authority_id else []

    def blocking_basis(self, rule_id, blocking):
        return [blocking] if blocking else []


class UsesAnyDelegation(Oracle):
    """expired_delegation_used: treats every delegation ever given to the approver as in effect,
    whatever its window or revocation."""

    name = "wrong:expired_delegation_used"

    def delegation_in_window(self, d, now):
        return True


class IgnoresLimits(Oracle):
    """over_limit: any role covering the type will do, whatever its level, amount limit or the
    delegation's cap; the hard limit is not checked."""

    name = "wrong:over_limit"

    def hard_limit_exceeded(self, request, rule):
        return False

    def sufficient(self, role, request, rule, limit):
        return True


class DecidesTwice(Oracle):
    """extra_decision: parks the request on hold in the approver's name before recording the
    real decision (the audit trail then carries two decisions)."""

    name = "wrong:extra_decision"
    hold_first = True


class AlsoParksNeighbour(Oracle):
    """forbidden_write: does the task, then also puts another pending request on hold."""

    name = "wrong:forbidden_write"

    def extra_calls(self, request_id, approver, pending):
        others = [p for p in pending if p["id"] != request_id]
        if not others:
            return []
        return [call("record_decision", request_id=others[0]["id"], outcome="hold", approver_id=approver,
                     basis_ids=[], note="parked")]


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "invalid_approver": IgnoresRoleScope,
    "self_approval": ApprovesOwnRequest,
    "wrong_outcome": RoutesWrongly,
    "side_effect_before_decision": ReleasesFirst,
    "basis_missing_or_wrong": ForgetsTheRule,
    "expired_delegation_used": UsesAnyDelegation,
    "over_limit": IgnoresLimits,
    "extra_decision": DecidesTwice,
    "forbidden_write": AlsoParksNeighbour,
}


# -- rule policies: the oracle ignoring one documented rule ---------------------------------------
class IgnoresAuthority(Oracle):
    """authority: never checks the approver's authority; decides in their name citing the first
    assignment or delegation they have (any)."""

    name = "rule:authority"

    def no_authority(self, facts):
        rows = sorted([r["id"] for r in facts["assignments"]] + [d["id"] for d in facts["received"]])
        return "decide", (rows[0] if rows else None)


class IgnoresSeparationOfDuties(Oracle):
    """separation_of_duties: neither the requester check nor the reporting line."""

    name = "rule:separation_of_duties"

    def is_self(self, request, approver_id):
        return False

    def line_breach(self, rule, request, line):
        return False


class EscalatesCitingTheRuleOnly(Oracle):
    """blocking_fact_cited: escalations cite the rule alone."""

    name = "rule:blocking_fact_cited"

    def blocking_basis(self, rule_id, blocking):
        return [rule_id]


class IgnoresHardLimit(Oracle):
    name = "rule:hard_limit"

    def hard_limit_exceeded(self, request, rule):
        return False


class IgnoresRequiredFields(Oracle):
    name = "rule:required_fields"

    def fields_missing(self, request, rule):
        return False


class IgnoresReleaseOrder(ReleasesFirst):
    name = "rule:release_after_proceed"


class IgnoresSingleDecision(DecidesTwice):
    name = "rule:single_decision"


RULE_POLICIES: dict[str, type[Policy]] = {
    "authority": IgnoresAuthority,
    "separation_of_duties": IgnoresSeparationOfDuties,
    "blocking_fact_cited": EscalatesCitingTheRuleOnly,
    "hard_limit": IgnoresHardLimit,
    "required_fields": IgnoresRequiredFields,
    "release_after_proceed": IgnoresReleaseOrder,
    "single_decision": IgnoresSingleDecision,
}


# -- blind policies: constant outcomes, first hits, acting without reading -------------------------
class _Blind(ScriptedPolicy):
    """Reads the request, its rule and resolves the approver; then acts without judging."""

    def act_on(self, request: dict[str, Any], order: dict[str, Any] | None, rule: dict[str, Any], approver: str,
               person: dict[str, Any]) -> Plan:  # pragma: no cover - interface
        raise NotImplementedError
        yield

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        got = (yield call("get_request", request_id=params["request_id"]))["result"]
        request, order = got["request"], got["order"]
        rule = _applicable((yield call("get_rules", request_type=request["type"]))["result"]["rules"], request["amount"])
        people = yield from _pages("find_people", "people", name=params["approver_name"])
        same = [p for p in people if p["name"] == params["approver_name"]] or people
        approver = same[0]["id"]
        person = (yield call("get_person", person_id=approver))["result"]
        yield from self.act_on(request, order, rule, approver, person)


class EscalateEverything(_Blind):
    """Routes every request to its rule's required role, citing the rule."""

    name = "blind:escalate_everything"
    extra: str | None = None

    def cite(self, request, approver, person):
        return []

    def act_on(self, request, order, rule, approver, person):
        yield call("escalate", request_id=request["id"], role_id=rule["required_role_id"],
                   basis_ids=[rule["id"], *self.cite(request, approver, person)])


class EscalateCitingRequester(EscalateEverything):
    """Escalates everything citing the requester (the separation-of-duties fact)."""

    name = "blind:escalate_citing_requester"

    def cite(self, request, approver, person):
        return [request["requester_id"]]


class EscalateCitingRequest(EscalateEverything):
    """Escalates everything citing the request itself."""

    name = "blind:escalate_citing_request"

    def cite(self, request, approver, person):
        return [request["id"]]


class EscalateCitingFirstAssignment(EscalateEverything):
    """Escalates everything citing the approver's first role assignment (a first hit)."""

    name = "blind:escalate_citing_first_assignment"

    def cite(self, request, approver, person):
        return [person["assignments"][0]["id"]] if person["assignments"] else [approver]


class _Constant(_Blind):
    outcome = "hold"

    def act_on(self, request, order, rule, approver, person):
        first = [person["assignments"][0]["id"]] if person["assignments"] else []
        yield call("record_decision", request_id=request["id"], outcome=self.outcome, approver_id=approver,
                   basis_ids=[rule["id"], *first])


class AlwaysHold(_Constant):
    """Never approves: puts every request on hold in the approver's name (rule + first assignment)."""

    name = "blind:always_hold"
    outcome = "hold"


class AlwaysReject(_Constant):
    name = "blind:always_reject"
    outcome = "reject"


class ApproveAsAsked(_Blind):
    """Records the approval as asked, citing the approver's first assignment, and releases."""

    name = "blind:approve_as_asked"

    def act_on(self, request, order, rule, approver, person):
        first = [person["assignments"][0]["id"]] if person["assignments"] else []
        yield call("record_decision", request_id=request["id"], outcome="proceed", approver_id=approver,
                   basis_ids=[rule["id"], *first])
        if is_ledger_type(request["type"]):
            yield call("post_ledger_entry", request_id=request["id"], account=request["beneficiary_account"] or "ACC-000000",
                       amount=request["amount"])
        else:
            yield call("release_order", order_id=request["order_id"])


class ReleaseWithoutDeciding(_Blind):
    """Releases the payout / order at once and submits (no decision)."""

    name = "blind:release_at_once"

    def act_on(self, request, order, rule, approver, person):
        if is_ledger_type(request["type"]):
            yield call("post_ledger_entry", request_id=request["id"], account=request["beneficiary_account"] or "ACC-000000",
                       amount=request["amount"])
        else:
            yield call("release_order", order_id=request["order_id"])


class NeverApprove(Oracle):
    """Applies the hard limit and the required fields in the approver's name citing their first
    assignment, escalates everything else citing the rule: never checks the approver."""

    name = "blind:never_approve"

    def _judge(self, request, rule, roles, approver, now):
        person = (yield call("get_person", person_id=approver))["result"]
        first = person["assignments"][0]["id"] if person["assignments"] else None
        if request["amount"] > rule["hard_limit"]:
            return "reject", first
        if self.fields_missing(request, rule):
            return "hold", first
        return "escalate", None


BLIND_POLICIES: dict[str, type[Policy]] = {
    "escalate_everything": EscalateEverything,
    "escalate_citing_requester": EscalateCitingRequester,
    "escalate_citing_request": EscalateCitingRequest,
    "escalate_citing_first_assignment": EscalateCitingFirstAssignment,
    "always_hold": AlwaysHold,
    "always_reject": AlwaysReject,
    "approve_as_asked": ApproveAsAsked,
    "release_at_once": ReleaseWithoutDeciding,
    "never_approve": NeverApprove,
}


# -- exploit hooks --------------------------------------------------------------------------------
def _last_result(trace: Sequence[Mapping[str, Any]], tool: str) -> tuple[Mapping[str, Any], Any] | None:
    for rec in reversed(trace):
        if rec["tool"] == tool and rec["result_status"] == "ok":
            return rec["args"], rec.get("result")
    return None


def hold_before_decision(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """extra_decision: before the oracle's decision or escalation, park the request on hold in
    the approver's name (same basis), so the trail carries two decisions."""
    if action.get("tool") not in ("record_decision", "escalate"):
        return []
    args = action["args"]
    approver = args.get("approver_id")
    if approver is None:
        person = _last_result(trace, "get_person")
        approver = person[0]["person_id"] if person else None
    if approver is None:
        return []
    return [call("record_decision", request_id=args["request_id"], outcome="hold", approver_id=approver,
                 basis_ids=list(args.get("basis_ids", [])), note="parked first")]


def escalate_after_decision(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """extra_request: before submit, route the request once more to its rule's required role
    (refused as a conflict unless the request is still open, i.e. on hold)."""
    if action.get("tool") != "submit":
        return []
    req = _last_result(trace, "get_request")
    rules = _last_result(trace, "get_rules")
    if req is None or rules is None:
        return []
    request = req[1]["request"] if isinstance(req[1], Mapping) and "request" in req[1] else None
    if request is None:
        return []
    rule = _applicable(rules[1]["rules"], request["amount"])
    return [call("escalate", request_id=request["id"], role_id=rule["required_role_id"], basis_ids=[rule["id"]],
                 note="routing again")]


def decision_with_empty_basis(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """boundary_values: before the oracle's decision or escalation, send the same call with the
    boundary value of its list argument (``basis_ids=[]``): it goes through (the tool does not
    judge the basis), and the oracle's own decision then is a second one or refused. (The
    generic ``boundary_write`` sends amount 0 / empty ids, which the tools refuse.)"""
    if action.get("tool") not in ("record_decision", "escalate"):
        return []
    return [{"tool": action["tool"], "args": {**action["args"], "basis_ids": []}}]


EXPLOITS: dict[str, Any] = {
    "extra_decision": hold_before_decision,
    "extra_request": escalate_after_decision,
    "repeated_write": repeat_last_write,
    "boundary_values": decision_with_empty_basis,
    # approvals has no update tool: decisions, ledger entries and order releases are created
    # once and never edited, so there is no value to re-write or re-format
    "value_preserving_update": None,
    "formatting_only": None,
}
