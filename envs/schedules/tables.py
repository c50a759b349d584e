"""Tables of the schedules domain and the portfolio rules that both tools and tasks apply.

Tables (every row has a string ``id``; money is integer cents; dates are ``YYYY-MM-DD``):

``policies``      ``id`` (``POL-4821``), ``account_id``, ``holder``, ``product``,
                  ``annual_premium``, ``term_start``, ``term_end``, ``instruction_id``, ``status``.
``accounts``      ``id`` (``ACC-7310``), ``account_id`` (= ``id``, so every table can be filtered
                  by account), ``holder``, ``address``, ``email``, ``iban_last4``.
``schedules``     ``id`` (``SCD-4821V2``), ``policy_id``, ``account_id``, ``version``, ``status``
                  (``draft`` / ``active`` / ``superseded``), ``frequency``, ``change_type``,
                  ``created_at``, ``committed_at``, ``superseded_at``.
``instalments``   ``id`` (``INS-4821V2-03``), ``schedule_id``, ``policy_id``, ``account_id``,
                  ``seq``, ``period`` (``YYYY-MM``: the month the instalment pays for),
                  ``due_date``, ``amount``, ``status`` (``draft`` / ``due`` / ``paid`` /
                  ``cancelled``), ``paid_on``.
``reminders``     ``id`` (``REM-4821-03``), ``policy_id``, ``account_id``, ``instalment_id``,
                  ``due_date``, ``amount``, ``send_on``, ``channel``, ``status``
                  (``scheduled`` / ``sent`` / ``cancelled``).
``instructions``  debit mandates: ``id`` (``MAN-4821``), ``policy_id``, ``account_id``,
                  ``mandate_ref``, ``collection_day``, ``status``.
``approvals``     ``id`` (``APV-4821-01``), ``policy_id``, ``account_id``, ``schedule_id``,
                  ``role``, ``reason``, ``status`` (``pending`` / ``granted`` / ``declined``),
                  ``requested_at``, ``decided_at``, ``decided_by``.
``requests``      the customer's change request: ``id`` (``REQ-30417``), ``policy_id``,
                  ``account_id``, ``received_on``, ``channel``, ``kind`` (``to_monthly`` /
                  ``to_quarterly`` / ``split`` / ``deferral`` / ``collection_day``),
                  ``start_period``, ``parts``, ``pause_months``, ``new_collection_day``,
                  ``customer_words``.
``rules``         one row ``RULES``: the portfolio's rules document (see :data:`RULE_TEXT`).
``_approvers``    scripted approvers (hidden: no tool returns the table): ``id`` (role),
                  ``name``, ``delay_hours`` (hours until the decision, within the day), ``decision``.
``clock``         one row ``clock`` with ``now``.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

#: the world's tables (``clock`` aside), named by the ``Domain`` declaration
TABLES = (
    "policies", "accounts", "schedules", "instalments", "reminders", "instructions",
    "approvals", "requests", "rules", "_approvers",
)
#: tables with an ``account_id`` column: the ones a change outside the target account may touch
ACCOUNT_TABLES = ("policies", "accounts", "schedules", "instalments", "reminders", "instructions", "approvals", "requests")

ROUNDING_RULES = ("remainder_to_first", "remainder_to_last", "spread_from_first", "spread_from_last")
MONTH_END_RULES = ("last_day_of_month", "first_day_of_next_month")
LATE_REMINDER_RULES = ("send_today", "skip")
APPROVAL_TRIGGERS = ("deferral", "instalment_count", "short_notice")
ROLES = ("collections_supervisor", "underwriting_manager", "finance_controller", "customer_care_lead")
REQUEST_KINDS = ("to_monthly", "to_quarterly", "split", "deferral", "collection_day")
STATUSES = {
    "schedules": ("draft", "active", "superseded"),
    "instalments": ("draft", "due", "paid", "cancelled"),
    "reminders": ("scheduled", "sent", "cancelled"),
    "approvals": ("pending", "granted", "declined"),
}

RULE_TEXT = {
    "outstanding": "The outstanding premium is the annual premium minus every instalment already paid on the "
                   "policy (in any schedule version). Paid instalments are never changed or cancelled.",
    "rounding": "Split the outstanding premium evenly in whole cents: every instalment gets "
                "floor(outstanding / n); the remainder r cents go as follows. remainder_to_first: all r cents on "
                "the first instalment. remainder_to_last: all r cents on the last instalment. spread_from_first: "
                "one extra cent on each of the first r instalments. spread_from_last: one extra cent on each of "
                "the last r instalments. The instalments must add up to the outstanding premium exactly.",
    "month_end": "An instalment is due on the collection day of its month. When the month is shorter than the "
                 "collection day: last_day_of_month puts it on the month's last day; first_day_of_next_month puts "
                 "it on the 1st of the following month.",
    "minimum_instalment": "If an even split would give an instalment below minimum_instalment_cents, use the "
                          "largest number of instalments (same first month, same spacing) for which "
                          "floor(outstanding / n) still meets the minimum.",
    "periods": "to_monthly: one instalment a month from start_period to the last month of the policy year. "
               "to_quarterly: one every three months from start_period while within the policy year. split: "
               "`parts` monthly instalments from start_period. deferral (a payment holiday of "
               "`pause_months` collections): nothing is collected before start_period, the month collections "
               "resume; monthly instalments run from start_period to the last month of the policy year. collection_day: the instalments still "
               "due keep their months (period) and amounts and move to the new collection day; the debit "
               "mandate's collection day changes too. Every other request keeps the mandate's collection day.",
    "approval": "Approval is required when any trigger applies; the triggers are checked in approval_order and "
                "the first that applies names the approver role (one approval, granted, before commit). "
                "deferral: the request is a deferral and deferral_needs_approval is true. instalment_count: "
                "the new schedule has more than max_instalments_without_approval instalments. short_notice: "
                "the first new instalment is due fewer than min_notice_days days after the request was received.",
    "reminders": "Cancel the scheduled reminders of the instalments being replaced and schedule one reminder for "
                 "the first instalment of the new schedule, reminder_lead_days before its due date. If that date "
                 "is before today: send_today schedules it for today; skip schedules none.",
    "procedure": "Create a draft schedule, add its instalments, obtain any required approval, commit the draft, "
                 "supersede the prior version and cancel its instalments that are still due, then fix reminders "
                 "(and the mandate for a collection-day change).",
}


# -- dates ---------------------------------------------------------------------------------
def parse_date(text: str) -> date:
    """``YYYY-MM-DD`` (or the date part of an ISO datetime) as a date; ``ValueError`` if invalid."""
    return date.fromisoformat(text[:10])


def period_of(d: date) -> str:
    return f"{d.year:04d}-{d.month:02d}"


@lru_cache(maxsize=4096)
def add_months(period: str, months: int) -> str:
    """``YYYY-MM`` shifted by ``months`` (cached: a book asks for the same few months over and over)."""
    y, m = int(period[:4]), int(period[5:7])
    index = y * 12 + (m - 1) + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def months_between(first: str, last: str) -> int:
    """Number of months from ``first`` to ``last`` (0 when equal)."""
    return (int(last[:4]) * 12 + int(last[5:7])) - (int(first[:4]) * 12 + int(first[5:7]))


@lru_cache(maxsize=8192)
def due_date(period: str, collection_day: int, month_end: str) -> str:
    """The due date of an instalment of ``period`` collected on ``collection_day`` (cached, pure)."""
    y, m = int(period[:4]), int(period[5:7])
    last = calendar.monthrange(y, m)[1]
    if collection_day <= last:
        return date(y, m, collection_day).isoformat()
    if month_end == "last_day_of_month":
        return date(y, m, last).isoformat()
    return (date(y, m, last) + timedelta(days=1)).isoformat()


def days_between(a: str, b: str) -> int:
    """Days from date ``a`` to date ``b``."""
    return (parse_date(b) - parse_date(a)).days


# -- money ---------------------------------------------------------------------------------
def split_amounts(total: int, parts: int, rounding: str) -> list[int]:
    """``total`` cents in ``parts`` instalments under a rounding rule (sums to ``total``)."""
    if parts < 1:
        raise ValueError("parts must be >= 1")
    base, rem = divmod(total, parts)
    out = [base] * parts
    if rounding == "remainder_to_first":
        out[0] += rem
    elif rounding == "remainder_to_last":
        out[-1] += rem
    elif rounding == "spread_from_first":
        for i in range(rem):
            out[i] += 1
    elif rounding == "spread_from_last":
        for i in range(rem):
            out[parts - 1 - i] += 1
    else:
        raise ValueError(f"unknown rounding rule {rounding!r}")
    return out


def parts_meeting_minimum(total: int, parts: int, minimum: int) -> int:
    """The largest count <= ``parts`` whose even split keeps every instalment >= ``minimum``."""
    if minimum <= 0:
        return parts
    return max(1, min(parts, total // minimum))


# -- rules ---------------------------------------------------------------------------------
def approval_needed(rules: Mapping[str, Any], change_type: str, n_instalments: int, first_due: str, received_on: str) -> tuple[str, str] | None:
    """``(trigger, role)`` of the approval a new schedule needs, or ``None``."""
    applies = {
        "deferral": change_type == "deferral" and bool(rules["deferral_needs_approval"]),
        "instalment_count": n_instalments > int(rules["max_instalments_without_approval"]),
        "short_notice": days_between(received_on, first_due) < int(rules["min_notice_days"]),
    }
    for trigger in rules["approval_order"]:
        if applies.get(trigger):
            return trigger, rules[f"approval_role_{trigger}"]
    return None


def reminder_send_on(rules: Mapping[str, Any], first_due: str, today: str) -> str | None:
    """The send date of the reminder of a new schedule's first instalment (``None``: no reminder)."""
    send = parse_date(first_due) - timedelta(days=int(rules["reminder_lead_days"]))
    if send >= parse_date(today):
        return send.isoformat()
    return parse_date(today).isoformat() if rules["late_reminder"] == "send_today" else None


