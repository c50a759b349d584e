"""Tables and the public refund rules of the refunds domain.

``requests``: one row per refund request (the task's target, the same customer's other requests,
other customers' requests)
    id                     ``REF-<5 digits>``
    customer               customer id (``CUS-<4 digits>``)
    order_id               the order the refund is asked on (``ORD-<5 digits>``)
    amount_cents           the amount the customer asks back
    paid_cents             what the customer paid for the order
    refunded_cents         what was refunded on the order already
    days_since_delivery    whole days since delivery
    status                 ``open``, ``approved`` or ``rejected``
    decided_amount_cents   the refund decided (``None`` while open)
``desk``: the one row ``desk``: this desk's rule values (restocking fee percent, from which day
the fee doubles and triples, the last day a refund is accepted); they differ from desk to desk.
``clock``: the one row ``{"id": "clock", "now": ...}``.

Rule-sharing policy: :func:`decide` and :func:`rule_entries` are the domain's public rule. The
generator (which writes the answer key), the oracle and the catalog may import them; the grader
compares the end state with the answer key and never imports the oracle's or the catalog's
decision code, and the oracle never imports the grader.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

TABLES = ("requests", "desk")

#: the documented rules (``get_rules``): each decides the answer of >= 20 tasks per split, which a
#: policy ignoring it proves (``RULE_POLICIES``)
RULES = ("cap", "restocking_fee", "late_fee", "late_window")

STATUS_OF_OUTCOME = {"approve": "approved", "reject": "rejected"}

Row = Mapping[str, Any]


def rule_entries(desk: Row) -> list[dict[str, Any]]:
    """The desk's rules as the entries of its rule document (``get_rules``), values included."""
    pct, double, triple, last = (int(desk[k]) for k in ("restocking_pct", "double_from", "triple_from", "last_day"))
    return [
        {"id": "cap", "title": "Refund at most what is left on the order",
         "text": "Approve the amount asked, capped at what the customer paid for the order minus what was already refunded on it."},
        {"id": "restocking_fee", "title": "Restocking fee", "value": pct,
         "text": f"Deduct a restocking fee of {pct} percent of the capped amount, rounded down to the cent (0 percent: no fee)."},
        {"id": "late_fee", "title": "Late returns pay more", "value": {"double_from": double, "triple_from": triple},
         "text": f"From day {double} after delivery the fee is twice the percent, from day {triple} three times the percent "
                 "(one multiplication, rounded down once)."},
        {"id": "late_window", "title": "Last day for a refund", "value": last,
         "text": f"More than {last} days after delivery, reject the request with amount_cents 0."},
    ]


def available_cents(row: Row) -> int:
    """What can still be refunded on the order: paid minus already refunded."""
    return int(row["paid_cents"]) - int(row["refunded_cents"])


def fee_multiple(days: int, desk: Row) -> int:
    """1, 2 or 3: the restocking fee's multiple on day ``days`` after delivery."""
    return 1 if days < int(desk["double_from"]) else 2 if days < int(desk["triple_from"]) else 3


def past_window(days: int, desk: Row) -> bool:
    return days > int(desk["last_day"])


def decide(row: Row, desk: Row, ignore: Collection[str] = ()) -> tuple[str, int]:
    """``(outcome, amount_cents)`` the desk's rules give for a request; ``ignore`` leaves rules of
    :data:`RULES` out (what the rule policies do to prove each one binds)."""
    days = int(row["days_since_delivery"])
    if "late_window" not in ignore and past_window(days, desk):
        return "reject", 0
    asked = int(row["amount_cents"])
    base = asked if "cap" in ignore else max(0, min(asked, available_cents(row)))
    pct = 0 if "restocking_fee" in ignore else int(desk["restocking_pct"])
    multiple = 1 if "late_fee" in ignore else fee_multiple(days, desk)
    return "approve", base - base * pct * multiple // 100
