"""Tools of the approval desk.

Read tools never change state. Writing tools (``record_decision``, ``escalate``,
``post_ledger_entry``, ``release_order``) check only their own preconditions: like the real
systems, the downstream tools do not know whether a valid approval exists, so an agent can
release money before (or without) a valid decision; the grader sees that in the diff and trace.
Error codes: ``not_found``, ``conflict``, ``precondition_failed`` and ``invalid_args``.

Every list tool (``list_pending``, ``list_roles``, ``find_people``, ``lookup_role_holders``,
``lookup_delegations``) is paginated the same way (``PageArgs``): ``limit`` rows per call
(default ``PAGE_SIZE`` = 50, at most ``MAX_PAGE_SIZE`` = 200) in id order, ``next_cursor`` (pass it
as ``cursor`` for the next page; ``None`` on the last page) and ``total`` (the rows over every
page). ``get_rules`` returns the desk's rule document whole (``rule_document``: the procedure's
rules and the request type's bands), never paginated. Every read is by primary key or by an
indexed equality (the snapshot's index buckets, or ``store.select(table, field=value)`` once the
episode wrote the table); ``find_people`` reads a per-snapshot name index (:mod:`.names`). The
answers that are not paginated are bounded: one request type's bands, one person's assignments,
one reporting line.

Per step cost: results are serialised by the toolkit right after the call, so read tools return
live rows (``Store.peek``, never copies) and per-snapshot structures (``Snapshot.memo``: the
open queue and its summaries, each type's sorted rules, people's reporting lines and
assignments) that they use only while the episode has not written the table they come from
(``Store.written_ids``); answers are byte-identical to the plain reads.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from heapq import merge
from itertools import islice
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from backoffice.envs.approvals.names import SUMMARY_FIELDS, find_people_ids, name_index
from backoffice.envs.approvals.rules import in_window, is_ledger_type, window_covers
from backoffice.envs.approvals.tables import DECISION_STATUS, OPEN_STATUSES, PROCEDURE, REQUEST_TYPES, normalise_instant, today
from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import MAX_PAGE_SIZE, PAGE_SIZE, PageArgs, check_cursor, live_row, page, paged_list, rule_document

toolkit = Toolkit()

Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]

__all__ = ["ALL_TOOLS", "MAX_PAGE_SIZE", "PAGE_SIZE", "toolkit"]


Row = dict[str, Any]


# -- reading without copies ---------------------------------------------------------------
# A tool's result is serialised by the toolkit right after the call (and parsed back), so the
# read tools hand it the store's live rows (``Store.peek``, read-only by contract) instead
# of copies, and keep per-snapshot derived structures (``Snapshot.memo``) for what does not
# change within an episode.
def _now(ctx: ToolContext) -> str:
    """The desk clock (``ctx.now`` without copying the clock row)."""
    row = ctx.store.peek("clock", "clock")
    return row["now"] if row else ""


def _as_of(ctx: ToolContext, value: str | None) -> str:
    if value is None:
        return _now(ctx)
    try:
        return normalise_instant(value)
    except ValueError:
        raise ToolError("invalid_args", "as_of must be an ISO date (YYYY-MM-DD) or datetime (YYYY-MM-DDTHH:MM:SS)") from None


def _request(ctx: ToolContext, request_id: str) -> Row:
    return live_row(ctx.store, "requests", request_id, f"no request {request_id[:64]!r}")


def _person_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in SUMMARY_FIELDS}


def _unwritten(store: Store, table: str) -> bool:
    """No row of ``table`` was written this episode (the desk's tools never write the
    reference tables), so the snapshot's rows and indexes are the live ones. O(1)."""
    return not store.written_ids(table)


def _rows_eq(store: Store, table: str, field: str, value: str) -> Sequence[Row]:
    """The live rows (read-only, not copies) of ``table`` whose ``field`` equals ``value``, in
    id order: the snapshot's index bucket when the episode wrote no row of ``table``, else
    :meth:`Store.select_where` (copies, merged with the writes)."""
    if not _unwritten(store, table):
        return store.select_where(table, {field: value})
    snap = store.snapshot
    rows = snap.table(table)
    return [rows[rid] for rid in snap.index(table, field).get(value, ())]


def _page_ids(ids: Sequence[str], cursor: str | None, limit: int) -> tuple[Sequence[str], str | None]:
    """One page of sorted ``ids`` after ``cursor`` (``core.tools.page``'s cut): at most ``limit``
    ids, and the last one as the next cursor when more remain."""
    start = bisect_right(ids, cursor) if cursor is not None else 0
    chunk = ids[start: start + limit]
    return chunk, (chunk[-1] if start + limit < len(ids) else None)


