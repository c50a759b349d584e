"""Tools of the remittance desk: read the payment and policies, match lines to open items,
allocate, reverse, write off, transfer to the patient, open cases, query the payer, post.

Every write tool records an ``audit`` row. Domain error codes beyond the engine's: none (broken
preconditions use ``not_found``, ``conflict`` and ``precondition_failed``).

Every read goes by primary key, through ``store.select``/``rows``/``count`` with an equality
field or :func:`~backoffice.envs.remittance.tables.live_rows_in` (an index lookup, never a scan of
a table that grows with the world) or, for ``search_open_items``, through the receivables' search
index (:mod:`backoffice.envs.remittance.search`). Rows a tool only reads are read in place
(``store.peek``), never copied: a tool's result is serialised once by the engine and never
kept. What no tool writes (the policies, the remittance lines) is read through per-snapshot
memos (``Snapshot.memo``) while the episode has not written that table either.
``get_policies`` returns the desk's rule document whole. The list tools (``list_payments``,
``list_cases``, ``search_open_items``) return one page at a time: at most ``limit`` rows (default
50, at most 200), ``next_cursor`` (the ``cursor`` that fetches the next page, ``None`` on the last
page) and ``total``; the lists go in id order, the search in its seeded order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Any, Literal

from pydantic import Field

from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit
from backoffice.envs.core.store import Store
from backoffice.envs.core.tools import PageArgs, live_row, page_result, paged_list, rule_document
from backoffice.envs.remittance.generator import RULES
from backoffice.envs.remittance.search import search_live
from backoffice.envs.remittance.tables import QUERY_CATEGORY, add_hours, item_status, live_rows_in

toolkit = Toolkit()

Row = Mapping[str, Any]


def _now(ctx: ToolContext) -> str:
    """``ctx.now`` without copying the clock row."""
    row = ctx.store.peek("clock", "clock")
    return row["now"] if row else ""


def _audit(ctx: ToolContext, tool: str, ref: str) -> None:
    ctx.store.insert("audit", {"id": ctx.store.next_id("audit", "AUD"), "step": ctx.step, "at": _now(ctx), "tool": tool, "ref": ref})


def _payment(ctx: ToolContext, payment_id: str) -> Row:
    return live_row(ctx.store, "payments", payment_id, f"no payment {payment_id[:40]!r}")


def _unposted(ctx: ToolContext, payment_id: str) -> Row:
    row = _payment(ctx, payment_id)
    if row["status"] != "unposted":
        raise ToolError("conflict", f"payment {payment_id} is already {row['status']}; it cannot change")
    return row


def _line(ctx: ToolContext, payment_id: str, line_id: str) -> Row:
    row = ctx.store.peek("remittance_lines", line_id)
    if row is None or row["payment_id"] != payment_id:
        raise ToolError("not_found", f"payment {payment_id} has no remittance line {line_id[:40]!r}")
    return row


def _item(ctx: ToolContext, item_id: str) -> Row:
    return live_row(ctx.store, "open_items", item_id, f"no open item {item_id[:40]!r}")


def _set_balance(ctx: ToolContext, item: Row, balance: int) -> dict[str, Any]:
    return ctx.store.update("open_items", item["id"], {"balance": balance, "status": item_status(balance, item["amount_due"])})


_by_id = itemgetter("id")


def _active_allocations(store: Store, field: str, value: str) -> list[Row]:
    """``store.rows("allocations", **{field: value}, status="active")`` read in place (in id
    order, as ``rows`` gives them)."""
    return sorted((a for a in live_rows_in(store, "allocations", field, {value}) if a["status"] == "active"), key=_by_id)


_ITEM_VIEW = ("id", "claim_ref", "invoice", "patient_name", "service_date", "amount_due", "balance", "status", "payer_id", "responsibility", "account_id")
_item_fields = itemgetter(*_ITEM_VIEW)


def _item_view(row: Row) -> dict[str, Any]:
    return dict(zip(_ITEM_VIEW, _item_fields(row), strict=True))


def _policy_document(rows: Iterable[Row]) -> dict[str, Any]:
    """What ``get_policies`` shows of the policy rows: one rule document, its entries in the order
    of the domain's rules."""
    order = {rule: i for i, rule in enumerate(RULES)}
    rows = sorted(rows, key=lambda r: (order.get(r["id"], len(order)), r["id"]))
    return rule_document({"id": r["id"], "title": r["title"], "text": r["text"], "value": r["value"]} for r in rows)


