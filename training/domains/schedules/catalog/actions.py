"""Every action of every schedules tier: how it is grounded from the desk (:mod:`.desk`) and when
it is legal.

The mask expresses **legality only**. An action is removed when

- its call cannot be formed from what was observed: a read's id not yet known, no draft to add
  to or commit, no planned (``conclusions``) or formable row left to add (a valid month and day,
  1 .. 10^8 cents, fewer than 24 rows), no committed first instalment to remind of, no listed
  reminder or slot left, no requested collection day to put on the mandate;
- it repeats a read whose answer is known, or a write already applied (the mandate's
  collection day, the prior version's cancellation, a cancelled slot, the reminder); a paginated
  list (instalments, reminders) is known once its last page is read: until then its action
  reads the next page (the cursor of the page before);
- the tool is certain to reject it, visibly: a tool outside ``allowed_tools``; ``wait`` with none
  of our approval requests pending (the book starts with no pending request, decisions arrive
  only for requests made); a second request to a role whose request is pending or granted;
  committing an empty draft, a draft the tool refused for ``approval_required`` with no approval
  granted since, or one that failed a precondition and has not changed since; superseding before
  a new version is active, or twice; a reminder dated before today or after its due date
  (``facts``, ``raw``), or a second one.

Everything else is the agent's judgement, learned from the features: whether and from which
role to ask for approval, waiting for the decision before committing, adding every row before
committing (commit is offered as soon as the draft holds one), not creating a second draft,
superseding and cancelling the prior version, replacing the reminder only when the rules give a
send date (the conclusions tier's ``create_reminder`` is offered even when the rules say skip: it
then sends today), moving the mandate, and when to submit (``submit`` is left to the wrapper,
which forces it on: it is always valid).

How an amount is grounded (``facts``, ``raw``). A new instalment's amount is not a value any
tool returns, and ``Discrete(K)`` cannot name an integer of cents, so the agent **declares** the
count ``n`` when it drafts (``create_draft[n]``: one ``create_draft_schedule`` call) and picks a
**share** per row: ``floor(D / n)``, ``+ 1`` or ``+ (D mod n)``, with ``D`` the total of the listed
instalments still due (the active version's due amount, the outstanding premium), or the amount
of the listed instalment of the same month. That is the only arithmetic the catalog does for an
argument; the count (period rules, minimum instalment) and which row takes which share (rounding
rule) are the agent's.

One name is one call in every tier that shows it. Where two tiers show two calls under one name
the registry names them apart and :mod:`.tiers` shows each under its tier's name: the raw tier's
``create_draft[n]`` claims no frequency (``create_custom_draft[n]``), and the conclusions tier's
``cancel_prior_due`` cancels the prior instalments as listed (``cancel_listed_prior_due``), the
facts tier's those still due after our own cancellations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backoffice.envs.schedules.tables import ROLES
from backoffice.training.catalog.features import Action, Actions
from backoffice.training.domains.schedules.catalog.desk import (
    COUNTS,
    ENDS,
    INSTALMENT_SLOTS,
    READS,
    REMINDER_SLOTS,
    TRIGGERS,
    VERSION_SLOTS,
    ScheduleDesk,
    settles,
)

ACTIONS: Actions[ScheduleDesk] = Actions()
Call = dict[str, Any] | None

#: the facts tier's shares (``keep``: the listed still-due instalment of the same month)
FACT_SHARES = ("even", "even_plus_one", "even_plus_remainder", "keep")
#: the raw tier's shares (``same_month``: the listed due or paid instalment of the same month)
RAW_SHARES = ("even", "even_plus_one", "even_plus_remainder", "same_month")
#: the raw tier's row months: the request's start, one or three months after the last row added
SOURCES = ("start", "next1", "next3")
SHARE_DOC = {
    "even": "floor(D / n)", "even_plus_one": "floor(D / n) + 1", "even_plus_remainder": "floor(D / n) + (D mod n)",
    "keep": "the amount of the listed still-due instalment of the same month",
    "same_month": "the amount of the listed (due or paid) instalment of the same month",
}


def _call(tool: str, args: dict[str, Any] | None) -> Call:
    return None if args is None else {"tool": tool, "args": args}


def register(name: str, tool: str, doc: str, ground: Callable[..., Call], legal: Callable[..., bool], *args: Any,
             checks_tool: bool = False) -> None:
    """Register an action whose legality also needs ``tool`` in the task's ``allowed_tools``
    (``checks_tool``: ``legal`` looks itself, as the families do on the hot path)."""
    ACTIONS.add(Action(name, tool, doc, ground, legal if checks_tool else _if_allowed(tool, legal, len(args)), args))


def _if_allowed(tool: str, legal: Callable[..., bool], arity: int) -> Callable[..., bool]:
    """``legal`` and ``tool`` allowed (the mask is built every step: no ``*args`` for the usual arities)."""
    if arity == 0:
        return lambda desk: (not desk.allowed or tool in desk.allowed) and legal(desk)
    if arity == 1:
        return lambda desk, a: (not desk.allowed or tool in desk.allowed) and legal(desk, a)
    return lambda desk, *a: (not desk.allowed or tool in desk.allowed) and legal(desk, *a)


# -- the six reads, alike in every tier -----------------------------------------------------------------
READ_DOCS = {
    "get_request": "read the change request (request_id from the brief)",
    "get_policy": "read the policy and its schedule versions (policy_id from the brief)",
    "get_rules": "read the rules document (one entry per rule, the approval roles table)",
    "list_instalments": "list every instalment of the policy, all versions (the next page while one is left)",
    "get_instruction": "read the debit mandate (instruction_id from the policy)",
    "list_reminders": "list the policy's scheduled reminders, the ones to replace (the next page while one is left)",
}


def _read(desk: ScheduleDesk, k: int) -> Call:
    return _call(READS[k], desk.read_args(READS[k]))


def _read_legal(desk: ScheduleDesk, k: int) -> bool:
    return _reads_open(desk)[k]


@settles
def _reads_open(desk: ScheduleDesk) -> list[bool]:
    """Per read: allowed, its call formable and its answer not known yet."""
    known = desk.read_known()
    return [desk.allows(tool) and not known[k] and desk.read_args(tool) is not None for k, tool in enumerate(READS)]


for _k, _tool in enumerate(READS):
    register(_tool, _tool, READ_DOCS[_tool], _read, _read_legal, _k, checks_tool=True)


# -- the draft --------------------------------------------------------------------------------------------
def _draft(desk: ScheduleDesk, *n: int) -> Call:
    return _call("create_draft_schedule", desk.draft_args(None))


def _custom_draft(desk: ScheduleDesk, n: int) -> Call:
    return _call("create_draft_schedule", desk.draft_args("custom"))


def _draft_legal(desk: ScheduleDesk, *n: int) -> bool:
    return _may_draft(desk)


@settles
def _may_draft(desk: ScheduleDesk) -> bool:
    return desk.allows("create_draft_schedule") and desk.can_draft()


register("create_draft", "create_draft_schedule",
         "create a draft of the next version (frequency from the request kind, change_type = kind)", _draft, _draft_legal,
         checks_tool=True)
for _n in COUNTS:
    _rows = f"{_n} instalment{'s' if _n > 1 else ''}"
    register(f"create_draft[{_n}]", "create_draft_schedule",
             f"create the draft of the next version (frequency from the request's kind, as the conclusions tier; change_type = "
             f"the request's kind), declaring {_rows}: the add actions' shares split the due total by {_n}",
             _draft, _draft_legal, _n, checks_tool=True)
    register(f"create_custom_draft[{_n}]", "create_draft_schedule",
             f"create the draft of the next version (frequency custom: the catalog claims none; change_type = the request's "
             f"kind), declaring {_rows}: the add actions' shares split the due total by {_n}",
             _custom_draft, _draft_legal, _n, checks_tool=True)


def _next_planned(desk: ScheduleDesk) -> Call:
    row = desk.next_planned_row()
    if row is None:
        return None
    return _call("add_instalment", {"schedule_id": desk.draft_id, "due_date": row["due_date"], "amount": row["amount"],
                                    "period": row["period"]})


register("add_next_instalment", "add_instalment",
         "add the next planned instalment not yet in the open draft (due date, amount, period of the computed plan)",
         _next_planned, lambda desk: desk.next_planned_row() is not None)


def _fact_amount(desk: ScheduleDesk, share: str, period: str | None) -> int | None:
    if share == "keep":
        return desk.same_month_amount(period, due_only=True) if period else None
    return desk.share(share)


def _fact_row(desk: ScheduleDesk, share: str, end: str) -> Call:
    period = desk.next_period()
    return _call("add_instalment", desk.row_args(period, desk.collection_day(), end, _fact_amount(desk, share, period)))


def _fact_rows_formable(desk: ScheduleDesk) -> dict[str, bool]:
    """Per share: the facts tier's next row can be added (whatever ``end``)."""
    period = desk.next_period() if desk.allows("add_instalment") else None
    day = desk.collection_day()
    return {share: period is not None and desk.row_formable(period, day, _fact_amount(desk, share, period)) for share in FACT_SHARES}


