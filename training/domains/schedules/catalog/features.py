"""Every feature of every schedules tier, each observed fact, comparison or conclusion one
function of the desk (:class:`~.desk.ScheduleDesk`), registered under each name a tier shows it by.

Sections follow the episode: the reads, the request, the policy and its versions, the instalment
listing, the rules, the draft, the approvals, the commit and what follows it; then the
conclusions tier's conclusions (the plan, the first applying trigger, what is needed or complete)
and the raw tier's slots. Scales: the conclusions and facts tiers show counts / 12 and amounts
/ 500000 or / 2^19; the raw tier shows every value exactly decodable (amounts / 2^19, dates as
days since 2024-01-01 / 2048, months since 2024-01 / 128, small counts / 32, the rules' day
counts / 64). A fact the raw tier shows on its own scale under a name another tier uses is
registered as ``<name>/32`` (:mod:`.tiers` shows it under the tier's name).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import lru_cache
from typing import Any

from backoffice.envs.schedules.tables import (
    LATE_REMINDER_RULES,
    MONTH_END_RULES,
    ROLES,
    ROUNDING_RULES,
    days_between,
    months_between,
    parse_date,
)
from backoffice.training.catalog.base import scale
from backoffice.training.catalog.features import Feature, Features
from backoffice.training.domains.schedules.catalog.desk import (
    COUNTS,
    INSTALMENT_SLOTS,
    KINDS,
    MINIMUM_SCALE,
    PRIOR_FREQUENCIES,
    REMINDER_SLOTS,
    TRIGGERS,
    VERSION_SLOTS,
    ScheduleDesk,
    amount,
    day_count,
    days,
    month,
    month_days,
    ratio,
    settles,
    small,
    valid_period,
)

FEATURES: Features[ScheduleDesk] = Features()

INSTALMENT_STATUSES = ("due", "paid", "cancelled")
VERSION_STATUSES = ("active", "superseded")
APPROVAL_STATUSES = ("pending", "granted", "declined")

Producer = Callable[..., Any]


def alias(name: str, doc: str, producer: Producer, slot: int = -1) -> None:
    """Register ``producer`` (its value, or value ``slot`` of its block) under a second name:
    the same fact, shown by another tier under the name its models were trained with."""
    FEATURES.add(Feature(name, doc, producer, (), slot))


# -- the reads ------------------------------------------------------------------------------------------
@FEATURES.block([
    ("request_read", "1 once get_request answered ok"),
    ("policy_read", "1 once get_policy answered ok"),
    ("rules_read", "1 once get_rules answered ok"),
    ("instalments_listed", "1 once list_instalments answered ok with its last page"),
    ("mandate_read", "1 once get_instruction answered ok"),
    ("reminders_listed", "1 once list_reminders (policy, scheduled) answered ok with its last page"),
])
def reads_answered(desk: ScheduleDesk) -> tuple[bool, ...]:
    return desk.read_known()


alias("old_reminders_listed", "1 once list_reminders (policy, scheduled) answered ok, its last page read", reads_answered, 5)


@FEATURES.feature("plan_facts_read", "1 once request, policy, rules, instalments and mandate have all been read (the plan is computable)")
@settles
def plan_facts_read(desk: ScheduleDesk) -> float:
    return float(desk.facts_read())


# -- the request -----------------------------------------------------------------------------------------
@settles
def request_kind(desk: ScheduleDesk) -> list[float]:
    return [float((desk.request or {}).get("kind") == k) for k in KINDS]


FEATURES.block([(f"kind_{k}", f"1 if the request's kind (get_request) is {k}") for k in KINDS])(request_kind)
FEATURES.block([(f"request_kind_{k}", f"1 if the request's kind (get_request) is {k}") for k in KINDS])(request_kind)


@FEATURES.feature("request_parts", "the request's parts (split), / 12")
@settles
def request_parts(desk: ScheduleDesk) -> float:
    return ratio((desk.request or {}).get("parts"), 12)


@FEATURES.feature("request_parts/32", "the request's parts, / 32")
@settles
def request_parts_exact(desk: ScheduleDesk) -> float:
    return small((desk.request or {}).get("parts"))


@FEATURES.feature("request_pause_months", "the request's pause_months (deferral), / 12")
@settles
def request_pause_months(desk: ScheduleDesk) -> float:
    return ratio((desk.request or {}).get("pause_months"), 12)


@FEATURES.feature("request_pause_months/32", "the request's pause_months, / 32")
@settles
def request_pause_months_exact(desk: ScheduleDesk) -> float:
    return small((desk.request or {}).get("pause_months"))


@FEATURES.feature("request_names_collection_day", "1 if the request names a new_collection_day")
@settles
def request_names_collection_day(desk: ScheduleDesk) -> float:
    return float((desk.request or {}).get("new_collection_day") is not None)


@FEATURES.feature("request_new_collection_day", "the request's new_collection_day, / 32")
@settles
def request_new_collection_day(desk: ScheduleDesk) -> float:
    return small((desk.request or {}).get("new_collection_day"))


@FEATURES.feature("request_day_differs_from_mandate", "1 if the request's new_collection_day differs from the mandate's day as observed")
@settles
def request_day_differs_from_mandate(desk: ScheduleDesk) -> float:
    new_day = (desk.request or {}).get("new_collection_day")
    return float(new_day is not None and desk.mandate_day is not None and int(new_day) != int(desk.mandate_day))


@FEATURES.feature("request_start_period", "the request's start_period, months since 2024-01 / 128")
@settles
def request_start_period(desk: ScheduleDesk) -> float:
    return month((desk.request or {}).get("start_period"))


@FEATURES.feature("request_received_on", "the request's received_on, days since 2024-01-01 / 2048")
@settles
def request_received_on(desk: ScheduleDesk) -> float:
    return days((desk.request or {}).get("received_on"))


@FEATURES.feature("months_left_from_start", "months from the request's start_period to the policy year's last month "
                  "(term_start + 11), both included, / 12")
@settles
def months_left_from_start(desk: ScheduleDesk) -> float:
    start, year_end = (desk.request or {}).get("start_period"), desk.policy_year_end()
    if not (valid_period(start) and year_end):
        return 0.0
    return ratio(months_between(str(start), str(year_end)) + 1, 12)


# -- the policy and its versions ------------------------------------------------------------------------
@FEATURES.feature("premium", "the policy's annual premium (get_policy), / 2^19 cents")
@settles
def premium(desk: ScheduleDesk) -> float:
    return amount((desk.policy or {}).get("annual_premium"))


alias("policy_premium", "the annual premium, / 2^19 cents", premium)


@FEATURES.feature("policy_term_start", "the policy's term_start month, months since 2024-01 / 128")
@settles
def policy_term_start(desk: ScheduleDesk) -> float:
    return month(str((desk.policy or {}).get("term_start") or "")[:7] or None)


@FEATURES.block([(f"prior_frequency_{f}", f"1 if the active version (get_policy) is {f}") for f in PRIOR_FREQUENCIES])
@settles
def prior_frequency(desk: ScheduleDesk) -> list[float]:
    active = desk.active()
    return [float(active is not None and active.get("frequency") == f) for f in PRIOR_FREQUENCIES]


@FEATURES.block_family([
    (f"version[{{i}}]_{name}", doc)
    for name, doc in (
        ("present", "1 if get_policy listed a version slot {i} (slots: the last 2 listed versions that are not drafts)"),
        *((f"status_{s}", f"1 if version slot {{i}}'s status (as last observed) is {s}") for s in VERSION_STATUSES),
        *((f"frequency_{q}", f"1 if version slot {{i}}'s frequency is {q}") for q in PRIOR_FREQUENCIES),
    )
], VERSION_SLOTS)
def version_slot(desk: ScheduleDesk, v: int) -> list[float]:
    return _version_slots(desk)[v]


@settles
def _version_slots(desk: ScheduleDesk) -> list[list[float]]:
    out = []
    for v in range(VERSION_SLOTS):
        s = desk.version_slots[v] if v < len(desk.version_slots) else None
        status = desk.version_status.get(s["id"]) if s else None
        out.append([float(s is not None), *(float(status == x) for x in VERSION_STATUSES),
                    *(float(s is not None and s.get("frequency") == q) for q in PRIOR_FREQUENCIES)])
    return out


# -- the instalment listing ------------------------------------------------------------------------------
@FEATURES.feature("paid_count", "paid instalments of the policy (list_instalments), / 12")
@settles
def paid_count(desk: ScheduleDesk) -> float:
    return ratio(len(desk.paid_rows()), 12)


alias("paid_instalments", "listed instalments with status paid, / 12", paid_count)


@FEATURES.feature("paid_total", "the paid instalments' total, / 2^19 cents")
@settles
def paid_total(desk: ScheduleDesk) -> float:
    return amount(sum(int(r["amount"]) for r in desk.paid_rows()))


@FEATURES.feature("due_instalments", "listed instalments with status due, / 12")
@settles
def due_instalments(desk: ScheduleDesk) -> float:
    return ratio(len(desk.listed_due), 12)


@FEATURES.feature("due_total", "their amounts' total D, / 2^19 cents")
@settles
def due_total(desk: ScheduleDesk) -> float:
    return amount(desk.due_total)


@FEATURES.feature("prior_due_count", "instalments still due in the active version (get_policy + list_instalments), / 12")
@settles
def prior_due_count(desk: ScheduleDesk) -> float:
    return ratio(len(desk.prior_due_listed()), 12)


@FEATURES.block([(f"share_meets_minimum[{k}]", f"1 if floor(due_total / {k}) >= minimum_instalment_cents") for k in COUNTS])
@settles
def share_meets_minimum(desk: ScheduleDesk) -> list[float]:
    total, minimum = desk.due_total, int(desk.rule("minimum_instalment_cents", 0) or 0)
    return [float(total is not None and desk.rules is not None and total // k >= minimum) for k in COUNTS]


# -- the rules --------------------------------------------------------------------------------------------
@settles
def rounding(desk: ScheduleDesk) -> list[float]:
    return [float(desk.rule("rounding") == r) for r in ROUNDING_RULES]


@settles
def month_end(desk: ScheduleDesk) -> list[float]:
    return [float(desk.rule("month_end") == m) for m in MONTH_END_RULES]


@settles
def late_reminder(desk: ScheduleDesk) -> list[float]:
    return [float(desk.rule("late_reminder") == x) for x in LATE_REMINDER_RULES]


@settles
def approval_order(desk: ScheduleDesk) -> list[float]:
    order = list(desk.rule("approval_order") or ())
    return [float(t in order and order.index(t) == p - 1) for t in TRIGGERS for p in (1, 2, 3)]


for prefix in ("", "rules_"):
    FEATURES.block([(f"{prefix}rounding_{r}", f"1 if the rules' rounding is {r}") for r in ROUNDING_RULES])(rounding)
    FEATURES.block([(f"{prefix}month_end_{m}", f"1 if the rules' month_end is {m}") for m in MONTH_END_RULES])(month_end)
    FEATURES.block([(f"{prefix}late_reminder_{x}", f"1 if the rules' late_reminder is {x}") for x in LATE_REMINDER_RULES])(late_reminder)
FEATURES.block([(f"approval_order[{t}]={p}", f"1 if {t} is trigger number {p} of the rules' approval_order")
                for t in TRIGGERS for p in (1, 2, 3)])(approval_order)
FEATURES.block([(f"rules_order[{t}]={p}", f"1 if {t} is number {p} of approval_order") for t in TRIGGERS for p in (1, 2, 3)])(approval_order)
alias("late_rule_send_today", "1 if the rules' late_reminder is send_today (0 if skip or not read)", late_reminder, 0)


@FEATURES.block([(f"rules_role[{t}]={r}", f"1 if approval_role_{t} is {r}") for t in TRIGGERS for r in ROLES])
@settles
def approval_roles(desk: ScheduleDesk) -> list[float]:
    return [float(desk.role(t) == r) for t in TRIGGERS for r in ROLES]


@FEATURES.feature("minimum_instalment", "the rules' minimum_instalment_cents, / 2^16")
@settles
def minimum_instalment(desk: ScheduleDesk) -> float:
    return min(1.0, int(desk.rule("minimum_instalment_cents", 0) or 0) / MINIMUM_SCALE)


alias("rules_minimum_instalment", "minimum_instalment_cents, / 2^16", minimum_instalment)


@FEATURES.feature("reminder_lead_days", "the rules' reminder_lead_days, / 64")
@settles
def reminder_lead_days(desk: ScheduleDesk) -> float:
    return day_count(desk.rule("reminder_lead_days"))


alias("rules_reminder_lead_days", "reminder_lead_days, / 64", reminder_lead_days)


@FEATURES.feature("min_notice_days", "the rules' min_notice_days, / 64")
@settles
def min_notice_days(desk: ScheduleDesk) -> float:
    return day_count(desk.rule("min_notice_days"))


alias("rules_min_notice_days", "min_notice_days, / 64", min_notice_days)


@FEATURES.feature("max_instalments_without_approval", "the rules' max_instalments_without_approval, / 12")
@settles
def max_instalments_without_approval(desk: ScheduleDesk) -> float:
    return ratio(desk.rule("max_instalments_without_approval"), 12)


@FEATURES.feature("rules_max_instalments_without_approval", "max_instalments_without_approval, / 32")
@settles
def max_instalments_without_approval_exact(desk: ScheduleDesk) -> float:
    return small(desk.rule("max_instalments_without_approval"))


@FEATURES.feature("rules_deferral_needs_approval", "the rules' deferral_needs_approval")
@settles
def rules_deferral_needs_approval(desk: ScheduleDesk) -> float:
    return float(bool(desk.rule("deferral_needs_approval")))


# -- the mandate and the clock ------------------------------------------------------------------------------
@FEATURES.feature("mandate_collection_day", "the mandate's collection day as last observed (get_instruction, update_instruction), / 32")
@settles
def mandate_collection_day(desk: ScheduleDesk) -> float:
    return small(desk.mandate_day)


@FEATURES.feature("today", "today (the brief, wait), days since 2024-01-01 / 2048")
@settles
def today(desk: ScheduleDesk) -> float:
    return days(desk.today)


# -- the draft ---------------------------------------------------------------------------------------------
@FEATURES.feature("draft_open", "1 while the last created draft (create_draft_schedule ok) is not committed")
def draft_open(desk: ScheduleDesk) -> float:
    return float(desk.draft_id is not None)


alias("draft_exists", "1 while the last created draft (create_draft_schedule ok) is not committed", draft_open)


@FEATURES.feature("draft_rows", "instalments added to the open draft (ok add_instalment results), / 12")
def draft_rows(desk: ScheduleDesk) -> float:
    return ratio(desk.rows_in_draft(), 12)


alias("draft_instalments", "rows added to the open draft (add_instalment ok), / 12", draft_rows)


@FEATURES.feature("draft_rows/32", "rows added to the open draft, / 32")
def draft_rows_exact(desk: ScheduleDesk) -> float:
    return small(desk.rows_in_draft())


@FEATURES.feature("declared_count", "the n of the last create_draft[n] that answered ok, / 12")
def declared_count(desk: ScheduleDesk) -> float:
    return ratio(desk.declared or 0, 12)


@FEATURES.feature("draft_declared_count", "the n of the last create_draft[n] that answered ok, / 32")
def declared_count_exact(desk: ScheduleDesk) -> float:
    return small(desk.declared or 0)


def declared_remainder_of(desk: ScheduleDesk) -> int:
    """due_total mod the declared count (0 while either is unknown)."""
    n = desk.declared or 0
    return desk.due_total % n if (desk.due_total is not None and n) else 0


@FEATURES.feature("declared_remainder", "due_total mod declared_count, / 12")
def declared_remainder(desk: ScheduleDesk) -> float:
    return ratio(declared_remainder_of(desk), 12)


@FEATURES.feature("next_row_is_first", "1 if the open draft holds no row")
def next_row_is_first(desk: ScheduleDesk) -> float:
    return float(desk.draft_id is not None and not desk.draft_rows)


@FEATURES.feature("next_row_is_last_declared", "1 if the open draft holds declared_count - 1 rows")
def next_row_is_last_declared(desk: ScheduleDesk) -> float:
    n = desk.declared or 0
    return float(desk.draft_id is not None and n > 0 and len(desk.draft_rows) == n - 1)


@FEATURES.feature("next_row_below_remainder", "1 if the open draft holds fewer rows than declared_remainder")
def next_row_below_remainder(desk: ScheduleDesk) -> float:
    return float(desk.draft_id is not None and len(desk.draft_rows) < declared_remainder_of(desk))


@FEATURES.feature("next_row_in_last_remainder", "1 if the open draft holds at least declared_count - declared_remainder rows")
def next_row_in_last_remainder(desk: ScheduleDesk) -> float:
    n = desk.declared or 0
    return float(desk.draft_id is not None and n > 0 and len(desk.draft_rows) >= n - declared_remainder_of(desk))


@FEATURES.feature("next_row_day_overflows", "1 if the collection day of the add actions is past the end of the next row's month")
def next_row_day_overflows(desk: ScheduleDesk) -> float:
    period, day = desk.next_period(), desk.collection_day()
    return float(bool(period and day is not None and day > month_days(period)))


@FEATURES.feature("next_row_month_has_due_instalment", "1 if a listed still-due instalment falls in the next row's month")
def next_row_month_has_due_instalment(desk: ScheduleDesk) -> float:
    period = desk.next_period()
    return float(period is not None and desk.same_month_amount(period, due_only=True) is not None)


@FEATURES.feature("next_row_after_policy_year", "1 if the next row's month is after the policy year's last month")
def next_row_after_policy_year(desk: ScheduleDesk) -> float:
    period, year_end = desk.next_period(), desk.policy_year_end()
    return float(period is not None and year_end is not None and period > year_end)


@lru_cache(maxsize=4096)
def days_apart(a: str, b: str) -> int:
    """Days from date ``a`` to date ``b``."""
    return (parse_date(b) - parse_date(a)).days


def first_draft_due(desk: ScheduleDesk) -> str | None:
    """The earliest due date among the open draft's rows."""
    return min((r["due_date"] for r in desk.draft_rows), default=None) if desk.draft_id is not None else None


