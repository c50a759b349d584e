"""Every feature of every sufficiency tier, each a function of the desk
(:class:`~.desk.SufficiencyDesk`), registered once under each name a tier shows it by.

- the case: its reported status, clock, queue, round, requests and type (every tier);
- the clerk's assessment and the routing verdict (conclusions only): what is missing, what a
  held record can cover, whether the case is sufficient, which conditions the uncovered items
  fail, the amount against the senior threshold;
- the requirements' conditions per item slot (facts, raw);
- facts: per item slot and document slot (the item's newest documents) and per held-record slot,
  the row's flags and three comparisons (the name against the applicant's, the issue date
  against the review date, the age against the item's limit);
- raw: per-slot observed values only (day numbers, amounts, episode symbols of names, one-hot
  item slots), documents in 12 flat slots.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from backoffice.envs.sufficiency.rules import Assessment
from backoffice.envs.sufficiency.tables import INTAKE_QUEUE
from backoffice.training.catalog.base import scale
from backoffice.training.catalog.features import Features
from backoffice.training.domains.sufficiency.catalog.desk import (
    CASE_STATUSES,
    CASE_TYPES,
    CONDITIONS,
    N_DOCS,
    N_HELD,
    N_ITEM_DOCS,
    N_ITEMS,
    N_SYMBOLS,
    SufficiencyDesk,
    issued,
    normalised,
)

FEATURES: Features[SufficiencyDesk] = Features()

#: conclusions: items a case type requires (scale of the item counts)
ITEMS_FULL = 4.0
#: facts: age limits as days / AGE_SPAN (a value read from get_requirements)
AGE_SPAN = 400.0
#: raw: dates as ``(date - DATE_BASE) / DAY_SPAN``, day counts (age limits) as ``days / DAY_SPAN``
DATE_BASE = date(2024, 1, 1)
DAY_SPAN = 2048.0
#: raw: amounts in cents / AMOUNT_SPAN
AMOUNT_SPAN = 1_000_000.0


# -- the case (every tier) ----------------------------------------------------------------------
def _status_is(status: str) -> Any:
    def fn(desk: SufficiencyDesk) -> float:
        return float(desk.status == status)
    return fn


_STATUS_WORDS = {"in_review": "case_in_review", "awaiting_info": "case_awaiting_info", "released": "case_released"}
_STATUS_DOCS = {"in_review": "1 if the case's last reported status (get_case, request, wait, release) is in_review",
                "awaiting_info": "1 if the case's last reported status is awaiting_info (a request is outstanding)",
                "released": "1 if the case's last reported status is released"}
for _s in CASE_STATUSES:
    _fn = _status_is(_s)
    FEATURES.feature(_STATUS_WORDS[_s], _STATUS_DOCS[_s])(_fn)
    FEATURES.feature(f"case.status[{_s}]", f"1 if the case's last reported status (get_case, request, wait, release) is {_s}")(_fn)


@FEATURES.feature("clock_paused", "1 if the case's last reported SLA clock_state is paused")
@FEATURES.feature("case.clock_paused", "1 if the case's last reported SLA clock_state is paused")
@FEATURES.feature("case.clock[paused]", "1 if the case's last reported SLA clock_state is paused")
def clock_paused(desk: SufficiencyDesk) -> float:
    return float(desk.clock_state == "paused")


@FEATURES.feature("case.clock[running]", "1 if the case's last reported SLA clock_state is running")
def clock_running(desk: SufficiencyDesk) -> float:
    return float(desk.clock_state == "running")


@FEATURES.feature("routed", "1 if a route_case call on the case succeeded")
@FEATURES.feature("case.routed", "1 if a route_case call on the case succeeded")
def routed(desk: SufficiencyDesk) -> float:
    return float(desk.routed)


@FEATURES.feature("queue_standard", "1 if the case's queue as last reported (get_case, release, route) is the standard "
                                    "decision queue of its routing rule")
@FEATURES.feature("case.queue_standard", "1 if the case's queue as last reported is its routing rule's standard queue")
@FEATURES.feature("case.queue[standard]", "1 if the case's queue as last reported is its routing rule's standard queue "
                                          "(same entity)")
def queue_standard(desk: SufficiencyDesk) -> float:
    return float(desk.routing is not None and desk.queue == desk.routing.get("standard_queue"))


@FEATURES.feature("queue_senior", "1 if the case's queue as last reported is the senior decision queue of its routing rule")
@FEATURES.feature("case.queue_senior", "1 if the case's queue as last reported is its routing rule's senior queue")
@FEATURES.feature("case.queue[senior]", "1 if the case's queue as last reported is its routing rule's senior queue")
def queue_senior(desk: SufficiencyDesk) -> float:
    return float(desk.routing is not None and desk.queue == desk.routing.get("senior_queue"))


@FEATURES.feature("case.queue[intake]", f"1 if the case's queue as last reported is {INTAKE_QUEUE}")
def queue_intake(desk: SufficiencyDesk) -> float:
    return float(desk.queue == INTAKE_QUEUE)


@FEATURES.feature("n_requests", "successful request_items calls this episode / 4")
@FEATURES.feature("case.requests", "successful request_items calls this episode / 4")
def n_requests(desk: SufficiencyDesk) -> float:
    return scale(desk.n_requests, 4.0)


@FEATURES.feature("no_reply_expected", "1 if the last wait failed (no further reply before the end of the review period)")
@FEATURES.feature("case.wait_refused", "1 if a wait on the awaited case returned an error (the tool says no further "
                                       "reply is expected before the end of the review period)")
def no_reply(desk: SufficiencyDesk) -> float:
    return float(desk.no_reply)


@FEATURES.feature("review_round", "replies received (the case's review_round as last reported) / 4")
@FEATURES.feature("case.review_round", "replies received (the case's review_round as last reported) / 4")
def review_round(desk: SufficiencyDesk) -> float:
    return scale(desk.review_round, 4.0)


def _case_type_is(case_type: str) -> Any:
    def fn(desk: SufficiencyDesk) -> float:
        return float(desk.case is not None and desk.case.get("case_type") == case_type)
    return fn


for _t in CASE_TYPES:
    _fn = _case_type_is(_t)
    FEATURES.feature(f"case_type[{_t}]", f"1 if the case type is {_t}")(_fn)
    FEATURES.feature(f"case.type[{_t}]", f"1 if the case type is {_t}")(_fn)


@FEATURES.feature("held_records.more_pages", "1 if the last search_held_records page returned a next_cursor")
def held_more_pages(desk: SufficiencyDesk) -> float:
    return float(desk.held_cursor is not None)


@FEATURES.feature("documents.more_pages", "1 if the last list_documents page returned a next_cursor")
def documents_more_pages(desk: SufficiencyDesk) -> float:
    return float(desk.documents_cursor is not None)


# -- the assessment (conclusions) ------------------------------------------------------------
def _fails(a: Assessment, item: str, condition: str) -> bool:
    """Whether an uncovered item's documents fail ``condition`` (a document dated after the review
    date counts as failing ``age``: the feature is about the document's date)."""
    failed = a.failures.get(item, ())
    return condition in failed or (condition == "age" and "not_after_review_date" in failed)


