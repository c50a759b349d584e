"""Tools of the schedules domain.

Reads: get_request, get_policy, get_rules, get_schedule, list_instalments, get_instruction,
list_reminders, list_approvals. Writes: create_draft_schedule, add_instalment,
remove_instalment, request_approval, wait, commit_schedule, supersede_schedule,
cancel_instalments, update_instruction, create_reminder, cancel_reminder. Terminal: submit.

get_rules returns the one rule-document shape (``{"rules": [{"id", "title", "text", "value"}],
"tables": {...}}``, whole, never paginated). The list tools (list_instalments, list_reminders,
list_approvals) page the same way: ``limit`` rows per page (default 50, at most 200) and the
``next_cursor`` of the previous page as ``cursor``; every filter is optional; the result carries
the rows in id order, ``next_cursor`` (``None`` on the last page) and ``total`` (rows matching the
filters over every page). Every other read goes by primary key.

Error codes: ``not_found``, ``conflict`` (wrong status for the operation),
``precondition_failed`` (a rule of the book is broken: a due date not in the future, an amount
under the minimum, nothing to wait for), ``approval_required`` (commit of a schedule whose
required approval is not granted; ``details`` names the trigger and role).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from operator import itemgetter
from typing import Any, Literal

from pydantic import Field

from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import PageArgs, live_row, page_result, rule_document
from backoffice.envs.schedules.tables import approval_needed, parse_date, period_of, rule_entries, rule_tables

toolkit = Toolkit()

Row = Mapping[str, Any]


def _now(ctx: ToolContext) -> str:
    """``ctx.now`` read from the live clock row (no copy)."""
    row = ctx.store.peek("clock", "clock")
    return row["now"] if row else ""


def _today(ctx: ToolContext) -> str:
    return _now(ctx)[:10]


def _by_id(row: Row) -> str:
    return row["id"]


def _live_rows(store: Store, table: str, **equals: Any) -> list[Row]:
    """The live rows (read-only, not copies) whose fields equal every ``field=value`` given, in
    id order: ``store.rows(table, **equals)`` without copying a row. Walks the smallest index
    bucket of the snapshot and merges the rows this episode wrote: O(bucket + rows written).
    Needs at least one equality (a scan is never what a tool wants)."""
    if not equals:
        raise ValueError("_live_rows needs at least one field=value")
    snap = store.snapshot
    chosen = ""
    bucket: tuple[str, ...] = ()
    for field, value in equals.items():
        ids = snap.index(table, field).get(value, ())
        if not chosen or len(ids) < len(bucket):
            chosen, bucket = field, ids
    base = snap.table(table)
    written = store.written_ids(table)
    rows: list[Row]
    if written:
        seen = set(written)
        rows = [base[rid] for rid in bucket if rid not in seen]
    else:
        rows = [base[rid] for rid in bucket]
    if len(equals) > 1:
        rest = [(k, v) for k, v in equals.items() if k != chosen]
        rows = [r for r in rows if all(r.get(k) == v for k, v in rest)]
    if written:
        n = len(rows)
        current = store.peek
        if len(equals) == 1:
            want = equals[chosen]
            for rid in written:
                row = current(table, rid)
                if row is not None and row.get(chosen) == want:
                    rows.append(row)
        else:
            items = list(equals.items())
            for rid in written:
                row = current(table, rid)
                if row is not None and all(row.get(k) == v for k, v in items):
                    rows.append(row)
        if len(rows) > n and n:
            rows.sort(key=_by_id)
    return rows


def _number(policy_id: str) -> str:
    return policy_id.split("-", 1)[1]


#: the id prefix of a policy's rows in the tables whose ids the tools number per policy
_ID_PREFIX = {"approvals": "APV", "reminders": "REM"}


def _next_suffix(ctx: ToolContext, table: str, policy_id: str) -> str:
    """The next ``PREFIX-NNNN-NN`` id of a policy's row in ``table`` (``approvals`` -> ``APV``,
    ``reminders`` -> ``REM``): two digits, one more than the policy's rows, skipping taken ids.

    Every row whose id starts with ``PREFIX-NNNN-`` belongs to ``POL-NNNN`` (the book and the
    tools name them so), so counting the policy's rows through the ``policy_id`` index gives the
    ids that counting the prefix over the whole table gave."""
    prefix = f"{_ID_PREFIX[table]}-{_number(policy_id)}"
    n = 1 + ctx.store.count(table, policy_id=policy_id)
    while ctx.store.exists(table, f"{prefix}-{n:02d}"):
        n += 1
    return f"{prefix}-{n:02d}"


def _rules(ctx: ToolContext) -> Row:
    return live_row(ctx.store, "rules", "RULES", "no rules document")  # every snapshot has it (live row: read-only)


@lru_cache(maxsize=8192)
def _canonical_date(text: str) -> str | None:
    """``text`` as a canonical ``YYYY-MM-DD`` or ``None`` (pure, cached)."""
    try:
        if len(text) == 10:
            return parse_date(text).isoformat()
    except ValueError:
        pass
    return None


def _valid_date(text: str, what: str) -> str:
    """``text`` as a canonical ``YYYY-MM-DD``; ``invalid_args`` if it is not a real date."""
    got = _canonical_date(text)
    if got is None:
        raise ToolError("invalid_args", f"{what} must be a date YYYY-MM-DD, got {text[:40]!r}")
    return got


# -- reads ---------------------------------------------------------------------------------
class RequestArgs(ToolArgs):
    request_id: str = Field(min_length=1, max_length=40, description="Id of the customer's change request, e.g. REQ-30417.")


@toolkit.tool(writes=False)
def get_request(ctx: ToolContext, args: RequestArgs) -> dict:
    """Return a customer's change request: kind (to_monthly, to_quarterly, split, deferral,
    collection_day), start_period, parts, pause_months, new_collection_day, received_on and the
    customer's own words."""
    return dict(live_row(ctx.store, "requests", args.request_id, f"no request {args.request_id}"))


