"""The sufficiency tiers as declarations over the registries (:mod:`.features`, :mod:`.actions`).

Every tier plays the same episode: read the case, its type's requirements, the applicant's held
records and the case's documents (every page); attach held records that cover a gap, request what
is missing, wait for the reply and resume the clock, release the case and route it by the senior
threshold. The tiers differ in what they compute for the agent:

- ``conclusions``: the clerk's assessment (what is missing, what a held record can cover, whether
  the case is sufficient, which conditions the uncovered items fail) and the routing verdict;
  ``attach_held_record`` attaches "the first valid held record of the first item a held record
  can cover", ``request_missing`` asks for "exactly the items still missing".
- ``facts``: observed facts and plain comparisons only. Per item slot the requirement's conditions
  as read; per item slot and document slot (the item's newest 5 documents) the document's flags
  and three comparisons (its name equals the applicant's, it was issued by the review date, its
  age is within its item's limit); per held-record slot its item slot, its flags, the same
  comparisons and whether it is attached. No "satisfied / satisfiable / missing" flag, no count,
  no "sufficient": combining them, and choosing attach / request / release, is the agent's.
  ``attach_held_record[h]`` attaches the ``h``-th listed held record, ``request_items[S]`` asks
  for the items of the item slots in ``S``.
- ``raw``: per-slot observed values only: day numbers for dates (the age limit in the same unit),
  amounts, episode symbols for names (two names are the same exactly when their symbols are
  equal), one-hot categories, documents in 12 flat slots, not grouped by item. The same actions
  as ``facts``.
"""

from __future__ import annotations

from backoffice.training.catalog.features import Feature
from backoffice.training.catalog.tier import Hyper, Tier, two_envs
from backoffice.training.domains.sufficiency.catalog.actions import subset_name
from backoffice.training.domains.sufficiency.catalog.desk import (
    CASE_STATUSES,
    CASE_TYPES,
    CONDITIONS,
    N_DOCS,
    N_HELD,
    N_ITEM_DOCS,
    N_ITEMS,
    READS,
    SUBSETS,
)
from backoffice.training.domains.sufficiency.catalog.feature_policies import conclusions_policy, facts_policy, raw_policy
from backoffice.training.domains.sufficiency.catalog.features import FEATURES


def shown(prefix: str, names: tuple[str, ...]) -> tuple[Feature, ...]:
    """The registry's ``prefix:<name>`` features shown as ``<name>`` (a name two tiers give two
    different values: the facts and raw tiers' age limits and held-record slots)."""
    return tuple(FEATURES.shown_as(n, f"{prefix}:{n}") for n in names)


_HYPER = {
    "gamma": Hyper(0.95, "a shorter horizon: a short procedure whose reward comes within a few calls"),
    "finish_bias": Hyper(-2.0, "a milder finishing prior: the procedure is short, and a stronger one delayed the release"),
    "reward_mode": Hyper("progress", "the grade asks for requests, replies waited for and reviewed before a decision: "
                                     "the progress reward pays each step towards them"),
}
#: the feature policies' longest episode is 14 (conclusions) or 18 calls; ~3x leaves room, and
#: a shorter limit made route_standard/route_senior loops pay (terminal shaping at truncation)
MAX_STEPS = 40

_ACTIONS_OF_TIERS = (
    *READS, *(f"attach_held_record[{h}]" for h in range(N_HELD)), *(subset_name(s) for s in SUBSETS),
    "wait", "resume_clock", "release_case", "route_standard", "route_senior", "submit",
)
_CASE = (
    *(f"case.status[{s}]" for s in CASE_STATUSES), "case.routed", "case.wait_refused", "case.review_round", "case.requests",
    *(f"case.type[{t}]" for t in CASE_TYPES), "held_records.more_pages", "documents.more_pages",
)
_ITEMS = tuple(f"item[{i}].{n}" for i in range(N_ITEMS)
               for n in ("present", "has_age_limit", "signature_required", "name_must_match", "accept_held_record"))
_MAX_AGE = tuple(f"item[{i}].max_age_days" for i in range(N_ITEMS))
_HELD_FIELDS = ("present", *(f"item[{k}]" for k in range(N_ITEMS)), "item_not_required")

CONCLUSIONS = Tier(
    name="conclusions",
    features=(
        "case_in_review", "case_awaiting_info", "case_released", "clock_paused", "routed", "queue_standard", "queue_senior",
        "assessed", "any_missing", "n_missing", "any_satisfiable", "n_satisfiable", "n_satisfied", "sufficient",
        *(f"fail_{c}" for c in CONDITIONS), "amount_vs_threshold", "amount_ratio", "n_requests", "no_reply_expected",
        "review_round", "n_held_records", "n_documents", *(f"case_type[{t}]" for t in CASE_TYPES),
    ),
    actions=(*READS, "attach_held_record", "request_missing", "wait", "resume_clock", "release_case", "route_standard",
             "route_senior", "submit"),
    hyperparams=_HYPER,
    max_steps=MAX_STEPS,
    feature_policy=conclusions_policy,
)

FACTS = Tier(
    name="facts",
    features=(
        *_CASE, "case.clock_paused", "case.queue_standard", "case.queue_senior", "case.amount_ge_senior_threshold",
        *_ITEMS, *shown("facts", _MAX_AGE),
        *(f"item[{i}].doc[{j}].{n}" for i in range(N_ITEMS) for j in range(N_ITEM_DOCS)
          for n in ("present", "legible", "signed", "from_held_record", "name_equal_applicant", "issued_by_review_date",
                    "within_age_limit")),
        *shown("facts", tuple(f"held[{h}].{n}" for h in range(N_HELD)
                              for n in (*_HELD_FIELDS, "legible", "signed", "name_equal_applicant", "issued_by_review_date",
                                        "within_age_limit", "attached"))),
    ),
    actions=_ACTIONS_OF_TIERS,
    hyperparams=_HYPER,
    max_steps=MAX_STEPS,
    feature_policy=facts_policy,
    slot_actions={"attach_held_record": "held"},
    slot_sets=("item",),
)

RAW = Tier(
    name="raw",
    features=(
        *_CASE, "case.clock[running]", "case.clock[paused]", "case.queue[intake]", "case.queue[standard]",
        "case.queue[senior]", "case.amount", "case.senior_threshold", "case.review_date", "case.applicant_name",
        *_ITEMS, *shown("raw", _MAX_AGE),
        *(f"doc[{k}].{n}" for k in range(N_DOCS)
          for n in (*_HELD_FIELDS, "issued_on", "signed", "legible", "name", "source_held_record")),
        *shown("raw", tuple(f"held[{k}].{n}" for k in range(N_HELD)
                            for n in (*_HELD_FIELDS, "issued_on", "signed", "legible", "name", "attached"))),
    ),
    actions=_ACTIONS_OF_TIERS,
    hyperparams={**_HYPER, **two_envs(256)},
    max_steps=MAX_STEPS,
    feature_policy=raw_policy,
)

__all__ = ["CONCLUSIONS", "FACTS", "MAX_STEPS", "RAW"]
