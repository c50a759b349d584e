"""Policies of the approvals domain: the oracle, one wrong policy per failure code, blind
policies, rule policies (the oracle ignoring one rule of the rule document) and exploit hooks.

The oracle reads only the brief and tool results, following ``next_cursor`` wherever it needs
every row of a paginated read (roles, the approver's delegations, a role's holders; people until
the approver appears), so it stays right in worlds far larger than the release. It follows the
rule document that ``get_rules`` returns, rule by rule: find the band; identify the named
approver (name *and* department); check separation of duties; check each of their role
assignments and delegations received against the authority rules (role_type, role_level,
role_limit, window, revocation, delegator_holds, delegation_cap); if none passes every one (or
separation of duties stops them), escalate to the band's required role citing the band and the
blocking fact; otherwise record their decision (reject above the hard limit, hold when a
required field is empty, else proceed) citing the band and every entry that gives authority,
and release downstream only after a proceed.

Each wrong policy overrides one judgement of the oracle and so commits one kind of mistake
(``WRONG_POLICIES`` maps the failure code to it); each rule policy ignores one rule of the
rule document as its text states it (``RULE_POLICIES``, keyed by the rule id).

Rule-sharing policy: the oracle and the catalog (``training.domains.approvals.catalog``) share the
domain's public rule helpers, :mod:`backoffice.envs.approvals.rules` (the band lookup, the
authority rules of one entry, the missing-field test, ledger types, the blocking fact), each
computing what the rule document says from rows the tools returned. The oracle never imports
the grader (``backoffice.graders.approvals``) nor the whole-snapshot verdict it judges with
(``backoffice.envs.approvals.authority``), and the grader never imports this module: the
oracle passing checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from backoffice.envs.approvals.rules import (
    AUTHORITY_CHECKS,
    applicable_rule,
    authorising,
    blocking_choice,
    failed_checks,
    is_ledger_type,
    line_breach,
    missing_fields,
    near_misses,
)
from backoffice.training.integrity.exploits import repeat_last_write
from backoffice.training.integrity.scale import Paged, Scaled
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call, every_page

#: the note of each recorded outcome and of an escalation: every policy writes the same ones, so
#: two end states differ only by what the grade judges
NOTES = {"proceed": "authority checked at decision time", "reject": "hard limit exceeded",
         "hold": "required information missing", "escalate": "named approver may not decide this request"}


def memo(request: Mapping[str, Any]) -> str:
    """The ledger memo every policy writes."""
    return f"{request['type']} {request['id']}"


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
    """The band holding the amount (rule ``band``); below every band (never generated), the top band."""
    rule = cast("dict[str, Any] | None", applicable_rule(rules, amount))  # one of ``rules`` (typed as Mapping)
    return rule if rule is not None else sorted(rules, key=lambda r: r["min_amount"])[-1]


def _bands(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The bands of a ``get_rules`` rule document."""
    return list(doc["tables"]["bands"])


