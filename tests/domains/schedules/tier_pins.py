"""What the generic tier tests (tests/catalog/test_catalog_tiers.py) pin for schedules: its own values,
kept with the domain so that the generic test names no domain."""

from __future__ import annotations

#: the conclusions tier's catalog_hash: adding tiers must not change it (the shipped models' hash)
CONCLUSIONS_HASH = "45e70bb6af80f08ecd286b301e4f0feb"

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none may be a feature of another tier, each must be one of the conclusions
#: tier's
CONCLUSION_FEATURES = frozenset({
    "applies_deferral",
    "applies_instalment_count",
    "applies_short_notice",
    "approval_needed",
    "approval_outstanding",
    "draft_complete",
    "first_trigger_deferral",
    "first_trigger_instalment_count",
    "first_trigger_short_notice",
    "mandate_change_needed",
    "month_end_hit",
    "needed_approval_granted",
    "needed_approval_requested",
    "new_reminder_late",
    "new_reminder_needed",
    "notice_days",
    "outstanding",
    "plan_count",
    "plan_facts_read",
    "rows_remaining",
    "uneven_split",
    "work_complete",
})

#: words that name a conclusion or a due item: no feature of another tier's own may contain one
CONCLUSION_WORDS = ("needed", "complete", "remaining", "plan_", "applies", "first_trigger", "outstanding")

#: at most this many actions in a tier (default 64)
MAX_ACTIONS = 70

#: tools that may refuse a valid action in random play (frozenset(): none, the mask is the tools'
#: preconditions)
REFUSED_BY = frozenset({
    "commit_schedule",
})

#: (heldout slice, the baselines' seed, whether the native env gets the tier's own step limit) of
#: the mask-alone test
MASK_ALONE = (slice(None, None, 42), 3, True)
