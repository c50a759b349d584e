"""What the generic tier tests (tests/catalog/test_catalog_tiers.py) pin for remittance: its own values,
kept with the domain so that the generic test names no domain."""

from __future__ import annotations

#: the conclusions tier's catalog_hash: adding tiers must not change it (the shipped models' hash)
CONCLUSIONS_HASH = "b65fa04dcc95ad4398c98f9af640119d"

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none may be a feature of another tier, each must be one of the conclusions
#: tier's
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

#: words that name a conclusion or a due item: no feature of another tier's own may contain one
CONCLUSION_WORDS = ("due", "need", "match", "ambiguous", "handled", "complete", "pending", "dup_", "excess", "rest_", "no_claim", "unsearched", "found", "left")

#: parts of feature names that hold a conclusion word but name an observed field, replaced before
#: the words are looked for
FACT_NAMES = {"amount_due": "amount"}

#: raw: words of a comparison of two observed values, which no raw feature's name may contain
RAW_COMPARISON_WORDS = ("equal", "near", "_gt_", "_le_", "tolerance]", "fraction", "lines.searched", "positive")

#: tools that may refuse a valid action in random play (frozenset(): none, the mask is the tools'
#: preconditions)
REFUSED_BY: frozenset[str] = frozenset()

#: heldout tasks of the feature-policy episodes through the catalog env (default every 8th)
VALID_PLAY_IDS = slice(None, None, 10)

#: heldout tasks of random valid play (default every 20th)
RANDOM_PLAY_IDS = slice(1, None, 5)