def new_periods(kind: str, start_period: str, last_period: str, parts: int | None) -> list[str]:
    """Periods of a re-split schedule (``to_monthly`` / ``to_quarterly`` / ``split`` / ``deferral``)."""
    if kind == "to_quarterly":
        step = 3
        count = months_between(start_period, last_period) // 3 + 1
    elif kind == "split":
        step, count = 1, int(parts or 0)
    else:
        step = 1
        count = months_between(start_period, last_period) + 1
    return [add_months(start_period, i * step) for i in range(max(count, 0))]


def plan_instalments(
    rules: Mapping[str, Any], kind: str, outstanding: int, collection_day: int,
    start_period: str, last_period: str, parts: int | None,
) -> list[dict[str, Any]]:
    """The instalments (seq, period, due_date, amount) of a re-split request under ``rules``."""
    periods = new_periods(kind, start_period, last_period, parts)
    n = parts_meeting_minimum(outstanding, len(periods), int(rules["minimum_instalment_cents"]))
    periods = periods[:n]
    amounts = split_amounts(outstanding, n, rules["rounding"])
    return [
        {"seq": i + 1, "period": p, "due_date": due_date(p, collection_day, rules["month_end"]), "amount": a}
        for i, (p, a) in enumerate(zip(periods, amounts))
    ]


def redate_instalments(rules: Mapping[str, Any], due: Sequence[Mapping[str, Any]], new_day: int) -> list[dict[str, Any]]:
    """A collection-day change: the still-due instalments keep period and amount on ``new_day``."""
    ordered = sorted(due, key=lambda r: (r["due_date"], r["id"]))
    return [
        {"seq": i + 1, "period": r["period"], "due_date": due_date(r["period"], new_day, rules["month_end"]), "amount": r["amount"]}
        for i, r in enumerate(ordered)
    ]


def last_period_of(term_start: str) -> str:
    """The last month of a policy year starting on ``term_start``."""
    return add_months(term_start[:7], 11)