def _fact_row_legal(desk: ScheduleDesk, share: str, end: str) -> bool:
    return desk.draft_id is not None and desk.memo("fact_rows_formable", lambda: _fact_rows_formable(desk))[share]


for _share in FACT_SHARES:
    for _end in ENDS:
        register(f"add_instalment[{_share},{_end}]", "add_instalment",
                 f"add the request's next month (its start period stepped by its frequency, or the next still-due instalment's "
                 f"month for a collection-day change) on the request's collection day or the mandate's ({_end}: a day past the "
                 f"month's end goes to {ENDS[_end].replace('_', ' ')}); amount {SHARE_DOC[_share]}",
                 _fact_row, _fact_row_legal, _share, _end, checks_tool=True)


def _raw_amount(desk: ScheduleDesk, share: str, period: str | None) -> int | None:
    if share == "same_month":
        return desk.same_month_amount(period, due_only=False) if period else None
    return desk.share(share)


def _raw_row(desk: ScheduleDesk, src: str, end: str, share: str) -> Call:
    period = desk.source_period(src)
    return _call("add_instalment", desk.row_args(period, desk.mandate_day, end, _raw_amount(desk, share, period)))


def _raw_rows_formable(desk: ScheduleDesk) -> dict[tuple[str, str], bool]:
    """Per (month source, share): a raw row can be added (whatever ``end``)."""
    if not desk.allows("add_instalment"):
        return {}
    out = {}
    for src in SOURCES:
        period = desk.source_period(src)
        for share in RAW_SHARES:
            out[src, share] = period is not None and desk.row_formable(period, desk.mandate_day, _raw_amount(desk, share, period))
    return out


