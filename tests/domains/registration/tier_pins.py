"""The values tests/catalog/test_catalog_tiers.py pins for registration (what each means: ``PINS`` there)."""

from __future__ import annotations

CONCLUSIONS_HASH = "ee8a37d113652ba2e1a58e77cc3c2216"

CONCLUSION_FEATURES = frozenset({
    "address_differs",
    "address_update_allowed",
    "card_ok",
    "coverage_missing",
    "current_is_match",
    "gp_missing",
    "guardian_contact_known",
    "guardian_missing",
    "identifier_conflict",
    "items_open",
    "kin_missing",
    "match_deceased",
    "match_many",
    "match_none",
    "match_one",
    "minor",
    "phone_differs",
    "registration_complete",
    "roster_ok",
    "slot[0].match",
    "slot[1].match",
    "slot[2].match",
    "slot[3].match",
    "slot[4].match",
    "slot[5].match",
    "variants_pending",
})

CONCLUSION_WORDS = ("match", "conflict", "due", "need", "missing", "complete", "pending", "allowed", "_ok", "minor", "open_")

RAW_COMPARISON_WORDS = ("equal", "agree", "equivalent", "differ", "swapped", "identifier_valid", "age_years")

VALID_PLAY_IDS = slice(None, None, 6)

RANDOM_PLAY_IDS = slice(None, 60, None)