def _lines_of(store: Store, payment_id: str) -> list[Row]:
    """A payment's remittance lines by line number (read in place). No tool writes lines: while
    the episode has not written any either, they are the snapshot's, sorted once per snapshot
    and payment (the index bucket in id order, then a stable sort by ``line_no``)."""
    if store.written_ids("remittance_lines"):
        return sorted(store.rows("remittance_lines", payment_id=payment_id), key=lambda r: r["line_no"])
    snap = store.snapshot
    by_payment: dict[str, list[Row]] = snap.memo(("remittance", "lines_by_payment"), lambda _: {})
    lines = by_payment.get(payment_id)
    if lines is None:
        table = snap.table("remittance_lines")
        bucket = snap.index("remittance_lines", "payment_id").get(payment_id, ())
        lines = by_payment[payment_id] = sorted((table[rid] for rid in bucket), key=lambda r: r["line_no"])
    return lines


# -- reads ---------------------------------------------------------------------------------
@toolkit.tool(writes=False)
def get_policies(ctx: ToolContext, args: NoArgs) -> dict[str, Any]:
    """The desk's posting policies for this task, whole: ``{"rules": [...], "tables": {}}``, one
    entry per policy with ``id`` (the policy, e.g. ``tolerance_cents``), ``title``, ``text`` (what
    to do) and ``value`` (this desk's setting: a number of cents, a list of codes or the chosen
    action). Tolerance, contractual and patient codes, codes the desk does not list, short
    payments, unmatched lines, overpayments, duplicates, ambiguous lines, matching and posting;
    they vary from desk to desk."""
    store = ctx.store
    if store.written_ids("policies"):  # no tool writes policies: never taken by an episode
        return _policy_document(store.rows("policies"))
    doc: dict[str, Any] = store.snapshot.memo(("remittance", "policy_document"), lambda snap: _policy_document(snap.table("policies").values()))
    return doc


class PaymentArgs(ToolArgs):
    payment_id: str = Field(min_length=1, max_length=40, description="Payment id, e.g. PMT-4821.")


@toolkit.tool(writes=False)
def get_payment(ctx: ToolContext, args: PaymentArgs) -> dict[str, Any]:
    """One payment with its remittance lines (claim ref, patient, service date, billed and paid
    amounts, adjustment codes with amounts) and its active allocations. Payment status is one of
    unposted, posted, held, returned; ``unapplied`` is the amount not yet allocated."""
    pay = _payment(ctx, args.payment_id)
    allocs = _active_allocations(ctx.store, "payment_id", pay["id"])
    return {"payment": pay, "lines": _lines_of(ctx.store, pay["id"]), "allocations": allocs}


class ListPaymentsArgs(PageArgs):
    payer_id: str = Field("", max_length=40, description="Only payments of this payer account (optional).")
    reference: str = Field("", max_length=60, description="Only payments with this EFT trace reference (optional).")


_PAYMENT_SUMMARY = ("id", "payer_id", "reference", "amount", "received_on", "status")


@toolkit.tool(writes=False)
def list_payments(ctx: ToolContext, args: ListPaymentsArgs) -> dict[str, Any]:
    """Payments received (summaries: id, payer, reference, amount, received_on, status) under
    ``payments``, optionally of one payer and/or with one EFT trace reference; use it to spot a
    remittance that was already posted (filter by the payment's reference). One page at a time,
    by id: at most ``limit`` payments (default 50, at most 200), ``next_cursor`` (the ``cursor``
    that fetches the next page, ``None`` on the last page) and ``total`` (payments over every page)."""
    equals = {k: v for k, v in (("payer_id", args.payer_id), ("reference", args.reference)) if v}
    out = page_result(ctx.store, "payments", args, "payments", None, **equals)
    out["payments"] = [{k: r[k] for k in _PAYMENT_SUMMARY} for r in out["payments"]]
    return out