class PolicyArgs(ToolArgs):
    policy_id: str = Field(min_length=1, max_length=40, description="Id of the policy, e.g. POL-4821.")


@toolkit.tool(writes=False)
def get_policy(ctx: ToolContext, args: PolicyArgs) -> dict:
    """Return a policy (premium in cents, policy year, holder, account, debit instruction id) and
    the versions of its instalment schedule (id, version, status, frequency)."""
    policy = live_row(ctx.store, "policies", args.policy_id, f"no policy {args.policy_id}")
    rows = _live_rows(ctx.store, "schedules", policy_id=args.policy_id)
    rows.sort(key=_version_key)
    return {"policy": policy, "schedules": [dict(zip(_SCHEDULE_SUMMARY, _schedule_summary(s))) for s in rows]}


_SCHEDULE_SUMMARY = ("id", "version", "status", "frequency", "change_type")
_schedule_summary = itemgetter(*_SCHEDULE_SUMMARY)


def _version_key(row: Row) -> tuple[int, str]:
    return row["version"], row["id"]


@toolkit.tool(writes=False)
def get_rules(ctx: ToolContext, args: NoArgs) -> dict:
    """Return the portfolio's rules document: ``rules``, one entry per rule (id, title, text and
    this portfolio's ``value``: the outstanding premium, remainder cents, month-end handling,
    minimum instalment, reminder lead time, late reminders, the approval triggers and their
    order), and ``tables`` (the approver role of each trigger, what each request kind asks for,
    the statuses of each table)."""
    row = _rules(ctx)
    if row is ctx.store.snapshot.table("rules").get("RULES"):  # the snapshot's: its document is built once
        return ctx.store.snapshot.memo(("schedules.rules_document",), _snapshot_rules_document)
    return _rules_document(row)


def _rules_document(row: Row) -> dict[str, Any]:
    return rule_document(rule_entries(row), rule_tables(row))


def _snapshot_rules_document(snap: Snapshot) -> dict[str, Any]:
    return _rules_document(snap.table("rules")["RULES"])


class ScheduleArgs(ToolArgs):
    schedule_id: str = Field(min_length=1, max_length=40, description="Id of the schedule, e.g. SCD-4821V2.")


