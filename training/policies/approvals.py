"""Policies of the approvals domain: the oracle and one wrong policy per failure code.

The oracle reads only the brief and tool results. It follows the desk procedure that
``get_rules`` returns: find the rule, check the hard limit and required fields, identify the
named approver (name *and* department), then look up their role assignments and delegations
in effect now and the separation-of-duties facts, and record the decision with its basis;
the ledger entry / order release comes only after a valid proceed.

Each wrong policy overrides one judgement of the oracle and so commits exactly one kind of
mistake (``WRONG_POLICIES`` maps the failure code to it).
"""

from __future__ import annotations

from typing import Any

from backoffice.training.policies.base import Plan, ScriptedPolicy, call

LEDGER_TYPES = ("refund", "credit_adjustment", "write_off", "expense_claim")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class Oracle(ScriptedPolicy):
    """Follows the desk procedure from tool results only."""

    name = "oracle"

    # -- judgements the wrong policies override ---------------------------------------------
    def hard_limit_exceeded(self, request: dict[str, Any], rule: dict[str, Any]) -> bool:
        return request["amount"] > rule["hard_limit"]

    def candidate_roles(self, roles: list[dict[str, Any]], request: dict[str, Any], rule: dict[str, Any]) -> list[dict[str, Any]]:
        """Roles that could authorise this request (type, level, limit)."""
        return [
            r for r in roles
            if request["type"] in r["request_types"] and r["level"] >= rule["required_level"]
            and r["amount_limit"] >= request["amount"]
        ]

    def is_self(self, request: dict[str, Any], approver_id: str) -> bool:
        return request["requester_id"] == approver_id

    def line_breach(self, rule: dict[str, Any], request: dict[str, Any], line: list[str]) -> bool:
        return bool(rule["sod_not_in_requester_line"]) and request["requester_id"] in line

    def assignment_as_of(self, request: dict[str, Any]) -> list[str | None]:
        """``as_of`` values of the role-holder lookups (``None``: now, the decision time)."""
        return [None]

    def delegation_query(self, request: dict[str, Any]) -> dict[str, Any]:
        return {}

    def delegation_usable(self, d: dict[str, Any], request: dict[str, Any]) -> bool:
        return d["cap"] is None or d["cap"] >= request["amount"]

    def route(self, outcome: str) -> str:
        """The outcome actually recorded for a computed outcome."""
        return outcome

    def basis(self, rule_id: str, authority_id: str | None) -> list[str]:
        return [rule_id] + ([authority_id] if authority_id else [])

    release_first = False

    def extra_calls(self, request_id: str, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return []

    # -- the plan ---------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        rid = params["request_id"]
        got = yield call("get_request", request_id=rid)
        request, order = got["result"]["request"], got["result"]["order"]
        rules = (yield call("get_rules", request_type=request["type"]))["result"]["rules"]
        rule = next(
            r for r in rules
            if r["min_amount"] <= request["amount"] and (r["max_amount"] is None or request["amount"] <= r["max_amount"])
        )
        roles = (yield call("list_roles"))["result"]["roles"]
        people = (yield call("find_people", name=params["approver_name"]))["result"]["people"]
        approver = next(
            p for p in people if p["name"] == params["approver_name"] and p["department"] == params["approver_department"]
        )["id"]
        pending = (yield call("list_pending"))["result"]["requests"]

        outcome, authority_id = yield from self._judge(request, rule, roles, approver)
        outcome = self.route(outcome)
        for extra in self.extra_calls(rid, pending):
            yield extra
        release = self._release_call(request, order)
        if outcome == "proceed" and self.release_first:
            yield release
        if outcome == "escalate":
            yield call("escalate", request_id=rid, role_id=rule["required_role_id"], basis_ids=self.basis(rule["id"], None),
                       note="named approver may not approve this request")
        elif outcome == "proceed":
            yield call("record_decision", request_id=rid, outcome="proceed", approver_id=approver,
                       basis_ids=self.basis(rule["id"], authority_id), note="authority checked at decision time")
            if not self.release_first:
                yield release
        else:
            yield call("record_decision", request_id=rid, outcome=outcome, basis_ids=self.basis(rule["id"], None),
                       note="hard limit exceeded" if outcome == "reject" else "required information missing")

    def _release_call(self, request: dict[str, Any], order: dict[str, Any] | None) -> dict[str, Any]:
        if request["type"] in LEDGER_TYPES:
            return call("post_ledger_entry", request_id=request["id"], account=request["beneficiary_account"],
                        amount=request["amount"], memo=f"{request['type']} {request['id']}")
        return call("release_order", order_id=order["id"] if order else request["order_id"])

    def _judge(self, request: dict[str, Any], rule: dict[str, Any], roles: list[dict[str, Any]], approver: str) -> Any:
        """Returns ``(outcome, authority id)``; a generator because it calls tools."""
        if self.hard_limit_exceeded(request, rule):
            return "reject", None
        if any(_missing(request.get(f)) for f in rule["required_fields"]):
            return "hold", None
        if self.is_self(request, approver):
            return "escalate", None
        line = (yield call("get_person", person_id=approver))["result"]["reporting_line"]
        if self.line_breach(rule, request, line):
            return "escalate", None
        candidates = self.candidate_roles(roles, request, rule)
        ids = {r["id"] for r in candidates}
        holders_now: dict[str, list[str]] = {}
        for role in sorted(candidates, key=lambda r: r["id"]):
            for as_of in self.assignment_as_of(request):
                got = yield call("lookup_role_holders", role_id=role["id"], as_of=as_of)
                if as_of is None:
                    holders_now[role["id"]] = [h["person_id"] for h in got["result"]["holders"]]
                for h in got["result"]["holders"]:
                    if h["person_id"] == approver:
                        return "proceed", h["assignment_id"]
        got = yield call("lookup_delegations", person_id=approver, **self.delegation_query(request))
        for d in got["result"]["received"]:
            if d["role_id"] not in ids or not self.delegation_usable(d, request):
                continue
            if d["delegator_id"] in holders_now.get(d["role_id"], []):
                return "proceed", d["id"]
        return "escalate", None


# -- wrong policies -----------------------------------------------------------------------------
class IgnoresRoleScope(Oracle):
    """invalid_approver: takes any role the approver holds now or held when the request came in
    as authority, whatever request types it covers, and ignores the reporting line."""

    name = "wrong:invalid_approver"

    def candidate_roles(self, roles, request, rule):
        return [r for r in roles if r["amount_limit"] >= request["amount"]]

    def line_breach(self, rule, request, line):
        return False

    def assignment_as_of(self, request):
        return [None, request["submitted_at"]]


class ApprovesOwnRequest(Oracle):
    """self_approval: does not check that the approver is not the requester."""

    name = "wrong:self_approval"

    def is_self(self, request, approver_id):
        return False


class HoldsInsteadOfRouting(Oracle):
    """wrong_outcome: puts the request on hold whenever it should be routed or rejected."""

    name = "wrong:wrong_outcome"

    def route(self, outcome):
        return "hold" if outcome in ("escalate", "reject") else outcome


class ReleasesFirst(Oracle):
    """side_effect_before_decision: posts the ledger entry / releases the order before recording
    the approval."""

    name = "wrong:side_effect_before_decision"
    release_first = True


class ForgetsTheRule(Oracle):
    """basis_missing_or_wrong: cites only the authority (or nothing), never the rule."""

    name = "wrong:basis_missing_or_wrong"

    def basis(self, rule_id, authority_id):
        return [authority_id] if authority_id else []


class UsesAnyDelegation(Oracle):
    """expired_delegation_used: lists every delegation ever given to the approver and treats it
    as authority, whatever its window or revocation."""

    name = "wrong:expired_delegation_used"

    def delegation_query(self, request):
        return {"include_inactive": True}


class IgnoresLimits(Oracle):
    """over_limit: any role covering the type will do, whatever its level, amount limit or the
    delegation's cap; the hard limit is not checked."""

    name = "wrong:over_limit"

    def hard_limit_exceeded(self, request, rule):
        return False

    def candidate_roles(self, roles, request, rule):
        return [r for r in roles if request["type"] in r["request_types"]]

    def delegation_usable(self, d, request):
        return True


class AlsoParksNeighbour(Oracle):
    """forbidden_write: does the task, then also puts another pending request on hold."""

    name = "wrong:forbidden_write"

    def extra_calls(self, request_id, pending):
        others = [p for p in pending if p["id"] != request_id]
        if not others:
            return []
        return [call("record_decision", request_id=others[0]["id"], outcome="hold", basis_ids=[], note="parked")]


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "invalid_approver": IgnoresRoleScope,
    "self_approval": ApprovesOwnRequest,
    "wrong_outcome": HoldsInsteadOfRouting,
    "side_effect_before_decision": ReleasesFirst,
    "basis_missing_or_wrong": ForgetsTheRule,
    "expired_delegation_used": UsesAnyDelegation,
    "over_limit": IgnoresLimits,
    "forbidden_write": AlsoParksNeighbour,
}
