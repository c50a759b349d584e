"""The refunds generator: a desk, a customer's refund requests, and the request to decide.

The defect tag names the right answer's class (the fee once, twice or three times, no fee, or
a rejection past the last day) and its trap (the cap, a boundary day, the rounding); tags are
dealt equally often, so a class holds as many tasks as it has tags (``TAGS``: the fee once
4/12, twice 3/12, three times 3/12, reject 1/12, no fee 1/12). The world is drawn around the
answer: the request's numbers come from one distribution whatever the class, and the desk's
rule values (fee percent, the days from which the fee doubles and triples, the last day) are
fitted to them. So nothing an agent reads before the rules (the brief, the customer's requests)
tells the class; the desk's rules decide it. A capped request (more asked than is left on the
order) is as likely in each class that has one.

The request stands at a uniform place among the customer's 2-4 requests (ids are drawn, and
lists are in id order), each on another order: the brief names the order, so picking by
position passes about one time in three. At ``scale`` k other customers' requests are added
(the task, its scale-1 rows and its key unchanged).
"""

from __future__ import annotations

import random
from typing import Any

from backoffice.envs.core import Generated, retrying
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.refunds.tables import available_cents, decide, fee_multiple

#: defect tag -> (the right answer's class, the request asks more than is left, the trap's day):
#: ``"double"`` / ``"triple"``: delivered exactly on the day the fee doubles / triples, ``"before"``:
#: the day before it doubles; ``None``: any day of the class
TAGS: dict[str, tuple[str, bool, str | None]] = {
    "clean": ("fee", False, None),
    "over_refund": ("fee", True, None),
    "fee_rounding": ("fee", False, None),
    "day_before_double": ("fee", False, "before"),
    "late_double": ("double_fee", False, None),
    "late_double_capped": ("double_fee", True, None),
    "double_from_today": ("double_fee", False, "double"),
    "late_triple": ("triple_fee", False, None),
    "late_triple_capped": ("triple_fee", True, None),
    "triple_from_today": ("triple_fee", False, "triple"),
    "past_last_day": ("reject_late", False, None),
    "fee_waived": ("no_fee", False, None),
}
DEFECT_TAGS = tuple(TAGS)
ALLOWED_TOOLS = ["get_rules", "list_requests", "get_request", "decide_refund", "submit"]
PCTS = (4, 5, 6, 8, 10, 12, 15, 20, 25)
MIN_REFUND = 500

Row = dict[str, Any]


def answer_class(row: Row, desk: Row) -> str:
    """The class the desk's rules give a request (the check that the world says what the key says)."""
    outcome, _ = decide(row, desk)
    if outcome == "reject":
        return "reject_late"
    if int(desk["restocking_pct"]) == 0:
        return "no_fee"
    return ("fee", "double_fee", "triple_fee")[fee_multiple(int(row["days_since_delivery"]), desk) - 1]