@FEATURES.feature("draft_first_due_date", "the earliest due date among the open draft's rows, days since 2024-01-01 / 2048")
def draft_first_due_date(desk: ScheduleDesk) -> float:
    return days(first_draft_due(desk))


@FEATURES.feature("draft_last_period", "the period of the last row added to the open draft, months since 2024-01 / 128")
def draft_last_period(desk: ScheduleDesk) -> float:
    return month(desk.draft_rows[-1].get("period") if desk.draft_id is not None and desk.draft_rows else None)


@FEATURES.feature("deferral_needs_approval", "1 if the rules' deferral_needs_approval is true and the open draft's earliest due "
                  "date is after the earliest listed due instalment's (the change postpones collection: the deferral "
                  "trigger's condition; 0 without a draft row)")
def deferral_needs_approval(desk: ScheduleDesk) -> float:
    return float(desk.postpones() and bool(desk.rule("deferral_needs_approval")))


@FEATURES.feature("draft_exceeds_max_without_approval", "1 if the open draft holds more rows than max_instalments_without_approval")
def draft_exceeds_max_without_approval(desk: ScheduleDesk) -> float:
    return float(desk.draft_id is not None and desk.rules is not None
                 and len(desk.draft_rows) > int(desk.rules.get("max_instalments_without_approval", 99)))


