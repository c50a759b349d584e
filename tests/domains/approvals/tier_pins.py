"""What the generic tier tests (tests/catalog/test_catalog_tiers.py) pin for approvals: its own values,
kept with the domain so that the generic test names no domain."""

from __future__ import annotations

#: the conclusions tier's catalog_hash: adding tiers must not change it (the shipped models' hash)
CONCLUSIONS_HASH = "f1dfe2398538e49492d593160617f454"

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none may be a feature of another tier, each must be one of the conclusions
#: tier's
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

#: words that name a conclusion or a due item: no feature of another tier's own may contain one
CONCLUSION_WORDS = ("procedure", "due", "needed", "complete", "authority", "usable", "candidate", "breach", "blocking", "resolved", "sod_clear", "sod_checked")

#: (heldout slice, the baselines' seed, whether the native env gets the tier's own step limit) of
#: the mask-alone test
MASK_ALONE = (slice(None, 120, None), 0, False)

#: episodes of the random-actions fuzz (default 16)
FUZZ_EPISODES = 40
