"""The values tests/catalog/test_catalog_tiers.py pins for approvals (what each means: ``PINS`` there)."""

from __future__ import annotations

CONCLUSIONS_HASH = "f1dfe2398538e49492d593160617f454"

CONCLUSION_FEATURES = frozenset({
    "all_candidates_checked",
    "amount_over_hard_limit_ratio",
    "approver_not_found",
    "approver_resolved",
    "assignment_candidate_now",
    "authority_found",
    "authority_search_complete",
    "blocking_fact_found",
    "candidates_checked",
    "candidates_unchecked",
    "delegation_candidate_role",
    "delegation_capped_below",
    "delegation_unconfirmed",
    "delegation_usable",
    "downstream_due",
    "holds_candidate_role",
    "line_breach",
    "missing_required_field",
    "n_candidate_roles",
    "n_missing_fields",
    "no_usable_authority",
    "over_hard_limit",
    "procedure_escalate",
    "procedure_hold",
    "procedure_open",
    "procedure_proceed",
    "procedure_reject",
    "sod_breach",
    "sod_checked",
    "sod_clear",
})

CONCLUSION_WORDS = ("procedure", "due", "needed", "complete", "authority", "usable", "candidate", "breach", "blocking", "resolved", "sod_clear", "sod_checked")

MASK_ALONE = (slice(None, 120, None), 0, False)

FUZZ_EPISODES = 40
