"""Tools of the refunds domain. Read: get_rules, list_requests, get_request. Write:
decide_refund. Terminal: submit.

Error codes: ``not_found`` (no such request), ``precondition_failed`` (a rejection with a
non-zero amount), ``invalid_args`` (a bad page or cursor).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backoffice.envs.core import NoArgs, PageArgs, ToolArgs, ToolContext, ToolError, Toolkit, page_result, require_row, rule_document
from backoffice.envs.refunds.tables import STATUS_OF_OUTCOME, rule_entries

toolkit = Toolkit()


@toolkit.tool(writes=False)
def get_rules(ctx: ToolContext, args: NoArgs) -> dict:
    """This desk's refund rules, whole: the cap, the restocking fee percent, the days from which
    late returns pay twice and three times the fee, and the last day a refund is accepted (each
    rule's ``value``)."""
    return rule_document(rule_entries(require_row(ctx.store, "desk", "desk")))


class ListArgs(PageArgs):
    customer: str = Field(min_length=1, max_length=40, description="Customer id, e.g. CUS-1042.")


@toolkit.tool(writes=False)
def list_requests(ctx: ToolContext, args: ListArgs) -> dict:
    """The customer's refund requests in id order (``limit`` per page, default 50; pass
    ``next_cursor`` back as ``cursor`` for the next page; ``total`` counts them all): order,
    amounts asked, paid and already refunded (cents), days since delivery, status."""
    return page_result(ctx.store, "requests", args, "requests", customer=args.customer)


class RequestArgs(ToolArgs):
    request_id: str = Field(min_length=1, max_length=40, description="Id of the refund request, e.g. REF-10417.")


@toolkit.tool(writes=False)
def get_request(ctx: ToolContext, args: RequestArgs) -> dict:
    """One refund request by id (the fields of ``list_requests``, and the amount decided so far)."""
    return require_row(ctx.store, "requests", args.request_id, f"no refund request {args.request_id}")


class DecideArgs(ToolArgs):
    request_id: str = Field(min_length=1, max_length=40, description="Id of the refund request to decide.")
    outcome: Literal["approve", "reject"] = Field(description="approve (refund amount_cents) or reject.")
    amount_cents: int = Field(ge=0, le=100_000_000, description="Refund to pay, in cents (0 for a rejection).")


@toolkit.tool(writes=True)
def decide_refund(ctx: ToolContext, args: DecideArgs) -> dict:
    """Record the decision on a refund request: approve with the amount to refund, or reject
    with amount 0. A decided request may be decided again (each decision is recorded)."""
    require_row(ctx.store, "requests", args.request_id, f"no refund request {args.request_id}")
    if args.outcome == "reject" and args.amount_cents != 0:
        raise ToolError("precondition_failed", "a rejection refunds nothing: send amount_cents 0")
    row = ctx.store.update("requests", args.request_id, {
        "status": STATUS_OF_OUTCOME[args.outcome], "decided_amount_cents": args.amount_cents})
    return {"request_id": row["id"], "status": row["status"], "decided_amount_cents": row["decided_amount_cents"]}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the task; the decisions made so far are graded."""
    return {"submitted": True}