def _after(store: Store, table: str, field: str, value: str, cursor: str | None) -> Iterable[Row]:
    """:func:`_rows_eq` restricted to ids after ``cursor``, lazily (the index bucket is entered
    by bisection, so a page costs O(page), not O(bucket))."""
    if not _unwritten(store, table):
        return store.select_where(table, {field: value}, after=cursor)
    snap = store.snapshot
    rows = snap.table(table)
    bucket = snap.index(table, field).get(value, ())
    start = bisect_right(bucket, cursor) if cursor is not None else 0
    return (rows[rid] for rid in islice(bucket, start, None))


def _first(rows: Iterable[Row], where: Callable[[Row], bool], limit: int) -> tuple[list[Row], str | None]:
    """The first ``limit`` rows of ``rows`` (id order) for which ``where`` holds, and the next
    cursor when more remain (``core.tools.page``'s cut)."""
    out: list[Row] = []
    for row in rows:
        if where(row):
            if len(out) == limit:
                return out, out[-1]["id"]
            out.append(row)
    return out, None


# -- per-snapshot structures --------------------------------------------------------------
class _Queue:
    """The snapshot's open requests (ids in order) and their queue summaries (built lazily)."""

    __slots__ = ("id_set", "ids", "rows", "summaries")

    def __init__(self, snap: Snapshot):
        by_status = snap.index("requests", "status")
        self.ids: tuple[str, ...] = tuple(sorted(rid for status in OPEN_STATUSES for rid in by_status.get(status, ())))
        self.id_set = frozenset(self.ids)
        self.rows = snap.table("requests")
        self.summaries: dict[str, dict[str, Any]] = {}

    def summary(self, rid: str) -> dict[str, Any]:
        out = self.summaries.get(rid)
        if out is None:
            out = self.summaries[rid] = _queue_summary(self.rows[rid])
        return out


def _queue(snap: Snapshot) -> _Queue:
    return snap.memo("approvals.tools.queue", _Queue)


def _bands_by_type(snap: Snapshot) -> dict[str, list[Row]]:
    """Each request type's bands (``rules`` rows) in id order, per snapshot."""
    def build(s: Snapshot) -> dict[str, list[Row]]:
        rows = s.table("rules")
        return {t: [rows[rid] for rid in ids] for t, ids in s.index("rules", "request_type").items()}
    return snap.memo("approvals.tools.bands_by_type", build)


# -- read tools ---------------------------------------------------------------------------
class ListPendingArgs(PageArgs):
    """A page of the open requests."""


_QUEUE_FIELDS = ("id", "type", "amount", "currency", "requester_id", "status", "submitted_at")


def _queue_summary(row: Row) -> dict[str, Any]:
    return {k: row[k] for k in _QUEUE_FIELDS}


@toolkit.tool(writes=False)
def list_pending(ctx: ToolContext, args: ListPendingArgs) -> dict:
    """List the requests waiting for a decision (status pending or on_hold), with the desk clock. Paginated in request id order: at most limit requests per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page); total counts every open request."""
    store = ctx.store
    check_cursor(store, "requests", args.cursor)
    queue = _queue(store.snapshot)
    written = store.written_ids("requests")
    if not written:  # the snapshot's queue is the live one
        chunk, cursor = _page_ids(queue.ids, args.cursor, args.limit)
        requests = [queue.summary(rid) for rid in chunk]
    else:
        # the snapshot's open ids the episode did not write, merged with the written rows
        # that are open now: O(page + rows written)
        cut = args.cursor
        start = bisect_right(queue.ids, cut) if cut is not None else 0
        changed = set(written)
        kept = (rid for rid in islice(queue.ids, start, None) if rid not in changed)
        opened = [rid for rid in written if (cut is None or rid > cut)
                  and (row := store.peek("requests", rid)) is not None and row["status"] in OPEN_STATUSES]
        ids = list(islice(merge(kept, opened), args.limit + 1))
        chunk = ids[: args.limit]
        cursor = chunk[-1] if len(ids) > args.limit else None
        requests = [queue.summary(rid) if rid not in changed else _queue_summary(store.peek("requests", rid))  # type: ignore[arg-type]
                    for rid in chunk]
    return {"now": _now(ctx), "requests": requests, "next_cursor": cursor, "total": _open_count(store, queue)}