@FEATURES.feature("draft_first_due_within_min_notice", "1 if the open draft's earliest due date is fewer than min_notice_days days "
                  "after the request's received_on")
def draft_first_due_within_min_notice(desk: ScheduleDesk) -> float:
    first, received = first_draft_due(desk), (desk.request or {}).get("received_on")
    if not (first and received) or desk.rules is None:
        return 0.0
    return float(days_apart(received, first) < int(desk.rules.get("min_notice_days", 0)))


# -- the approvals ------------------------------------------------------------------------------------------
@FEATURES.feature("approval_requested", "1 once any request_approval answered ok")
@settles
def approval_requested(desk: ScheduleDesk) -> float:
    return float(bool(desk.approvals))


@FEATURES.feature("approval_pending", "1 while one of our approval requests is pending (request_approval / wait results)")
@settles
def approval_pending(desk: ScheduleDesk) -> float:
    return float(desk.pending())


alias("approval_pending_any", "1 while any of our approval requests is pending", approval_pending)


@FEATURES.block([
    (f"approval[{t}]_{s}", doc.format(t=t))
    for t in TRIGGERS
    for s, doc in (("pending", "1 while our request to the role the rules name for {t} is pending"),
                   ("granted", "1 once a wait result showed the role the rules name for {t} granted"))
])
@settles
def trigger_approvals(desk: ScheduleDesk) -> list[float]:
    out = []
    for t in TRIGGERS:
        status = desk.approvals.get(desk.role(t) or "")
        out += [float(status == "pending"), float(status == "granted")]
    return out