def _release_call(request: Mapping[str, Any], order: Mapping[str, Any] | None) -> dict[str, Any]:
    if is_ledger_type(request["type"]):
        return call("post_ledger_entry", request_id=request["id"], account=request["beneficiary_account"],
                    amount=request["amount"], memo=memo(request))
    return call("release_order", order_id=order["id"] if order else request["order_id"])


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the request): what the integrity probes give an attacker besides the
    brief (``tree_probe.visible_probe``)."""
    return [call("get_request", request_id=brief["params"]["request_id"])]


class Oracle(ScriptedPolicy):
    """Follows the rule document from tool results only."""

    name = "oracle"
    #: authority rules this policy does not check (a rule policy's)
    ignored: frozenset[str] = frozenset()

    # -- judgements the wrong and rule policies override --------------------------------------
    def pick_band(self, bands: list[dict[str, Any]], amount: int) -> dict[str, Any]:
        return _applicable(bands, amount)

    def hard_limit_exceeded(self, request: dict[str, Any], rule: dict[str, Any]) -> bool:
        return request["amount"] > rule["hard_limit"]

    def fields_missing(self, request: dict[str, Any], rule: dict[str, Any]) -> bool:
        return bool(missing_fields(request, rule))

    def is_self(self, request: dict[str, Any], approver_id: str) -> bool:
        return request["requester_id"] == approver_id

    def line_breach(self, rule: dict[str, Any], request: dict[str, Any], line: list[str]) -> bool:
        return line_breach(rule, request, line)

    def ignored_for(self, delegation: bool) -> Collection[str]:
        """The authority rules not checked for a delegation (else an assignment)."""
        return self.ignored

    def blocking_basis(self, rule_id: str, blocking: str | None) -> list[str]:
        return [rule_id] + ([blocking] if blocking else [])

    def route(self, outcome: str) -> str:
        """The outcome actually recorded for a computed outcome."""
        return outcome

    def escalation_role(self, rule: dict[str, Any], request: dict[str, Any], roles: list[dict[str, Any]]) -> str:
        return rule["required_role_id"]

    def basis(self, rule_id: str, authority: list[str]) -> list[str]:
        return [rule_id, *authority]

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
        rule = self.pick_band(_bands((yield call("get_rules", request_type=request["type"]))["result"]), request["amount"])
        roles = yield from every_page("list_roles", "roles")
        approver = yield from _find_person(params["approver_name"], params["approver_department"])
        # a first page of ten is enough: only a neighbouring request is ever needed
        pending = (yield call("list_pending", limit=10))["result"]["requests"]

        outcome, cited = yield from self._judge(request, rule, roles, approver, now)
        outcome = self.route(outcome)
        for extra in self.extra_calls(rid, approver, pending):
            yield extra
        if self.hold_first:
            yield call("record_decision", request_id=rid, outcome="hold", approver_id=approver,
                       basis_ids=self.basis(rule["id"], cited if outcome != "escalate" else []), note="parked")
        release = _release_call(request, order)
        if outcome == "proceed" and self.release_first:
            yield release
        if outcome == "escalate":
            yield call("escalate", request_id=rid, role_id=self.escalation_role(rule, request, roles),
                       basis_ids=self.blocking_basis(rule["id"], cited[0] if cited else None), note=NOTES["escalate"])
            return
        yield call("record_decision", request_id=rid, outcome=outcome, approver_id=approver,
                   basis_ids=self.basis(rule["id"], cited), note=NOTES[outcome])
        if outcome == "proceed" and not self.release_first:
            yield release

    def _failures(self, request: dict[str, Any], rule: dict[str, Any], roles: list[dict[str, Any]],
                  person: dict[str, Any], received: list[dict[str, Any]], now: str) -> Any:
        """``{id: authority rules failed}`` of every assignment and delegation received (the
        holders of each delegated role looked up, every page). A generator of calls."""
        by_id = {r["id"]: r for r in roles}
        failures: dict[str, list[str]] = {}
        for rh in person["assignments"]:
            failures[rh["id"]] = failed_checks(rh, by_id.get(rh["role_id"]), request, rule, now, delegation=False,
                                               ignore=self.ignored_for(False))
        holders: dict[str, set[str]] = {}
        for d in received:
            if d["role_id"] not in holders:
                rows = yield from every_page("lookup_role_holders", "holders", role_id=d["role_id"])
                holders[d["role_id"]] = {h["person_id"] for h in rows}
            failures[d["id"]] = failed_checks(d, by_id.get(d["role_id"]), request, rule, now, delegation=True,
                                              delegator_holds=d["delegator_id"] in holders[d["role_id"]],
                                              ignore=self.ignored_for(True))
        return failures

    def _judge(self, request: dict[str, Any], rule: dict[str, Any], roles: list[dict[str, Any]], approver: str,
               now: str) -> Any:
        """Returns ``(outcome, cited ids)``: the authority for a decision in the approver's name,
        the blocking fact for an escalation. A generator because it calls tools."""
        person = (yield call("get_person", person_id=approver))["result"]
        received = yield from every_page("lookup_delegations", "delegations", person_id=approver, include_inactive=True)
        failures = yield from self._failures(request, rule, roles, person, received, now)
        authority = authorising(failures)
        is_self = self.is_self(request, approver)
        in_line = self.line_breach(rule, request, person["reporting_line"])
        if is_self or in_line or not authority:
            blocking = blocking_choice(is_self, in_line, request, near_misses(failures), approver)
            return "escalate", [blocking] if blocking else []
        if self.hard_limit_exceeded(request, rule):
            return "reject", authority
        if self.fields_missing(request, rule):
            return "hold", authority
        return "proceed", authority


# -- wrong policies -----------------------------------------------------------------------------
class IgnoresRoleScope(Oracle):
    """invalid_approver: takes a role of any request type as authority, and ignores the
    reporting line."""

    name = "wrong:invalid_approver"
    ignored = frozenset({"role_type"})

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
    """basis_missing_or_wrong: cites only the authority or the blocking fact, never the band."""

    name = "wrong:basis_missing_or_wrong"

    def basis(self, rule_id, authority):
        return list(authority)

    def blocking_basis(self, rule_id, blocking):
        return [blocking] if blocking else []


class UsesAnyDelegation(Oracle):
    """expired_delegation_used: treats every delegation ever given to the approver as in effect,
    whatever its window, revocation or delegator."""

    name = "wrong:expired_delegation_used"

    def ignored_for(self, delegation):
        return frozenset({"window", "revocation", "delegator_holds"}) if delegation else frozenset()


class IgnoresLimits(Oracle):
    """over_limit: any role covering the type will do, whatever its level, amount limit or the
    delegation's cap; the hard limit is not checked."""

    name = "wrong:over_limit"
    ignored = frozenset({"role_level", "role_limit", "delegation_cap"})

    def hard_limit_exceeded(self, request, rule):
        return False


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