def _open_count(store: Store, queue: _Queue) -> int:
    """The open requests now: the snapshot's open ids the episode did not write, plus the written
    rows that are open now (O(rows written))."""
    written = store.written_ids("requests")
    if not written:
        return len(queue.ids)
    changed = set(written)
    kept = len(queue.ids) - sum(1 for rid in changed if rid in queue.id_set)
    opened = sum(1 for rid in written if (row := store.peek("requests", rid)) is not None and row["status"] in OPEN_STATUSES)
    return kept + opened


class RequestArgs(ToolArgs):
    request_id: Id = Field(description="Request id, e.g. REQ-4821.")


@toolkit.tool(writes=False)
def get_request(ctx: ToolContext, args: RequestArgs) -> dict:
    """Return one request with every field (empty fields are null) and its order, if any."""
    row = _request(ctx, args.request_id)
    order = ctx.store.peek("orders", row["order_id"]) if row.get("order_id") else None
    return {"request": row, "order": order, "now": _now(ctx)}


class RulesArgs(ToolArgs):
    request_type: Literal[REQUEST_TYPES] = Field(description="Request type whose bands to return.")  # type: ignore[valid-type]


#: the desk procedure's rules as ``get_rules`` returns them (serialised with each result, never mutated)
_RULES = tuple({"id": rid, "title": title, "text": text} for rid, title, text in PROCEDURE)


@toolkit.tool(writes=False)
def get_rules(ctx: ToolContext, args: RulesArgs) -> dict:
    """Return the desk's rule document, whole: rules (the procedure, one rule per entry: id, title, text) and tables.bands (the request type's amount bands, in band id order: min/max amount in cents, required_level, required_role_id, hard_limit in cents, required_fields, sod_not_in_requester_line)."""
    if _unwritten(ctx.store, "rules"):
        bands: Sequence[Row] = _bands_by_type(ctx.store.snapshot).get(args.request_type, ())
    else:
        bands = ctx.store.rows("rules", request_type=args.request_type)
    return rule_document(_RULES, {"bands": list(bands)})


class ListRolesArgs(PageArgs):
    """A page of the approval roles."""


@toolkit.tool(writes=False)
def list_roles(ctx: ToolContext, args: ListRolesArgs) -> dict:
    """Return the approval roles: request types covered, amount limit (cents) and level (seniority, 1 to 4). Paginated in role id order: at most limit roles per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page); total counts every role."""
    # the role catalogue does not grow with the organisation: a short read of the whole table
    store = ctx.store
    check_cursor(store, "roles", args.cursor)
    if not _unwritten(store, "roles"):
        roles, cursor = page(store, "roles", args)
        return {"roles": roles, "next_cursor": cursor, "total": store.count("roles")}
    snap = store.snapshot
    ids = snap.ids("roles")
    chunk, cursor = _page_ids(ids, args.cursor, args.limit)
    rows = snap.table("roles")
    return {"roles": [rows[rid] for rid in chunk], "next_cursor": cursor, "total": len(ids)}


class FindPeopleArgs(PageArgs):
    name: Annotated[str, StringConstraints(min_length=2, max_length=80)] = Field(
        description="A person's name or part of it (case-insensitive).")


@toolkit.tool(writes=False)
def find_people(ctx: ToolContext, args: FindPeopleArgs) -> dict:
    """Find people by name (substring or shared surname): id, name, title, department, email, and the number of matches (total). Paginated in person id order: at most limit people per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page)."""
    store = ctx.store
    check_cursor(store, "people", args.cursor)
    if _unwritten(store, "people"):  # the snapshot's people: cached search and summaries
        index = name_index(store.snapshot)
        ids: Sequence[str] = index.cached_search(args.name)
        chunk, cursor = _page_ids(ids, args.cursor, args.limit)
        people = [index.summary(pid) for pid in chunk]
    else:
        ids = find_people_ids(store, args.name)
        chunk, cursor = _page_ids(ids, args.cursor, args.limit)
        people = [_person_summary(row) for row in (store.peek("people", pid) for pid in chunk) if row is not None]
    return {"people": people, "total": len(ids), "next_cursor": cursor}


class PersonArgs(ToolArgs):
    person_id: Id = Field(description="Person id, e.g. EMP-1234.")


_ASSIGNMENT_FIELDS = ("id", "role_id", "valid_from", "valid_to")


def _reporting_line(store: Store, row: Row) -> list[str]:
    """The managers above ``row`` (from the direct one upwards; at most 20, cycle-safe)."""
    line: list[str] = []
    current: Row | None = row
    while current is not None and current.get("manager_id") and current["manager_id"] not in line and len(line) < 20:
        line.append(current["manager_id"])
        current = store.peek("people", current["manager_id"])
    return line


def _assignments(store: Store, person_id: str) -> list[dict[str, Any]]:
    return [{k: rh[k] for k in _ASSIGNMENT_FIELDS} for rh in _rows_eq(store, "role_holders", "person_id", person_id)]