@toolkit.tool(writes=False)
def get_schedule(ctx: ToolContext, args: ScheduleArgs) -> dict:
    """Return one schedule version with a summary of its instalments by status (count, cents)."""
    schedule = live_row(ctx.store, "schedules", args.schedule_id, f"no schedule {args.schedule_id}")
    summary: dict[str, dict[str, int]] = {}
    for row in _live_rows(ctx.store, "instalments", schedule_id=args.schedule_id):  # sums: any order
        s = summary.setdefault(row["status"], {"count": 0, "amount": 0})
        s["count"] += 1
        s["amount"] += row["amount"]
    return {"schedule": schedule, "instalments_by_status": dict(sorted(summary.items()))}


class ListInstalmentsArgs(PageArgs):
    schedule_id: str | None = Field(None, max_length=40, description="Only instalments of this schedule version.")
    policy_id: str | None = Field(None, max_length=40, description="Only instalments of this policy, across all schedule versions.")
    status: Literal["draft", "due", "paid", "cancelled"] | None = Field(None, description="Only instalments with this status.")


@toolkit.tool(writes=False)
def list_instalments(ctx: ToolContext, args: ListInstalmentsArgs) -> dict:
    """List instalments (id, schedule_id, policy_id, seq, period, due_date, amount in cents,
    status, paid_on) matching every filter given (schedule_id, policy_id, status; all optional),
    in id order (for one policy: by schedule version, then seq). Paginated: at most ``limit`` rows
    (default 50) after ``cursor``; ``next_cursor`` is the cursor of the next page (``None`` on the
    last) and ``total`` the number of matching rows over every page."""
    return page_result(ctx.store, "instalments", args, "instalments", **_filters(args, "schedule_id", "policy_id", "status"))


def _filters(args: PageArgs, *fields: str) -> dict[str, Any]:
    """The equality filters given (``None``: not given)."""
    return {f: v for f in fields if (v := getattr(args, f)) is not None}


class InstructionArgs(ToolArgs):
    instruction_id: str = Field(min_length=1, max_length=40, description="Id of the debit instruction (mandate), e.g. MAN-4821.")


@toolkit.tool(writes=False)
def get_instruction(ctx: ToolContext, args: InstructionArgs) -> dict:
    """Return a direct-debit instruction (mandate) with its collection day of the month."""
    return dict(live_row(ctx.store, "instructions", args.instruction_id, f"no instruction {args.instruction_id}"))


class ListRemindersArgs(PageArgs):
    policy_id: str | None = Field(None, max_length=40, description="Only reminders of this policy.")
    due_date: str | None = Field(None, max_length=10, description="Only reminders of instalments due on this date (YYYY-MM-DD).")
    status: Literal["scheduled", "sent", "cancelled"] | None = Field(None, description="Only reminders with this status.")


@toolkit.tool(writes=False)
def list_reminders(ctx: ToolContext, args: ListRemindersArgs) -> dict:
    """List the payment reminders (id, policy_id, instalment_id, due_date, amount, send_on,
    channel, status) matching every filter given (policy_id, due_date, status; all optional), in
    id order. Paginated: at most ``limit`` rows (default 50) after ``cursor``; ``next_cursor`` is
    the cursor of the next page (``None`` on the last) and ``total`` the number of matching rows."""
    return page_result(ctx.store, "reminders", args, "reminders", **_filters(args, "policy_id", "due_date", "status"))


class ListApprovalsArgs(PageArgs):
    policy_id: str | None = Field(None, max_length=40, description="Only approval requests of this policy, e.g. POL-4821.")
    status: Literal["pending", "granted", "declined"] | None = Field(None, description="Only approval requests with this status.")


@toolkit.tool(writes=False)
def list_approvals(ctx: ToolContext, args: ListApprovalsArgs) -> dict:
    """List approval requests (policy, role, reason, status: pending, granted, declined) matching
    every filter given (policy_id, status; both optional), in id order. Paginated: at most
    ``limit`` rows (default 50) after ``cursor``; ``next_cursor`` is the cursor of the next page
    (``None`` on the last) and ``total`` the number of matching rows."""
    return page_result(ctx.store, "approvals", args, "approvals", **_filters(args, "policy_id", "status"))