@FEATURES.block([(f"approval[{r}]_{s}", f"1 if our request to {r} is {s} (as last observed)") for r in ROLES for s in APPROVAL_STATUSES])
@settles
def role_approvals(desk: ScheduleDesk) -> list[float]:
    return [float(desk.approvals.get(r) == s) for r in ROLES for s in APPROVAL_STATUSES]


@FEATURES.feature("commit_refused", "1 if commit_schedule answered approval_required and no approval was granted since")
def commit_refused(desk: ScheduleDesk) -> float:
    return float(desk.commit_refused())


alias("commit_answered_approval_required", "1 if commit_schedule answered approval_required and no grant was seen since", commit_refused)


# -- the commit and what follows it ------------------------------------------------------------------------
@FEATURES.feature("committed", "1 once commit_schedule answered ok")
def committed(desk: ScheduleDesk) -> float:
    return float(bool(desk.new_rows))


alias("new_version_active", "1 once commit_schedule answered ok", committed)


@FEATURES.feature("committed_count", "instalments the ok commit made due (commit_schedule result), / 12")
def committed_count(desk: ScheduleDesk) -> float:
    return ratio(len(desk.new_rows), 12)


alias("new_instalments", "instalments the ok commit made due, / 12", committed_count)


@FEATURES.feature("new_rows", "rows the ok commit made due, / 32")
def new_rows(desk: ScheduleDesk) -> float:
    return small(len(desk.new_rows))