class SearchArgs(PageArgs):
    query: str = Field(min_length=1, max_length=100, description="Claim ref, invoice number or patient name; claim refs match within two typing errors.")
    payer_id: str = Field("", max_length=40, description="Only items billed to this payer account (optional).")


@toolkit.tool(writes=False)
def search_open_items(ctx: ToolContext, args: SearchArgs) -> dict[str, Any]:
    """Receivables matching a claim ref (up to two typing errors), an invoice number or a patient
    name, any status (open, partial, closed, credit), under ``items``. The order of results
    carries no meaning: check claim ref, patient, service date and amount yourself. One page at a
    time: at most ``limit`` items (default 50, at most 200), ``next_cursor`` (the ``cursor`` that
    fetches the next page, ``None`` on the last page) and ``total`` (hits over every page)."""
    hits = search_live(ctx.store, args.query, ctx.task.seed, args.payer_id, None)  # read-only rows: only viewed
    return {"query": args.query, **paged_list([_item_view(h) for h in hits], args, "items")}


class ItemArgs(ToolArgs):
    item_id: str = Field(min_length=1, max_length=40, description="Open item id, e.g. OI-3381.")


@toolkit.tool(writes=False)
def get_open_item(ctx: ToolContext, args: ItemArgs) -> dict[str, Any]:
    """One receivable with its active allocations and its adjustments."""
    item = _item(ctx, args.item_id)
    return {
        "item": _item_view(item),
        "allocations": _active_allocations(ctx.store, "item_id", item["id"]),
        "adjustments": sorted(live_rows_in(ctx.store, "adjustments", "item_id", {item["id"]}), key=_by_id),
    }


# -- allocation ----------------------------------------------------------------------------
class AllocateArgs(ToolArgs):
    payment_id: str = Field(min_length=1, max_length=40, description="The payment being posted.")
    line_id: str = Field(min_length=1, max_length=40, description="The remittance line the money comes from.")
    item_id: str = Field(min_length=1, max_length=40, description="The open item it pays.")
    amount: int = Field(ge=1, le=1_000_000_000, description="Cents to allocate (at most the line's paid amount not yet allocated).")


@toolkit.tool(writes=True)
def allocate(ctx: ToolContext, args: AllocateArgs) -> dict[str, Any]:
    """Apply part of an unposted payment's line to an open item: lowers the item's balance (a
    balance below zero becomes a credit) and the payment's unapplied amount."""
    pay = _unposted(ctx, args.payment_id)
    line = _line(ctx, pay["id"], args.line_id)
    item = _item(ctx, args.item_id)
    if item["responsibility"] != "payer":
        raise ToolError("precondition_failed", f"{item['id']} is a patient-responsibility item; insurer money cannot be applied to it")
    if args.amount > pay["unapplied"]:
        raise ToolError("conflict", f"only {pay['unapplied']} cents of {pay['id']} are unapplied")
    used = sum(a["amount"] for a in live_rows_in(ctx.store, "allocations", "line_id", {line["id"]}) if a["status"] == "active")
    if used + args.amount > line["paid_amount"]:
        raise ToolError("conflict", f"line {line['id']} paid {line['paid_amount']} cents and {used} are already allocated")
    alloc = ctx.store.insert("allocations", {
        "id": ctx.store.next_id("allocations", "AL"), "payment_id": pay["id"], "line_id": line["id"],
        "item_id": item["id"], "amount": args.amount, "status": "active", "created_at": _now(ctx), "reversed_at": "",
    })
    new_item = _set_balance(ctx, item, item["balance"] - args.amount)
    ctx.store.update("payments", pay["id"], {"unapplied": pay["unapplied"] - args.amount})
    _audit(ctx, "allocate", alloc["id"])
    return {"allocation": alloc, "item": _item_view(new_item), "payment_unapplied": pay["unapplied"] - args.amount}


class ReverseArgs(ToolArgs):
    allocation_id: str = Field(min_length=1, max_length=40, description="The allocation to reverse, e.g. AL-0002.")


