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

from collections.abc import Iterable, Mapping, Set as AbstractSet
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from backoffice.envs.core.canonical import derive_seed

if TYPE_CHECKING:
    from backoffice.envs.core.store import Store

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
#: What each value of the desks' ``duplicate_action`` policy says to do with a duplicate (its text
#: in ``get_policies``): the disposition it is posted with and the category of the payment's case
#: ("" for none). The generator's answer, the oracle and the catalogs read the policy through it.
DUPLICATE_ACTIONS: dict[str, tuple[str, str]] = {
    "hold_and_case": ("hold", "duplicate_remittance"), "hold": ("hold", ""), "return": ("return", ""),
    "return_and_case": ("return", "duplicate_remittance"), "post_and_case": ("apply", "duplicate_remittance"),
    "post_and_refund_case": ("apply", "refund_request"),
}


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """Upper-case alphanumerics only: ``clm-20 4518`` -> ``CLM204518``."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def osa_distance(a: str, b: str, cap: int = 3) -> int:
    """Optimal-string-alignment distance (edits incl. adjacent transpositions), capped at ``cap``.

    The dynamic programme over prefixes, computed only in the band ``|i - j| < cap`` with every
    cell capped at ``cap`` (a cell outside the band is at least ``|i - j|``, and capping commutes
    with the recurrence's minimum of non-negative steps), stopping once two consecutive rows
    are all at the cap (every later cell derives from them). A common prefix or suffix is
    dropped first: with equal first characters, cell ``(i, j)`` of the programme equals cell
    ``(i - 1, j - 1)`` of the programme without them (by induction over the recurrence), and the
    distance of the reversed strings is the same."""
    la, lb = len(a), len(b)
    if abs(la - lb) >= cap:
        return cap
    if a == b:
        return 0
    k, n = 0, min(la, lb)
    while k < n and a[k] == b[k]:
        k += 1
    while k < n and a[la - 1] == b[lb - 1]:
        la, lb, n = la - 1, lb - 1, n - 1
    if k or la < len(a):
        a, b = a[k:la], b[k:lb]
        la, lb = la - k, lb - k
    if not la or not lb:
        return min(la + lb, cap)
    prev2: list[int] = []
    prev = [min(j, cap) for j in range(lb + 1)]
    prev_min = 0
    for i in range(1, la + 1):
        cur = [cap] * (lb + 1)
        cur[0] = row_min = min(i, cap)
        ai = a[i - 1]
        for j in range(max(1, i - cap + 1), min(lb, i + cap - 1) + 1):
            bj = b[j - 1]
            v = prev[j - 1] if ai == bj else prev[j - 1] + 1
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            if i > 1 and j > 1 and ai == b[j - 2] and a[i - 2] == bj and prev2[j - 2] + 1 < v:
                v = prev2[j - 2] + 1
            if v > cap:
                v = cap
            cur[j] = v
            if v < row_min:
                row_min = v
        if row_min >= cap and prev_min >= cap:
            return cap
        prev2, prev, prev_min = prev, cur, row_min
    return min(prev[lb], cap)


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


@lru_cache(maxsize=1 << 15)
def search_order_key(task_seed: int, item_id: str) -> int:
    """Where an item ranks in search results: fixed by the task's seed, not by quality
    (a pure function, remembered: a task's searches rank the same items again and again)."""
    return derive_seed("remittance-search", task_seed, item_id)


def search_items(items: Iterable[Mapping[str, Any]], query: str, task_seed: int, payer_id: str = "",
                 limit: int = SEARCH_LIMIT) -> list[Mapping[str, Any]]:
    """Items hit by ``query`` in the seeded order (at most ``limit``, default :data:`SEARCH_LIMIT`):
    those :func:`item_matches` accepts, found through an index
    (:func:`backoffice.envs.remittance.search.search_items`)."""
    from backoffice.envs.remittance.search import search_items as indexed  # the index module imports this one

    return indexed(items, query, task_seed, payer_id, limit)


@lru_cache(maxsize=4096)
def add_hours(iso: str, hours: int) -> str:
    """``iso`` plus ``hours`` (ISO string, seconds precision; a pure function, remembered)."""
    return (datetime.fromisoformat(iso) + timedelta(hours=hours)).isoformat(timespec="seconds")


@lru_cache(maxsize=4096)
def add_days(iso_date: str, days: int) -> str:
    """A date (``YYYY-MM-DD``) plus ``days`` (a pure function, remembered)."""
    return (datetime.fromisoformat(iso_date) + timedelta(days=days)).date().isoformat()


def live_rows_in(store: Store, table: str, field: str, values: AbstractSet[Any]) -> list[Mapping[str, Any]]:
    """The live rows of ``table`` whose ``field`` is one of ``values`` (hashable), read in
    place: never mutate them. The same rows as ``store.rows(table, **{field: v})`` over every
    ``v`` together, in another order (for callers that sort, count or sum what they read): the
    rows of the snapshot's index buckets of those values (by ``repr`` of the value, then by
    id) the episode did not write, then the written rows (by id) that hold one of them now.
    O(matching rows + rows written), with no copies."""
    snap = store.snapshot
    index, base = snap.index(table, field), snap.table(table)
    written = store.written_ids(table)
    ordered = sorted(values, key=repr) if len(values) > 1 else values  # a fixed order, whatever the types
    out: list[Mapping[str, Any]] = []
    if not written:
        for v in ordered:
            out.extend(base[rid] for rid in index.get(v, ()))
        return out
    skip = set(written)
    for v in ordered:
        out.extend(base[rid] for rid in index.get(v, ()) if rid not in skip)
    for rid in written:
        row = store.peek(table, rid)
        if row is not None and row.get(field) in values:
            out.append(row)
    return out