@FEATURES.feature("new_first_due_date", "the committed seq-1 row's due date, days since 2024-01-01 / 2048")
def new_first_due_date(desk: ScheduleDesk) -> float:
    first = desk.new_first()
    return days(first["due_date"] if first else None)


@FEATURES.feature("new_first_amount", "the committed seq-1 row's amount, / 2^19 cents")
def new_first_amount(desk: ScheduleDesk) -> float:
    first = desk.new_first()
    return amount(first["amount"] if first else None)


@FEATURES.feature("new_first_lead_date_before_today", "1 if the committed first due date - reminder_lead_days is before today")
def new_first_lead_date_before_today(desk: ScheduleDesk) -> float:
    first = desk.new_first()
    if first is None or desk.rules is None or desk.today is None:
        return 0.0
    return float(parse_date(first["due_date"]) - timedelta(days=int(desk.rules["reminder_lead_days"])) < parse_date(desk.today))


@FEATURES.feature("prior_superseded", "1 once supersede_schedule of the prior version answered ok")
@settles
def prior_superseded(desk: ScheduleDesk) -> float:
    return float(desk.superseded)


alias("prior_version_superseded", "1 once supersede_schedule answered ok", prior_superseded)


@FEATURES.feature("prior_due_cancelled", "1 once cancel_instalments of the prior due instalments answered ok")
@settles
def prior_due_cancelled(desk: ScheduleDesk) -> float:
    return float(desk.due_cancelled)


