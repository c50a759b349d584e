"""The desk procedure's arithmetic on rows: the public rule helpers of the approvals domain.

Each helper computes one thing the rule document (``get_rules``' ``rules``) says, from rows as
the tools return them (a request, its band, roles, assignments, delegations): which band
applies, which required fields are empty, which authority rules an assignment or a delegation
fails, which entries give authority and which one an escalation cites.

Rule-sharing policy: these helpers are public. The generator, the grader (through
:mod:`backoffice.envs.approvals.authority`), the oracle (``training.domains.approvals.policies``) and the
catalog (``training.domains.approvals.catalog``) all use them, so each rule is written once. The
verdicts built on them stay independent: the grader's :func:`authority.assess` over the whole
snapshot is never called by the oracle or the catalog (they work from tool results alone), and
the grader never imports the oracle's or the catalog's decision code.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from backoffice.envs.approvals.tables import LEDGER_TYPES, ORDER_TYPES, is_missing, today

Row = Mapping[str, Any]

__all__ = [
    "ASSIGNMENT_CHECKS", "AUTHORITY_CHECKS", "DELEGATION_CHECKS", "LEDGER_TYPES", "ORDER_TYPES", "applicable_rule",
    "authorising", "blocking_choice", "covers_window", "failed_checks", "in_window", "is_ledger_type", "is_missing",
    "line_breach", "missing_fields", "near_misses", "revoked_by", "window_covers",
]

#: The authority rules (ids of the rule document), in the order the text gives them: the checks
#: one role assignment or one delegation passes to give the approver authority.
AUTHORITY_CHECKS = ("role_type", "role_level", "role_limit", "window", "revocation", "delegator_holds", "delegation_cap")
#: the checks that apply to a role assignment (it has no revocation, delegator or cap)
ASSIGNMENT_CHECKS = ("role_type", "role_level", "role_limit", "window")
DELEGATION_CHECKS = AUTHORITY_CHECKS


def applicable_rule(rules: Iterable[Row], amount: int) -> Row | None:
    """Rule ``band``: the band (of one request type) whose ``[min_amount, max_amount]`` holds
    ``amount``; above every band (never with an open top band), the top band. ``None`` if the
    type has none."""
    ordered = sorted(rules, key=lambda r: r["min_amount"])
    for rule in ordered:
        if rule["min_amount"] <= amount and (rule["max_amount"] is None or amount <= rule["max_amount"]):
            return rule
    if ordered and amount > ordered[-1]["min_amount"]:
        return ordered[-1]
    return None


def missing_fields(request: Row, rule: Row) -> list[str]:
    """Rule ``required_fields``: the fields the band requires that are empty on the request."""
    return [f for f in rule["required_fields"] if is_missing(request.get(f))]


def is_ledger_type(request_type: str) -> bool:
    """Rule ``release_after_proceed``: a proceed is released by ``post_ledger_entry`` (else by
    ``release_order``)."""
    return request_type in LEDGER_TYPES


def window_covers(valid_from: str | None, valid_to: str | None, day: str) -> bool:
    """Inclusive date window check (``None`` bounds are open)."""
    return (valid_from is None or valid_from <= day) and (valid_to is None or day <= valid_to)


def covers_window(row: Row, at: str) -> bool:
    """Rule ``window``: the row's date window covers the day of ``at``."""
    return window_covers(row["valid_from"], row.get("valid_to"), today(at))


def revoked_by(row: Row, at: str) -> bool:
    """Rule ``revocation``: the row was revoked at or before ``at``."""
    return row.get("revoked_at") is not None and row["revoked_at"] <= at


def in_window(row: Row, at: str) -> bool:
    """In its window on the day of ``at`` and not revoked at or before ``at`` (what
    ``lookup_delegations`` without ``include_inactive`` keeps)."""
    return covers_window(row, at) and not revoked_by(row, at)


def failed_checks(row: Row, role: Row | None, request: Row, band: Row, at: str, *, delegation: bool,
                  delegator_holds: bool = True, ignore: Collection[str] = ()) -> list[str]:
    """The authority rules (:data:`AUTHORITY_CHECKS` ids) that ``row`` fails for ``request``
    under ``band`` at ``at``: a role assignment (``delegation=False``: role_type, role_level,
    role_limit, window) or a delegation received (all seven; ``delegator_holds`` says whether
    its delegator holds the role today, which the caller looked up). An unknown role fails the
    three role rules. Rules in ``ignore`` are not checked (what a policy ignoring them sees)."""
    failed: list[str] = []
    amount = request["amount"]
    if role is None or request["type"] not in role["request_types"]:
        failed.append("role_type")
    if role is None or role["level"] < band["required_level"]:
        failed.append("role_level")
    if role is None or role["amount_limit"] < amount:
        failed.append("role_limit")
    if not covers_window(row, at):
        failed.append("window")
    if delegation:
        if revoked_by(row, at):
            failed.append("revocation")
        if not delegator_holds:
            failed.append("delegator_holds")
        if row.get("cap") is not None and row["cap"] < amount:
            failed.append("delegation_cap")
    return [c for c in failed if c not in ignore]


def authorising(failures: Mapping[str, Sequence[str]]) -> list[str]:
    """Rule ``escalation``: the ids (of ``{id: failed checks}``) that give authority (fail
    nothing), by id."""
    return sorted(i for i, f in failures.items() if not f)


def near_misses(failures: Mapping[str, Sequence[str]]) -> list[str]:
    """Rule ``blocking_fact``: the ids that fail exactly one authority rule, by id."""
    return sorted(i for i, f in failures.items() if len(f) == 1)


def line_breach(rule: Row, request: Row, reporting_line: Sequence[str]) -> bool:
    """Rule ``reporting_line``: the band forbids approvers in the requester's line and the
    approver is in it (the requester is among their managers)."""
    return bool(rule["sod_not_in_requester_line"]) and request["requester_id"] in reporting_line


def blocking_choice(is_requester: bool, in_line: bool, request: Row, near: Sequence[str],
                    approver_id: str | None) -> str | None:
    """Rule ``blocking_fact``: what an escalation cites beside the band: the request when the
    approver is its requester, else the requester when the reporting line stops them, else one
    near miss (the first by id), else the approver."""
    if is_requester:
        return request["id"]
    if in_line:
        return request["requester_id"]
    return near[0] if near else approver_id
