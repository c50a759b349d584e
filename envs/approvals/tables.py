"""Tables of the approvals domain, the desk policy text and small shared helpers.

Every snapshot holds these tables (rows are flat dicts keyed by a string ``id``):

``people``
    ``id`` (``EMP-1234``), ``name``, ``title``, ``department``, ``email``, ``manager_id``
    (``None`` at the top of the organisation).
``roles``
    ``id`` (``R-417``), ``name``, ``request_types`` (list of request types the role covers),
    ``amount_limit`` (cents: the largest amount the role may approve), ``level`` (seniority, 1..4).
``role_holders``
    ``id`` (``RH-0012``), ``person_id``, ``role_id``, ``valid_from`` (date, inclusive),
    ``valid_to`` (date, inclusive, ``None`` = open ended).
``delegations``
    ``id`` (``DLG-0007``), ``delegator_id``, ``delegate_id``, ``role_id``, ``valid_from`` and
    ``valid_to`` (dates, inclusive), ``cap`` (cents or ``None``: the largest amount the delegate
    may approve under it), ``revoked_at`` (ISO datetime or ``None``), ``reason``.
``rules``
    ``id`` (``RULE-204``), ``request_type``, ``min_amount`` / ``max_amount`` (cents, inclusive
    band; ``max_amount`` ``None`` for the top band), ``required_role_id`` and ``required_level``
    (the least senior role that may approve in the band), ``hard_limit`` (cents: above it the
    request is rejected), ``sod_not_requester``, ``sod_not_in_requester_line`` (separation of
    duties flags), ``required_fields`` (request fields that must be filled in).
``requests``
    ``id`` (``REQ-4821``), ``type``, ``amount`` (cents), ``currency``, ``requester_id``,
    ``beneficiary_account``, ``cost_center``, ``invoice_ref``, ``justification``, ``order_id``
    (order-type requests), ``submitted_at``, ``status`` (pending / approved / on_hold /
    rejected / escalated).
``decisions``
    ``id`` (``DEC-REQ-4821-1``), ``request_id``, ``outcome`` (proceed / hold / reject /
    escalate), ``approver_id``, ``basis_ids``, ``escalated_to``, ``note``, ``decided_at``.
``ledger_entries``
    ``id`` (``LE-REQ-4821-1``), ``request_id``, ``account``, ``amount``, ``memo``, ``posted_at``.
``orders``
    ``id`` (``PO-30117``), ``request_id``, ``supplier``, ``amount``, ``status``
    (awaiting_approval / released), ``released_at``.
``clock``
    one row ``{"id": "clock", "now": ISO datetime}``.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

#: The world's tables (every snapshot also has ``clock``), named by the ``Domain`` declaration.
TABLES = (
    "people", "roles", "role_holders", "delegations", "rules", "requests", "decisions",
    "ledger_entries", "orders",
)

#: Request types and where a proceed decision takes effect downstream.
LEDGER_TYPES = ("refund", "credit_adjustment", "write_off", "expense_claim")
ORDER_TYPES = ("purchase_order", "vendor_payment")
REQUEST_TYPES = LEDGER_TYPES + ORDER_TYPES

TYPE_LABELS = {
    "refund": "customer refund",
    "credit_adjustment": "credit adjustment",
    "write_off": "bad-debt write-off",
    "expense_claim": "expense claim",
    "purchase_order": "purchase order",
    "vendor_payment": "vendor payment",
}

#: Fields a rule may require on a request (``None`` or ``""`` counts as missing).
INFO_FIELDS = ("beneficiary_account", "cost_center", "invoice_ref", "justification")

DECISION_STATUS = {"proceed": "approved", "hold": "on_hold", "reject": "rejected", "escalate": "escalated"}
OPEN_STATUSES = ("pending", "on_hold")

#: The desk procedure, returned by ``get_rules`` (the agent's rules document).
POLICY = (
    "1. Find the rule for the request: same request type, min_amount <= amount <= max_amount "
    "(max_amount null = no upper bound; above every band, the top band).",
    "2. First check that the named approver may decide on the request at all. They may only if, "
    "at the time of the decision (now), they hold a role that covers the request type, whose "
    "level is at least the rule's required_level and whose amount_limit is at least the amount. "
    "The role is held either directly (a role assignment whose valid_from <= today <= valid_to, "
    "valid_to null = open; get_person lists a person's assignments) or by a delegation to them "
    "that is in effect now (valid_from <= today <= valid_to, not revoked at or before now, "
    "delegator still holding the role) and whose cap (if any) is at least the amount.",
    "3. Separation of duties: the approver may never be the requester; when the rule sets "
    "sod_not_in_requester_line, the approver may not report to the requester directly or "
    "indirectly (see reporting_line from get_person).",
    "4. If the approver may not decide (step 2 or 3): record nothing in their name; escalate the "
    "request to the rule's required_role_id, citing in basis_ids the rule id and the fact that "
    "blocks the approver: the request id when they are its requester; the requester's person id "
    "when they report to the requester; otherwise their delegation that is not in effect now "
    "(expired, not yet started, revoked, or its delegator no longer holds the role), else their "
    "assignment or delegation in effect whose role level, amount_limit or cap falls short, else "
    "their assignment or delegation that does not cover the request type or has ended. Cite "
    "nothing else.",
    "5. Otherwise the decision is the approver's: record it with their person id (approver_id), "
    "citing the rule id and the role assignment or delegation id that gives the authority. "
    "If the amount is above the rule's hard_limit, nobody may approve it: outcome 'reject'. "
    "Else, if a field listed in the rule's required_fields is empty on the request: outcome "
    "'hold'. Else outcome 'proceed'.",
    "6. Only after a 'proceed' is recorded, release the downstream effect: post_ledger_entry to "
    "the request's beneficiary_account for the full amount (refund, credit_adjustment, "
    "write_off, expense_claim) or release_order for the request's order (purchase_order, "
    "vendor_payment).",
    "7. Record exactly one decision (or one escalation) per request: a second decision, even a "
    "repeated one, is a mistake in the audit trail. Touch no other request.",
)


def today(now: str) -> str:
    """The date part (``YYYY-MM-DD``) of an ISO datetime."""
    return now[:10]


def add_days(day: str, n: int) -> str:
    """``day`` (ISO date) shifted by ``n`` days."""
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


@lru_cache(maxsize=1024)
def normalise_instant(value: str) -> str:
    """An ISO date or datetime as ``YYYY-MM-DDTHH:MM:SS`` (a date means its start).

    Raises ``ValueError`` when ``value`` is not a valid date or datetime. Pure, so remembered
    (the latest 1024 values): tools parse the same ``as_of`` over and over.
    """
    if len(value) == 10:
        return dt.date.fromisoformat(value).isoformat() + "T00:00:00"
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is not None:
        raise ValueError("use a naive ISO datetime (the desk clock has no time zone)")
    return parsed.replace(microsecond=0).isoformat()


def money(cents: int) -> str:
    """``EUR 12,345.67`` for an amount in cents."""
    return f"EUR {cents // 100:,}.{cents % 100:02d}"


def is_missing(value: object) -> bool:
    """A request field counts as missing when it is ``None`` or blank."""
    return value is None or (isinstance(value, str) and not value.strip())