alias("prior_due_instalments_cancelled", "1 once cancel_instalments answered ok", prior_due_cancelled)


@FEATURES.feature("old_reminders_remaining", "listed scheduled reminders not yet cancelled, / 3")
@settles
def old_reminders_remaining(desk: ScheduleDesk) -> float:
    return ratio(len(desk.remaining_reminders()), 3)


alias("listed_reminders_scheduled", "listed scheduled reminders not cancelled by us, / 3", old_reminders_remaining)


@FEATURES.feature("new_reminder_created", "1 once create_reminder answered ok")
def new_reminder_created(desk: ScheduleDesk) -> float:
    return float(desk.reminder_created is not None)


alias("reminder_created", "1 once create_reminder answered ok", new_reminder_created)


@FEATURES.feature("new_reminder_send_on", "the created reminder's send date, days since 2024-01-01 / 2048")
def new_reminder_send_on(desk: ScheduleDesk) -> float:
    created = desk.reminder_created
    return days(created.get("send_on") if created else None)


@FEATURES.feature("mandate_updated", "1 once update_instruction answered ok")
@settles
def mandate_updated(desk: ScheduleDesk) -> float:
    return float(desk.mandate_updated)


alias("mandate_day_updated", "1 once update_instruction answered ok", mandate_updated)


