"""Scripted policies of the schedules domain: the oracle and one wrong policy per failure code.

The oracle reads the request, the policy, the rules document, the instalments, the mandate and
the reminders through tools (never the answer key), computes the new schedule with the
portfolio's rules and applies it in order: draft, instalments, approval (request, wait),
commit, supersede, cancel the replaced instalments, fix reminders and mandate, submit. Each
wrong policy overrides exactly one decision.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.schedules.tables import (
    approval_needed, due_date, last_period_of, new_periods, parts_meeting_minimum, reminder_send_on, split_amounts,
)
from backoffice.training.policies.base import Plan, ScriptedPolicy, call

FREQUENCY = {"to_monthly": "monthly", "to_quarterly": "quarterly", "split": "monthly", "deferral": "monthly"}


class Oracle(ScriptedPolicy):
    """Passes every released task using only tool results."""

    name = "oracle"

    # -- decisions a wrong policy may override ---------------------------------------------
    def outstanding(self, policy: dict[str, Any], instalments: list[dict[str, Any]], active_id: str) -> int:
        return policy["annual_premium"] - sum(r["amount"] for r in instalments if r["status"] == "paid")

    def amounts(self, total: int, parts: int, rules: dict[str, Any]) -> list[int]:
        return split_amounts(total, parts, rules["rounding"])

    def date_for(self, period: str, day: int, rules: dict[str, Any]) -> str:
        return due_date(period, day, rules["month_end"])

    def to_cancel(self, prior_rows: list[dict[str, Any]]) -> list[str]:
        return [r["id"] for r in prior_rows if r["status"] == "due"]

    request_approvals = True
    commit_first = False
    supersede_prior = True
    cancel_old_reminders = True
    update_mandate = True
    sweep_reminders_on_old_date = False

    # -- the plan ----------------------------------------------------------------------------
    def new_rows(self, req: dict[str, Any], policy: dict[str, Any], rules: dict[str, Any], due: list[dict[str, Any]], outstanding: int, day: int) -> list[dict[str, Any]]:
        """The new instalments (period, due_date, amount) in order."""
        if req["kind"] == "collection_day":
            return [{"period": r["period"], "due_date": self.date_for(r["period"], req["new_collection_day"], rules), "amount": r["amount"]} for r in due]
        periods = new_periods(req["kind"], req["start_period"], last_period_of(policy["term_start"]), req["parts"])
        periods = periods[: parts_meeting_minimum(outstanding, len(periods), int(rules["minimum_instalment_cents"]))]
        return [{"period": p, "due_date": self.date_for(p, day, rules), "amount": a}
                for p, a in zip(periods, self.amounts(outstanding, len(periods), rules))]

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        req = (yield call("get_request", request_id=brief["params"]["request_id"]))["result"]
        got = (yield call("get_policy", policy_id=req["policy_id"]))["result"]
        policy, versions = got["policy"], got["schedules"]
        doc = (yield call("get_rules"))["result"]
        rules, today = doc["rules"], doc["today"]
        instalments = (yield call("list_instalments", policy_id=policy["id"]))["result"]["instalments"]
        mandate = (yield call("get_instruction", instruction_id=policy["instruction_id"]))["result"]
        reminders = (yield call("list_reminders", policy_id=policy["id"], status="scheduled"))["result"]["reminders"]

        active = next(s for s in versions if s["status"] == "active")
        prior_rows = [r for r in instalments if r["schedule_id"] == active["id"]]
        due = sorted((r for r in prior_rows if r["status"] == "due"), key=lambda r: (r["due_date"], r["id"]))
        outstanding = self.outstanding(policy, instalments, active["id"])
        rows = self.new_rows(req, policy, rules, due, outstanding, mandate["collection_day"])
        kind = req["kind"]
        need = approval_needed(rules, kind, len(rows), rows[0]["due_date"], req["received_on"])

        frequency = FREQUENCY.get(kind, active["frequency"])
        draft = (yield call("create_draft_schedule", policy_id=policy["id"], frequency=frequency, change_type=kind))["result"]
        for row in rows:
            yield call("add_instalment", schedule_id=draft["id"], due_date=row["due_date"], amount=row["amount"], period=row["period"])
        if need is not None and self.commit_first:
            yield call("commit_schedule", schedule_id=draft["id"])
        if need is not None and self.request_approvals:
            yield call("request_approval", policy_id=policy["id"], role=need[1], reason=f"{need[0]} trigger of the portfolio rules", schedule_id=draft["id"])
            waited = yield call("wait")
            if waited["status"] == "ok":
                today = waited["result"]["today"]
        committed = yield call("commit_schedule", schedule_id=draft["id"])
        if committed["status"] != "ok":
            return
        new_first = committed["result"]["instalments"][0]
        if self.supersede_prior:
            yield call("supersede_schedule", schedule_id=active["id"])
            cancel = self.to_cancel(prior_rows)
            if cancel:
                yield call("cancel_instalments", instalment_ids=cancel)
        if self.sweep_reminders_on_old_date and due:
            # the mistake: every reminder due on the old date, whoever's policy it belongs to
            listed = (yield call("list_reminders", due_date=due[0]["due_date"], status="scheduled"))["result"]["reminders"]
            reminders = reminders + [r for r in listed if r["id"] not in {x["id"] for x in reminders}]
        if self.cancel_old_reminders:
            for rem in reminders:
                yield call("cancel_reminder", reminder_id=rem["id"])
        send_on = reminder_send_on(rules, new_first["due_date"], today)
        if send_on is not None:
            yield call("create_reminder", instalment_id=new_first["id"], send_on=send_on)
        if kind == "collection_day" and self.update_mandate:
            yield call("update_instruction", instruction_id=mandate["id"], collection_day=req["new_collection_day"])


# -- wrong policies: each commits exactly one mistake ---------------------------------------
class EvenSplitDropsRemainder(Oracle):
    """Splits evenly and drops the remainder cents (rounding_drift on every uneven split)."""

    def amounts(self, total: int, parts: int, rules: dict[str, Any]) -> list[int]:
        return [total // parts] * parts


class ActiveVersionPaidOnly(Oracle):
    """Counts only the payments of the active version (misses those of superseded versions)."""

    def outstanding(self, policy: dict[str, Any], instalments: list[dict[str, Any]], active_id: str) -> int:
        return policy["annual_premium"] - sum(r["amount"] for r in instalments if r["status"] == "paid" and r["schedule_id"] == active_id)


class LeavesPriorActive(Oracle):
    """Commits the new version but never supersedes the prior one nor cancels its due instalments."""

    supersede_prior = False


class CancelsPaidToo(Oracle):
    """Cancels every instalment of the prior version, paid ones included."""

    def to_cancel(self, prior_rows: list[dict[str, Any]]) -> list[str]:
        return [r["id"] for r in prior_rows if r["status"] in ("due", "paid")]


class IgnoresMonthEndRule(Oracle):
    """Always puts a short month's instalment on its last day, whatever the rules say."""

    def date_for(self, period: str, day: int, rules: dict[str, Any]) -> str:
        return due_date(period, day, "last_day_of_month")


