"""The schedules tiers as declarations over the registries (:mod:`.features`, :mod:`.actions`).

Every tier plays the same episode: read the request, the policy, the rules, the instalments, the
debit mandate and the scheduled reminders; draft the next version and add its instalments; ask
for approval when a trigger of the rules applies and wait for the decision; commit; supersede
the prior version and cancel its due instalments; replace the reminder; move the mandate's
collection day; submit. The tiers differ in what they compute for the agent:

- ``conclusions``: the new schedule is computed from the portfolio rules (periods, due dates under
  the month-end rule, amounts under the rounding rule and the minimum instalment):
  ``add_next_instalment`` grounds the planned row, and features say which approval trigger
  applies first, whether a reminder is needed and when the work is complete.
- ``facts``: observed facts and plain comparisons only (no plan, no "needed", "due" or
  "complete" flags, no first applying trigger). The agent declares the count
  (``create_draft[n]``) and picks each row's share and month-end handling
  (``add_instalment[share,end]``: the month is the request's next one, the day the request's or
  the mandate's).
- ``raw``: per-slot observed values only, exactly decodable, one-hot categories and "same entity"
  equalities; primitive actions (``add_instalment[src,end,share]``, ``cancel_instalment[i]``,
  ``supersede[v]``, ``request_approval[role]``, ``cancel_reminder[j]``). The outstanding, the count,
  the shares, the month-end handling, the trigger and its role, which rows to cancel and whether
  the reminder is late are all computed by the agent.

A name a tier shows for a fact or call the registry keeps apart (another scale, another call) is
shown through ``FEATURES.shown_as`` / ``ACTIONS.shown_as``. The shipped models' ``catalog_hash`` holds.
"""

from __future__ import annotations

from backoffice.envs.schedules.tables import LATE_REMINDER_RULES, MONTH_END_RULES, ROLES, ROUNDING_RULES
from backoffice.training.catalog.tier import Hyper, Tier, two_envs
from backoffice.training.domains.schedules.catalog.actions import ACTIONS, FACT_SHARES, RAW_SHARES, SOURCES
from backoffice.training.domains.schedules.catalog.desk import (
    COUNTS,
    ENDS,
    INSTALMENT_SLOTS,
    KINDS,
    PRIOR_FREQUENCIES,
    READS,
    REMINDER_SLOTS,
    TRIGGERS,
    VERSION_SLOTS,
)
from backoffice.training.domains.schedules.catalog.feature_policies import FactsScheduler, RawScheduler, conclusions_policy
from backoffice.training.domains.schedules.catalog.features import APPROVAL_STATUSES, FEATURES, INSTALMENT_STATUSES, VERSION_STATUSES

_READ_FLAGS = ("request_read", "policy_read", "rules_read", "instalments_listed", "mandate_read", "reminders_listed")
_ORDER = tuple(f"[{t}]={p}" for t in TRIGGERS for p in (1, 2, 3))

#: shared by every tier
_HYPER = {
    "finish_bias": Hyper(-5.0, "a strong prior against submit for a long procedure: a weaker one collapses to an early submit"),
    "n_steps": Hyper(256, "longer rollouts for a long procedure (about 19 calls a solved task)"),
    "gamma": Hyper(0.995, "a longer horizon: the reward comes at the end of a long procedure"),
    "reward_mode": Hyper("progress", "under the shaped reward MaskablePPO settles on submitting at once"),
}

CONCLUSIONS = Tier(
    name="conclusions",
    features=(
        "plan_facts_read", *(f"kind_{k}" for k in KINDS), "outstanding", "paid_count", "prior_due_count", "plan_count",
        "draft_open", "draft_rows", "rows_remaining", "draft_complete", "approval_needed",
        *(f"first_trigger_{t}" for t in TRIGGERS), *(f"applies_{t}" for t in TRIGGERS),
        "approval_requested", "approval_pending", "needed_approval_requested", "needed_approval_granted", "approval_outstanding",
        "commit_refused", "committed", "committed_count", "prior_superseded", "prior_due_cancelled", "old_reminders_listed",
        "old_reminders_remaining", "new_reminder_late", "late_rule_send_today", "new_reminder_needed", "new_reminder_created",
        "mandate_change_needed", "mandate_updated", "work_complete", "notice_days", "uneven_split", "month_end_hit",
        "approval_tools_allowed", "mandate_tool_allowed",
    ),
    actions=(
        *READS, "create_draft", "add_next_instalment", *(f"request_approval[{t}]" for t in TRIGGERS), "wait", "commit_draft",
        "supersede_prior", ACTIONS.shown_as("cancel_prior_due", "cancel_listed_prior_due"), "cancel_old_reminder", "create_reminder", "update_mandate", "submit",
    ),
    hyperparams=_HYPER,
    max_steps=40,
    feature_policy=conclusions_policy,
)