class _PersonCards:
    """``get_person``'s reporting line and assignments of the snapshot's people, built on
    first use per person (the desk's tools never write ``people`` or ``role_holders``)."""

    __slots__ = ("cards",)

    def __init__(self, snap: Snapshot):
        self.cards: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}


@toolkit.tool(writes=False)
def get_person(ctx: ToolContext, args: PersonArgs) -> dict:
    """Return one person with their manager, full reporting line (managers from the direct one upwards) and every role assignment they have or had (any window)."""
    store = ctx.store
    row = live_row(store, "people", args.person_id, f"no person {args.person_id[:64]!r}")
    if _unwritten(store, "people") and _unwritten(store, "role_holders"):
        cards = store.snapshot.memo("approvals.tools.person_cards", _PersonCards).cards
        card = cards.get(args.person_id)
        if card is None:
            card = cards[args.person_id] = (_reporting_line(store, row), _assignments(store, args.person_id))
        line, assignments = card
    else:
        line, assignments = _reporting_line(store, row), _assignments(store, args.person_id)
    return {"person": row, "reporting_line": line, "assignments": assignments}


class RoleHoldersArgs(PageArgs):
    role_id: Id = Field(description="Role id, e.g. R-417.")
    as_of: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, description="ISO date or datetime; default: now (the desk clock).")


@toolkit.tool(writes=False)
def lookup_role_holders(ctx: ToolContext, args: RoleHoldersArgs) -> dict:
    """Return the people holding a role as of a date (assignments whose valid_from <= date <= valid_to). Paginated in assignment id order: at most limit holders per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page); total counts every holder."""
    store = ctx.store
    live_row(store, "roles", args.role_id, f"no role {args.role_id[:64]!r}")
    check_cursor(store, "role_holders", args.cursor)
    at = _as_of(ctx, args.as_of)
    day = today(at)

    def covers(rh: Row) -> bool:
        return window_covers(rh["valid_from"], rh["valid_to"], day)

    rows, cursor = _first(_after(store, "role_holders", "role_id", args.role_id, args.cursor), covers, args.limit)
    total = sum(1 for rh in _rows_eq(store, "role_holders", "role_id", args.role_id) if covers(rh))
    holders = []
    for rh in rows:
        person = store.peek("people", rh["person_id"])
        holders.append({
            "assignment_id": rh["id"], "person_id": rh["person_id"], "name": person["name"] if person else None,
            "valid_from": rh["valid_from"], "valid_to": rh["valid_to"],
        })
    return {"role_id": args.role_id, "as_of": at, "holders": holders, "next_cursor": cursor, "total": total}


class DelegationsArgs(PageArgs):
    person_id: Id = Field(description="Person id whose delegations to return.")
    direction: Literal["received", "given"] = Field(
        "received", description="received: delegations to the person (default); given: delegations by the person.")
    as_of: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, description="ISO date or datetime; default: now (the desk clock).")
    include_inactive: bool = Field(
        False, description="Also return delegations not in effect at as_of (expired, future or revoked).")


@toolkit.tool(writes=False)
def lookup_delegations(ctx: ToolContext, args: DelegationsArgs) -> dict:
    """Return the delegations a person received (or, with direction given, gave) that are in effect as of a date/time (window covers the date, not revoked by then), or all of them with include_inactive. Paginated in delegation id order: at most limit per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page); total counts every delegation that matches."""
    store = ctx.store
    live_row(store, "people", args.person_id, f"no person {args.person_id[:64]!r}")
    at = _as_of(ctx, args.as_of)
    # one person's delegations: a handful, whatever the size of the organisation
    field = "delegate_id" if args.direction == "received" else "delegator_id"
    rows: Sequence[Row] = _rows_eq(store, "delegations", field, args.person_id)
    if not args.include_inactive:
        rows = [d for d in rows if in_window(d, at)]
    return {"person_id": args.person_id, "direction": args.direction, "as_of": at,
            **paged_list(rows, args, "delegations")}


# -- writing tools ------------------------------------------------------------------------
BasisIds = Annotated[list[Id], Field(max_length=10)]


class DecisionArgs(ToolArgs):
    request_id: Id = Field(description="Request to decide.")
    outcome: Literal["proceed", "hold", "reject"] = Field(
        description="proceed (approve), hold (waiting for information) or reject. To route a request use escalate.")
    approver_id: Id = Field(description="Person id of the approver whose decision it is.")
    basis_ids: BasisIds = Field(default_factory=list, description="Ids the decision rests on (rule cite_authority): the band id and the approver's role assignment or delegation id that gives them authority.")
    note: Annotated[str, StringConstraints(max_length=500)] = Field("", description="Short note for the audit trail.")