def _raw_row_legal(desk: ScheduleDesk, src: str, end: str, share: str) -> bool:
    return desk.draft_id is not None and desk.memo("raw_rows_formable", lambda: _raw_rows_formable(desk)).get((src, share), False)


_SOURCE_DOC = {"start": "the request start_period (or, when it names none, the month of the first due slot: slots go by due date)",
               "next1": "the month after the last row added", "next3": "three months after the last row added"}
for _src in SOURCES:
    for _end in ENDS:
        for _share in RAW_SHARES:
            register(f"add_instalment[{_src},{_end},{_share}]", "add_instalment",
                     f"add a row for {_SOURCE_DOC[_src]} on the mandate's collection day as last observed ({_end}: a day past the "
                     f"month's end goes to {ENDS[_end].replace('_', ' ')}); amount {SHARE_DOC[_share]}",
                     _raw_row, _raw_row_legal, _src, _end, _share, checks_tool=True)


# -- approvals --------------------------------------------------------------------------------------------
def _trigger_approval(desk: ScheduleDesk, trigger: str) -> Call:
    return _call("request_approval", desk.approval_args(desk.role(trigger), f"{trigger} trigger of the portfolio rules"))


def _trigger_approval_legal(desk: ScheduleDesk, trigger: str) -> bool:
    role = desk.role(trigger)
    return desk.approval_args(role, "") is not None and not desk.asked(role)