@toolkit.tool(writes=True)
def reverse_allocation(ctx: ToolContext, args: ReverseArgs) -> dict[str, Any]:
    """Undo an active allocation of an unposted payment: the item's balance and the payment's
    unapplied amount are restored, the allocation stays on file as reversed."""
    alloc = live_row(ctx.store, "allocations", args.allocation_id, f"no allocation {args.allocation_id[:40]!r}")
    if alloc["status"] != "active":
        raise ToolError("conflict", f"{alloc['id']} is already reversed")
    pay = _unposted(ctx, alloc["payment_id"])
    item = _item(ctx, alloc["item_id"])
    ctx.store.update("allocations", alloc["id"], {"status": "reversed", "reversed_at": _now(ctx)})
    new_item = _set_balance(ctx, item, item["balance"] + alloc["amount"])
    ctx.store.update("payments", pay["id"], {"unapplied": pay["unapplied"] + alloc["amount"]})
    _audit(ctx, "reverse_allocation", alloc["id"])
    return {"reversed": alloc["id"], "item": _item_view(new_item), "payment_unapplied": pay["unapplied"] + alloc["amount"]}


class WriteOffArgs(ToolArgs):
    item_id: str = Field(min_length=1, max_length=40, description="The open item to write down.")
    amount: int = Field(ge=1, le=1_000_000_000, description="Cents to write off (at most the item's balance).")
    reason: Literal["contractual", "small_balance"] = Field(description="contractual (an adjustment code the policy lists) or small_balance (a difference within tolerance).")
    code: str = Field("", max_length=12, description="The adjustment code, e.g. CO-45 (required for contractual).")
    line_id: str = Field("", max_length=40, description="The remittance line that justifies it (optional).")


@toolkit.tool(writes=True)
def write_off(ctx: ToolContext, args: WriteOffArgs) -> dict[str, Any]:
    """Write down part of an item's balance as a contractual adjustment or a small balance."""
    item = _item(ctx, args.item_id)
    if args.reason == "contractual" and not args.code:
        raise ToolError("precondition_failed", "a contractual write-off needs its adjustment code")
    if args.amount > item["balance"]:
        raise ToolError("conflict", f"{item['id']} has only {item['balance']} cents open")
    adj = ctx.store.insert("adjustments", {
        "id": ctx.store.next_id("adjustments", "ADJ"), "item_id": item["id"], "line_id": args.line_id,
        "kind": "write_off", "reason": args.reason, "code": args.code, "amount": args.amount,
        "new_item_id": "", "created_at": _now(ctx),
    })
    new_item = _set_balance(ctx, item, item["balance"] - args.amount)
    _audit(ctx, "write_off", adj["id"])
    return {"adjustment": adj, "item": _item_view(new_item)}


class TransferArgs(ToolArgs):
    item_id: str = Field(min_length=1, max_length=40, description="The insurer item carrying the patient's share.")
    amount: int = Field(ge=1, le=1_000_000_000, description="Cents the patient owes (at most the item's balance).")
    code: str = Field(min_length=1, max_length=12, description="The patient-responsibility code, e.g. PR-2.")
    line_id: str = Field("", max_length=40, description="The remittance line that states it (optional).")


