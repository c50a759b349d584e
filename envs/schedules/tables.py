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
``rules``         one row ``RULES``: the portfolio's parameters (rounding, month_end,
                  minimum_instalment_cents, reminder_lead_days, late_reminder, approval_order,
                  deferral_needs_approval, max_instalments_without_approval, min_notice_days,
                  approval_role_<trigger>); get_rules shows them as the one rule-document shape
                  (:func:`rule_entries`, :func:`rule_tables`, texts in :data:`RULE_TEXT`).
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

#: the ids of the rule document's entries, in the order get_rules lists them (= ``DOMAIN.rules``)
RULE_IDS = (
    "outstanding", "rounding", "month_end", "minimum_instalment", "reminder_lead_time", "late_reminder",
    "approval_order", "approval_deferral", "approval_instalment_count", "approval_short_notice",
)
#: the rules row's field each entry's ``value`` shows (``outstanding`` has none: it is a definition)
RULE_FIELD = {
    "rounding": "rounding", "month_end": "month_end", "minimum_instalment": "minimum_instalment_cents",
    "reminder_lead_time": "reminder_lead_days", "late_reminder": "late_reminder", "approval_order": "approval_order",
    "approval_deferral": "deferral_needs_approval", "approval_instalment_count": "max_instalments_without_approval",
    "approval_short_notice": "min_notice_days",
}
RULE_TITLE = {
    "outstanding": "Outstanding premium",
    "rounding": "Remainder cents",
    "month_end": "Collection days past the month's end",
    "minimum_instalment": "Minimum instalment (cents)",
    "reminder_lead_time": "Payment reminder lead time (days)",
    "late_reminder": "Reminder whose send date has passed",
    "approval_order": "Order of the approval triggers",
    "approval_deferral": "Approval trigger: deferral",
    "approval_instalment_count": "Approval trigger: instalment count",
    "approval_short_notice": "Approval trigger: short notice (days)",
}
RULE_TEXT = {
    "outstanding": "The outstanding premium, the amount the new schedule collects, is the annual premium minus every "
                   "instalment already paid on the policy, in any schedule version (a superseded version's payments "
                   "count too). Paid instalments are never changed or cancelled.",
    "rounding": "Split the outstanding premium evenly in whole cents: every instalment gets floor(outstanding / n); "
                "the remainder r cents go as `value` says. remainder_to_first: all r cents on the first instalment. "
                "remainder_to_last: all r cents on the last instalment. spread_from_first: one extra cent on each of "
                "the first r instalments. spread_from_last: one extra cent on each of the last r instalments. The "
                "instalments add up to the outstanding premium exactly.",
    "month_end": "An instalment is due on the collection day of its month. When the month is shorter than the "
                 "collection day, `value` says where it goes: last_day_of_month puts it on the month's last day; "
                 "first_day_of_next_month puts it on the 1st of the following month.",
    "minimum_instalment": "If an even split would give an instalment below `value` cents, use the largest number of "
                          "instalments (same first month, same spacing) for which floor(outstanding / n) still meets "
                          "the minimum.",
    "reminder_lead_time": "Cancel the scheduled reminders of the instalments being replaced and schedule one reminder "
                          "for the first instalment of the new schedule, `value` days before its due date.",
    "late_reminder": "If the reminder's send date (due date minus the lead time) is before today, `value` decides: "
                     "send_today schedules it for today; skip schedules none.",
    "approval_order": "Approval is required when any approval trigger applies. The triggers are checked in the order "
                      "`value` lists; the first that applies names the one approver role to ask (tables.approval_roles): "
                      "one approval request, granted (call wait for the decision), before the commit. Later triggers "
                      "that also apply need no approval of their own.",
    "approval_deferral": "Applies when `value` is true and the change postpones collection: the first instalment of "
                         "the new schedule falls due after the first instalment it replaces (the earliest instalment "
                         "still due on the active schedule), as a deferral, a later start or a later collection day does.",
    "approval_instalment_count": "Applies when the new schedule has more than `value` instalments.",
    "approval_short_notice": "Applies when the first instalment of the new schedule falls due fewer than `value` days "
                             "after the request was received.",
}
#: what each request kind asks for (the rule document's ``tables.request_kinds``)
KIND_TEXT = {
    "to_monthly": "one instalment a month from start_period to the last month of the policy year",
    "to_quarterly": "one instalment every three months from start_period while within the policy year",
    "split": "`parts` monthly instalments from start_period",
    "deferral": "a payment holiday of `pause_months` collections: nothing is collected before start_period, the month "
                "collections resume; monthly instalments run from start_period to the last month of the policy year",
    "collection_day": "the instalments still due keep their months (period) and amounts and move to new_collection_day; "
                      "the debit mandate's collection day changes too (every other kind keeps the mandate's day)",
}


def rule_entries(rules: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of a portfolio's rule document (one per :data:`RULE_IDS`), ``value`` from its rules row."""
    out = []
    for rid in RULE_IDS:
        entry: dict[str, Any] = {"id": rid, "title": RULE_TITLE[rid], "text": RULE_TEXT[rid]}
        if rid in RULE_FIELD:
            value = rules[RULE_FIELD[rid]]
            entry["value"] = list(value) if isinstance(value, (list, tuple)) else value
        out.append(entry)
    return out


def rule_tables(rules: Mapping[str, Any]) -> dict[str, Any]:
    """The reference data of a portfolio's rule document: the approver role of each trigger
    (``approval_roles``: ``{"trigger", "role"}`` entries in the roles' alphabetical order), what
    each request kind asks for, and the statuses of each table."""
    # listed in the roles' alphabetical order: where a trigger's role stands says nothing of it
    roles = sorted((rules[f"approval_role_{t}"], t) for t in APPROVAL_TRIGGERS)
    return {
        "approval_roles": [{"trigger": t, "role": role} for role, t in roles],
        "request_kinds": dict(KIND_TEXT),
        "statuses": {k: list(v) for k, v in STATUSES.items()},
    }


def rules_from_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The rules row (flat parameters) a rule document shows: each entry's ``value`` under its
    field, and the roles of ``tables.approval_roles``. What a reader of get_rules computes with."""
    out: dict[str, Any] = {}
    for entry in doc.get("rules", ()):
        field = RULE_FIELD.get(entry.get("id"))
        if field is not None and "value" in entry:
            out[field] = entry["value"]
    for entry in doc.get("tables", {}).get("approval_roles") or ():
        out[f"approval_role_{entry['trigger']}"] = entry["role"]
    return out


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
def applying_triggers(rules: Mapping[str, Any], n_instalments: int, first_due: str, received_on: str,
                      replaced_first_due: str | None) -> dict[str, bool]:
    """Whether each approval trigger applies to a new schedule of ``n_instalments`` whose first
    instalment is due on ``first_due``, for a request received on ``received_on``, replacing
    instalments the earliest of which was due on ``replaced_first_due`` (``None``: none)."""
    return {
        "deferral": bool(rules["deferral_needs_approval"]) and replaced_first_due is not None and first_due > replaced_first_due,
        "instalment_count": n_instalments > int(rules["max_instalments_without_approval"]),
        "short_notice": days_between(received_on, first_due) < int(rules["min_notice_days"]),
    }


def approval_needed(rules: Mapping[str, Any], n_instalments: int, first_due: str, received_on: str,
                    replaced_first_due: str | None) -> tuple[str, str] | None:
    """``(trigger, role)`` of the approval a new schedule needs (the first applying trigger in
    ``approval_order``), or ``None``."""
    applies = applying_triggers(rules, n_instalments, first_due, received_on, replaced_first_due)
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