class SkipsApproval(Oracle):
    """Never asks for approval (so the commit is refused and the change never lands)."""

    request_approvals = False


class CommitsBeforeApproval(Oracle):
    """Tries to commit before asking for approval, then does everything right."""

    commit_first = True


class SweepsRemindersOnOldDate(Oracle):
    """Also cancels every scheduled reminder due on the old first due date, whoever's it is."""

    sweep_reminders_on_old_date = True


class KeepsOldReminders(Oracle):
    """Adds the new reminder but leaves the replaced instalments' reminders scheduled."""

    cancel_old_reminders = False


class KeepsMandateDay(Oracle):
    """Re-dates the instalments but leaves the debit mandate on the old collection day."""

    update_mandate = False


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "rounding_drift": EvenSplitDropsRemainder,
    "outstanding_wrong": ActiveVersionPaidOnly,
    "prior_not_superseded": LeavesPriorActive,
    "paid_instalment_altered": CancelsPaidToo,
    "wrong_due_dates": IgnoresMonthEndRule,
    "approval_missing": SkipsApproval,
    "commit_before_approval": CommitsBeforeApproval,
    "collateral_change": SweepsRemindersOnOldDate,
    "reminder_mismatch": KeepsOldReminders,
    "mandate_not_updated": KeepsMandateDay,
}