for _t in TRIGGERS:
    register(f"request_approval[{_t}]", "request_approval",
             f"ask the role the rules name for the {_t} trigger (approval_role_{_t}) to approve the change",
             _trigger_approval, _trigger_approval_legal, _t)


def _named_role(desk: ScheduleDesk, role: str) -> str | None:
    """``role`` if the rules name it for a trigger."""
    return role if desk.rules is not None and role in {desk.role(t) for t in TRIGGERS} else None


def _role_approval(desk: ScheduleDesk, role: str) -> Call:
    return _call("request_approval", desk.approval_args(_named_role(desk, role), "schedule change approval under the portfolio rules"))


def _role_approval_legal(desk: ScheduleDesk, role: str) -> bool:
    return role in _askable_roles(desk)


@settles
def _askable_roles(desk: ScheduleDesk) -> frozenset[str]:
    """The roles the rules name for a trigger, not asked yet (pending or granted), when asking is allowed."""
    if not desk.allows("request_approval") or desk.rules is None or not desk.policy_id:
        return frozenset()
    return frozenset(r for r in ROLES if _named_role(desk, r) is not None and not desk.asked(r))


for _role in ROLES:
    register(f"request_approval[{_role}]", "request_approval", f"ask the role {_role} to approve the change",
             _role_approval, _role_approval_legal, _role, checks_tool=True)

register("wait", "wait", "advance the clock to the pending approver's decision", lambda desk: {"tool": "wait", "args": {}},
         ScheduleDesk.pending)


# -- the commit and the prior version ---------------------------------------------------------------------
register("commit_draft", "commit_schedule", "commit the open draft (its instalments become due)",
         lambda desk: _call("commit_schedule", {"schedule_id": desk.draft_id} if desk.draft_id else None), ScheduleDesk.commit_legal)


def _supersede_prior(desk: ScheduleDesk) -> Call:
    active = desk.active()
    return _call("supersede_schedule", {"schedule_id": active["id"]} if active else None)


register("supersede_prior", "supersede_schedule", "mark the prior active version superseded", _supersede_prior,
         lambda desk: desk.active() is not None and bool(desk.new_rows) and not desk.superseded)


def _supersede_slot(desk: ScheduleDesk, v: int) -> Call:
    slots = desk.version_slots
    return _call("supersede_schedule", {"schedule_id": slots[v]["id"]} if v < len(slots) else None)


def _supersede_slot_legal(desk: ScheduleDesk, v: int) -> bool:
    # the tool supersedes an active version only when a newer version is active
    slots = desk.version_slots
    return v < len(slots) and desk.version_status.get(slots[v]["id"]) == "active" and desk.new_version is not None


for _v in range(VERSION_SLOTS):
    register(f"supersede[{_v}]", "supersede_schedule",
             f"mark version slot {_v} superseded (slots: the last {VERSION_SLOTS} versions get_policy lists that are not drafts, "
             "in its order)", _supersede_slot, _supersede_slot_legal, _v)


def _cancel_due(rows: list[Any]) -> Call:
    return _call("cancel_instalments", {"instalment_ids": [r["id"] for r in rows]} if rows else None)


register("cancel_prior_due", "cancel_instalments", "cancel the prior version's instalments still due (never paid ones)",
         lambda desk: _cancel_due(desk.prior_due_now()), lambda desk: not desk.due_cancelled and bool(desk.prior_due_now()))
register("cancel_listed_prior_due", "cancel_instalments", "cancel the prior version's instalments listed as due (never paid ones)",
         lambda desk: _cancel_due(desk.prior_due_listed()), lambda desk: not desk.due_cancelled and bool(desk.prior_due_listed()))