_ASSESSMENT = (
    ("assessed", "1 if the requirements, the held records and the documents have all been read "
                 "(the assessment features below are 0 until then)"),
    ("any_missing", "1 if an item is missing: no valid document on the case and no valid held record, "
                    "on the last reported date"),
    ("n_missing", "missing items / 4"),
    ("any_satisfiable", "1 if an item lacks a valid document but a held record not yet attached "
                        "meets its conditions (and the item accepts held records)"),
    ("n_satisfiable", "satisfiable-from-held-record items / 4"),
    ("n_satisfied", "items with a valid document on the case / 4"),
    ("sufficient", "1 if assessed and every required item has a valid document on the case"),
    *((f"fail_{c}", f"uncovered items (missing or satisfiable) whose documents fail `{c}` / 4 "
                    f"(presence: no document of that item)") for c in CONDITIONS),
)


@FEATURES.block(_ASSESSMENT)
def assessment(desk: SufficiencyDesk) -> tuple[float, ...]:
    a = desk.assessment()
    if a is None:
        return (0.0,) * len(_ASSESSMENT)
    uncovered = [*a.missing_items, *sorted(a.satisfiable_from_records)]
    return (1.0, float(bool(a.missing_items)), scale(len(a.missing_items), ITEMS_FULL),
            float(bool(a.satisfiable_from_records)), scale(len(a.satisfiable_from_records), ITEMS_FULL),
            scale(len(a.satisfied_items), ITEMS_FULL), float(a.sufficient),
            *(scale(sum(_fails(a, i, c) for i in uncovered), ITEMS_FULL) for c in CONDITIONS))