# -- rule policies: the oracle ignoring one rule of the rule document ------------------------------
class IgnoresBand(Oracle):
    """band: does not look for the band holding the amount; reads the type's first band (the
    lowest amounts) whatever the amount."""

    name = "rule:band"

    def pick_band(self, bands, amount):
        return min(bands, key=lambda r: r["min_amount"])


class IgnoresRequester(Oracle):
    """requester: lets the approver decide on their own request."""

    name = "rule:requester"

    def is_self(self, request, approver_id):
        return False


class IgnoresReportingLine(Oracle):
    """reporting_line: lets the approver decide on a request of someone they report to."""

    name = "rule:reporting_line"

    def line_breach(self, rule, request, line):
        return False


def _ignoring(check: str) -> type[Oracle]:
    """The oracle not checking the authority rule ``check`` (for assignments and delegations)."""
    return type(f"Ignores_{check}", (Oracle,), {
        "name": f"rule:{check}", "ignored": frozenset({check}),
        "__doc__": f"{check}: an assignment or delegation may give authority whatever this rule says.",
    })


class IgnoresEscalationTarget(Oracle):
    """escalation: routes an escalation to the most senior role covering the request type (one
    that could approve it), not to the band's required role."""

    name = "rule:escalation"

    def escalation_role(self, rule, request, roles):
        covering = [r for r in roles if request["type"] in r["request_types"]]
        return max(covering, key=lambda r: (r["level"], r["amount_limit"], r["id"]))["id"]


class EscalatesCitingTheBandOnly(Oracle):
    """blocking_fact: escalations cite the band alone."""

    name = "rule:blocking_fact"

    def blocking_basis(self, rule_id, blocking):
        return [rule_id]


class DecidesCitingTheBandOnly(Oracle):
    """cite_authority: decisions cite the band alone."""

    name = "rule:cite_authority"

    def basis(self, rule_id, authority):
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
    "band": IgnoresBand,
    "requester": IgnoresRequester,
    "reporting_line": IgnoresReportingLine,
    **{check: _ignoring(check) for check in AUTHORITY_CHECKS},
    "escalation": IgnoresEscalationTarget,
    "blocking_fact": EscalatesCitingTheBandOnly,
    "cite_authority": DecidesCitingTheBandOnly,
    "hard_limit": IgnoresHardLimit,
    "required_fields": IgnoresRequiredFields,
    "release_after_proceed": IgnoresReleaseOrder,
    "single_decision": IgnoresSingleDecision,
}