# -- drafting ------------------------------------------------------------------------------
class CreateDraftArgs(ToolArgs):
    policy_id: str = Field(min_length=1, max_length=40, description="Policy whose schedule changes.")
    frequency: Literal["monthly", "quarterly", "custom"] = Field(description="Collection frequency of the new schedule.")
    change_type: Literal["to_monthly", "to_quarterly", "split", "deferral", "collection_day"] = Field(
        description="The kind of change requested (decides which approval triggers apply).")


@toolkit.tool(writes=True)
def create_draft_schedule(ctx: ToolContext, args: CreateDraftArgs) -> dict:
    """Create an empty draft schedule (next version) for a policy. Add instalments to it, then commit it."""
    policy = live_row(ctx.store, "policies", args.policy_id, f"no policy {args.policy_id}")
    versions = [s["version"] for s in _live_rows(ctx.store, "schedules", policy_id=args.policy_id)]
    version = max(versions, default=0) + 1
    sid = f"SCD-{_number(args.policy_id)}V{version}"
    if ctx.store.exists("schedules", sid):
        raise ToolError("conflict", f"schedule {sid} already exists")
    return ctx.store.insert("schedules", {
        "id": sid, "policy_id": args.policy_id, "account_id": policy["account_id"], "version": version,
        "status": "draft", "frequency": args.frequency, "change_type": args.change_type,
        "created_at": _now(ctx), "committed_at": None, "superseded_at": None,
    })


class AddInstalmentArgs(ToolArgs):
    schedule_id: str = Field(min_length=1, max_length=40, description="The draft schedule.")
    due_date: str = Field(min_length=1, max_length=10, description="Due date YYYY-MM-DD.")
    amount: int = Field(ge=1, le=100_000_000, description="Amount in cents.")
    period: str | None = Field(None, max_length=7, description="Month the instalment pays for (YYYY-MM); defaults to the due date's month.")


@toolkit.tool(writes=True)
def add_instalment(ctx: ToolContext, args: AddInstalmentArgs) -> dict:
    """Add one instalment to a draft schedule. Sequence numbers are assigned in due-date order at commit."""
    schedule = live_row(ctx.store, "schedules", args.schedule_id, f"no schedule {args.schedule_id}")
    if schedule["status"] != "draft":
        raise ToolError("conflict", f"{args.schedule_id} is {schedule['status']}; instalments can only be added to a draft")
    due = _valid_date(args.due_date, "due_date")
    period = args.period or period_of(parse_date(due))
    if len(period) != 7 or not _is_period(period):
        raise ToolError("invalid_args", "period must be YYYY-MM")
    rows = _live_rows(ctx.store, "instalments", schedule_id=args.schedule_id)  # a count and a max: any order
    if len(rows) >= 24:
        raise ToolError("precondition_failed", "a schedule holds at most 24 instalments")
    suffix = 1 + max((int(r["id"].rsplit("-", 1)[1]) for r in rows), default=0)
    return ctx.store.insert("instalments", {
        "id": f"{args.schedule_id.replace('SCD-', 'INS-', 1)}-{suffix:02d}", "schedule_id": args.schedule_id,
        "policy_id": schedule["policy_id"], "account_id": schedule["account_id"], "seq": len(rows) + 1,
        "period": period, "due_date": due, "amount": args.amount, "status": "draft", "paid_on": None,
    })


@lru_cache(maxsize=4096)
def _is_period(text: str) -> bool:
    """Whether a 7-character ``text`` is ``YYYY-MM`` (ASCII digits) with a month 01-12 (pure,
    cached). ``str.isdigit`` alone also passes other scripts' digits and superscripts, which
    ``int`` refuses."""
    return (text.isascii() and text[:4].isdigit() and text[4] == "-" and text[5:].isdigit()
            and 1 <= int(text[5:]) <= 12)


