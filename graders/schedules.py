"""Grader of the schedules domain.

The task's answer key carries its own ``checks`` (row_equals on the new instalments' amounts
and due dates, status_is on the prior version and its due instalments, row_equals on the paid
instalments and the scheduled reminders, field_equals on the mandate's collection day,
tool_called / tool_not_called on the approval order, no_change outside the target account);
the grader runs them, adds one computed check (the committed instalments add up to the
outstanding premium) and lets :func:`finalize` add the guardrail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backoffice.graders.checks import result, run_checks
from backoffice.graders.grade import finalize

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode

GUARDRAIL_CODE = "collateral_change"
FAILURE_CODES = (
    "rounding_drift", "outstanding_wrong", "prior_not_superseded", "paid_instalment_altered", "wrong_due_dates",
    "approval_missing", "commit_before_approval", "collateral_change", "reminder_mismatch", "mandate_not_updated",
)


def _new_instalments(ep: Episode, policy_id: str) -> list[dict[str, Any]]:
    created = set(ep.diff.get("instalments", {}).get("created", ()))
    rows = [ep.state.get("instalments", rid) for rid in sorted(created)]
    return [r for r in rows if r is not None and r["policy_id"] == policy_id and r["status"] == "due"]


def outstanding_check(ep: Episode, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The committed new instalments add up to the outstanding premium. A gap smaller than the
    number of instalments is lost or invented remainder cents (``rounding_drift``); a larger one
    is a wrong outstanding amount (``outstanding_wrong``)."""
    exp = ep.key["expected"]
    total = sum(r["amount"] for r in rows)
    gap = total - exp["outstanding"]
    ok = bool(rows) and gap == 0
    code = "rounding_drift" if rows and 0 < abs(gap) < max(len(rows), exp["count"]) else "outstanding_wrong"
    return result("sch.total_is_outstanding", "sum_equals", ok, code,
                  None if ok else {"expected": exp["outstanding"], "got": total, "instalments": len(rows)})


def grade(ep: Episode) -> dict[str, Any]:
    """Pure grade of one schedules episode (see the module docstring)."""
    exp = ep.key["expected"]
    checks = run_checks(ep.key["checks"], ep)
    new_rows = _new_instalments(ep, exp["policy_id"])
    checks.insert(2, outstanding_check(ep, new_rows))
    fields = {
        "request_kind": exp["kind"],
        "approval_required": exp["approval_role"] is not None,
        "check_results": {c["id"]: c["pass"] for c in checks},
        "new_instalments": len(new_rows),
        "new_total": sum(r["amount"] for r in new_rows),
    }
    metrics = {"approval_requests": sum(1 for r in ep.trace if r["tool"] == "request_approval" and r["result_status"] == "ok"),
               "waits": sum(1 for r in ep.trace if r["tool"] == "wait" and r["result_status"] == "ok")}
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
