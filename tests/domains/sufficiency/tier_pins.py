"""What the generic tier tests (tests/catalog/test_catalog_tiers.py) pin for sufficiency: its own values,
kept with the domain so that the generic test names no domain."""

from __future__ import annotations

#: the conclusions tier's catalog_hash: adding tiers must not change it (the shipped models' hash)
CONCLUSIONS_HASH = "d1c0b5b7b42c2b760b8a5c829e946161"

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none may be a feature of another tier, each must be one of the conclusions
#: tier's
CONCLUSION_FEATURES = frozenset({
    "amount_ratio",
    "amount_vs_threshold",
    "any_missing",
    "any_satisfiable",
    "assessed",
    "fail_age",
    "fail_legibility",
    "fail_name_match",
    "fail_presence",
    "fail_signature",
    "n_missing",
    "n_satisfiable",
    "n_satisfied",
    "sufficient",
})

#: words that name a conclusion or a due item: no feature of another tier's own may contain one
CONCLUSION_WORDS = ("missing", "satisf", "sufficient", "assess", "fail", "due", "need", "complete", "valid", "cover", "gap", "pending", "expected")

#: raw: words of a comparison of two observed values, which no raw feature's name may contain
RAW_COMPARISON_WORDS = ("equal", "within", "_ge_", "by_review_date", "vs", "ratio", "older", "expired")

#: (heldout slice, the baselines' seed, whether the native env gets the tier's own step limit) of
#: the mask-alone test
MASK_ALONE = (slice(None, None, 2), 0, False)

#: heldout tasks of the feature-policy episodes through the catalog env (default every 8th)
VALID_PLAY_IDS = slice(None, None, 8)

#: heldout tasks of random valid play (default every 20th)
RANDOM_PLAY_IDS = slice(None, None, 6)
