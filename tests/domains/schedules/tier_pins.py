"""The values tests/catalog/test_catalog_tiers.py pins for schedules (what each means: ``PINS`` there)."""

from __future__ import annotations

CONCLUSIONS_HASH = "45e70bb6af80f08ecd286b301e4f0feb"

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

CONCLUSION_WORDS = ("needed", "complete", "remaining", "plan_", "applies", "first_trigger", "outstanding")

MAX_ACTIONS = 70

REFUSED_BY = frozenset({
    "commit_schedule",
})

MASK_ALONE = (slice(None, None, 42), 3, True)