@FEATURES.block((("amount_vs_threshold", "+1 if the case amount is at or above the senior threshold of its routing "
                                         "rule, -1 if below, 0 before both were read"),
                 ("amount_ratio", "case amount / senior threshold, / 2 (0 before both were read)")))
def amount_verdict(desk: SufficiencyDesk) -> tuple[float, float]:
    if desk.case is None or desk.routing is None:
        return 0.0, 0.0
    amount = float(desk.case.get("amount_cents") or 0)
    threshold = float(desk.routing.get("senior_threshold_cents") or 0)
    return 1.0 if amount >= threshold else -1.0, scale(amount / threshold, 2.0) if threshold > 0 else 0.0


@FEATURES.feature("n_held_records", "held records found for the applicant / 4")
def n_held_records(desk: SufficiencyDesk) -> float:
    return scale(len(desk.held) if desk.held is not None else None, 4.0)


@FEATURES.feature("n_documents", "documents known on the case (listed, attached, uploaded) / 10")
def n_documents(desk: SufficiencyDesk) -> float:
    return scale(len(desk.documents) if desk.documents is not None else None, 10.0)


# -- the requirements per item slot (facts, raw) --------------------------------------------------
_ITEM = (
    ("item[{i}].present", "1 if get_requirements lists an {i}-th item"),
    ("item[{i}].has_age_limit", "1 if the {i}-th item has a max_age_days"),
    ("item[{i}].signature_required", "the {i}-th item's signature_required"),
    ("item[{i}].name_must_match", "the {i}-th item's name_must_match"),
    ("item[{i}].accept_held_record", "the {i}-th item's accept_held_record"),
)


@FEATURES.block_family(_ITEM, N_ITEMS)
def item(desk: SufficiencyDesk, i: int) -> tuple[float, ...]:
    req = desk.requirement(i) if i < N_ITEMS else None
    if req is None:
        return (0.0,) * len(_ITEM)
    return (1.0, float(req.get("max_age_days") is not None), float(bool(req.get("signature_required"))),
            float(bool(req.get("name_must_match"))), float(bool(req.get("accept_held_record"))))


def _max_age(span: float) -> Any:
    def fn(desk: SufficiencyDesk, i: int) -> float:
        req = desk.requirement(i)
        return scale(req["max_age_days"], span) if req is not None and req.get("max_age_days") is not None else 0.0
    return fn


FEATURES.family("facts:item[{i}].max_age_days", N_ITEMS, f"the {{i}}-th item's max_age_days / {AGE_SPAN:g} (0 without a "
                                                          f"limit)")(_max_age(AGE_SPAN))
FEATURES.family("raw:item[{i}].max_age_days", N_ITEMS, f"the {{i}}-th item's max_age_days / {DAY_SPAN:g} (the date unit; "
                                                        f"0 without a limit)")(_max_age(DAY_SPAN))


