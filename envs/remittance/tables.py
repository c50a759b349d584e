"""Tables of the remittance domain and the small helpers tools, generator and grader share.

Tables (every row is flat; money in integer cents; times are ISO strings of the simulated clock):

``accounts``
    ``id`` (``AC-....``), ``kind`` (``payer`` | ``patient``), ``name``, ``payer_code`` (payers only).
``open_items``
    Receivables: ``id`` (``OI-....``; patient items created by a transfer are ``PI-....``),
    ``account_id`` (the patient's account), ``payer_id`` (payer account, ``""`` for patient items),
    ``claim_ref``, ``invoice``, ``patient_name``, ``service_date``, ``amount_due``, ``balance``,
    ``status`` (``open`` | ``partial`` | ``closed`` | ``credit``), ``responsibility``
    (``payer`` | ``patient``), ``source_item`` (the insurer item a patient item came from).
``payments``
    ``id`` (``PMT-....``), ``payer_id``, ``payer_name``, ``reference`` (EFT trace number),
    ``amount``, ``received_on``, ``status`` (``unposted`` | ``posted`` | ``held`` | ``returned``),
    ``unapplied`` (amount not allocated to any item), ``line_count``.
``remittance_lines``
    ``id`` (``RL-....``), ``payment_id``, ``line_no``, ``claim_ref``, ``patient_name``,
    ``service_date``, ``billed_amount``, ``paid_amount``, ``adj_codes`` and ``adj_amounts``
    (parallel lists: CARC group-code adjustments such as ``CO-45`` or ``PR-2``).
``allocations``
    ``id`` (``AL-....`` made by the agent, ``AH-....`` historical), ``payment_id``, ``line_id``,
    ``item_id``, ``amount``, ``status`` (``active`` | ``reversed``), ``created_at``, ``reversed_at``.
``adjustments``
    ``id`` (``ADJ-....``), ``item_id``, ``line_id``, ``kind`` (``write_off`` | ``patient_transfer``),
    ``reason`` (``contractual`` | ``small_balance`` | ``patient_responsibility``), ``code``,
    ``amount``, ``new_item_id`` (the patient item of a transfer), ``created_at``.
``cases``
    Queries to the payer: ``id`` (``CS-....``), ``category``, ``payment_id``, ``line_id``, ``note``,
    ``status`` (``open`` | ``awaiting_reply`` | ``answered``), ``opened_at``, ``reply_due``,
    ``reply_kind``, ``reply_claim_ref``, ``reply_text``.
``policies``
    The desk's rules for this task: ``id``, ``key``, ``value`` (scalar or list), ``text``.
``audit``
    One row per successful write tool call: ``id`` (``AUD-....``), ``step``, ``at``, ``tool``, ``ref``.
``_payer_script``
    Hidden (never returned whole): the payer's scripted reply per remittance line, fixed by the
    task's seed: ``id`` (line id), ``delay_hours``, ``reply_kind`` (``confirm`` | ``applies_to`` |
    ``recoup``), ``reply_claim_ref``, ``reply_text``.
``clock``
    One row ``{"id": "clock", "now": ...}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from backoffice.envs.core.canonical import derive_seed

#: the world's tables (every snapshot has exactly these, plus ``clock``)
TABLES = (
    "accounts", "open_items", "payments", "remittance_lines", "allocations", "adjustments",
    "cases", "policies", "audit", "_payer_script",
)

#: Case categories the agent may open with ``open_case`` (``payer_query`` is made by ``query_payer``).
CASE_CATEGORIES = ("underpayment", "unidentified_remittance", "refund_request", "duplicate_remittance")
QUERY_CATEGORY = "payer_query"
WRITE_OFF_REASONS = ("contractual", "small_balance")
DISPOSITIONS = ("apply", "hold", "return")
SEARCH_LIMIT = 10


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """Upper-case alphanumerics only: ``clm-20 4518`` -> ``CLM204518``."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def osa_distance(a: str, b: str, cap: int = 3) -> int:
    """Optimal-string-alignment distance (edits incl. adjacent transpositions), capped at ``cap``."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        # Every later cell derives from the last two rows plus non-negative costs: once both
        # are at the cap everywhere, the distance is at least the cap.
        if min(cur) >= cap and min(prev) >= cap:
            return cap
        prev2, prev = prev, cur
    return min(prev[len(b)], cap)


def item_status(balance: int, amount_due: int) -> str:
    """Status of a receivable from its balance."""
    if balance == 0:
        return "closed"
    if balance < 0:
        return "credit"
    if balance >= amount_due:
        return "open"
    return "partial"


def item_matches(query: str, item: Mapping[str, Any]) -> bool:
    """Does a normalised search query hit an item (claim ref within 2 edits, invoice, or name)?"""
    if len(query) < 3:
        return False
    ref = norm(item["claim_ref"])
    if query == ref or (len(query) >= 4 and query in ref) or osa_distance(query, ref) <= 2:
        return True
    if query == norm(item["invoice"]):
        return True
    return len(query) >= 4 and query in norm(item["patient_name"])


def search_order_key(task_seed: int, item_id: str) -> int:
    """Where an item ranks in search results: fixed by the task's seed, not by quality."""
    return derive_seed("remittance-search", task_seed, item_id)


def search_items(items: Iterable[Mapping[str, Any]], query: str, task_seed: int, payer_id: str = "") -> list[Mapping[str, Any]]:
    """Items hit by ``query`` in the seeded order (at most :data:`SEARCH_LIMIT`)."""
    q = norm(query)
    hits = [it for it in items if (not payer_id or it["payer_id"] == payer_id) and item_matches(q, it)]
    hits.sort(key=lambda it: (search_order_key(task_seed, it["id"]), it["id"]))
    return hits[:SEARCH_LIMIT]


def add_hours(iso: str, hours: int) -> str:
    """``iso`` plus ``hours`` (ISO string, seconds precision)."""
    return (datetime.fromisoformat(iso) + timedelta(hours=hours)).isoformat(timespec="seconds")


def add_days(iso_date: str, days: int) -> str:
    """A date (``YYYY-MM-DD``) plus ``days``."""
    return (datetime.fromisoformat(iso_date) + timedelta(days=days)).date().isoformat()
