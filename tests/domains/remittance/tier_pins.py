"""The values tests/catalog/test_catalog_tiers.py pins for remittance (what each means: ``PINS`` there)."""

from __future__ import annotations

CONCLUSIONS_HASH = "b65fa04dcc95ad4398c98f9af640119d"

CONCLUSION_FEATURES = frozenset({
    "adj0_pending",
    "adj1_pending",
    "credit_alloc_due",
    "cur_alloc_due",
    "cur_ambiguous",
    "cur_excess",
    "cur_line_handled",
    "cur_matched",
    "cur_needs_name_search",
    "cur_no_claim",
    "cur_recoup",
    "cur_rest_beyond_tol",
    "cur_rest_within_tol",
    "cur_rest_zero",
    "dup_apply_due",
    "dup_case_due",
    "dup_found",
    "dup_hold_due",
    "dup_refund_case_due",
    "dup_return_due",
    "facts_read",
    "lines_handled_fraction",
    "lines_unsearched",
    "next_line_due",
    "no_dup",
    "post_apply_due",
    "query_due",
    "refund_case_due",
    "small_write_off_due",
    "tr_adj0_due",
    "tr_adj1_due",
    "underpayment_case_due",
    "unidentified_case_due",
    "wo_adj0_due",
    "wo_adj1_due",
})

CONCLUSION_WORDS = ("due", "need", "match", "ambiguous", "handled", "complete", "pending", "dup_", "excess", "rest_", "no_claim", "unsearched", "found", "left")

FACT_NAMES = {"amount_due": "amount"}

RAW_COMPARISON_WORDS = ("equal", "near", "_gt_", "_le_", "tolerance]", "fraction", "lines.searched", "positive")

REFUSED_BY: frozenset[str] = frozenset()

VALID_PLAY_IDS = slice(None, None, 10)

RANDOM_PLAY_IDS = slice(1, None, 5)