def _cancel_slot(desk: ScheduleDesk, i: int) -> Call:
    slots = desk.slot_rows
    return _call("cancel_instalments", {"instalment_ids": [slots[i]["id"]]} if i < len(slots) else None)


def _cancel_slot_legal(desk: ScheduleDesk, i: int) -> bool:
    slots = desk.slot_rows
    return i < len(slots) and _cancellable(desk)[i]


@settles
def _cancellable(desk: ScheduleDesk) -> list[bool]:
    # due and paid rows can be cancelled (a paid one is refunded); a cancelled one is final
    allowed = desk.allows("cancel_instalments")
    return [allowed and desk.status.get(r["id"]) in ("due", "paid") for r in desk.slot_rows]


for _i in range(INSTALMENT_SLOTS):
    register(f"cancel_instalment[{_i}]", "cancel_instalments", f"cancel instalment slot {_i} (one id)", _cancel_slot, _cancel_slot_legal, _i,
             checks_tool=True)


# -- the reminders and the mandate ------------------------------------------------------------------------
def _cancel_old_reminder(desk: ScheduleDesk) -> Call:
    remaining = desk.remaining_reminders()
    return _call("cancel_reminder", {"reminder_id": remaining[0]} if remaining else None)


register("cancel_old_reminder", "cancel_reminder", "cancel the next listed scheduled reminder not yet cancelled",
         _cancel_old_reminder, lambda desk: bool(desk.remaining_reminders()))


def _cancel_reminder_slot(desk: ScheduleDesk, j: int) -> Call:
    slots = desk.reminder_slots()
    return _call("cancel_reminder", {"reminder_id": slots[j]["id"]} if j < len(slots) else None)


def _cancel_reminder_slot_legal(desk: ScheduleDesk, j: int) -> bool:
    slots = desk.reminder_slots()
    return j < len(slots) and slots[j]["id"] not in desk.cancelled_reminders


for _j in range(REMINDER_SLOTS):
    register(f"cancel_reminder[{_j}]", "cancel_reminder", f"cancel listed reminder slot {_j}",
             _cancel_reminder_slot, _cancel_reminder_slot_legal, _j)


def _catch_up_reminder(desk: ScheduleDesk) -> Call:
    first, send_on = desk.new_first(), desk.catch_up_reminder_date()
    return _call("create_reminder", {"instalment_id": first["id"], "send_on": send_on} if first is not None and send_on else None)


register("create_reminder", "create_reminder", "remind of the new first instalment on max(its due date - reminder_lead_days, today)",
         _catch_up_reminder, lambda desk: desk.reminder_created is None and _catch_up_reminder(desk) is not None)


def _reminder(desk: ScheduleDesk, when: str) -> Call:
    first, send_on = desk.new_first(), desk.reminder_date(when)
    return _call("create_reminder", {"instalment_id": first["id"], "send_on": send_on} if first is not None and send_on else None)


register("create_reminder[lead]", "create_reminder",
         "remind of the new first instalment (the committed seq 1) on its due date - reminder_lead_days",
         _reminder, ScheduleDesk.reminder_legal, "lead")
register("create_reminder[today]", "create_reminder", "remind of the new first instalment today", _reminder, ScheduleDesk.reminder_legal, "today")

register("update_mandate", "update_instruction", "set the mandate's collection day to the request's new_collection_day",
         lambda desk: _call("update_instruction", desk.mandate_args()),
         lambda desk: desk.mandate_args() is not None and not desk.mandate_updated)
def _forced_by_the_wrapper(desk: ScheduleDesk) -> bool:
    """``submit`` is left to the wrapper, which forces the finishing action on."""
    return False


ACTIONS.add(Action("submit", "submit", "finish the task", lambda desk: {"tool": "submit", "args": {}}, _forced_by_the_wrapper))

__all__ = ["ACTIONS", "FACT_SHARES", "RAW_SHARES", "SOURCES"]