# -- facts: comparisons per row ------------------------------------------------------------------
def comparisons(desk: SufficiencyDesk, row: Mapping[str, Any], req: Mapping[str, Any] | None) -> tuple[float, float, float]:
    """``name_equal_applicant``, ``issued_by_review_date`` and ``within_age_limit`` of ``row`` (a
    document or a held record) against its item's requirement ``req``."""
    today, day = desk.today(), issued(row)
    age = (today - day).days if today is not None and day is not None else None
    max_age = req.get("max_age_days") if req is not None else None
    applicant = desk.applicant()
    name_equal = applicant is not None and normalised(row.get("name_on_document")) == applicant
    return (float(name_equal), float(age is not None and age >= 0),
            float(req is not None and age is not None and (max_age is None or age <= int(max_age))))


_DOC_FACTS = (
    ("present", "1 if the {i}-th item has a {j}-th document on the case (its newest 5 documents, oldest first)"),
    ("legible", "the document's legible flag"),
    ("signed", "the document's signed flag"),
    ("from_held_record", "1 if the document's source is held_record (attached from a held record)"),
    ("name_equal_applicant", "1 if the name on the document equals the applicant's name (letter case and runs of "
                             "spaces aside)"),
    ("issued_by_review_date", "1 if the document was issued on or before the review date (the last reported now)"),
    ("within_age_limit", "1 if the document's age on the review date (days since issue) is at most the item's "
                         "max_age_days (1 when the item has no age limit)"),
)


_NO_DOCUMENT = (0.0,) * len(_DOC_FACTS)


@FEATURES.block_family(tuple((f"item[{{i}}].doc[{j}].{n}", d.replace("{j}", str(j))) for j in range(N_ITEM_DOCS)
                             for n, d in _DOC_FACTS), N_ITEMS)
def item_documents(desk: SufficiencyDesk, i: int) -> tuple[float, ...]:
    """Item slot ``i``'s newest documents (document slot ``j`` is the ``j``-th of them, oldest
    first): each one's flags and comparisons."""
    docs = desk.docs_by_item().get(i, [])[-N_ITEM_DOCS:]
    req = desk.requirement(i)
    out: list[float] = []
    for d in docs:
        out += (1.0, float(bool(d.get("legible"))), float(bool(d.get("signed"))), float(d.get("source") == "held_record"),
                *comparisons(desk, d, req))
    return (*out, *_NO_DOCUMENT * (N_ITEM_DOCS - len(docs)))


_HELD_FACTS = (
    ("held[{i}].present", "1 if search_held_records returned an {i}-th record"),
    *((f"held[{{i}}].item[{k}]", f"1 if the {{i}}-th held record is of the {k}-th required item's type") for k in range(N_ITEMS)),
    ("held[{i}].item_not_required", "1 if the {i}-th held record's item type is none of the required items"),
    ("held[{i}].legible", "the record's legible flag"),
    ("held[{i}].signed", "the record's signed flag"),
    ("held[{i}].name_equal_applicant", "1 if the name on the record equals the applicant's name (letter case and runs "
                                       "of spaces aside)"),
    ("held[{i}].issued_by_review_date", "1 if the record was issued on or before the review date"),
    ("held[{i}].within_age_limit", "1 if the record's age on the review date is at most its item's max_age_days (1 "
                                   "when the item has no age limit; 0 when its item is not required)"),
    ("held[{i}].attached", "1 if the record is on the case (attached this episode, or a document on the case cites it)"),
)


@FEATURES.block_family(tuple((f"facts:{n}", d) for n, d in _HELD_FACTS), N_HELD)
def held_facts(desk: SufficiencyDesk, h: int) -> tuple[float, ...]:
    r = desk.held_record(h)
    if r is None:
        return (0.0,) * len(_HELD_FACTS)
    i = desk.item_slots().get(r.get("item_type"))
    return (1.0, *(float(i == k) for k in range(N_ITEMS)), float(i is None), float(bool(r.get("legible"))),
            float(bool(r.get("signed"))), *comparisons(desk, r, desk.requirement(i) if i is not None else None),
            float(desk.is_attached(r)))


@FEATURES.feature("case.amount_ge_senior_threshold", "1 if the case's amount_cents is at or above its routing rule's "
                                                     "senior_threshold_cents (0 before both were read)")
