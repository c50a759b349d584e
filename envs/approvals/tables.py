"""Tables of the approvals domain, the desk's rule document and small shared helpers.

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
    the amount bands (``get_rules``' ``tables.bands``): ``id`` (``BAND-204``), ``request_type``,
    ``min_amount`` / ``max_amount`` (cents, inclusive band; ``max_amount`` ``None`` for the top
    band), ``required_level`` (the least level of a role that may approve in the band),
    ``required_role_id`` (the least senior role that may approve every amount in it: where an
    escalation goes), ``hard_limit`` (cents: above it the request is rejected),
    ``sod_not_in_requester_line`` (separation of duties flag), ``required_fields`` (request
    fields that must be filled in).
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

#: The desk procedure, returned by ``get_rules`` as the rules of its rule document: one entry
#: per rule the agent applies, ``(id, title, text)``; the ids are ``Domain.rules`` and each is
#: proven to bind (``training.domains.approvals.policies.RULE_POLICIES``: the oracle ignoring it).
#: The bands (``rules`` rows) are the document's reference data (``tables.bands``).
#: The authority rules (role_type ... delegation_cap) are the checks of one assignment or
#: delegation, in this order (``rules.AUTHORITY_CHECKS``).
PROCEDURE = (
    ("band", "Find the band",
     "Find the request's band in tables.bands: the row of the request's type whose min_amount <= amount <= "
     "max_amount (max_amount null: no upper bound). Every decision and every escalation cites its id in basis_ids; "
     "its required_level, required_role_id, hard_limit, required_fields and sod_not_in_requester_line are the "
     "values the other rules read."),
    ("requester", "Not the requester",
     "The named approver may never decide on a request they requested themselves (the request's requester_id is "
     "their person id)."),
    ("reporting_line", "Not below the requester",
     "When the band sets sod_not_in_requester_line, the named approver may not decide if they report to the "
     "requester directly or indirectly (the requester's person id is in the approver's reporting_line, get_person)."),
    ("role_type", "The role covers the request type",
     "A role assignment or a delegation gives the approver authority only if its role's request_types include the "
     "request's type (list_roles)."),
    ("role_level", "The role is senior enough",
     "A role assignment or a delegation gives authority only if its role's level is at least the band's "
     "required_level."),
    ("role_limit", "The role's amount limit",
     "A role assignment or a delegation gives authority only if its role's amount_limit is at least the amount."),
    ("window", "In effect today",
     "A role assignment or a delegation gives authority only if valid_from <= today <= valid_to (dates inclusive; "
     "valid_to null: open-ended), today being the date of now, the desk clock (get_request returns it)."),
    ("revocation", "Not revoked",
     "A delegation gives authority only if it has no revoked_at at or before now."),
    ("delegator_holds", "The delegator still holds the role",
     "A delegation gives authority only while its delegator holds the delegated role now: the delegator is among "
     "the role's holders today (lookup_role_holders)."),
    ("delegation_cap", "The delegation's cap",
     "A delegation with a cap (not null) gives authority only for amounts up to its cap."),
    ("escalation", "Escalate when the approver may not decide",
     "The named approver may decide only if the rules requester and reporting_line allow it and at least one of "
     "their role assignments (get_person) or delegations received (lookup_delegations) passes every rule from "
     "role_type to delegation_cap. If they may not, record nothing in their name: escalate the request to the "
     "band's required_role_id (escalate). The hard limit and the required fields then play no part."),
    ("blocking_fact", "What an escalation cites",
     "An escalation cites in basis_ids the band id and the fact that keeps the approver from deciding, nothing "
     "else: the request id when they are its requester; else the requester's person id when the rule "
     "reporting_line stops them; else one of their role assignments or delegations received that fails exactly "
     "one of the rules role_type, role_level, role_limit, window, revocation, delegator_holds and delegation_cap "
     "(the one check that keeps it from giving authority); else, when none fails exactly one, their person id."),
    ("cite_authority", "A decision names its approver and their authority",
     "A decision the approver may take is recorded in their name (record_decision, approver_id = their person id) "
     "and cites in basis_ids the band id and the role assignment or delegation that gives them authority (each "
     "one that does, if several), nothing else."),
    ("hard_limit", "Above the hard limit: reject",
     "If the approver may decide and the amount is above the band's hard_limit, the outcome is 'reject', whatever "
     "else the request lacks."),
    ("required_fields", "A required field is empty: hold",
     "Otherwise, if a field listed in the band's required_fields is empty on the request (null or blank), the "
     "outcome is 'hold'; else it is 'proceed'. A field the band does not list may be empty."),
    ("release_after_proceed", "Release only after a proceed",
     "Only after a 'proceed' is recorded, release it once: post_ledger_entry to the request's beneficiary_account "
     "for the full amount (refund, credit_adjustment, write_off, expense_claim) or release_order of the request's "
     "order (purchase_order, vendor_payment). After a hold, a reject or an escalation nothing is released."),
    ("single_decision", "One decision per request",
     "Record exactly one decision or one escalation on the request (a second one, even a repeated one, is a "
     "mistake in the audit trail) and touch no other request."),
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
    """An amount as the agent reads it everywhere: integer cents (``1234567 cents``)."""
    return f"{cents} cents"


def is_missing(value: object) -> bool:
    """A request field counts as missing when it is ``None`` or blank."""
    return value is None or (isinstance(value, str) and not value.strip())