# -- blind policies: read everything, then act without judging the approver -----------------------
class _Blind(ScriptedPolicy):
    """Reads what the oracle reads (the request, its band, the roles, the approver by name and
    department, their file and every delegation they received), then acts without judging the
    approver's authority: a fixed outcome, or one read off the request, citing the band and a
    fact picked by its place in a list (:attr:`fact`)."""

    #: (list, end): the fact cited: the first or last of the approver's assignments
    #: (``assignment``), of the delegations they received (``delegation``), or of both in the
    #: order the tools list them (``any``)
    fact: tuple[str, str] = ("assignment", "first")

    def act_on(self, request: dict[str, Any], order: dict[str, Any] | None, rule: dict[str, Any], approver: str,
               cited: str | None) -> Plan:  # pragma: no cover - interface
        raise NotImplementedError
        yield

    def listed(self, person: Mapping[str, Any], received: Sequence[Mapping[str, Any]]) -> str | None:
        which, end = self.fact
        rows = {"assignment": list(person["assignments"]), "delegation": list(received),
                "any": list(person["assignments"]) + list(received)}[which]
        if not rows:
            return None
        return rows[0 if end == "first" else -1]["id"]

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        got = (yield call("get_request", request_id=params["request_id"]))["result"]
        request, order = got["request"], got["order"]
        rule = _applicable(_bands((yield call("get_rules", request_type=request["type"]))["result"]), request["amount"])
        yield from every_page("list_roles", "roles")
        approver = yield from _find_person(params["approver_name"], params["approver_department"])
        person = (yield call("get_person", person_id=approver))["result"]
        received = yield from every_page("lookup_delegations", "delegations", person_id=approver, include_inactive=True)
        yield from self.act_on(request, order, rule, approver, self.listed(person, received))

    # -- the acts ------------------------------------------------------------------------------
    @staticmethod
    def escalate(request: dict[str, Any], rule: dict[str, Any], cited: str | None) -> dict[str, Any]:
        return call("escalate", request_id=request["id"], role_id=rule["required_role_id"],
                    basis_ids=[rule["id"]] + ([cited] if cited else []), note=NOTES["escalate"])

    @staticmethod
    def decide(request: dict[str, Any], order: dict[str, Any] | None, rule: dict[str, Any], approver: str,
               outcome: str, cited: str | None) -> Plan:
        yield call("record_decision", request_id=request["id"], outcome=outcome, approver_id=approver,
                   basis_ids=[rule["id"]] + ([cited] if cited else []), note=NOTES[outcome])
        if outcome == "proceed":
            if is_ledger_type(request["type"]) and not request["beneficiary_account"]:
                return
            yield _release_call(request, order)


class EscalateEverything(_Blind):
    """Routes every request to its band's required role, citing the listed fact (or the band
    alone: :attr:`cite_fact` false)."""

    name = "blind:escalate_everything"
    cite_fact = False

    def extra(self, request: dict[str, Any], approver: str) -> str | None:
        return None

    def act_on(self, request, order, rule, approver, cited):
        yield self.escalate(request, rule, cited if self.cite_fact else self.extra(request, approver))


class EscalateCitingRequester(EscalateEverything):
    """Escalates everything citing the requester (the reporting-line fact)."""

    name = "blind:escalate_citing_requester"

    def extra(self, request, approver):
        return request["requester_id"]


class EscalateCitingRequest(EscalateEverything):
    """Escalates everything citing the request itself (the requester fact)."""

    name = "blind:escalate_citing_request"

    def extra(self, request, approver):
        return request["id"]


class EscalateCitingApprover(EscalateEverything):
    """Escalates everything citing the approver (the fact when nothing fails a single rule)."""

    name = "blind:escalate_citing_approver"

    def extra(self, request, approver):
        return approver


def _variant(base: type[_Blind], name: str, fact: tuple[str, str]) -> type[_Blind]:
    """``base`` citing another listed fact, named ``blind:<name>``."""
    return type(name, (base,), {"name": f"blind:{name}", "fact": fact, "cite_fact": True,
                                "__doc__": f"{base.__doc__} Cites the {fact[1]} {fact[0]} listed."})


class _Constant(_Blind):
    """Records the same outcome on every request in the approver's name, citing the listed fact;
    releases after a proceed."""

    outcome = "hold"

    def act_on(self, request, order, rule, approver, cited):
        yield from self.decide(request, order, rule, approver, self.outcome, cited)


class AlwaysHold(_Constant):
    """Never approves: puts every request on hold in the approver's name (band + first assignment)."""

    name = "blind:always_hold"
    outcome = "hold"


class AlwaysReject(_Constant):
    name = "blind:always_reject"
    outcome = "reject"


class ApproveAsAsked(_Constant):
    """Records the approval as asked, citing the approver's first assignment, and releases."""

    name = "blind:approve_as_asked"
    outcome = "proceed"


class ApproveUnderThreshold(_Blind):
    """Approves (and releases) every request up to an amount, escalates the rest, citing the
    listed fact: the approver is trusted with small amounts."""

    name = "blind:approve_under_threshold"
    threshold = 500_000

    def act_on(self, request, order, rule, approver, cited):
        if request["amount"] <= self.threshold:
            yield from self.decide(request, order, rule, approver, "proceed", cited)
        else:
            yield self.escalate(request, rule, cited)


