"""Grader of the schedules domain.

The task's answer key carries its own ``checks`` (row_equals on the new instalments' amounts
and due dates, status_is on the prior version (superseded), row_equals on the paid instalments
and on the scheduled reminders (due date, amount, send date; each must point at an instalment
the episode created), field_equals on the mandate's collection day, tool_called /
tool_not_called on the approval order, no_change outside the target account); the grader runs
them and adds computed checks over the whole trail:

- ``sch.total_is_outstanding`` (gate, the outstanding rule): what the customer will be charged
  (the new instalments and the prior ones left due) adds up to the outstanding premium, as the
  book does before any change: prior instalments left due beside new ones are
  ``prior_not_superseded``, a gap smaller than the instalment count ``rounding_drift``, a larger
  one ``outstanding_wrong``;
- ``sch.amounts`` and ``sch.due_dates`` judge what the customer will be charged: the new
  instalments, and no instalment of the prior version left due beside them (that fails both, as
  ``prior_not_superseded`` when the new rows are right);
- ``sch.approvals_exact`` (gate, ``unneeded_approval``): the episode asked for exactly the
  approvals the task needs: one, from the role of the first applying trigger, or none. An
  approval request when none is needed, to a second role, or repeated fails;
- ``sch.single_new_version`` (gate, ``extra_schedule``): at most one new schedule version (draft
  or committed) was created for the policy: a second draft or a second commit fails;
- ``sch.reminders_live`` (gate, ``reminder_on_cancelled``): no scheduled reminder of the policy
  points at an instalment that is not due (cancelled, paid, a draft, or gone) or quotes a due date
  or amount other than its instalment's.

:func:`finalize` adds the guardrail (``collateral_change``). Gates earn nothing when held and cap
the score when broken; the score is the share of work checks passed.

Rule sharing: the grader reads only the answer key, the episode and the engine's checks; it
imports nothing from the oracle (``training/domains/schedules/policies.py``) or the catalog, whose
decision code may share only the domain's public rule helpers in ``envs/schedules/tables.py``.

Failure codes (declared in ``backoffice.envs.schedules``): rounding_drift, outstanding_wrong, prior_not_superseded, paid_instalment_altered,
wrong_due_dates, approval_missing, commit_before_approval, collateral_change, reminder_mismatch,
mandate_not_updated, unneeded_approval, extra_schedule, reminder_on_cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from backoffice.envs.schedules import FAILURE_CODES, GUARDRAIL_CODE
from backoffice.graders.checks import result, run_checks
from backoffice.graders.diff import NO_CHANGES
from backoffice.graders.grade import finalize

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode

__all__ = ["FAILURE_CODES", "GUARDRAIL_CODE", "grade"]


def _created(ep: Episode, table: str, policy_id: str) -> list[Mapping[str, Any]]:
    """The live rows (read-only, not copies) of ``table`` the episode created for the policy, by id."""
    created = ep.diff.get(table, NO_CHANGES).get("created", ())
    current = ep.state.peek
    rows = [current(table, rid) for rid in sorted(created)]
    return [r for r in rows if r is not None and r.get("policy_id") == policy_id]


def _new_instalments(ep: Episode, policy_id: str) -> list[Mapping[str, Any]]:
    return [r for r in _created(ep, "instalments", policy_id) if r["status"] == "due"]


def _scheduled_reminders(ep: Episode, policy_id: str) -> list[Mapping[str, Any]]:
    """The scheduled reminders of the policy, by id: the policy's reminders through its index,
    filtered on status (a policy holds a handful, while the book's scheduled ones grow with it)."""
    return [r for r in ep.state.rows("reminders", policy_id=policy_id) if r.get("status") == "scheduled"]


def outstanding_check(ep: Episode, rows: list[Mapping[str, Any]], left: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Gate (the outstanding rule): what the customer will be charged, the new instalments
    (``rows``) and the prior ones still due (``left``), adds up to the outstanding premium. The
    book starts so (the prior version's due instalments are the outstanding premium), so doing
    nothing holds it; a change that charges another total breaks it: prior instalments left due
    beside the new ones (``prior_not_superseded``), remainder cents lost or invented (a gap
    smaller than the instalment count, ``rounding_drift``), a wrong outstanding premium
    (``outstanding_wrong``)."""
    exp = ep.key["expected"]
    total = sum(r["amount"] for r in rows) + sum(r["amount"] for r in left)
    gap = total - exp["outstanding"]
    ok = gap == 0
    if left and rows:
        code = "prior_not_superseded"
    elif rows and abs(gap) < max(len(rows), exp["count"]):
        code = "rounding_drift"
    else:
        code = "outstanding_wrong"
    detail = None if ok else {"expected": exp["outstanding"], "got": total, "instalments": len(rows),
                              "prior_still_due": len(left)}
    return result("sch.total_is_outstanding", "sum_equals", ok, code, detail, gate=True)


def _still_due(ep: Episode) -> list[Mapping[str, Any]]:
    """The prior version's instalments the episode left due (live rows)."""
    current = ep.state.peek
    return [row for rid in ep.key["expected"]["prior_due_ids"] if (row := current("instalments", rid)) is not None and row["status"] == "due"]


def still_due_failure(ep: Episode, checks: list[dict[str, Any]], rows: list[Mapping[str, Any]], left: list[Mapping[str, Any]]) -> None:
    """``sch.amounts`` and ``sch.due_dates`` judge the instalments the customer will be charged:
    the new ones (``rows``), and nothing else still due. An instalment of the prior version left
    due beside them (the customer charged twice) fails both, as ``prior_not_superseded`` when the
    new rows themselves are right; it stands in the check's ``got`` rows as one more row (so the
    end-state distance counts it from the start and falls when it is cancelled)."""
    exp = ep.key["expected"]
    if not left:
        return
    ordered = sorted(rows, key=lambda r: (r["seq"], r["id"]))
    for i, c in enumerate(checks):
        field = {"sch.amounts": "amount", "sch.due_dates": "due_date"}.get(c["id"])
        if field is None:
            continue
        got = [{"seq": r["seq"], field: r[field]} for r in ordered]
        got += [{"seq": r["seq"], field: r[field], "prior_still_due": r["id"]} for r in left]
        detail = {**(c["detail"] or {}), "expected": [{"seq": r["seq"], field: r[field]} for r in exp["instalments"]], "got": got,
                  "prior_still_due": [r["id"] for r in left]}
        checks[i] = {**c, "pass": False, "failure_code": c["failure_code"] if not c["pass"] else "prior_not_superseded",
                     "detail": detail}


def approvals_check(ep: Episode) -> dict[str, Any]:
    """Gate: the approval requests the episode made for the policy are exactly the needed one."""
    exp = ep.key["expected"]
    asked = [r["role"] for r in _created(ep, "approvals", exp["policy_id"])]
    want = exp["approval_role"]
    if want and want in asked:
        asked.remove(want)  # the one needed request; every other one is extra
    extra = sorted(asked)
    return result("sch.approvals_exact", "approvals_exact", not extra, "unneeded_approval",
                  {"unneeded": extra} if extra else None, gate=True)


def versions_check(ep: Episode) -> dict[str, Any]:
    """Gate: at most one new schedule version was created for the policy."""
    exp = ep.key["expected"]
    made = [r["id"] for r in _created(ep, "schedules", exp["policy_id"])]
    ok = len(made) <= 1
    return result("sch.single_new_version", "count_at_most", ok, "extra_schedule",
                  None if ok else {"created": made}, gate=True)


def live_reminders_check(ep: Episode, scheduled: list[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Gate: every scheduled reminder of the policy points at a due instalment, with its due date
    and amount (``scheduled``: the policy's scheduled reminders when the caller has them)."""
    exp = ep.key["expected"]
    if scheduled is None:
        scheduled = _scheduled_reminders(ep, exp["policy_id"])
    bad = []
    current = ep.state.peek
    for rem in scheduled:
        inst = current("instalments", rem["instalment_id"])
        if inst is None or inst["status"] != "due" or inst["due_date"] != rem["due_date"] or inst["amount"] != rem["amount"]:
            bad.append(rem["id"])
    return result("sch.reminders_live", "reminders_live", not bad, "reminder_on_cancelled",
                  {"stale_reminders": sorted(bad)} if bad else None, gate=True)


def _reminders_on_new_instalments(ep: Episode, checks: list[dict[str, Any]],
                                  scheduled: list[Mapping[str, Any]] | None = None) -> None:
    """``sch.reminders`` also needs each scheduled reminder to point at an instalment the episode
    created: an old reminder that happens to quote the new first due date and amount is not it
    (``scheduled``: the policy's scheduled reminders when the caller has them)."""
    exp = ep.key["expected"]
    created = set(ep.diff.get("instalments", NO_CHANGES).get("created", ()))
    for i, c in enumerate(checks):
        if c["id"] != "sch.reminders" or not c["pass"]:
            continue
        if scheduled is None:
            scheduled = _scheduled_reminders(ep, exp["policy_id"])
        old = sorted(r["id"] for r in scheduled if r["instalment_id"] not in created)
        if old:
            checks[i] = result(c["id"], c["kind"], False, "reminder_mismatch", {"not_on_new_instalments": old}, gate=c["gate"])


def grade(ep: Episode) -> dict[str, Any]:
    """Pure grade of one schedules episode (see the module docstring)."""
    exp = ep.key["expected"]
    checks = run_checks(ep.key["checks"], ep)
    scheduled = _scheduled_reminders(ep, exp["policy_id"])  # read once, for the two reminder checks
    _reminders_on_new_instalments(ep, checks, scheduled)
    new_rows = _new_instalments(ep, exp["policy_id"])
    left = _still_due(ep)
    still_due_failure(ep, checks, new_rows, left)
    checks.insert(2, outstanding_check(ep, new_rows, left))
    checks += [approvals_check(ep), versions_check(ep), live_reminders_check(ep, scheduled)]
    if ep.checks_only:
        return finalize(ep, checks, {}, guardrail_code=GUARDRAIL_CODE)
    fields = {
        "request_kind": exp["kind"],
        "approval_required": exp["approval_role"] is not None,
        "check_results": {c["id"]: c["pass"] for c in checks},
        "new_instalments": len(new_rows),
        "new_total": sum(r["amount"] for r in new_rows),
    }
    requests = waits = 0
    for r in ep.trace:
        tool = r["tool"]
        if tool == "request_approval":
            requests += r["result_status"] == "ok"
        elif tool == "wait":
            waits += r["result_status"] == "ok"
    metrics = {"approval_requests": requests, "waits": waits}
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