@FEATURES.feature("approval_tools_allowed", "1 if request_approval and wait are in the task's allowed tools (always, since seeds v1)")
@settles
def approval_tools_allowed(desk: ScheduleDesk) -> float:
    return float(desk.allows("request_approval") and desk.allows("wait"))


@FEATURES.feature("mandate_tool_allowed", "1 if update_instruction is in the task's allowed tools (always, since seeds v1)")
@settles
def mandate_tool_allowed(desk: ScheduleDesk) -> float:
    return float(desk.allows("update_instruction"))


# -- the conclusions tier's conclusions ---------------------------------------------------------------------
@FEATURES.feature("outstanding", "annual premium (get_policy) minus every paid instalment (list_instalments, any version), / 500000 cents")
@settles
def outstanding(desk: ScheduleDesk) -> float:
    return scale(desk.outstanding(), 500_000)


@FEATURES.feature("plan_count", "instalments of the computed new schedule, / 12")
@settles
def plan_count(desk: ScheduleDesk) -> float:
    return ratio(len(desk.plan().rows), 12)


@FEATURES.feature("rows_remaining", "planned instalments not yet in the open draft (plan_count - draft_rows; 0 without a draft), / 12")
def rows_remaining(desk: ScheduleDesk) -> float:
    return ratio(max(0, len(desk.plan().rows) - len(desk.draft_rows)) if desk.draft_id is not None else 0, 12)


@FEATURES.feature("draft_complete", "1 if the open draft holds every planned instalment")
def draft_complete(desk: ScheduleDesk) -> float:
    rows = desk.plan().rows
    return float(desk.draft_id is not None and bool(rows) and len(desk.draft_rows) >= len(rows))


@FEATURES.feature("approval_needed", "1 if an approval trigger of the rules (in approval_order) applies to the computed plan")
@settles
def approval_needed(desk: ScheduleDesk) -> float:
    return float(desk.plan().need is not None)


@FEATURES.block([(f"first_trigger_{t}", f"1 if the first applying approval trigger (approval_order) is {t}") for t in TRIGGERS])
@settles
def first_trigger(desk: ScheduleDesk) -> list[float]:
    need = desk.plan().need
    return [float(need is not None and need[0] == t) for t in TRIGGERS]


@FEATURES.block([(f"applies_{t}", f"1 if the {t} approval trigger applies to the computed plan (rules, request)") for t in TRIGGERS])
@settles
def applies(desk: ScheduleDesk) -> list[float]:
    applying = desk.plan().applies
    return [float(applying.get(t, False)) for t in TRIGGERS]


@FEATURES.feature("needed_approval_requested", "1 once the role of the first applying trigger was asked (request_approval ok)")
@settles
def needed_approval_requested(desk: ScheduleDesk) -> float:
    return float(desk.needed_status() is not None)


@FEATURES.feature("needed_approval_granted", "1 once a wait result showed the role of the first applying trigger granted")
@settles
def needed_approval_granted(desk: ScheduleDesk) -> float:
    return float(desk.needed_status() == "granted")


@FEATURES.feature("approval_outstanding", "approval_needed and not needed_approval_granted")
@settles
def approval_outstanding(desk: ScheduleDesk) -> float:
    return float(desk.plan().need is not None and desk.needed_status() != "granted")


@FEATURES.feature("new_reminder_late", "1 if the new first due date - reminder_lead_days is before today (the brief / wait)")
def new_reminder_late(desk: ScheduleDesk) -> float:
    return float(desk.reminder_late())


@FEATURES.feature("new_reminder_needed", "1 if the rules give a send date for the new first instalment's reminder "
                  "(not late, or late and send_today)")
def new_reminder_needed(desk: ScheduleDesk) -> float:
    return float(desk.send_on() is not None)


@FEATURES.feature("mandate_change_needed", "1 if the request is a collection-day change to a day other than the mandate's "
                  "(get_request, get_instruction)")
@settles
def mandate_change_needed(desk: ScheduleDesk) -> float:
    return float(desk.mandate_change())


@FEATURES.feature("work_complete", "1 once the change is fully applied as observed: committed, prior superseded and its due "
                  "instalments cancelled, no listed reminder left, the reminder created iff new_reminder_needed, "
                  "the mandate updated iff mandate_change_needed")
