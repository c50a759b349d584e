"""Tables, the requirement catalogue and the routing rules of the sufficiency desk.

Tables of a snapshot (every row a flat dict with a string ``id``):

``cases``
    ``id`` (``CASE-40213``), ``case_type``, ``applicant_id``, ``applicant_name``, ``amount_cents``,
    ``status`` (``in_review`` / ``awaiting_info`` / ``released``), ``queue``, ``clock_state``
    (``running`` / ``paused``), ``opened_on``, ``sla_due_on``, ``paused_at`` (ISO time or ``None``),
    ``review_round`` (replies received so far), ``released_at``.
``requirements``
    One row per (case type, item type): ``case_type``, ``item_type``, ``label``, ``max_age_days``
    (``None``: no age limit), ``signature_required``, ``name_must_match``, ``accept_held_record``.
``routing_rules``
    One row per case type (``id`` = case type): ``standard_queue``, ``senior_queue``,
    ``senior_threshold_cents`` (amounts at or above it go to the senior queue).
``queues``
    Every queue a case may sit in: ``id``, ``description``.
``documents``
    Documents on a case: ``case_id``, ``item_type``, ``issued_on``, ``signed``,
    ``name_on_document``, ``legible``, ``source`` (``applicant`` / ``held_record``),
    ``held_record_id``, ``received_at``, ``review_round`` (the review round it joined the case).
``held_records``
    Records the organisation already holds about an applicant: ``applicant_id``, ``item_type``,
    ``issued_on``, ``signed``, ``name_on_document``, ``legible``, ``source_system``.
``item_requests``
    Requests sent to applicants: ``case_id``, ``items``, ``requested_at``, ``review_round``,
    ``status`` (``open`` / ``answered``), ``answered_at``, ``message``.
``notes``
    Case notes: ``case_id``, ``author``, ``written_at``, ``text``.
``_events`` (never returned whole)
    Scripted applicant replies: ``case_id``, ``seq``, ``at``, ``delivered``, ``message``.
``_uploads`` (never returned whole)
    The documents each scripted reply uploads: ``event_id``, ``item_type``, ``issued_on``,
    ``signed``, ``name_on_document``, ``legible``.
``clock``
    One row ``{"id": "clock", "now": ISO time}``.
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache
from typing import Any

#: The world's tables (every snapshot also has ``clock``), named by the ``Domain`` declaration.
TABLES = (
    "cases", "requirements", "routing_rules", "queues", "documents", "held_records",
    "item_requests", "notes", "_events", "_uploads",
)

CASE_STATUSES = ("in_review", "awaiting_info", "released")
CLOCK_STATES = ("running", "paused")
INTAKE_QUEUE = "intake"
SLA_DAYS = 20

#: (item_type, label, max_age_days, signature_required, name_must_match, accept_held_record)
Item = tuple[str, str, int | None, bool, bool, bool]

CASE_TYPES: dict[str, dict[str, Any]] = {
    "income_support_claim": {
        "label": "income support claim",
        "items": [
            ("identity_document", "Photo identity document (passport or driving licence)", None, False, True, True),
            ("proof_of_address", "Proof of address (utility bill or council tax letter)", 90, False, True, True),
            ("bank_statement", "Bank statement of the account benefits are paid into", 60, False, True, True),
            ("signed_declaration", "Declaration of circumstances signed by the applicant", 30, True, True, False),
        ],
        "routing": ("support_decision", "support_senior", 250_000),
    },
    "housing_application": {
        "label": "housing application",
        "items": [
            ("identity_document", "Photo identity document (passport or driving licence)", None, False, True, True),
            ("proof_of_income", "Proof of income (payslip or benefit award letter)", 60, False, True, True),
            ("tenancy_agreement", "Current tenancy agreement signed by the applicant", 365, True, True, False),
            ("landlord_reference", "Reference signed by the current landlord", 180, True, False, False),
        ],
        "routing": ("housing_decision", "housing_senior", 150_000),
    },
    "disability_claim": {
        "label": "disability claim",
        "items": [
            ("identity_document", "Photo identity document (passport or driving licence)", None, False, True, True),
            ("medical_certificate", "Medical certificate signed by a clinician", 90, True, True, False),
            ("consent_form", "Consent to share medical information, signed by the applicant", 365, True, True, False),
            ("bank_details", "Bank details form or letter from the bank", 365, False, True, True),
        ],
        "routing": ("disability_decision", "disability_senior", 400_000),
    },
}

QUEUE_DESCRIPTIONS: dict[str, str] = {
    INTAKE_QUEUE: "Document review before a case is released for decision",
    "support_decision": "Income support decisions below the senior threshold",
    "support_senior": "Income support decisions at or above the senior threshold",
    "housing_decision": "Housing decisions below the senior threshold",
    "housing_senior": "Housing decisions at or above the senior threshold",
    "disability_decision": "Disability decisions below the senior threshold",
    "disability_senior": "Disability decisions at or above the senior threshold",
    "fraud_review": "Suspected fraud (only on a fraud officer's instruction)",
}

#: The desk's rules as ``get_requirements`` shows them (one rule document entry each): every one
#: decides the right end state of >= 20 tasks per split, which a policy ignoring only it proves
#: (``RULE_POLICIES``); ``RULES`` are their ids, the domain's documented rules.
RULE_ENTRIES: tuple[dict[str, str], ...] = (
    {"id": "presence", "title": "Every required item covered",
     "text": "A case is sufficient when every item its case type requires is covered by at least one valid document "
             "on the case: a document of that item type that meets the item's conditions below."},
    {"id": "legibility", "title": "Legible", "text": "A document is valid only if it is legible."},
    {"id": "signature", "title": "Signed where required",
     "text": "If the item requires a signature (signature_required), the document must be signed."},
    {"id": "name_match", "title": "The applicant's name",
     "text": "If the item requires a name match (name_must_match), the name on the document must match the applicant's "
             "name, letter case and extra spaces aside."},
    {"id": "age", "title": "Not too old",
     "text": "If the item has an age limit (max_age_days), the document must have been issued no more than that many "
             "days before the review date (the clock's current date)."},
    {"id": "not_after_review_date", "title": "Not dated after the review",
     "text": "A document issued after the review date is not valid, whatever the item's age limit."},
    {"id": "held_record_acceptance", "title": "Held records where accepted",
     "text": "A record the organisation already holds may cover an item only if the item accepts held records "
             "(accept_held_record)."},
    {"id": "held_record_validity", "title": "Held records meet the same conditions",
     "text": "A held record covers an item only if it meets the item's conditions, as a document would."},
    {"id": "use_held_records", "title": "Use what we hold",
     "text": "Cover an item with a held record that may cover it (attach_held_record) rather than asking the applicant for it."},
    {"id": "attach_only_uncovered", "title": "Attach only what covers a gap",
     "text": "Attach a held record only if it covers an item not yet covered."},
    {"id": "request_only_uncovered", "title": "Ask only for what is missing",
     "text": "Request from the applicant only the items that are still not covered."},
    {"id": "one_request_per_review", "title": "One request per review",
     "text": "Send one request per review, naming every item still not covered."},
    {"id": "sla_pause_resume", "title": "The SLA clock",
     "text": "A request pauses (stops) the SLA clock until the reply has been received; then resume_clock restarts it "
             "and moves the SLA due date by the days it was paused."},
    {"id": "wait_for_replies", "title": "Wait for every reply",
     "text": "Wait for every reply the applicant is expected to send (wait)."},
    {"id": "review_each_reply", "title": "Each reply is a new review",
     "text": "Each reply is a new review: assess the case again with the documents it brought."},
    {"id": "review_on_new_date", "title": "Review on the reply's date",
     "text": "A review after a reply is made on the reply's date (the new review date)."},
    {"id": "routing_threshold", "title": "Release and route",
     "text": "Release a sufficient case (release_case) and route it once to its case type's decision queue: the senior "
             "queue when the amount is above the senior threshold (routing.senior_threshold_cents), the standard queue "
             "when it is below."},
    {"id": "threshold_inclusive", "title": "At the threshold",
     "text": "An amount exactly at the senior threshold goes to the senior queue."},
)
RULES = tuple(r["id"] for r in RULE_ENTRIES)


def requirement_rows() -> list[dict[str, Any]]:
    """The ``requirements`` table (the same in every snapshot)."""
    rows = []
    for case_type in sorted(CASE_TYPES):
        for item_type, label, max_age, sig, name, held in CASE_TYPES[case_type]["items"]:
            rows.append({
                "id": f"REQ-{case_type}-{item_type}", "case_type": case_type, "item_type": item_type,
                "label": label, "max_age_days": max_age, "signature_required": sig,
                "name_must_match": name, "accept_held_record": held,
            })
    return rows


def routing_rows() -> list[dict[str, Any]]:
    """The ``routing_rules`` table (the same in every snapshot)."""
    return [
        {"id": ct, "standard_queue": spec["routing"][0], "senior_queue": spec["routing"][1],
         "senior_threshold_cents": spec["routing"][2]}
        for ct, spec in sorted(CASE_TYPES.items())
    ]


def queue_rows() -> list[dict[str, Any]]:
    """The ``queues`` table (the same in every snapshot)."""
    return [{"id": q, "description": d} for q, d in sorted(QUEUE_DESCRIPTIONS.items())]


def decision_queue(routing: dict[str, Any], amount_cents: int) -> str:
    """The decision queue a released case belongs in under its routing rule."""
    if amount_cents >= routing["senior_threshold_cents"]:
        return routing["senior_queue"]
    return routing["standard_queue"]


# -- dates ------------------------------------------------------------------------------------
# Pure functions of a few thousand distinct dates, called on every tool step and grade: cached.
@lru_cache(maxsize=8192)
def parse_day(value: str) -> date:
    """``YYYY-MM-DD`` (or the date part of an ISO time) as a date."""
    return date.fromisoformat(value[:10])


@lru_cache(maxsize=8192)
def day_number(value: str) -> int:
    """The proleptic ordinal of the date of ``value`` (``YYYY-MM-DD`` or an ISO time): the
    difference of two is the whole days between them."""
    return parse_day(value).toordinal()


@lru_cache(maxsize=8192)
def add_days(day: str, n: int) -> str:
    """The ISO date ``n`` days after (before, if negative) the date of ``day``."""
    return (parse_day(day) + timedelta(days=n)).isoformat()


def days_between(earlier: str, later: str) -> int:
    """Whole days from the date of ``earlier`` to the date of ``later``."""
    return day_number(later) - day_number(earlier)


def case_number(case_id: str) -> str:
    """``CASE-40213`` -> ``40213`` (the number other ids of the case carry)."""
    return case_id.split("-", 1)[1] if "-" in case_id else case_id