class InstalmentArgs(ToolArgs):
    instalment_id: str = Field(min_length=1, max_length=40, description="Id of the instalment, e.g. INS-4821V3-02.")


@toolkit.tool(writes=True)
def remove_instalment(ctx: ToolContext, args: InstalmentArgs) -> dict:
    """Remove an instalment from a draft schedule (only draft instalments can be removed)."""
    row = live_row(ctx.store, "instalments", args.instalment_id, f"no instalment {args.instalment_id}")
    if row["status"] != "draft":
        raise ToolError("conflict", f"{args.instalment_id} is {row['status']}; only draft instalments can be removed")
    ctx.store.delete("instalments", args.instalment_id)
    return {"removed": args.instalment_id}


# -- approvals and time --------------------------------------------------------------------
class RequestApprovalArgs(ToolArgs):
    policy_id: str = Field(min_length=1, max_length=40, description="Policy the approval is for.")
    role: str = Field(min_length=1, max_length=60, description="Approver role named by the rules, e.g. collections_supervisor.")
    reason: str = Field(min_length=1, max_length=500, description="Why approval is needed (the trigger).")
    schedule_id: str | None = Field(None, max_length=40, description="The draft schedule to approve.")


@toolkit.tool(writes=True)
def request_approval(ctx: ToolContext, args: RequestApprovalArgs) -> dict:
    """Ask an approver role to approve a schedule change. The decision arrives later: call wait."""
    policy = live_row(ctx.store, "policies", args.policy_id, f"no policy {args.policy_id}")
    live_row(ctx.store, "_approvers", args.role, f"no approver holds the role {args.role[:60]!r}")
    if args.schedule_id is not None:
        live_row(ctx.store, "schedules", args.schedule_id, f"no schedule {args.schedule_id}")
    for row in _live_rows(ctx.store, "approvals", policy_id=args.policy_id, role=args.role):
        if row["status"] in ("pending", "granted"):
            raise ToolError("conflict", f"approval {row['id']} by {args.role} is already {row['status']}")
    aid = _next_suffix(ctx, "approvals", args.policy_id)
    return ctx.store.insert("approvals", {
        "id": aid, "policy_id": args.policy_id, "account_id": policy["account_id"], "schedule_id": args.schedule_id,
        "role": args.role, "reason": args.reason, "status": "pending", "requested_at": _now(ctx),
        "decided_at": None, "decided_by": None,
    })


def _decision_time(ctx: ToolContext, row: Row) -> str:
    approver = ctx.store.peek("_approvers", row["role"])
    delay = int(approver["delay_hours"]) if approver else 1
    return _later(row["requested_at"], delay)


@lru_cache(maxsize=4096)
def _later(when: str, hours: int) -> str:
    """The ISO datetime ``hours`` after ``when`` (pure, cached)."""
    return (datetime.fromisoformat(when) + timedelta(hours=hours)).isoformat()


@toolkit.tool(writes=True)
def wait(ctx: ToolContext, args: NoArgs) -> dict:
    """Advance the clock to the next scripted event (an approver's decision) and return what happened.
    Fails with precondition_failed when nothing is pending."""
    pending = _live_rows(ctx.store, "approvals", status="pending")  # only the episode's requests are pending
    if not pending:
        raise ToolError("precondition_failed", "nothing is pending: no approval request awaits a decision")
    times = [_decision_time(ctx, r) for r in pending]
    when = min(times)
    when = max(when, _now(ctx))
    ctx.store.update("clock", "clock", {"now": when})
    decided = []
    for row, at in zip(pending, times):  # the rows read before any update: updates replace, never mutate, a row
        if at <= when:
            approver = ctx.store.peek("_approvers", row["role"]) or {}
            decided.append(ctx.store.update("approvals", row["id"], {
                "status": approver.get("decision", "granted"), "decided_at": when, "decided_by": approver.get("name"),
            }))
    return {"now": when, "today": when[:10], "decided": decided}