def _request(rng: random.Random, rid: str, customer: str, order: str, over: bool) -> Row:
    paid = rng.randint(2_000, 60_000)
    refunded = 0 if rng.random() < 0.6 else rng.randint(1, paid // 2)
    left = paid - refunded
    asked = rng.randint(left + 1, paid * 3 // 2) if over else rng.randint(min(MIN_REFUND, left), left)
    return {
        "id": rid, "customer": customer, "order_id": order, "amount_cents": asked, "paid_cents": paid,
        "refunded_cents": refunded, "days_since_delivery": rng.randint(4, 60), "status": "open",
        "decided_amount_cents": None,
    }


def _desk(rng: random.Random, days: int, cls: str, day: str | None) -> Row:
    """Rule values under which a request delivered ``days`` ago is in class ``cls`` (on the
    trap's ``day`` when given)."""
    regime = rng.choice(("fee", "double_fee", "triple_fee")) if cls == "no_fee" else cls
    if regime == "fee":
        double = days + (1 if day == "before" else rng.randint(1, 25))
        triple = double + rng.randint(5, 20)
        last = triple + rng.randint(5, 30)
    elif regime == "double_fee":
        double = days if day == "double" else rng.randint(max(1, days - 20), days)
        triple = rng.randint(days + 1, days + 20)
        last = triple + rng.randint(5, 30)
    elif regime == "triple_fee":
        triple = days if day == "triple" else rng.randint(max(2, days - 15), days)
        double = rng.randint(max(1, triple - 20), triple - 1)
        last = rng.randint(days, days + 30)
    else:  # reject_late
        last = rng.randint(max(3, days - 20), days - 1)
        triple = rng.randint(max(2, last - 15), last)
        double = rng.randint(max(1, triple - 20), triple - 1)
    pct = 0 if cls == "no_fee" else rng.choice(PCTS)
    return {"id": "desk", "restocking_pct": pct, "double_from": double, "triple_from": triple, "last_day": last}


def _ids(rng: random.Random, prefix: str, n: int, taken: set[int], low: int = 10_000, high: int = 99_999) -> list[str]:
    out = []
    while len(out) < n:
        k = rng.randint(low, high)
        if k not in taken:
            taken.add(k)
            out.append(f"{prefix}-{k}")
    return out


def _attempt(seed: int, tag: str, attempt: int, scale: int = 1) -> Generated | None:
    """One task whose trap is ``tag`` (``None``: the draw is inconsistent, redraw)."""
    rng = random.Random(derive_seed("refunds", seed, attempt))
    cls, capped, day = TAGS[tag]
    taken: set[int] = set()
    customer = f"CUS-{rng.randint(1000, 9999)}"
    n_own, n_other = rng.randint(2, 4), rng.randint(3, 6)
    ids, orders = _ids(rng, "REF", n_own + n_other, taken), _ids(rng, "ORD", n_own + n_other, set())
    rows = [_request(rng, ids[i], customer, orders[i], rng.random() < 0.3) for i in range(n_own)]
    target = rows[rng.randrange(n_own)]
    target.update(_request(rng, target["id"], customer, target["order_id"], capped))
    others = sorted({f"CUS-{rng.randint(1000, 9999)}" for _ in range(3)} - {customer})
    rows += [_request(rng, ids[n_own + i], rng.choice(others), orders[n_own + i], rng.random() < 0.3) for i in range(n_other)]
    if cls == "reject_late" and target["days_since_delivery"] < 4:
        return None
    desk = _desk(rng, int(target["days_since_delivery"]), cls, day)
    outcome, amount = decide(target, desk)
    if answer_class(target, desk) != cls or available_cents(target) < MIN_REFUND or (outcome == "approve" and amount <= 0):
        return None
    base = min(int(target["amount_cents"]), available_cents(target))
    if tag == "fee_rounding" and base * int(desk["restocking_pct"]) % 100 == 0:
        return None  # the fee must need rounding down
    if scale > 1:  # other customers' requests, from a stream of their own: the scale-1 draw stays as it is
        extra = random.Random(derive_seed("refunds-scale", seed, scale))
        n = (scale - 1) * len(rows)
        for rid, order in zip(_ids(extra, "REF", n, taken, 100_000, 999_999), _ids(extra, "ORD", n, set(orders), 100_000, 999_999)):
            rows.append(_request(extra, rid, f"CUS-{extra.randint(10_000, 99_999)}", order, extra.random() < 0.3))
    now = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T09:00:00"
    task = {
        "instructions": f"Customer {customer} asks for a refund on order {target['order_id']}. Find the request "
                        "(list_requests), decide it by this desk's refund rules (get_rules) with decide_refund, "
                        "then submit. Decide this request once and change no other request.",
        "allowed_tools": list(ALLOWED_TOOLS),
        "params": {"customer": customer, "order_id": target["order_id"]},
    }
    key = {
        "defect_tags": [tag], "targets": [f"requests:{target['id']}"], "outcome_class": cls, "needs_action": True,
        "request_id": target["id"], "expected": {"outcome": outcome, "amount_cents": amount},
    }
    snapshot = {"requests": sorted(rows, key=lambda r: r["id"]), "desk": [desk], "clock": [{"id": "clock", "now": now}]}
    return Generated(task, snapshot, key)


generate = retrying(_attempt, DEFECT_TAGS)