def _open_request(ctx: ToolContext, request_id: str) -> Row:
    row = _request(ctx, request_id)
    if row["status"] not in OPEN_STATUSES:
        raise ToolError("conflict", f"request {request_id} is already {row['status']}")
    return row


def _write_decision(ctx: ToolContext, request: Row, outcome: str, approver_id: str | None,
                    basis_ids: list[str], note: str, escalated_to: str | None) -> dict[str, Any]:
    rid = request["id"]
    n = 1 + ctx.store.count("decisions", request_id=rid)
    row = ctx.store.insert("decisions", {
        "id": f"DEC-{rid}-{n}", "request_id": rid, "outcome": outcome, "approver_id": approver_id,
        "basis_ids": list(basis_ids), "escalated_to": escalated_to, "note": note, "decided_at": _now(ctx),
    })
    ctx.store.update("requests", rid, {"status": DECISION_STATUS[outcome]})
    return row


@toolkit.tool(writes=True)
def record_decision(ctx: ToolContext, args: DecisionArgs) -> dict:
    """Record the named approver's decision on an open request (pending or on_hold) and set its status (approved / on_hold / rejected). Every decision names its approver."""
    request = _open_request(ctx, args.request_id)
    live_row(ctx.store, "people", args.approver_id, f"no person {args.approver_id[:64]!r}")
    row = _write_decision(ctx, request, args.outcome, args.approver_id, args.basis_ids, args.note, None)
    return {"decision": row, "request_status": DECISION_STATUS[args.outcome]}


class EscalateArgs(ToolArgs):
    request_id: Id = Field(description="Request to route.")
    role_id: Id = Field(description="Role the request is routed to.")
    basis_ids: BasisIds = Field(default_factory=list, description="Ids the routing rests on (rule blocking_fact): the band id and the id of the fact that keeps the named approver from deciding.")
    note: Annotated[str, StringConstraints(max_length=500)] = Field("", description="Short note for the audit trail.")


@toolkit.tool(writes=True)
def escalate(ctx: ToolContext, args: EscalateArgs) -> dict:
    """Route an open request to a role's holders: records an 'escalate' decision and sets the status to escalated."""
    request = _open_request(ctx, args.request_id)
    live_row(ctx.store, "roles", args.role_id, f"no role {args.role_id[:64]!r}")
    row = _write_decision(ctx, request, "escalate", None, args.basis_ids, args.note, args.role_id)
    return {"decision": row, "request_status": "escalated"}


class LedgerArgs(ToolArgs):
    request_id: Id = Field(description="Request the entry settles.")
    account: Id = Field(description="Account credited (the request's beneficiary_account).")
    amount: int = Field(ge=1, le=10**12, description="Amount in cents.")
    memo: Annotated[str, StringConstraints(max_length=200)] = Field("", description="Ledger memo.")


@toolkit.tool(writes=True)
def post_ledger_entry(ctx: ToolContext, args: LedgerArgs) -> dict:
    """Post the ledger entry that pays out a refund, credit adjustment, write-off or expense claim. One entry per request."""
    request = _request(ctx, args.request_id)
    if not is_ledger_type(request["type"]):
        raise ToolError("precondition_failed", f"{request['type']} requests are released with release_order")
    if ctx.store.count("ledger_entries", request_id=request["id"]):
        raise ToolError("conflict", f"a ledger entry for {request['id']} already exists")
    row = ctx.store.insert("ledger_entries", {
        "id": f"LE-{request['id']}-1", "request_id": request["id"], "account": args.account,
        "amount": args.amount, "memo": args.memo, "posted_at": _now(ctx),
    })
    return {"ledger_entry": row}


class OrderArgs(ToolArgs):
    order_id: Id = Field(description="Order id, e.g. PO-30117.")


@toolkit.tool(writes=True)
def release_order(ctx: ToolContext, args: OrderArgs) -> dict:
    """Release an order awaiting approval (purchase orders and vendor payments) to the supplier."""
    row = live_row(ctx.store, "orders", args.order_id, f"no order {args.order_id[:64]!r}")
    if row["status"] != "awaiting_approval":
        raise ToolError("conflict", f"order {args.order_id} is {row['status']}")
    new = ctx.store.update("orders", args.order_id, {"status": "released", "released_at": _now(ctx)})
    return {"order": new}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the task (ends the episode)."""
    return {"submitted": True}


ALL_TOOLS = tuple(toolkit.names)