@toolkit.tool(writes=True)
def transfer_to_patient(ctx: ToolContext, args: TransferArgs) -> dict[str, Any]:
    """Move the patient's share (deductible, coinsurance, copay) off the insurer item onto a new
    patient-responsibility item (``PI-....``) on the patient's account; the adjustment is recorded
    with kind patient_transfer and reason patient_responsibility."""
    item = _item(ctx, args.item_id)
    if item["responsibility"] != "payer":
        raise ToolError("precondition_failed", f"{item['id']} is already a patient item")
    if args.amount > item["balance"]:
        raise ToolError("conflict", f"{item['id']} has only {item['balance']} cents open")
    new_id = ctx.store.next_id("open_items", "PI")
    patient_item = ctx.store.insert("open_items", {
        "id": new_id, "account_id": item["account_id"], "payer_id": "", "claim_ref": item["claim_ref"],
        "invoice": item["invoice"], "patient_name": item["patient_name"], "service_date": item["service_date"],
        "amount_due": args.amount, "balance": args.amount, "status": "open", "responsibility": "patient",
        "source_item": item["id"],
    })
    adj = ctx.store.insert("adjustments", {
        "id": ctx.store.next_id("adjustments", "ADJ"), "item_id": item["id"], "line_id": args.line_id,
        "kind": "patient_transfer", "reason": "patient_responsibility", "code": args.code, "amount": args.amount,
        "new_item_id": new_id, "created_at": _now(ctx),
    })
    new_item = _set_balance(ctx, item, item["balance"] - args.amount)
    _audit(ctx, "transfer_to_patient", adj["id"])
    return {"adjustment": adj, "item": _item_view(new_item), "patient_item": _item_view(patient_item)}


# -- cases and the payer ---------------------------------------------------------------------
class OpenCaseArgs(ToolArgs):
    payment_id: str = Field(min_length=1, max_length=40, description="The payment concerned.")
    category: Literal["underpayment", "unidentified_remittance", "refund_request", "duplicate_remittance"] = Field(
        description="underpayment (short payment beyond tolerance), unidentified_remittance (line matches no claim), refund_request (overpaid line), duplicate_remittance (payment already posted).")
    line_id: str = Field("", max_length=40, description="The remittance line concerned; empty for the whole payment.")
    note: str = Field("", max_length=1000, description="What to ask or tell the payer.")


@toolkit.tool(writes=True)
def open_case(ctx: ToolContext, args: OpenCaseArgs) -> dict[str, Any]:
    """Open a case with the payer about a payment or one of its lines (status open)."""
    pay = _payment(ctx, args.payment_id)
    if args.line_id:
        _line(ctx, pay["id"], args.line_id)
    same = [c["id"] for c in live_rows_in(ctx.store, "cases", "payment_id", {pay["id"]})
            if c["line_id"] == args.line_id and c["category"] == args.category]
    if same:
        raise ToolError("conflict", f"case {min(same)} already covers this")
    case = ctx.store.insert("cases", {
        "id": ctx.store.next_id("cases", "CS"), "category": args.category, "payment_id": pay["id"],
        "line_id": args.line_id, "note": args.note, "status": "open", "opened_at": _now(ctx), "reply_due": "",
        "reply_kind": "", "reply_claim_ref": "", "reply_text": "",
    })
    _audit(ctx, "open_case", case["id"])
    return {"case": case}


class QueryArgs(ToolArgs):
    payment_id: str = Field(min_length=1, max_length=40, description="The payment concerned.")
    line_id: str = Field(min_length=1, max_length=40, description="The remittance line to ask about.")
    question: str = Field("", max_length=1000, description="The question for the payer.")


@toolkit.tool(writes=True)
def query_payer(ctx: ToolContext, args: QueryArgs) -> dict[str, Any]:
    """Ask the payer about a remittance line: opens a payer_query case (status awaiting_reply).
    The reply arrives later: call ``wait`` to let time pass, then ``get_case``."""
    pay = _payment(ctx, args.payment_id)
    line = _line(ctx, pay["id"], args.line_id)
    awaiting = [c["id"] for c in live_rows_in(ctx.store, "cases", "line_id", {line["id"]})
                if c["category"] == QUERY_CATEGORY and c["status"] == "awaiting_reply"]
    if awaiting:
        raise ToolError("conflict", f"query {min(awaiting)} about this line is still awaiting a reply")
    script = ctx.store.peek("_payer_script", line["id"])
    delay = int(script["delay_hours"]) if script else 24
    now = _now(ctx)
    case = ctx.store.insert("cases", {
        "id": ctx.store.next_id("cases", "CS"), "category": QUERY_CATEGORY, "payment_id": pay["id"],
        "line_id": line["id"], "note": args.question, "status": "awaiting_reply", "opened_at": now,
        "reply_due": add_hours(now, delay), "reply_kind": "", "reply_claim_ref": "", "reply_text": "",
    })
    _audit(ctx, "query_payer", case["id"])
    return {"case": case}


