"""Tools of the approval desk.

Read tools never change state. Writing tools (``record_decision``, ``escalate``,
``post_ledger_entry``, ``release_order``) check only their own preconditions: like the real
systems, the downstream tools do not know whether a valid approval exists, so an agent can
release money before (or without) a valid decision; the grader sees that in the diff and trace.
Error codes: ``not_found``, ``conflict``, ``precondition_failed`` and ``invalid_args``.

Every list tool whose answer grows with the organisation (``list_pending``, ``list_roles``,
``find_people``, ``lookup_role_holders``) is paginated: ``limit`` rows per call (default
``PAGE_SIZE`` = 50, at most ``MAX_PAGE_SIZE`` = 200) in id order, and ``next_cursor`` (pass it as
``cursor`` for the next page; ``None`` on the last page). Every read is by primary key or by an
indexed equality (``store.select(table, field=value)``); ``find_people`` reads a per-snapshot
name index (:mod:`.names`). The answers that are not paginated are bounded: one request type's
rules (a few bands), one person's assignments and delegations, one reporting line.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from backoffice.envs.approvals.names import find_people_ids
from backoffice.envs.approvals.rules import in_window, is_ledger_type, window_covers
from backoffice.envs.approvals.tables import DECISION_STATUS, OPEN_STATUSES, POLICY, REQUEST_TYPES, normalise_instant, today
from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit, require_row
from backoffice.envs.core.tools import MAX_PAGE_SIZE, PAGE_SIZE, PageArgs, page

toolkit = Toolkit()

Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]

__all__ = ["ALL_TOOLS", "MAX_PAGE_SIZE", "PAGE_SIZE", "toolkit"]


def _now(ctx: ToolContext) -> str:
    return ctx.now


def _as_of(ctx: ToolContext, value: str | None) -> str:
    if value is None:
        return _now(ctx)
    try:
        return normalise_instant(value)
    except ValueError:
        raise ToolError("invalid_args", "as_of must be an ISO date (YYYY-MM-DD) or datetime (YYYY-MM-DDTHH:MM:SS)") from None


def _request(ctx: ToolContext, request_id: str) -> dict[str, Any]:
    return require_row(ctx.store, "requests", request_id, f"no request {request_id[:64]!r}")


def _person_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("id", "name", "title", "department", "email")}


# -- read tools ---------------------------------------------------------------------------
class ListPendingArgs(PageArgs):
    """A page of the open requests."""


_QUEUE_FIELDS = ("id", "type", "amount", "currency", "requester_id", "status", "submitted_at")


@toolkit.tool(writes=False)
def list_pending(ctx: ToolContext, args: ListPendingArgs) -> dict:
    """List the requests waiting for a decision (status pending or on_hold), with the desk clock. Paginated in request id order: at most limit requests per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page)."""
    # one indexed select per open status, each cut at limit + 1: their merge holds the page
    rows = sorted(
        (r for status in OPEN_STATUSES
         for r in ctx.store.select("requests", after=args.cursor, limit=args.limit + 1, status=status)),
        key=lambda r: r["id"],
    )
    chunk = rows[: args.limit]
    return {
        "now": _now(ctx),
        "requests": [{k: r[k] for k in _QUEUE_FIELDS} for r in chunk],
        "next_cursor": chunk[-1]["id"] if len(rows) > args.limit else None,
    }


class RequestArgs(ToolArgs):
    request_id: Id = Field(description="Request id, e.g. REQ-4821.")


@toolkit.tool(writes=False)
def get_request(ctx: ToolContext, args: RequestArgs) -> dict:
    """Return one request with every field (empty fields are null) and its order, if any."""
    row = _request(ctx, args.request_id)
    order = ctx.store.get("orders", row["order_id"]) if row.get("order_id") else None
    return {"request": row, "order": order, "now": _now(ctx)}


class RulesArgs(ToolArgs):
    request_type: Literal[REQUEST_TYPES] = Field(description="Request type whose approval rules to return.")  # type: ignore[valid-type]


@toolkit.tool(writes=False)
def get_rules(ctx: ToolContext, args: RulesArgs) -> dict:
    """Return the approval rules (amount bands, required role and level, hard limit, separation-of-duties flags, required fields) of a request type, and the desk procedure."""
    rules = sorted(ctx.store.rows("rules", request_type=args.request_type), key=lambda r: r["min_amount"])
    return {"request_type": args.request_type, "rules": rules, "procedure": list(POLICY)}


class ListRolesArgs(PageArgs):
    """A page of the approval roles."""


@toolkit.tool(writes=False)
def list_roles(ctx: ToolContext, args: ListRolesArgs) -> dict:
    """Return the approval roles: request types covered, amount limit (cents) and level. Paginated in role id order: at most limit roles per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page)."""
    # the role catalogue does not grow with the organisation: a short read of the whole table
    roles, cursor = page(ctx.store, "roles", args)
    return {"roles": roles, "next_cursor": cursor}


class FindPeopleArgs(PageArgs):
    name: Annotated[str, StringConstraints(min_length=2, max_length=80)] = Field(
        description="A person's name or part of it (case-insensitive).")


@toolkit.tool(writes=False)
def find_people(ctx: ToolContext, args: FindPeopleArgs) -> dict:
    """Find people by name (substring or shared surname): id, name, title, department, email, and the number of matches (total). Paginated in person id order: at most limit people per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page)."""
    ids = find_people_ids(ctx.store, args.name)
    start = bisect_right(ids, args.cursor) if args.cursor is not None else 0
    chunk = ids[start: start + args.limit]
    people = [_person_summary(row) for row in (ctx.store.get("people", pid) for pid in chunk) if row is not None]
    more = start + args.limit < len(ids)
    return {"people": people, "total": len(ids), "next_cursor": chunk[-1] if more else None}


class PersonArgs(ToolArgs):
    person_id: Id = Field(description="Person id, e.g. EMP-1234.")


@toolkit.tool(writes=False)
def get_person(ctx: ToolContext, args: PersonArgs) -> dict:
    """Return one person with their manager, full reporting line (managers from the direct one upwards) and every role assignment they have or had (any window)."""
    row = require_row(ctx.store, "people", args.person_id, f"no person {args.person_id[:64]!r}")
    line: list[str] = []
    current: dict[str, Any] | None = row
    while current is not None and current.get("manager_id") and current["manager_id"] not in line and len(line) < 20:
        line.append(current["manager_id"])
        current = ctx.store.get("people", current["manager_id"])
    assignments = [
        {k: rh[k] for k in ("id", "role_id", "valid_from", "valid_to")}
        for rh in ctx.store.select("role_holders", person_id=args.person_id)
    ]
    return {"person": row, "reporting_line": line, "assignments": assignments}


class RoleHoldersArgs(PageArgs):
    role_id: Id = Field(description="Role id, e.g. R-417.")
    as_of: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, description="ISO date or datetime; default: now (the desk clock).")


@toolkit.tool(writes=False)
def lookup_role_holders(ctx: ToolContext, args: RoleHoldersArgs) -> dict:
    """Return the people holding a role as of a date (assignments whose valid_from <= date <= valid_to). Paginated in assignment id order: at most limit holders per call (default 50, at most 200); pass the returned next_cursor as cursor for the next page (null on the last page)."""
    require_row(ctx.store, "roles", args.role_id, f"no role {args.role_id[:64]!r}")
    at = _as_of(ctx, args.as_of)
    day = today(at)
    rows, cursor = page(ctx.store, "role_holders", args, lambda rh: window_covers(rh["valid_from"], rh["valid_to"], day),
                        role_id=args.role_id)
    holders = []
    for rh in rows:
        person = ctx.store.get("people", rh["person_id"])
        holders.append({
            "assignment_id": rh["id"], "person_id": rh["person_id"], "name": person["name"] if person else None,
            "valid_from": rh["valid_from"], "valid_to": rh["valid_to"],
        })
    return {"role_id": args.role_id, "as_of": at, "holders": holders, "next_cursor": cursor}


class DelegationsArgs(ToolArgs):
    person_id: Id = Field(description="Person id whose delegations to return.")
    as_of: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, description="ISO date or datetime; default: now (the desk clock).")
    include_inactive: bool = Field(
        False, description="Also return delegations not in effect at as_of (expired, future or revoked).")


@toolkit.tool(writes=False)
def lookup_delegations(ctx: ToolContext, args: DelegationsArgs) -> dict:
    """Return delegations received and given by a person that are in effect as of a date/time (window covers the date, not revoked by then), or all of them with include_inactive."""
    require_row(ctx.store, "people", args.person_id, f"no person {args.person_id[:64]!r}")
    at = _as_of(ctx, args.as_of)

    def shown(d: dict[str, Any]) -> bool:
        return args.include_inactive or in_window(d, at)

    # one person's delegations: a handful, whatever the size of the organisation
    received = ctx.store.select("delegations", shown, delegate_id=args.person_id)
    given = ctx.store.select("delegations", shown, delegator_id=args.person_id)
    return {"person_id": args.person_id, "as_of": at, "received": received, "given": given}


# -- writing tools ------------------------------------------------------------------------
BasisIds = Annotated[list[Id], Field(max_length=10)]


class DecisionArgs(ToolArgs):
    request_id: Id = Field(description="Request to decide.")
    outcome: Literal["proceed", "hold", "reject"] = Field(
        description="proceed (approve), hold (waiting for information) or reject. To route a request use escalate.")
    approver_id: Id | None = Field(None, description="Person id of the approver whose decision it is (required).")
    basis_ids: BasisIds = Field(default_factory=list, description="Ids the decision rests on: the rule id and the approver's role assignment or delegation id that gives the authority.")
    note: Annotated[str, StringConstraints(max_length=500)] = Field("", description="Short note for the audit trail.")


def _open_request(ctx: ToolContext, request_id: str) -> dict[str, Any]:
    row = _request(ctx, request_id)
    if row["status"] not in OPEN_STATUSES:
        raise ToolError("conflict", f"request {request_id} is already {row['status']}")
    return row


def _write_decision(ctx: ToolContext, request: dict[str, Any], outcome: str, approver_id: str | None,
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
    if args.approver_id is not None:
        require_row(ctx.store, "people", args.approver_id, f"no person {args.approver_id[:64]!r}")
    if args.approver_id is None:
        raise ToolError("precondition_failed", "a decision needs approver_id (the person whose decision it is)")
    row = _write_decision(ctx, request, args.outcome, args.approver_id, args.basis_ids, args.note, None)
    return {"decision": row, "request_status": DECISION_STATUS[args.outcome]}


class EscalateArgs(ToolArgs):
    request_id: Id = Field(description="Request to route.")
    role_id: Id = Field(description="Role the request is routed to.")
    basis_ids: BasisIds = Field(default_factory=list, description="Ids the routing rests on: the rule id and the id of the fact that keeps the named approver from deciding (see the desk procedure).")
    note: Annotated[str, StringConstraints(max_length=500)] = Field("", description="Short note for the audit trail.")


@toolkit.tool(writes=True)
def escalate(ctx: ToolContext, args: EscalateArgs) -> dict:
    """Route an open request to a role's holders: records an 'escalate' decision and sets the status to escalated."""
    request = _open_request(ctx, args.request_id)
    require_row(ctx.store, "roles", args.role_id, f"no role {args.role_id[:64]!r}")
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
    if ctx.store.select("ledger_entries", request_id=request["id"], limit=1):
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
    row = require_row(ctx.store, "orders", args.order_id, f"no order {args.order_id[:64]!r}")
    if row["status"] != "awaiting_approval":
        raise ToolError("conflict", f"order {args.order_id} is {row['status']}")
    new = ctx.store.update("orders", args.order_id, {"status": "released", "released_at": _now(ctx)})
    return {"order": new}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the task (ends the episode)."""
    return {"submitted": True}


ALL_TOOLS = tuple(toolkit.names)
