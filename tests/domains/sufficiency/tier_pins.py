"""The values tests/catalog/test_catalog_tiers.py pins for sufficiency (what each means: ``PINS`` there)."""

from __future__ import annotations

CONCLUSIONS_HASH = "d1c0b5b7b42c2b760b8a5c829e946161"

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

CONCLUSION_WORDS = ("missing", "satisf", "sufficient", "assess", "fail", "due", "need", "complete", "valid", "cover", "gap", "pending", "expected")

RAW_COMPARISON_WORDS = ("equal", "within", "_ge_", "by_review_date", "vs", "ratio", "older", "expired")

MASK_ALONE = (slice(None, None, 2), 0, False)

VALID_PLAY_IDS = slice(None, None, 8)

RANDOM_PLAY_IDS = slice(None, None, 6)