# -- commit and supersede ------------------------------------------------------------------
@toolkit.tool(writes=True)
def commit_schedule(ctx: ToolContext, args: ScheduleArgs) -> dict:
    """Make a draft schedule active: its instalments become due, numbered in due-date order.
    Refuses (approval_required) while a required approval is not granted. It does not retire the
    prior version: call supersede_schedule for that."""
    schedule = live_row(ctx.store, "schedules", args.schedule_id, f"no schedule {args.schedule_id}")
    if schedule["status"] != "draft":
        raise ToolError("conflict", f"{args.schedule_id} is {schedule['status']}, not a draft")
    rows = _live_rows(ctx.store, "instalments", schedule_id=args.schedule_id)
    rows.sort(key=_due_key)  # (due_date, id) is unique: the (seq, id) order before it never shows
    if not rows:
        raise ToolError("precondition_failed", "the draft has no instalments")
    today = _today(ctx)
    rules = _rules(ctx)
    late = [r["id"] for r in rows if r["due_date"] <= today]
    if late:
        raise ToolError("precondition_failed", f"instalments must fall due after today ({today}): {', '.join(late[:5])}")
    small = [r["id"] for r in rows if r["amount"] < int(rules["minimum_instalment_cents"])]
    if small:
        raise ToolError("precondition_failed", f"instalments below the minimum of {rules['minimum_instalment_cents']} cents: {', '.join(small[:5])}")
    requests = _live_rows(ctx.store, "requests", policy_id=schedule["policy_id"])
    received = min((r["received_on"] for r in requests), default=today)
    need = approval_needed(rules, len(rows), rows[0]["due_date"], received, _replaced_first_due(ctx, schedule))
    if need is not None:
        trigger, role = need
        granted = _live_rows(ctx.store, "approvals", policy_id=schedule["policy_id"], role=role, status="granted")
        if not granted:
            raise ToolError("approval_required", f"approval by {role} is required ({trigger}) and not granted", trigger=trigger, role=role)
    committed = [ctx.store.update("instalments", row["id"], {"seq": i + 1, "status": "due"}) for i, row in enumerate(rows)]
    ctx.store.update("schedules", args.schedule_id, {"status": "active", "committed_at": _now(ctx)})
    return {"schedule_id": args.schedule_id, "status": "active", "instalments": committed}


def _replaced_first_due(ctx: ToolContext, draft: Row) -> str | None:
    """The due date of the earliest instalment the draft replaces: the first instalment still due,
    when the episode began, on the policy's active version (the deferral trigger compares with it;
    reading the episode's start keeps it fixed whatever the episode cancels before committing)."""
    snap = ctx.store.snapshot
    active = [s for s in _live_rows(ctx.store, "schedules", policy_id=draft["policy_id"], status="active") if s["id"] != draft["id"]]
    table = snap.table("instalments")
    dates = [table[rid]["due_date"] for s in active for rid in snap.index("instalments", "schedule_id").get(s["id"], ())
             if table[rid]["status"] == "due"]
    return min(dates, default=None)


def _due_key(row: Row) -> tuple[str, str]:
    return row["due_date"], row["id"]


@toolkit.tool(writes=True)
def supersede_schedule(ctx: ToolContext, args: ScheduleArgs) -> dict:
    """Mark an active schedule version superseded. Needs a newer active version of the same
    policy. Its instalments are left as they are (cancel the due ones with cancel_instalments)."""
    schedule = live_row(ctx.store, "schedules", args.schedule_id, f"no schedule {args.schedule_id}")
    if schedule["status"] != "active":
        raise ToolError("conflict", f"{args.schedule_id} is {schedule['status']}, not active")
    newer = [s for s in _live_rows(ctx.store, "schedules", policy_id=schedule["policy_id"], status="active") if s["version"] > schedule["version"]]
    if not newer:
        raise ToolError("conflict", "no newer active version: superseding would leave the policy without a schedule")
    return ctx.store.update("schedules", args.schedule_id, {"status": "superseded", "superseded_at": _now(ctx)})


class CancelInstalmentsArgs(ToolArgs):
    instalment_ids: list[str] = Field(min_length=1, max_length=40, description="Ids of the instalments to cancel.")