FACTS = Tier(
    name="facts",
    features=(
        *_READ_FLAGS, *(f"request_kind_{k}" for k in KINDS), "request_parts", "request_pause_months",
        "request_names_collection_day", "request_day_differs_from_mandate", "months_left_from_start",
        *(f"prior_frequency_{f}" for f in PRIOR_FREQUENCIES), "premium", "paid_instalments", "paid_total", "due_instalments",
        "due_total", "minimum_instalment", *(f"share_meets_minimum[{k}]" for k in COUNTS),
        *(f"rounding_{r}" for r in ROUNDING_RULES), *(f"month_end_{m}" for m in MONTH_END_RULES),
        *(f"late_reminder_{x}" for x in LATE_REMINDER_RULES), *(f"approval_order{o}" for o in _ORDER),
        "deferral_needs_approval", "max_instalments_without_approval", "min_notice_days", "reminder_lead_days",
        "draft_exists", "declared_count", "draft_instalments", "declared_remainder", "next_row_is_first",
        "next_row_is_last_declared", "next_row_below_remainder", "next_row_in_last_remainder", "next_row_day_overflows",
        "next_row_month_has_due_instalment", "next_row_after_policy_year", "draft_exceeds_max_without_approval",
        "draft_first_due_within_min_notice", *(f"approval[{t}]_{s}" for t in TRIGGERS for s in ("pending", "granted")),
        "approval_pending_any", "commit_answered_approval_required", "new_version_active", "new_instalments",
        "new_first_lead_date_before_today", "prior_version_superseded", "prior_due_instalments_cancelled",
        "listed_reminders_scheduled", "reminder_created", "mandate_day_updated",
    ),
    actions=(
        *READS, *(f"create_draft[{n}]" for n in COUNTS),
        *(f"add_instalment[{share},{end}]" for share in FACT_SHARES for end in ENDS),
        *(f"request_approval[{t}]" for t in TRIGGERS), "wait", "commit_draft", "supersede_prior", "cancel_prior_due", "cancel_old_reminder",
        "create_reminder[lead]", "create_reminder[today]", "update_mandate", "submit",
    ),
    hyperparams=_HYPER,
    max_steps=40,
    feature_policy=FactsScheduler,
)

RAW = Tier(
    name="raw",
    features=(
        *_READ_FLAGS, *(f"request_kind_{k}" for k in KINDS), "request_start_period",
        FEATURES.shown_as("request_parts", "request_parts/32"), FEATURES.shown_as("request_pause_months", "request_pause_months/32"),
        "request_new_collection_day", "request_received_on", "policy_premium", "policy_term_start",
        *(f"version[{v}]_{f}" for v in range(VERSION_SLOTS)
          for f in ("present", *(f"status_{s}" for s in VERSION_STATUSES), *(f"frequency_{q}" for q in PRIOR_FREQUENCIES))),
        "today", *(f"rules_rounding_{r}" for r in ROUNDING_RULES), *(f"rules_month_end_{m}" for m in MONTH_END_RULES),
        *(f"rules_late_reminder_{x}" for x in LATE_REMINDER_RULES), "rules_minimum_instalment", "rules_reminder_lead_days",
        "rules_max_instalments_without_approval", "rules_min_notice_days", "rules_deferral_needs_approval",
        *(f"rules_order{o}" for o in _ORDER), *(f"rules_role[{t}]={r}" for t in TRIGGERS for r in ROLES),
        *(f"inst[{i}]_{f}" for i in range(INSTALMENT_SLOTS)
          for f in ("present", *(f"status_{s}" for s in INSTALMENT_STATUSES), "amount", "period", "due_date",
                    *(f"version[{v}]" for v in range(VERSION_SLOTS)))),
        "mandate_collection_day",
        *(f"rem[{j}]_{f}" for j in range(REMINDER_SLOTS) for f in ("present", "cancelled", "due_date", "amount")),
        "draft_exists", "draft_declared_count", FEATURES.shown_as("draft_rows", "draft_rows/32"), "draft_first_due_date",
        "draft_last_period", *(f"approval[{r}]_{s}" for r in ROLES for s in APPROVAL_STATUSES),
        "commit_answered_approval_required", "new_version_active", "new_rows", "new_first_due_date", "new_first_amount",
        "new_reminder_created", "new_reminder_send_on",
    ),
    actions=(
        *READS, *(ACTIONS.shown_as(f"create_draft[{n}]", f"create_custom_draft[{n}]") for n in COUNTS),
        *(f"add_instalment[{src},{end},{share}]" for src in SOURCES for end in ENDS for share in RAW_SHARES),
        *(f"cancel_instalment[{i}]" for i in range(INSTALMENT_SLOTS)), *(f"request_approval[{r}]" for r in ROLES),
        "wait", "commit_draft", *(f"supersede[{v}]" for v in range(VERSION_SLOTS)),
        *(f"cancel_reminder[{j}]" for j in range(REMINDER_SLOTS)), "create_reminder[lead]", "create_reminder[today]",
        "update_mandate", "submit",
    ),
    hyperparams={**_HYPER, **two_envs(1024)},
    max_steps=60,
    feature_policy=RawScheduler,
)

__all__ = ["CONCLUSIONS", "FACTS", "RAW"]