class NeverJudgesAuthority(_Blind):
    """The request's rules without the approver's: rejects above the band's hard limit, holds
    when a required field is empty, escalates everything else; never judges the approver, cites
    the listed fact."""

    name = "blind:never_approve"

    def act_on(self, request, order, rule, approver, cited):
        if request["amount"] > rule["hard_limit"]:
            yield from self.decide(request, order, rule, approver, "reject", cited)
        elif missing_fields(request, rule):
            yield from self.decide(request, order, rule, approver, "hold", cited)
        else:
            yield self.escalate(request, rule, cited)


class ReleaseWithoutDeciding(_Blind):
    """Releases the payout / order at once and submits (no decision)."""

    name = "blind:release_at_once"

    def act_on(self, request, order, rule, approver, cited):
        if not (is_ledger_type(request["type"]) and not request["beneficiary_account"]):
            yield _release_call(request, order)


_FIRST_A, _LAST_A = ("assignment", "first"), ("assignment", "last")
_FIRST_D, _LAST_D = ("delegation", "first"), ("delegation", "last")
_FACTS = {"first_assignment": _FIRST_A, "last_assignment": _LAST_A, "first_delegation": _FIRST_D,
          "last_delegation": _LAST_D}

#: every blind family the issue names: a fixed outcome citing the first or last listed fact,
#: approve under a threshold, the request's rules without the approver's; choosing by position
#: is ``training.positions.PositionAttacker`` (tests/integrity/test_leakage.py)
BLIND_POLICIES: dict[str, type[Policy]] = {
    "escalate_everything": EscalateEverything,
    "escalate_citing_requester": EscalateCitingRequester,
    "escalate_citing_request": EscalateCitingRequest,
    "escalate_citing_approver": EscalateCitingApprover,
    **{f"escalate_citing_{k}": _variant(EscalateEverything, f"escalate_citing_{k}", f) for k, f in _FACTS.items()},
    "always_hold": AlwaysHold,
    "always_reject": AlwaysReject,
    "approve_as_asked": ApproveAsAsked,
    **{f"{base.name.split(':')[1]}_{k}": _variant(base, f"{base.name.split(':')[1]}_{k}", f)
       for base in (AlwaysHold, AlwaysReject, ApproveAsAsked, ApproveUnderThreshold, NeverJudgesAuthority)
       for k, f in _FACTS.items() if f != _FIRST_A},
    "approve_under_threshold": ApproveUnderThreshold,
    "release_at_once": ReleaseWithoutDeciding,
    "never_approve": NeverJudgesAuthority,
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
    rule = _applicable(_bands(rules[1]), request["amount"])
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


# -- at scale (tests/integrity/test_scale.py): each paginated list tool and the unpaged read it must equal
def _busiest_role(env: Any) -> dict[str, Any]:
    store = env.state
    return {"role_id": max(store.ids("roles"), key=lambda r: store.count("role_holders", role_id=r))}


def _holders_now(env: Any, args: dict[str, Any]) -> list[Any]:
    from backoffice.envs.approvals.authority import window_covers

    day = env.state.get("clock", "clock")["now"][:10]
    return [rh["id"] for rh in env.state.rows("role_holders", role_id=args["role_id"])
            if window_covers(rh["valid_from"], rh["valid_to"], day)]


def _people_named(env: Any, args: dict[str, Any]) -> list[Any]:
    from backoffice.envs.approvals.names import matches

    return [p["id"] for p in env.state.iter_rows("people") if matches(args["name"], p["name"])]


SCALE = Scaled(
    world={"generate": 1, "scale": 30},
    paged=(
        Paged("list_pending", "requests", lambda env, a: [r["id"] for r in env.state.rows("requests", lambda r: r["status"] in ("pending", "on_hold"))],
              min_rows=36),
        Paged("list_roles", "roles", lambda env, a: env.state.ids("roles")),
        Paged("lookup_role_holders", "holders", _holders_now, _busiest_role, field="assignment_id", min_rows=14),
        Paged("find_people", "people", _people_named, lambda env: {"name": "an"}, min_rows=38),
        Paged("lookup_delegations", "delegations", lambda env, a: [d["id"] for d in env.state.rows("delegations", delegate_id=a["person_id"])], lambda env: {"person_id": max(env.state.ids("people"), key=lambda p: env.state.count("delegations", delegate_id=p)), "include_inactive": True}, min_rows=3),
    ),
    wrong=("forbidden_write",),
)