@toolkit.tool(writes=True)
def cancel_instalments(ctx: ToolContext, args: CancelInstalmentsArgs) -> dict:
    """Cancel instalments (status becomes cancelled). Cancelling a paid instalment reverses the
    payment: the customer is refunded. Draft instalments are removed with remove_instalment."""
    out = []
    for iid in dict.fromkeys(args.instalment_ids):
        row = live_row(ctx.store, "instalments", iid, f"no instalment {iid}")
        if row["status"] not in ("due", "paid"):
            raise ToolError("conflict", f"{iid} is {row['status']}; only due or paid instalments can be cancelled")
        ctx.store.update("instalments", iid, _CANCELLED)
        out.append(iid)
    return {"cancelled": out}


_CANCELLED = {"status": "cancelled"}


# -- mandate and reminders -----------------------------------------------------------------
class UpdateInstructionArgs(ToolArgs):
    instruction_id: str = Field(min_length=1, max_length=40, description="The debit instruction (mandate).")
    collection_day: int = Field(ge=1, le=31, description="New collection day of the month (1-31).")


@toolkit.tool(writes=True)
def update_instruction(ctx: ToolContext, args: UpdateInstructionArgs) -> dict:
    """Change the collection day of a direct-debit instruction."""
    row = live_row(ctx.store, "instructions", args.instruction_id, f"no instruction {args.instruction_id}")
    if row["status"] != "active":
        raise ToolError("conflict", f"{args.instruction_id} is {row['status']}")
    return ctx.store.update("instructions", args.instruction_id, {"collection_day": args.collection_day})


class CreateReminderArgs(ToolArgs):
    instalment_id: str = Field(min_length=1, max_length=40, description="The (due) instalment to remind of.")
    send_on: str = Field(min_length=1, max_length=10, description="Date to send the reminder (YYYY-MM-DD), today or later.")
    channel: Literal["email", "letter", "sms"] = Field("email", description="How to send it.")


@toolkit.tool(writes=True)
def create_reminder(ctx: ToolContext, args: CreateReminderArgs) -> dict:
    """Schedule a payment reminder for a due instalment."""
    inst = live_row(ctx.store, "instalments", args.instalment_id, f"no instalment {args.instalment_id}")
    if inst["status"] != "due":
        raise ToolError("conflict", f"{args.instalment_id} is {inst['status']}; reminders are for due instalments")
    send_on = _valid_date(args.send_on, "send_on")
    today = _today(ctx)
    if send_on < today or send_on > inst["due_date"]:
        raise ToolError("precondition_failed", f"send_on must be between today ({today}) and the due date ({inst['due_date']})")
    if _live_rows(ctx.store, "reminders", instalment_id=args.instalment_id, status="scheduled"):
        raise ToolError("conflict", f"{args.instalment_id} already has a scheduled reminder")
    rid = _next_suffix(ctx, "reminders", inst["policy_id"])
    return ctx.store.insert("reminders", {
        "id": rid, "policy_id": inst["policy_id"], "account_id": inst["account_id"], "instalment_id": args.instalment_id,
        "due_date": inst["due_date"], "amount": inst["amount"], "send_on": send_on, "channel": args.channel,
        "status": "scheduled",
    })


class ReminderArgs(ToolArgs):
    reminder_id: str = Field(min_length=1, max_length=40, description="Id of the reminder, e.g. REM-4821-03.")


@toolkit.tool(writes=True)
def cancel_reminder(ctx: ToolContext, args: ReminderArgs) -> dict:
    """Cancel a scheduled reminder."""
    row = live_row(ctx.store, "reminders", args.reminder_id, f"no reminder {args.reminder_id}")
    if row["status"] != "scheduled":
        raise ToolError("conflict", f"{args.reminder_id} is {row['status']}, not scheduled")
    return ctx.store.update("reminders", args.reminder_id, _CANCELLED)


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the task: the schedule, reminders and mandate are graded as they stand."""
    return {"submitted": True, "now": _now(ctx)}


READ_TOOLS = ("get_request", "get_policy", "get_rules", "get_schedule", "list_instalments", "get_instruction", "list_reminders", "list_approvals")
