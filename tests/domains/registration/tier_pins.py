"""What the generic tier tests (tests/catalog/test_catalog_tiers.py) pin for registration: its own values,
kept with the domain so that the generic test names no domain."""

from __future__ import annotations

#: the conclusions tier's catalog_hash: adding tiers must not change it (the shipped models' hash)
CONCLUSIONS_HASH = "ee8a37d113652ba2e1a58e77cc3c2216"

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none may be a feature of another tier, each must be one of the conclusions
#: tier's
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

#: words that name a conclusion or a due item: no feature of another tier's own may contain one
CONCLUSION_WORDS = ("match", "conflict", "due", "need", "missing", "complete", "pending", "allowed", "_ok", "minor", "open_")

#: raw: words of a comparison of two observed values, which no raw feature's name may contain
RAW_COMPARISON_WORDS = ("equal", "agree", "equivalent", "differ", "swapped", "identifier_valid", "age_years")

#: heldout tasks of the feature-policy episodes through the catalog env (default every 8th)
VALID_PLAY_IDS = slice(None, None, 6)

#: heldout tasks of random valid play (default every 20th)
RANDOM_PLAY_IDS = slice(None, 60, None)
