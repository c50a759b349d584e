"""Tools of the sufficiency desk: read a case, its requirements, documents and held records;
attach held records, request items (pausing the SLA clock), wait for the applicant's reply,
resume the clock, release and route the case, write notes, submit.

Tools never judge validity for the agent: documents come back as raw fields (issue date,
signature, name, legibility) and the agent applies the rules ``get_requirements`` returns.
The scripted replies (``_events``, ``_uploads``) are only ever read by ``wait``, one at a time.

Every read goes by primary key or through an equality field's index (``store.select``/``count``,
or :func:`~backoffice.envs.sufficiency.reads.rows_by` for the live rows a tool only reads: never a
scan of a table that grows with the world, never a copy of a row it does not return), and the
tools that list rows (``list_cases``, ``list_documents``, ``search_held_records``) return one page at a time
(``limit``, default 50, at most 200; ``cursor``: the ``next_cursor`` of the previous page, which
is ``None`` on the last page).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit
from backoffice.envs.core.tools import PageArgs, live_row, page_result, rule_document
from backoffice.envs.sufficiency.reads import rows_by
from backoffice.envs.sufficiency.tables import INTAKE_QUEUE, RULE_ENTRIES, add_days, case_number, days_between

toolkit = Toolkit()

_CASE_ID = Field(description="Case id, e.g. CASE-40213.", max_length=40)
_DOC_FIELDS = ("id", "item_type", "issued_on", "signed", "name_on_document", "legible", "source",
               "held_record_id", "received_at", "review_round")
_CASE_SUMMARY = ("id", "case_type", "applicant_name", "status", "queue", "clock_state")
_REQUEST_VIEW = ("id", "items", "requested_at", "status", "answered_at")
#: the fields of every stored document and item request (see ``tables``): a view of such a row is
#: a copy without the fields it leaves out (the same JSON: results are serialised with sorted keys)
_DOC_ROW = frozenset((*_DOC_FIELDS, "case_id"))
_REQUEST_ROW = frozenset((*_REQUEST_VIEW, "case_id", "review_round", "message"))


def _case(ctx: ToolContext, case_id: str) -> dict[str, Any]:
    """The live case row (read-only: change it through ``store.update``), or not_found."""
    return live_row(ctx.store, "cases", case_id, f"no case {case_id[:40]!r}")


def _now(ctx: ToolContext) -> str:
    """``ctx.now`` (the clock's ISO time) read from the live clock row."""
    clock = ctx.store.peek("clock", "clock")
    return clock["now"] if clock else ""


def _doc_view(doc: dict[str, Any]) -> dict[str, Any]:
    """A document as the tools show it (every field but ``case_id``), as a fresh dict."""
    if doc.keys() == _DOC_ROW:
        view = dict(doc)
        del view["case_id"]
        return view
    return {k: doc.get(k) for k in _DOC_FIELDS}


def _request_view(request: dict[str, Any]) -> dict[str, Any]:
    """An item request as ``get_case`` shows it (``_REQUEST_VIEW``), as a fresh dict."""
    if request.keys() == _REQUEST_ROW:
        view = dict(request)
        del view["case_id"], view["review_round"], view["message"]
        return view
    return {k: request.get(k) for k in _REQUEST_VIEW}


def _open_case(ctx: ToolContext, case_id: str) -> dict[str, Any]:
    case = _case(ctx, case_id)
    if case["status"] == "released":
        raise ToolError("conflict", f"{case_id} has been released for decision; its file is closed")
    return case


def _free_number(ctx: ToolContext, table: str, prefix: str, n: int) -> int:
    """The first ``k >= n`` such that ``PREFIX-kk`` is not an id of ``table``."""
    exists = ctx.store.exists
    while exists(table, f"{prefix}-{n:02d}"):
        n += 1
    return n


def _next_id(ctx: ToolContext, table: str, prefix: str, case_id: str) -> str:
    """The next free ``PREFIX-NN`` id of a case's rows in ``table``. Every row whose id starts
    with ``PREFIX-`` (the case's number) belongs to the case and the other way round, so the
    case's rows are counted through the ``case_id`` index rather than by scanning every id."""
    return f"{prefix}-{_free_number(ctx, table, prefix, 1 + ctx.store.count(table, case_id=case_id)):02d}"


def _event_order(event: dict[str, Any]) -> tuple[int, str]:
    """Scripted replies are delivered in ``seq`` order (then id)."""
    return event["seq"], event["id"]


def _case_view(ctx: ToolContext, case: dict[str, Any]) -> dict[str, Any]:
    requests = [_request_view(r) for r in rows_by(ctx.store, "item_requests", "case_id", case["id"])]
    return {"case": case, "now": _now(ctx), "item_requests": requests}


# -- reads ------------------------------------------------------------------------------------
class CaseArgs(ToolArgs):
    case_id: str = _CASE_ID


@toolkit.tool(writes=False)
def get_case(ctx: ToolContext, args: CaseArgs) -> dict:
    """Return one case (type, applicant, amount, status in_review/awaiting_info/released, queue,
    SLA clock_state running/paused, SLA due date, review round), its item requests and the
    current date and time (`now`, the review date)."""
    return _case_view(ctx, _case(ctx, args.case_id))


class ListCasesArgs(PageArgs):
    queue: str = Field(INTAKE_QUEUE, description="Queue to list, e.g. intake.", max_length=40)


@toolkit.tool(writes=False)
def list_cases(ctx: ToolContext, args: ListCasesArgs) -> dict:
    """List the cases in one queue (summaries by id), one page at a time: at most ``limit``
    cases (default 50, at most 200), ``next_cursor`` (the ``cursor`` that fetches the next page,
    ``None`` on the last page) and ``total`` (cases in the queue)."""
    out = page_result(ctx.store, "cases", args, "cases", queue=args.queue)
    out["cases"] = [{k: r.get(k) for k in _CASE_SUMMARY} for r in out["cases"]]
    return {"queue": args.queue, **out}


class RequirementsArgs(ToolArgs):
    case_type: str = Field(description="Case type, e.g. income_support_claim (see get_case).", max_length=60)


@toolkit.tool(writes=False)
def get_requirements(ctx: ToolContext, args: RequirementsArgs) -> dict:
    """The desk's rule document for a case type, whole: the rules (``rules``: id, title, text)
    and, under ``tables``, the items the case type requires with their validity conditions
    (``items``: max_age_days, signature_required, name_must_match, accept_held_record) and its
    routing rule (``routing``: standard and senior decision queue, senior threshold in cents)."""
    items = rows_by(ctx.store, "requirements", "case_type", args.case_type)
    routing = ctx.store.peek("routing_rules", args.case_type)
    if not items or routing is None:
        raise ToolError("not_found", f"no requirements for case type {args.case_type[:60]!r}")
    return rule_document(RULE_ENTRIES, {"items": items, "routing": routing})


class ListDocumentsArgs(PageArgs):
    case_id: str = _CASE_ID


@toolkit.tool(writes=False)
def list_documents(ctx: ToolContext, args: ListDocumentsArgs) -> dict:
    """List the documents on a case with their raw fields: item_type, issued_on, signed,
    name_on_document, legible, source (applicant or held_record), received_at, review_round.
    One page at a time, by id: at most ``limit`` documents (default 50, at most 200),
    ``next_cursor`` (the ``cursor`` that fetches the next page, ``None`` on the last page) and
    ``total``; ``now`` is the review date."""
    _case(ctx, args.case_id)
    out = page_result(ctx.store, "documents", args, "documents", case_id=args.case_id)
    out["documents"] = [_doc_view(d) for d in out["documents"]]
    return {"case_id": args.case_id, "now": _now(ctx), **out}


class HeldSearchArgs(PageArgs):
    case_id: str = _CASE_ID
    item_type: str | None = Field(None, description="Only records of this item type.", max_length=60)


@toolkit.tool(writes=False)
def search_held_records(ctx: ToolContext, args: HeldSearchArgs) -> dict:
    """Search the records the organisation already holds about the case's applicant
    (optionally of one item type). Records are not on the case until attached. One page at a
    time, by id: at most ``limit`` records (default 50, at most 200) and ``next_cursor``, the
    ``cursor`` that fetches the next page (``None`` on the last page); ``total`` counts them all."""
    case = _case(ctx, args.case_id)
    filters = {"applicant_id": case["applicant_id"], **({} if args.item_type is None else {"item_type": args.item_type})}
    return {"case_id": args.case_id, "applicant_id": case["applicant_id"], **page_result(ctx.store, "held_records", args, "records", **filters)}


# -- writes -----------------------------------------------------------------------------------
class AttachArgs(ToolArgs):
    case_id: str = _CASE_ID
    record_id: str = Field(description="Held record id from search_held_records, e.g. HR-10234.", max_length=40)


@toolkit.tool(writes=True)
def attach_held_record(ctx: ToolContext, args: AttachArgs) -> dict:
    """Attach a record the organisation holds to the case as a document (source held_record).
    Errors: not_found (no such record for this applicant), conflict (already attached, or the
    case is released)."""
    case = _open_case(ctx, args.case_id)
    record = ctx.store.peek("held_records", args.record_id)
    if record is None or record["applicant_id"] != case["applicant_id"]:
        raise ToolError("not_found", f"no held record {args.record_id[:40]!r} for this applicant")
    docs = rows_by(ctx.store, "documents", "case_id", case["id"])
    if any(d["held_record_id"] == record["id"] for d in docs):
        raise ToolError("conflict", f"{record['id']} is already attached to {case['id']}")
    prefix = f"DOC-{case_number(case['id'])}"
    doc = ctx.store.insert("documents", {
        "id": f"{prefix}-{_free_number(ctx, 'documents', prefix, 1 + len(docs)):02d}", "case_id": case["id"],
        "item_type": record["item_type"], "issued_on": record["issued_on"], "signed": record["signed"],
        "name_on_document": record["name_on_document"], "legible": record["legible"],
        "source": "held_record", "held_record_id": record["id"], "received_at": _now(ctx),
        "review_round": case["review_round"],
    })
    return {"attached": _doc_view(doc)}


class RequestArgs(ToolArgs):
    case_id: str = _CASE_ID
    items: list[str] = Field(min_length=1, max_length=12, description="Item types to request from the applicant, e.g. [\"proof_of_address\"].")
    message: str | None = Field(None, description="Optional message to the applicant.", max_length=1000)


@toolkit.tool(writes=True)
def request_items(ctx: ToolContext, args: RequestArgs) -> dict:
    """Ask the applicant for items. The case goes to awaiting_info and its SLA clock is paused
    until the reply has been received. Errors: not_found (an item the case type does not
    require), conflict (the case is released)."""
    case = _open_case(ctx, args.case_id)
    known = {r["item_type"] for r in rows_by(ctx.store, "requirements", "case_type", case["case_type"])}
    unknown = sorted({i for i in args.items if i not in known})
    if unknown:
        raise ToolError("not_found", f"{case['case_type']} requires no item {unknown[0][:60]!r}")
    items = sorted(set(args.items))
    now = _now(ctx)
    request = ctx.store.insert("item_requests", {
        "id": _next_id(ctx, "item_requests", f"IR-{case_number(case['id'])}", case["id"]), "case_id": case["id"],
        "items": items, "requested_at": now, "review_round": case["review_round"], "status": "open",
        "answered_at": None, "message": args.message,
    })
    changes: dict[str, Any] = {"status": "awaiting_info"}
    if case["clock_state"] == "running":
        changes.update(clock_state="paused", paused_at=now)
    case = ctx.store.update("cases", case["id"], changes)
    return {"request": request, "case": {k: case[k] for k in ("id", "status", "clock_state", "paused_at")}}


@toolkit.tool(writes=True)
def wait(ctx: ToolContext, args: CaseArgs) -> dict:
    """Advance the clock to the applicant's next reply on a case that awaits information. The
    uploaded documents join the case and the case returns to in_review (the SLA clock stays
    paused until resume_clock). Error precondition_failed: no request is outstanding, or no
    reply is expected before the end of the review period."""
    case = _case(ctx, args.case_id)
    if case["status"] != "awaiting_info":
        raise ToolError("precondition_failed", f"{case['id']} has no outstanding request to wait for")
    pending = [e for e in rows_by(ctx.store, "_events", "case_id", case["id"]) if not e["delivered"]]
    if not pending:
        raise ToolError("precondition_failed", "no reply from the applicant is expected before the end of the review period")
    event = min(pending, key=_event_order)
    now = max(_now(ctx), event["at"])
    ctx.store.update("clock", "clock", {"now": now})
    ctx.store.update("_events", event["id"], {"delivered": True})
    review_round = case["review_round"] + 1
    uploaded = []
    uploads = rows_by(ctx.store, "_uploads", "event_id", event["id"])
    if uploads:
        # one count of the case's documents, then the next free number after each insert: the
        # ids ``_next_id`` would give one insert at a time
        prefix = f"DOC-{case_number(case['id'])}"
        n = 1 + ctx.store.count("documents", case_id=case["id"])
        for up in uploads:
            n = _free_number(ctx, "documents", prefix, n)
            uploaded.append(ctx.store.insert("documents", {
                "id": f"{prefix}-{n:02d}", "case_id": case["id"],
                "item_type": up["item_type"], "issued_on": up["issued_on"], "signed": up["signed"],
                "name_on_document": up["name_on_document"], "legible": up["legible"], "source": "applicant",
                "held_record_id": None, "received_at": now, "review_round": review_round,
            }))
            n += 1
    for req in [r for r in rows_by(ctx.store, "item_requests", "case_id", case["id"]) if r["status"] == "open"]:
        ctx.store.update("item_requests", req["id"], {"status": "answered", "answered_at": now})
    case = ctx.store.update("cases", case["id"], {"status": "in_review", "review_round": review_round})
    return {
        "case_id": case["id"], "now": now, "message": event["message"],
        "documents": [_doc_view(d) for d in uploaded],
        "case": {k: case[k] for k in ("status", "clock_state", "review_round")},
    }


@toolkit.tool(writes=True)
def resume_clock(ctx: ToolContext, args: CaseArgs) -> dict:
    """Restart a paused SLA clock once the applicant's reply has been received; the SLA due
    date moves by the days the clock was paused. Errors: conflict (the clock is running, or
    the case still awaits the applicant's reply)."""
    case = _case(ctx, args.case_id)
    if case["clock_state"] != "paused":
        raise ToolError("conflict", f"the SLA clock of {case['id']} is already running")
    if case["status"] == "awaiting_info":
        raise ToolError("conflict", f"{case['id']} still awaits the applicant's reply")
    paused_days = days_between(case["paused_at"], _now(ctx)) if case["paused_at"] else 0
    case = ctx.store.update("cases", case["id"], {
        "clock_state": "running", "paused_at": None, "sla_due_on": add_days(case["sla_due_on"], paused_days),
    })
    return {"case": {k: case[k] for k in ("id", "status", "clock_state", "sla_due_on")}}


@toolkit.tool(writes=True)
def release_case(ctx: ToolContext, args: CaseArgs) -> dict:
    """Release a case for decision (status released). It stays in its queue until routed.
    Errors: conflict (already released, or a request to the applicant is outstanding)."""
    case = _open_case(ctx, args.case_id)
    if case["status"] == "awaiting_info":
        raise ToolError("conflict", f"{case['id']} awaits the applicant's reply; it cannot be released now")
    case = ctx.store.update("cases", case["id"], {"status": "released", "released_at": _now(ctx)})
    return {"case": {k: case[k] for k in ("id", "status", "queue", "clock_state", "released_at")}}


class RouteArgs(ToolArgs):
    case_id: str = _CASE_ID
    queue: str = Field(description="Target queue, e.g. support_decision (see get_requirements routing).", max_length=40)


@toolkit.tool(writes=True)
def route_case(ctx: ToolContext, args: RouteArgs) -> dict:
    """Move a case to a queue. Errors: not_found (no such queue), conflict (the case already
    sits in that queue)."""
    case = _case(ctx, args.case_id)
    if ctx.store.peek("queues", args.queue) is None:
        raise ToolError("not_found", f"no queue {args.queue[:40]!r}")
    if case["queue"] == args.queue:
        raise ToolError("conflict", f"{case['id']} is already in {args.queue}")
    case = ctx.store.update("cases", case["id"], {"queue": args.queue})
    return {"case": {k: case[k] for k in ("id", "status", "queue")}}


class NoteArgs(ToolArgs):
    case_id: str = _CASE_ID
    text: str = Field(min_length=1, max_length=2000, description="The note.")


@toolkit.tool(writes=True)
def add_note(ctx: ToolContext, args: NoteArgs) -> dict:
    """Add a note to a case."""
    case = _case(ctx, args.case_id)
    note = ctx.store.insert("notes", {
        "id": _next_id(ctx, "notes", f"NT-{case_number(case['id'])}", case["id"]), "case_id": case["id"],
        "author": "agent", "written_at": _now(ctx), "text": args.text,
    })
    return {"note": note}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the episode, leaving every case as it is."""
    return {"submitted": True}

