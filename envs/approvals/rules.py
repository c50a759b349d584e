"""The desk procedure's arithmetic on rows: the public rule helpers of the approvals domain.

Each helper computes one thing the rules document (``get_rules``' ``procedure``) says, from rows
as the tools return them (a request, its rules, roles, assignments, delegations): which band
applies, which required fields are empty, whether a row's window covers the clock, which roles
may approve, what a delegation's limit is, which fact an escalation cites first.

Rule-sharing policy: these helpers are public. The generator, the grader (through
:mod:`backoffice.envs.approvals.authority`), the oracle (``training.policies.approvals``) and the
catalog (``training.catalog.approvals``) all use them, so each rule is written once. The
verdicts built on them stay independent: the grader's :func:`authority.assess` over the whole
snapshot is never called by the oracle or the catalog (they work from tool results alone), and
the grader never imports the oracle's or the catalog's decision code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backoffice.envs.approvals.tables import LEDGER_TYPES, ORDER_TYPES, is_missing, today

Row = Mapping[str, Any]

__all__ = [
    "LEDGER_TYPES", "ORDER_TYPES", "applicable_rule", "blocking_fact", "candidate_roles", "delegated_limit",
    "in_window", "is_ledger_type", "is_missing", "line_breach", "missing_fields", "role_sufficient", "window_covers",
]


def applicable_rule(rules: Iterable[Row], amount: int) -> Row | None:
    """Step 1: the rule (of one request type) whose band holds ``amount``; above every band,
    the top band (its hard limit then decides). ``None`` if there is none."""
    ordered = sorted(rules, key=lambda r: r["min_amount"])
    for rule in ordered:
        if rule["min_amount"] <= amount and (rule["max_amount"] is None or amount <= rule["max_amount"]):
            return rule
    if ordered and amount > ordered[-1]["min_amount"]:
        return ordered[-1]
    return None


def missing_fields(request: Row, rule: Row) -> list[str]:
    """Step 5: the fields the rule requires that are empty on the request (``hold``)."""
    return [f for f in rule["required_fields"] if is_missing(request.get(f))]


def is_ledger_type(request_type: str) -> bool:
    """Step 6: a proceed is released by ``post_ledger_entry`` (else by ``release_order``)."""
    return request_type in LEDGER_TYPES


def window_covers(valid_from: str | None, valid_to: str | None, day: str) -> bool:
    """Inclusive date window check (``None`` bounds are open)."""
    return (valid_from is None or valid_from <= day) and (valid_to is None or day <= valid_to)


def in_window(row: Row, at: str) -> bool:
    """Step 2: an assignment or delegation whose window covers the day of ``at`` and that is not
    revoked at or before ``at`` (rows without ``revoked_at`` are never revoked)."""
    if not window_covers(row["valid_from"], row.get("valid_to"), today(at)):
        return False
    return row.get("revoked_at") is None or row["revoked_at"] > at


def role_sufficient(role: Row, request_type: str, level: int) -> bool:
    """Step 2: the role covers the request type at the rule's required level or above."""
    return request_type in role["request_types"] and role["level"] >= level


def candidate_roles(roles: Iterable[Row], request_type: str, amount: int, level: int) -> list[Row]:
    """Step 2: the roles that may approve the request (cover the type, level and amount limit
    enough), by id: the roles whose holders or delegates may decide, and escalation targets."""
    return sorted(
        (r for r in roles if role_sufficient(r, request_type, level) and r["amount_limit"] >= amount),
        key=lambda r: r["id"],
    )


def delegated_limit(role: Row, delegation: Row) -> int:
    """Step 2: what a delegate may approve under a delegation: the role's limit, capped."""
    cap = delegation["cap"]
    return role["amount_limit"] if cap is None else min(role["amount_limit"], cap)


def line_breach(rule: Row, request: Row, reporting_line: Sequence[str]) -> bool:
    """Step 3: the rule forbids approvers in the requester's line and the approver is in it."""
    return bool(rule["sod_not_in_requester_line"]) and request["requester_id"] in reporting_line


def blocking_fact(inactive: Sequence[str], short: Sequence[str], own_rows: Sequence[str],
                  approver_id: str | None) -> str | None:
    """Step 4 (authority): what an escalation cites when the approver holds no authority: their
    delegation not in effect, else their assignment or delegation in effect that falls short,
    else any of their assignments and delegations, else the approver."""
    last_resort: list[str | None] = [approver_id]
    return (list(inactive) or list(short) or list(own_rows) or last_resort)[0]