def amount_ge_threshold(desk: SufficiencyDesk) -> float:
    amount = (desk.case or {}).get("amount_cents")
    threshold = (desk.routing or {}).get("senior_threshold_cents")
    return float(amount is not None and threshold is not None and amount >= threshold)


# -- raw: observed values per slot ----------------------------------------------------------------
def day_value(day: date | None) -> float:
    return scale((day - DATE_BASE).days, DAY_SPAN) if day is not None else 0.0


@FEATURES.feature("case.amount", f"the case's amount_cents / {AMOUNT_SPAN:g}")
def case_amount(desk: SufficiencyDesk) -> float:
    return scale((desk.case or {}).get("amount_cents"), AMOUNT_SPAN)


@FEATURES.feature("case.senior_threshold", f"the routing rule's senior_threshold_cents / {AMOUNT_SPAN:g}")
def senior_threshold(desk: SufficiencyDesk) -> float:
    return scale((desk.routing or {}).get("senior_threshold_cents"), AMOUNT_SPAN)


@FEATURES.feature("case.review_date", f"the review date (the last reported now): days since {DATE_BASE.isoformat()} / "
                                      f"{DAY_SPAN:g}")
def review_date(desk: SufficiencyDesk) -> float:
    return day_value(desk.today())


@FEATURES.feature("case.applicant_name", f"the applicant's name: its episode symbol / {N_SYMBOLS}")
def applicant_name(desk: SufficiencyDesk) -> float:
    return desk.symbol((desk.case or {}).get("applicant_name")) if desk.case else 0.0


def _row_raw(what: str, last: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (
        ("present", f"1 if there is a {{i}}-th {what}"),
        *((f"item[{k}]", f"1 if the {{i}}-th {what} is of the {k}-th required item's type") for k in range(N_ITEMS)),
        ("item_not_required", f"1 if the {{i}}-th {what}'s item type is none of the required items"),
        ("issued_on", f"its issue date: days since {DATE_BASE.isoformat()} / {DAY_SPAN:g}"),
        ("signed", "its signed flag"),
        ("legible", "its legible flag"),
        ("name", f"the name on it: the episode symbol of the name (k-th distinct name seen) / {N_SYMBOLS}"),
        last,
    )


def _raw_row(desk: SufficiencyDesk, r: Mapping[str, Any], last: float) -> tuple[float, ...]:
    """A document's or held record's raw block (its last value is ``last``)."""
    i = desk.item_slots().get(r.get("item_type"))
    return (1.0, *(float(i == k) for k in range(N_ITEMS)), float(i is None), day_value(issued(r)),
            float(bool(r.get("signed"))), float(bool(r.get("legible"))), desk.symbol(r.get("name_on_document")), last)


_DOC_RAW = _row_raw("document on the case", ("source_held_record", "1 if its source is held_record (attached from a held "
                                                                   "record)"))
_HELD_RAW = _row_raw("held record", ("attached", "1 if the record is on the case (a same-entity fact: attached this "
                                                 "episode, or a document on the case cites it)"))


@FEATURES.block_family(tuple((f"doc[{{i}}].{n}", d) for n, d in _DOC_RAW), N_DOCS)
def raw_document(desk: SufficiencyDesk, k: int) -> tuple[float, ...]:
    docs = desk.documents or ()
    if k >= min(len(docs), N_DOCS):
        return (0.0,) * len(_DOC_RAW)
    d = docs[k]
    return _raw_row(desk, d, float(d.get("source") == "held_record"))


@FEATURES.block_family(tuple((f"raw:held[{{i}}].{n}", d) for n, d in _HELD_RAW), N_HELD)
def raw_held(desk: SufficiencyDesk, k: int) -> tuple[float, ...]:
    r = desk.held_record(k)
    if r is None:
        return (0.0,) * len(_HELD_RAW)
    return _raw_row(desk, r, float(desk.is_attached(r)))


__all__ = ["AGE_SPAN", "AMOUNT_SPAN", "DATE_BASE", "DAY_SPAN", "FEATURES", "ITEMS_FULL"]