def work_complete(desk: ScheduleDesk) -> float:
    return float(bool(desk.new_rows) and desk.superseded and desk.due_cancelled and desk.reminders is not None
                 and not desk.remaining_reminders() and (desk.reminder_created is not None) == (desk.send_on() is not None)
                 and desk.mandate_updated == desk.mandate_change())


@FEATURES.feature("notice_days", "days from the request's received_on to the plan's first due date, / 60")
@settles
def notice_days(desk: ScheduleDesk) -> float:
    rows = desk.plan().rows
    if not rows or desk.request is None:
        return 0.0
    return scale(days_between(desk.request["received_on"], rows[0]["due_date"]), 60)


@FEATURES.feature("uneven_split", "1 if the plan re-splits and outstanding is not a multiple of the instalment count")
@settles
def uneven_split(desk: ScheduleDesk) -> float:
    rows, total = desk.plan().rows, desk.outstanding()
    kind = desk.request.get("kind") if desk.request else None
    return float(bool(rows) and kind != "collection_day" and total is not None and total % len(rows) != 0)


@FEATURES.feature("month_end_hit", "1 if a planned due date is not on the collection day (month-end rule applied)")
@settles
def month_end_hit(desk: ScheduleDesk) -> float:
    rows = desk.plan().rows
    kind = desk.request.get("kind") if desk.request else None
    day = desk.new_day() if kind == "collection_day" else (desk.mandate.get("collection_day") if desk.mandate is not None else None)
    return float(bool(rows) and day is not None and any(int(r["due_date"][8:10]) != int(day) for r in rows))


# -- the raw tier's slots -------------------------------------------------------------------------------------
@FEATURES.block_family([
    (f"inst[{{i}}]_{name}", doc)
    for name, doc in (
        ("present", "1 if instalment slot {i} holds a listed due or paid row (slots: by due date)"),
        *((f"status_{s}", f"1 if slot {{i}}'s status (as last observed) is {s}") for s in INSTALMENT_STATUSES),
        ("amount", "slot {i}'s amount, / 2^19 cents"),
        ("period", "slot {i}'s period, months since 2024-01 / 128"),
        ("due_date", "slot {i}'s due date, days since 2024-01-01 / 2048"),
        *((f"version[{v}]", f"1 if slot {{i}} belongs to version slot {v} (same schedule id)") for v in range(VERSION_SLOTS)),
    )
], INSTALMENT_SLOTS)
def instalment_slot(desk: ScheduleDesk, i: int) -> list[float]:
    return _instalment_slot_values(desk)[i]


_EMPTY_INSTALMENT = [0.0] * (1 + len(INSTALMENT_STATUSES) + 3 + VERSION_SLOTS)


@settles
def _instalment_slot_values(desk: ScheduleDesk) -> list[list[float]]:
    """Every instalment slot's values (empty slots zero)."""
    version_ids: list[str | None] = [s["id"] for s in desk.version_slots]
    version_ids += [None] * (VERSION_SLOTS - len(version_ids))
    out = []
    for row in desk.slot_rows:
        status = desk.status.get(row["id"])
        out.append([1.0, *(float(status == s) for s in INSTALMENT_STATUSES), amount(row.get("amount")), month(row.get("period")),
                     days(row.get("due_date")), *(float(vid is not None and row.get("schedule_id") == vid) for vid in version_ids)])
    return out + [_EMPTY_INSTALMENT] * (INSTALMENT_SLOTS - len(out))


@FEATURES.block_family([
    ("rem[{i}]_present", "1 if reminder slot {i} holds a listed scheduled reminder"),
    ("rem[{i}]_cancelled", "1 once cancel_reminder of slot {i} answered ok"),
    ("rem[{i}]_due_date", "slot {i}'s instalment due date, days since 2024-01-01 / 2048"),
    ("rem[{i}]_amount", "slot {i}'s amount, / 2^19 cents"),
], REMINDER_SLOTS)
def reminder_slot(desk: ScheduleDesk, j: int) -> list[float]:
    return _reminder_slot_values(desk)[j]


@settles
def _reminder_slot_values(desk: ScheduleDesk) -> list[list[float]]:
    slots = desk.reminder_slots()
    out = [[1.0, float(rem["id"] in desk.cancelled_reminders), days(rem.get("due_date")), amount(rem.get("amount"))] for rem in slots]
    return out + [[0.0] * 4] * (REMINDER_SLOTS - len(out))


__all__ = ["FEATURES"]