class CaseArgs(ToolArgs):
    case_id: str = Field(min_length=1, max_length=40, description="Case id, e.g. CS-0001.")


@toolkit.tool(writes=False)
def get_case(ctx: ToolContext, args: CaseArgs) -> dict[str, Any]:
    """One case; for an answered payer query, ``reply_kind`` (confirm, applies_to, recoup),
    ``reply_claim_ref`` and ``reply_text`` hold the payer's answer."""
    case = live_row(ctx.store, "cases", args.case_id, f"no case {args.case_id[:40]!r}")
    return {"case": case}


class ListCasesArgs(PageArgs):
    payment_id: str = Field("", max_length=40, description="Only cases of this payment (optional).")


@toolkit.tool(writes=False)
def list_cases(ctx: ToolContext, args: ListCasesArgs) -> dict[str, Any]:
    """Cases under ``cases``, optionally of one payment. One page at a time, by id: at most
    ``limit`` cases (default 50, at most 200), ``next_cursor`` (the ``cursor`` that fetches the
    next page, ``None`` on the last page) and ``total`` (cases over every page)."""
    return page_result(ctx.store, "cases", args, "cases", None, **({"payment_id": args.payment_id} if args.payment_id else {}))


class WaitArgs(ToolArgs):
    hours: int | None = Field(None, ge=1, le=168, description="Hours to wait; default: until the next payer reply is due.")


@toolkit.tool(writes=True)
def wait(ctx: ToolContext, args: WaitArgs) -> dict[str, Any]:
    """Let simulated time pass; payer replies that fall due arrive in their cases."""
    pending = sorted((r["reply_due"], r["id"]) for r in live_rows_in(ctx.store, "cases", "status", {"awaiting_reply"}))
    if args.hours is None:
        if not pending:
            raise ToolError("precondition_failed", "no payer reply is pending; give hours to wait anyway")
        now = max(_now(ctx), pending[0][0])
    else:
        now = add_hours(_now(ctx), args.hours)
    ctx.store.update("clock", "clock", {"now": now})
    answered = []
    for due, case_id in pending:
        if due > now:
            continue
        case = ctx.store.peek("cases", case_id)
        assert case is not None
        script = ctx.store.peek("_payer_script", case["line_id"]) or {}
        ctx.store.update("cases", case_id, {
            "status": "answered", "reply_kind": script.get("reply_kind", "confirm"),
            "reply_claim_ref": script.get("reply_claim_ref", ""),
            "reply_text": script.get("reply_text", "The line was processed as shown on the remittance."),
        })
        answered.append(case_id)
    _audit(ctx, "wait", now)
    return {"now": now, "answered": answered}


# -- posting -------------------------------------------------------------------------------
class PostArgs(ToolArgs):
    payment_id: str = Field(min_length=1, max_length=40, description="The payment to post.")
    disposition: Literal["apply", "hold", "return"] = Field(
        "apply", description="apply: post the allocations, the rest stays unapplied (status posted); hold: park the whole payment in suspense (status held); return: send it back to the payer (status returned, nothing unapplied). hold and return need no active allocations.")


@toolkit.tool(writes=True)
def post_payment(ctx: ToolContext, args: PostArgs) -> dict[str, Any]:
    """Post an unposted payment: its allocations become final and it can no longer change."""
    pay = _unposted(ctx, args.payment_id)
    changes: dict[str, Any] = {"status": {"apply": "posted", "hold": "held", "return": "returned"}[args.disposition]}
    if args.disposition != "apply":
        if any(a["status"] == "active" for a in live_rows_in(ctx.store, "allocations", "payment_id", {pay["id"]})):
            raise ToolError("precondition_failed", f"reverse the allocations of {pay['id']} before you {args.disposition} it")
        if args.disposition == "return":
            changes["unapplied"] = 0
    new = ctx.store.update("payments", pay["id"], changes)
    _audit(ctx, "post_payment", pay["id"])
    return {"payment": new}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict[str, Any]:
    """Finish the episode: the desk's work on this payment is done."""
    return {"submitted": True}
