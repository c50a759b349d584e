"""Generator of schedules tasks: a small book of policies and one customer's change request.

``generate(seed, tag)`` draws a world (the target policy with its schedule history, lookalike
or unrelated neighbour accounts, a rules document that varies per task) and a request whose
trap is ``tag``, and writes the answer key: the expected new instalments, the declarative
``checks`` the grader runs, and the ``targets`` the guardrail allows.

The decision comes first (seeds v2). What the agent must decide, the outcome class, is drawn
apart from the world, from the task seed alone (:func:`_decision`): whether an approval is needed
(about a quarter of the tasks) and where the new first instalment's reminder goes (at the lead
time, today, or none: a third each). The world is then drawn without looking at it, and only
the portfolio's parameters (approval thresholds, the deferral rule, the approval order, the
reminder lead time, the late-reminder rule) are fitted to it (:func:`_settle`). Every world is
drawn so that every decision fits it (a first instalment 3 to 55 days ahead), so nothing the
request or the book shows says which decision the task holds; only the rules document, read
with the request and the book, does.

How one attempt reads (:func:`_draw`; every draw comes from the task's one stream, in this
order, which the released seeds depend on):

1. :func:`build_world` -> :class:`World`: today, the request kind, the collection day(s), the
   rules document's fixed parts (:func:`_draw_rules`) and the target policy's booked schedule
   versions (:func:`_book_target`: superseded versions before the active one, abandoned drafts
   after it, the active one at a uniform place among them), shaped by the tag's :class:`Trap`.
2. :func:`_plan_change`: the request's start, parts or pause, the minimum instalment and the
   expected new instalments; :func:`_time_first_instalment`: days to the new first instalment.
3. The tag's planter (:data:`PLANTERS`): rejects a world that does not show the trap.
4. :func:`_settle`: the portfolio parameters fitted to the decision, the approvers and the
   reminder's send date.
5. :func:`_snapshot` (the people, lookalike and unrelated neighbours, the target's reminders,
   the request, every table), :func:`_key` (the answer key and its :func:`_checks`) and the brief.

A rejected attempt does not restart the stream: the next one continues it (:func:`_stream`).
The released task is the engine's retry loop over it (:func:`~backoffice.envs.core.retrying`,
2000 tries). No rejection depends on the decision.

``generate(seed, tag, scale=k)`` puts the same task in a book about ``k`` times larger (the
scale tier of benchmarks and stress tests): :func:`_scaled_snapshot` adds ``k - 1`` times as many
other customers, drawn by :func:`_neighbours` (the released neighbours' code path) from a stream
of their own, plus their change requests (:func:`_request_row`). At ``scale=1`` nothing is added
and the task is the released one, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from backoffice.envs.core import Generated, retrying
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.schedules.tables import (
    ACCOUNT_TABLES,
    APPROVAL_TRIGGERS,
    LATE_REMINDER_RULES,
    REQUEST_KINDS,
    ROLES,
    ROUNDING_RULES,
    add_months,
    applying_triggers,
    approval_needed,
    days_between,
    due_date,
    last_period_of,
    months_between,
    period_of,
    plan_instalments,
    redate_instalments,
    reminder_send_on,
    split_amounts,
)
from backoffice.envs.schedules.tools import READ_TOOLS

DEFECT_TAGS = (
    "rounding_remainder", "month_end_dates", "paid_instalments_present", "approval_threshold",
    "collection_day_change", "other_accounts_nearby", "short_notice",
)
SPLIT_KINDS = ("to_monthly", "to_quarterly", "split", "deferral")
PRIOR_FREQUENCIES = {
    "to_monthly": ("annual", "quarterly"),
    "to_quarterly": ("annual", "monthly"),
    "split": ("annual", "quarterly", "monthly"),
    "deferral": ("monthly",),
    "collection_day": ("monthly", "quarterly"),
}
FIRST = ("Amira", "Jonas", "Priya", "Tomasz", "Elena", "Kwame", "Sofia", "Liam", "Mei", "Rafael", "Ingrid",
         "Omar", "Chloe", "Daniel", "Fatima", "Henrik", "Aisha", "Marco", "Nora", "Samuel", "Yuki", "Zoe")
SURNAMES = ("Haddad", "Novak", "Okafor", "Lindqvist", "Moreau", "Castillo", "Brennan", "Kowalski", "Tanaka",
            "Adeyemi", "Fischer", "Rossi", "Sandberg", "Mensah", "Duarte", "Hughes", "Varga", "Petrov")
STREETS = ("Mill Lane", "Harbour Road", "Station Street", "Elm Close", "Kingsway", "Orchard Row", "Bridge End")
TOWNS = ("Ashford", "Kelso", "Norwich", "Truro", "Ely", "Wells", "Penrith")
PRODUCTS = ("home", "motor", "contents", "travel_annual", "pet", "landlord")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
START = date(2026, 1, 5)
WRITE_TOOLS = (
    "create_draft_schedule", "add_instalment", "remove_instalment", "request_approval", "wait", "commit_schedule",
    "supersede_schedule", "cancel_instalments", "update_instruction", "create_reminder", "cancel_reminder",
)
#: every task allows the same tools (``allowed_tools`` must not depend on the answer)
ALLOWED_TOOLS = (*READ_TOOLS, *WRITE_TOOLS, "submit")
#: share of tasks (outside month_end_dates, where it is 1) whose collection day is 29-31
LATE_DAY_SHARE = 0.5
#: share of rules documents whose month-end handling is first_day_of_next_month
NEXT_MONTH_SHARE = 0.55
#: share of re-split tasks (with >= 4 instalments) whose minimum instalment reduces the count
MINIMUM_BINDING_SHARE = 0.5
#: share of tasks whose change needs an approval: the blind "ask the role of the k-th trigger of
#: approval_order" policy passes about a third of it, the constant-role one about a quarter
APPROVAL_SHARE = 0.26
#: where the new first instalment's reminder goes, a third of the tasks each (the outcome class
#: names it beside the approval route)
REMINDER_ROUTES = ("reminder_at_lead", "reminder_today", "no_reminder")
#: the approval trigger that applies first, when an approval is needed: deferral when it can
#: (the change postpones collection: about 46 % of the worlds) in this share, else the instalment
#: count when it can (3 or more instalments) in this share, else short notice (every world): about a
#: third of the approvals each
FIRST_TRIGGER_SHARES = {"deferral": 0.72, "instalment_count": 0.6}
#: chance that a trigger listed after the one that applies first applies too (when it can): the
#: approval order then decides the role
ALSO_APPLIES = 0.7
#: days from today to the new first instalment: every decision fits every world in this range
MIN_DAYS_FIRST, MAX_DAYS_FIRST = 3, 55
#: reminder lead times and notice periods a portfolio may have (days); the largest exceeds
#: MAX_DAYS_FIRST, the smallest is MIN_DAYS_FIRST
LEAD_VALUES = (3, 5, 7, 10, 14, 21, 28, 35, 42, 49, 56)
NOTICE_VALUES = (3, 5, 7, 10, 14, 21, 28, 35, 42, 49, 56)
COUNT_VALUES = tuple(range(2, 13))
#: schedule versions of the target policy (superseded ones, the active one, abandoned drafts)
VERSION_COUNTS = (2, 3, 4)
REMINDER_CHANNELS = ("email", "sms", "letter")


def month_words(period: str) -> str:
    return f"{MONTHS[int(period[5:7]) - 1]} {period[:4]}"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# -- the traps -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Trap:
    """What a defect tag asks of the world before its planter runs (each field is read at the
    point of the draw where it always was)."""

    kinds: tuple[str, ...]
    #: the collection day is always 29-31 (else in LATE_DAY_SHARE of tasks)
    late_day: bool = False
    #: share of monthly/quarterly policies with a paid earlier version, of annual ones with a deposit
    history_share: float = 0.35
    deposit_share: float = 0.2
    #: the policy must hold paid instalments
    needs_paid: bool = False
    #: the change starts with the first due period (no drawn offset) and the first new instalment
    #: falls due within 14 days of the request
    short_notice: bool = False
    #: neighbours sharing the holder's surname, address, dates and nearby ids
    lookalikes: int = 0


TRAPS = {
    "rounding_remainder": Trap(SPLIT_KINDS),
    "month_end_dates": Trap(("to_monthly", "split", "deferral", "collection_day"), late_day=True),
    "paid_instalments_present": Trap(SPLIT_KINDS, history_share=0.8, deposit_share=0.6, needs_paid=True),
    "approval_threshold": Trap(("to_monthly", "split", "deferral", "collection_day")),
    "collection_day_change": Trap(("collection_day",)),
    "other_accounts_nearby": Trap((*SPLIT_KINDS, "collection_day"), lookalikes=2),
    "short_notice": Trap(("to_monthly", "split", "collection_day"), short_notice=True),
}
KINDS_BY_TAG = {tag: trap.kinds for tag, trap in TRAPS.items()}


class _Reject(Exception):
    """The drawn world does not fit the tag: draw again (from the same rng stream)."""


@dataclass(frozen=True)
class Decision:
    """What the agent must decide in a task (its outcome class): whether the change needs an
    approval, and where the new first instalment's reminder goes (:data:`REMINDER_ROUTES`)."""

    approval: bool
    route: str

    @property
    def outcome_class(self) -> str:
        return ("approval+" if self.approval else "no_approval+") + self.route


def _decision(seed: int) -> Decision:
    """The task's decision, drawn from the task seed alone (apart from the world's stream, before
    it): nothing the world shows before the rules are read depends on it."""
    rng = random.Random(derive_seed("schedules", "decision", seed))
    return Decision(rng.random() < APPROVAL_SHARE, rng.choice(REMINDER_ROUTES))


#: ``(seed, tag) -> (attempts rejected so far, state of the stream after them)``: the draws of a
#: task form ONE stream (attempt ``k`` continues where attempt ``k - 1`` was rejected, as the
#: release was drawn); the engine's retry loop asks for attempt ``k`` right after ``k - 1``, so
#: the stream is resumed from here instead of replayed.
_PAUSED: dict[tuple[int, str], tuple[int, Any]] = {}


def _stream(seed: int, tag: str, attempt: int) -> random.Random:
    """The task's one stream, positioned after ``attempt`` rejected draws (pure: replayed when
    the paused state is not that attempt's)."""
    rng = random.Random(seed)
    paused = _PAUSED.pop((seed, tag), None)
    if paused is not None and paused[0] == attempt:
        rng.setstate(paused[1])
        return rng
    decision = _decision(seed)
    for _ in range(attempt):
        try:
            _draw(rng, tag, decision)
        except _Reject:
            continue
    return rng


def _attempt(seed: int, tag: str, attempt: int) -> Generated | None:
    """One task whose trap is ``defect_tag``; pure in ``(seed, defect_tag)``."""
    rng = _stream(seed, tag, attempt)
    try:
        return _draw(rng, tag, _decision(seed))
    except _Reject:
        if len(_PAUSED) > 256:  # pragma: no cover - only abandoned streams pile up
            _PAUSED.clear()
        _PAUSED[(seed, tag)] = (attempt + 1, rng.getstate())
        return None


#: the released task of ``(seed, tag)``: the engine's retry loop over :func:`_attempt`
_released = retrying(_attempt, DEFECT_TAGS, tries=2000)


def generate(seed: int, tag: str, scale: int = 1) -> Generated:
    """One task whose trap is ``tag``; pure in ``(seed, tag, scale)``.

    ``scale=1`` is the released task. At ``scale=k`` the same task (brief, answer key, the
    target's rows and its released neighbours) sits in a book about ``k`` times larger: see
    :func:`_scaled_snapshot`. Raises ``ValueError`` for an unknown tag or a scale below 1."""
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    gen = _released(seed, tag)
    if scale == 1:
        return gen
    return Generated(task=gen.task, snapshot=_scaled_snapshot(gen.snapshot, seed, scale), key=gen.key)


# -- the target policy's history -----------------------------------------------------------
def _schedule_rows(pn: str, acc: str, version: int, status: str, frequency: str, change_type: str, created: str) -> dict[str, Any]:
    return {
        "id": f"SCD-{pn}V{version}", "policy_id": f"POL-{pn}", "account_id": acc, "version": version,
        "status": status, "frequency": frequency, "change_type": change_type, "created_at": created,
        "committed_at": created, "superseded_at": None,
    }


def _instalment(pn: str, acc: str, version: int, seq: int, period: str, due: str, amount: int, status: str, paid_on: str | None) -> dict[str, Any]:
    return {
        "id": f"INS-{pn}V{version}-{seq:02d}", "schedule_id": f"SCD-{pn}V{version}", "policy_id": f"POL-{pn}",
        "account_id": acc, "seq": seq, "period": period, "due_date": due, "amount": amount, "status": status,
        "paid_on": paid_on,
    }


def _book_schedule(
    pn: str, acc: str, premium: int, frequency: str, m0: str, day: int, today: str, rules: dict[str, Any],
    rng: random.Random, with_history: bool, deposit: bool, reissued: int = 0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Schedules and instalments of one policy (history optional); the last schedule is active.

    ``with_history``: version 1 was monthly and its first months were paid; ``reissued``: that
    many more versions were superseded before any of their instalments was collected (all
    cancelled) before the active one."""
    schedules, instalments = [], []
    version, remaining, first_period = 1, premium, m0
    created = f"{add_months(m0, -1)}-15T10:00:00"
    if with_history:
        # version 1 was monthly; its first j months were paid before the customer changed frequency
        j = rng.randint(1, 3)
        amounts = split_amounts(premium, 12, rules["rounding"])
        for seq in range(1, 13):
            period = add_months(m0, seq - 1)
            due = due_date(period, day, rules["month_end"])
            paid = seq <= j
            instalments.append(_instalment(pn, acc, 1, seq, period, due, amounts[seq - 1], "paid" if paid else "cancelled", due if paid else None))
        sched = _schedule_rows(pn, acc, 1, "superseded", "monthly", "new_business", created)
        sched["superseded_at"] = f"{add_months(m0, j - 1)}-20T10:00:00"
        schedules.append(sched)
        remaining -= sum(amounts[:j])
        first_period = add_months(m0, j)
        version = 2
        created = sched["superseded_at"]
    last = last_period_of(m0 + "-01")
    for _ in range(reissued):
        frequency_k = rng.choice(("monthly", "quarterly"))
        step_k = 3 if frequency_k == "quarterly" else 1
        periods_k = [add_months(first_period, step_k * i) for i in range(months_between(first_period, last) // step_k + 1)]
        for seq, (period, amount) in enumerate(zip(periods_k, split_amounts(remaining, len(periods_k), rules["rounding"])), start=1):
            instalments.append(_instalment(pn, acc, version, seq, period, due_date(period, day, rules["month_end"]), amount, "cancelled", None))
        sched = _schedule_rows(pn, acc, version, "superseded", frequency_k, "to_" + frequency_k, created)
        sched["superseded_at"] = created[:11] + f"{11 + rng.randint(0, 5):02d}:00:00"
        schedules.append(sched)
        version += 1
    if frequency == "annual":
        periods = [first_period]
    else:
        step = 3 if frequency == "quarterly" else 1
        periods = [add_months(first_period, step * i) for i in range(months_between(first_period, last) // step + 1)]
    seq = 0
    if deposit:
        dep = remaining * rng.randint(10, 25) // 100
        paid_on = (date.fromisoformat(today) - timedelta(days=rng.randint(5, 40))).isoformat()
        seq += 1
        instalments.append(_instalment(pn, acc, version, seq, period_of(date.fromisoformat(paid_on)), paid_on, dep, "paid", paid_on))
        remaining -= dep
    for period, amount in zip(periods, split_amounts(remaining, len(periods), rules["rounding"])):
        seq += 1
        due = due_date(period, day, rules["month_end"])
        paid = due < today
        instalments.append(_instalment(pn, acc, version, seq, period, due, amount, "paid" if paid else "due", due if paid else None))
    schedules.append(_schedule_rows(pn, acc, version, "active", frequency, "new_business" if version == 1 else "to_" + frequency, created))
    return schedules, instalments


def _target_reminders(w: World) -> list[dict[str, Any]]:
    """The target policy's reminders: sent ones for its last paid instalments, one or two for its
    next due instalments (scheduled when their send date, drawn from an earlier lead time, is
    still ahead, else sent), and a cancelled one now and then (always when nothing else would
    stand beside the scheduled ones). Their ids are numbered in a random order, so a scheduled
    reminder stands anywhere in the policy's list."""
    rng, today = w.rng, w.today
    paid = sorted((r for r in w.instalments if r["status"] == "paid"), key=lambda r: (r["due_date"], r["id"]))[-2:]
    due = w.due_rows[:rng.choice((1, 1, 2))]
    rows: list[tuple[dict[str, Any], str, str]] = []
    for inst in paid:
        rows.append((inst, (date.fromisoformat(inst["due_date"]) - timedelta(days=rng.choice(LEAD_VALUES[:7]))).isoformat(), "sent"))
    for inst in due:
        send = (date.fromisoformat(inst["due_date"]) - timedelta(days=rng.choice(LEAD_VALUES[:7]))).isoformat()
        rows.append((inst, send, "scheduled" if send >= today else "sent"))
    if rng.random() < 0.5 or all(status == "scheduled" for _, _, status in rows):
        inst = w.due_rows[0]
        rows.append((inst, (date.fromisoformat(inst["due_date"]) - timedelta(days=rng.choice(LEAD_VALUES[:7]))).isoformat(), "cancelled"))
    numbers = sorted(rng.sample(range(1, 100), len(rows)))
    rng.shuffle(numbers)
    return [{"id": f"REM-{w.pn}-{n:02d}", "policy_id": f"POL-{w.pn}", "account_id": w.acc, "instalment_id": inst["id"],
             "due_date": inst["due_date"], "amount": inst["amount"], "send_on": min(send, inst["due_date"]),
             "channel": rng.choice(REMINDER_CHANNELS), "status": status}
            for n, (inst, send, status) in sorted(zip(numbers, rows), key=lambda x: x[0])]


def _stale_drafts(w: World) -> None:
    """The target's abandoned drafts: ``w.after`` versions after the active one, drafted for an
    earlier request and never committed (draft instalments that never match the expected ones:
    another count)."""
    rng = w.rng
    version = w.prior["version"]
    first = w.due_rows[0]["period"]
    for k in range(w.after):
        offset = rng.choice((0, 1))
        version += 1
        kind = rng.choice(SPLIT_KINDS)
        count = rng.choice([c for c in (1, 2, 3, 4) if c != len(w.expected)])
        step = 3 if kind == "to_quarterly" else 1
        created = f"{(date.fromisoformat(w.today) - timedelta(days=rng.randint(2, 40))).isoformat()}T{10 + k:02d}:30:00"
        sched = _schedule_rows(w.pn, w.acc, version, "draft", "quarterly" if kind == "to_quarterly" else "monthly", kind, created)
        sched["committed_at"] = None
        w.schedules.append(sched)
        for seq, amount in enumerate(split_amounts(w.outstanding, count, w.rules["rounding"]), start=1):
            period = add_months(first, offset + (seq - 1) * step)
            row = _instalment(w.pn, w.acc, version, seq, period, due_date(period, w.day, w.rules["month_end"]), amount, "draft", None)
            row["id"] = w.instalment_id()
            w.instalments.append(row)


def _reminders(pn: str, acc: str, instalments: list[dict[str, Any]], lead: int, today: str) -> list[dict[str, Any]]:
    """The last paid instalment's sent reminder and the next due one's (scheduled if still ahead)."""
    out = []
    paid = [r for r in instalments if r["status"] == "paid"]
    due = sorted((r for r in instalments if r["status"] == "due"), key=lambda r: r["due_date"])
    picks = ([paid[-1]] if paid else []) + due[:1]
    for n, inst in enumerate(picks, start=1):
        send = (date.fromisoformat(inst["due_date"]) - timedelta(days=lead)).isoformat()
        status = "scheduled" if inst["status"] == "due" and send >= today else "sent"
        out.append({
            "id": f"REM-{pn}-{n:02d}", "policy_id": f"POL-{pn}", "account_id": acc, "instalment_id": inst["id"],
            "due_date": inst["due_date"], "amount": inst["amount"], "send_on": send, "channel": "email", "status": status,
        })
    return out


# -- the world -----------------------------------------------------------------------------
@dataclass
class World:
    """One task's book as it is drawn: the target policy (with its history), the rules document,
    then the change request, its approval and the people around it."""

    rng: random.Random
    tag: str
    trap: Trap
    today: str
    kind: str
    frequency: str
    day: int
    new_day: int
    rules: dict[str, Any]
    m0: str = ""
    last: str = ""
    premium: int = 0
    pn_int: int = 0
    acc: str = ""
    #: schedule versions before the active one (superseded) and after it (abandoned drafts)
    before: int = 0
    after: int = 0
    schedules: list[dict[str, Any]] = field(default_factory=list)
    instalments: list[dict[str, Any]] = field(default_factory=list)
    due_rows: list[dict[str, Any]] = field(default_factory=list)
    paid_rows: list[dict[str, Any]] = field(default_factory=list)
    outstanding: int = 0
    # the change
    start: str = ""
    parts: int | None = None
    pause: int | None = None
    expected: list[dict[str, Any]] = field(default_factory=list)
    days_first: int = 0
    #: the approval thresholds sit at the plan's own values (the approval_threshold trap)
    boundary: bool = False
    route: str = ""
    need: tuple[str, str] | None = None
    approvers: list[dict[str, Any]] = field(default_factory=list)
    send_on: str | None = None
    reminders: list[dict[str, Any]] = field(default_factory=list)

    #: the numbers left for the target's instalment ids (drawn once, taken in turn)
    numbers: list[int] = field(default_factory=list)

    @property
    def pn(self) -> str:
        return str(self.pn_int)

    def instalment_id(self) -> str:
        return f"INS-{self.pn}-{self.numbers.pop()}"

    @property
    def prior(self) -> dict[str, Any]:
        """The active version (the one the change replaces)."""
        return next(s for s in self.schedules if s["status"] == "active")

    @property
    def first_due(self) -> str:
        return self.expected[0]["due_date"]

    @property
    def replaced_first_due(self) -> str:
        return self.due_rows[0]["due_date"]

    @property
    def uneven(self) -> bool:
        return self.kind in SPLIT_KINDS and self.outstanding % len(self.expected) != 0

    @property
    def month_end_hit(self) -> bool:
        return any(int(r["due_date"][8:10]) != self.new_day for r in self.expected)


def build_world(rng: random.Random, tag: str) -> World:
    """Today, the request kind, the collection day(s), the rules document and the target policy's
    booked schedule (``_Reject`` when it has nothing due, or nothing paid for a tag that needs it)."""
    trap = TRAPS[tag]
    today_d = START + timedelta(days=rng.randrange(0, 330))
    kind = rng.choice(trap.kinds)
    frequency = rng.choice(PRIOR_FREQUENCIES[kind])
    # a collection day of 29-31 (month-end handling applies) in every tag, always in month_end_dates
    late_day = trap.late_day or rng.random() < LATE_DAY_SHARE
    if kind == "collection_day":
        day = rng.randint(1, 31) if rng.random() < 0.3 else rng.randint(1, 28)
        new_day = rng.choice([d for d in ((29, 30, 31) if late_day else range(1, 29)) if d != day])
    else:
        day = rng.choice((29, 30, 31)) if late_day else rng.randint(1, 28)
        new_day = day
    w = World(rng, tag, trap, today_d.isoformat(), kind, frequency, day, new_day, _draw_rules(rng))
    _book_target(w, period_of(today_d))
    return w


def _draw_rules(rng: random.Random) -> dict[str, Any]:
    """The parts of the rules document drawn with the world; the approval thresholds, the deferral
    rule, the reminder lead time and the late-reminder rule are fitted to the decision later
    (:func:`_settle`)."""
    rules: dict[str, Any] = {
        "id": "RULES",
        "rounding": rng.choice(ROUNDING_RULES),
        "month_end": "first_day_of_next_month" if rng.random() < NEXT_MONTH_SHARE else "last_day_of_month",
        "reminder_lead_days": 0,
        "late_reminder": LATE_REMINDER_RULES[0],
        "approval_order": rng.sample(APPROVAL_TRIGGERS, 3),
    }
    roles = rng.sample(ROLES, 3)
    for trigger, role in zip(APPROVAL_TRIGGERS, roles):
        rules[f"approval_role_{trigger}"] = role
    return rules


def _book_target(w: World, this_period: str) -> None:
    """The target policy's year, premium, ids and booked schedule versions: the active one stands
    at a uniform place among 2-4 versions (superseded ones before it, abandoned drafts after it,
    added by :func:`_stale_drafts` once the plan is known)."""
    rng, trap = w.rng, w.trap
    # the policy year: an annual schedule is drawn before the year starts, others during it
    if w.frequency == "annual":
        w.m0 = add_months(this_period, 1)
    else:
        w.m0 = add_months(this_period, -rng.randint(0, 8 if w.frequency == "monthly" else 6))
    w.last = last_period_of(w.m0 + "-01")
    w.premium = rng.randint(24_000, 480_000)
    versions = rng.choice(VERSION_COUNTS)
    w.before = rng.randrange(versions)
    w.after = versions - 1 - w.before
    with_history = (w.before >= 1 and w.frequency != "annual" and months_between(w.m0, this_period) >= 3
                    and rng.random() < trap.history_share)
    deposit = w.frequency == "annual" and rng.random() < trap.deposit_share
    w.rules["minimum_instalment_cents"] = 0  # set once the amounts are known
    w.pn_int = rng.randrange(1100, 9700)
    w.acc = f"ACC-{rng.randrange(1000, 9999)}"
    w.schedules, w.instalments = _book_schedule(w.pn, w.acc, w.premium, w.frequency, w.m0, w.day, w.today, w.rules,
                                                rng, with_history, deposit, reissued=w.before - int(with_history))
    # the book numbers the target's instalments INS-<policy>-<NNN> in no order of version or seq,
    # so the rows a change replaces stand anywhere in the policy's listing (id order)
    w.numbers = rng.sample(range(100, 1000), 120)
    for row in w.instalments:
        row["id"] = w.instalment_id()
    prior_rows = [r for r in w.instalments if r["schedule_id"] == w.prior["id"]]
    w.due_rows = sorted((r for r in prior_rows if r["status"] == "due"), key=lambda r: r["due_date"])
    w.paid_rows = [r for r in w.instalments if r["status"] == "paid"]
    if not w.due_rows or (trap.needs_paid and not w.paid_rows):
        raise _Reject
    w.outstanding = w.premium - sum(r["amount"] for r in w.paid_rows)
    assert w.outstanding == sum(r["amount"] for r in w.due_rows)


# -- the change request --------------------------------------------------------------------
def _plan_change(w: World) -> None:
    """The request's start, parts or pause, the minimum instalment and the expected instalments."""
    if w.kind == "collection_day":
        w.start = w.due_rows[0]["period"]
        w.rules["minimum_instalment_cents"] = _pick_minimum(w.rng, min(r["amount"] for r in w.due_rows))
        w.expected = redate_instalments(w.rules, w.due_rows, w.new_day)
    else:
        _plan_resplit(w)


def _plan_resplit(w: World) -> None:
    """A new frequency, a split or a deferral of the outstanding premium."""
    rng, kind, first_due_period = w.rng, w.kind, w.due_rows[0]["period"]
    if kind == "deferral":
        if w.frequency != "monthly" or len(w.due_rows) < 3:
            raise _Reject
        w.pause = rng.choice((1, 1, 2))
        w.start = add_months(first_due_period, w.pause)
    else:
        w.start = add_months(first_due_period, rng.choice((0, 0, 1)) if not w.trap.short_notice else 0)
    span = months_between(w.start, w.last) + 1
    if kind == "split":
        if span < 2:
            raise _Reject
        w.parts = rng.randint(2, min(12, span))
    if kind == "to_quarterly" and span < 4:
        raise _Reject
    if kind in ("to_monthly", "deferral") and span < 2:
        raise _Reject
    probe = plan_instalments({**w.rules, "minimum_instalment_cents": 0}, kind, w.outstanding, w.day, w.start, w.last, w.parts)
    smallest = w.outstanding // len(probe)
    binding = rng.random() < MINIMUM_BINDING_SHARE and len(probe) >= 4
    if binding:
        options = [m for m in (2_500, 5_000, 10_000, 15_000, 20_000, 25_000, 40_000) if smallest < m <= w.outstanding // 2]
        if not options:
            raise _Reject
        w.rules["minimum_instalment_cents"] = rng.choice(options)
    else:
        w.rules["minimum_instalment_cents"] = _pick_minimum(rng, min([smallest] + [r["amount"] for r in w.due_rows]))
    w.expected = plan_instalments(w.rules, kind, w.outstanding, w.day, w.start, w.last, w.parts)


def _time_first_instalment(w: World) -> None:
    """Days to the new first instalment: 3 to 55 (14 at most for short_notice), so that every
    decision fits the world (a reminder lead time and a notice period on either side of it)."""
    w.days_first = days_between(w.today, w.first_due)
    if not MIN_DAYS_FIRST <= w.days_first <= MAX_DAYS_FIRST or (w.trap.short_notice and w.days_first > 14):
        raise _Reject
    if len(w.expected) > COUNT_VALUES[-1]:  # pragma: no cover - a policy year holds 12 months
        raise _Reject


def _settle(w: World, decision: Decision) -> None:
    """The portfolio parameters fitted to the decision (never a rejection: every world fits every
    decision), the scripted approvers and the reminder's send date.

    The reminder route: a lead time at most the days to the new first instalment (the reminder
    goes at the lead time), or more (late: the late-reminder rule says today or none). The
    approval: none, or a trigger that can apply (:data:`FIRST_TRIGGER_SHARES`) applies
    first in the approval order; the triggers listed before it do not apply, the ones after it
    apply in :data:`ALSO_APPLIES` of the cases they can. The thresholds are drawn on the right side
    of the plan's own values (at them, in the approval_threshold trap)."""
    rng, rules = w.rng, w.rules
    n, first, df = len(w.expected), w.first_due, w.days_first
    w.route = decision.route
    if decision.route == "reminder_at_lead":
        rules["reminder_lead_days"] = rng.choice([v for v in LEAD_VALUES if v <= df])
        rules["late_reminder"] = rng.choice(LATE_REMINDER_RULES)
    else:
        rules["reminder_lead_days"] = rng.choice([v for v in LEAD_VALUES if v > df])
        rules["late_reminder"] = "send_today" if decision.route == "reminder_today" else "skip"
    can = {"deferral": first > w.replaced_first_due, "instalment_count": n > COUNT_VALUES[0], "short_notice": df < NOTICE_VALUES[-1]}
    target = None
    if decision.approval:
        target = next((t for t, share in FIRST_TRIGGER_SHARES.items() if can[t] and rng.random() < share), "short_notice")
    order = rules["approval_order"]
    after = order[order.index(target) + 1:] if target else []
    applies = {t: t == target or (t in after and can[t] and rng.random() < ALSO_APPLIES) for t in APPROVAL_TRIGGERS}
    rules["deferral_needs_approval"] = applies["deferral"] or (not can["deferral"] and rng.random() < 0.5)
    if w.boundary:
        rules["max_instalments_without_approval"] = n - 1 if applies["instalment_count"] else max(n, COUNT_VALUES[0])
        rules["min_notice_days"] = df + 1 if applies["short_notice"] else df
    else:
        rules["max_instalments_without_approval"] = rng.choice(
            [v for v in COUNT_VALUES if (v < n) == applies["instalment_count"]])
        rules["min_notice_days"] = rng.choice([v for v in NOTICE_VALUES if (v > df) == applies["short_notice"]])
    w.need = approval_needed(rules, n, first, w.today, w.replaced_first_due)
    assert (w.need[0] if w.need else None) == target, (w.need, target)
    assert applying_triggers(rules, n, first, w.today, w.replaced_first_due) == applies
    w.approvers = [
        {"id": role, "name": f"{rng.choice(FIRST)} {rng.choice(SURNAMES)}", "delay_hours": rng.randint(1, 6), "decision": "granted"}
        for role in ROLES
    ]
    # approvers decide within the day, so "today" is the same date when the reminder is set
    w.send_on = reminder_send_on(rules, first, w.today)
    assert (w.send_on is None) == (decision.route == "no_reminder")
    assert (w.send_on == w.today and df < rules["reminder_lead_days"]) == (decision.route == "reminder_today")


# -- one attempt ---------------------------------------------------------------------------
def _draw(rng: random.Random, tag: str, decision: Decision) -> Generated:
    """One attempt: the world, the change, the trap's planter, then the parameters fitted to the
    decision, the abandoned drafts, the people, the snapshot, the key and the brief."""
    w = build_world(rng, tag)
    _plan_change(w)
    _time_first_instalment(w)
    PLANTERS[tag](w)
    _settle(w, decision)
    _stale_drafts(w)
    snapshot = _snapshot(w)
    key = _key(w, decision)
    policy_id, req_id = f"POL-{w.pn}", snapshot["requests"][0]["id"]
    # the same tools in every task: what a clerk is given never hints at the answer
    task = {"instructions": _brief(rng, snapshot["policies"][0]["holder"], w.acc, policy_id, req_id, w.kind, w.today),
            "allowed_tools": list(ALLOWED_TOOLS), "params": {"request_id": req_id, "policy_id": policy_id, "today": w.today},
            "max_steps": 60}
    return Generated(task=task, snapshot=snapshot, key=key)


def _snapshot(w: World) -> dict[str, Any]:
    """The people (holder, lookalike and unrelated neighbours), the request and every table."""
    rng, pn, acc, kind = w.rng, w.pn, w.acc, w.kind
    surname = rng.choice(SURNAMES)
    holder = f"{rng.choice(FIRST)} {surname}"
    address = f"{rng.randint(1, 120)} {rng.choice(STREETS)}, {rng.choice(TOWNS)}"
    product = rng.choice(PRODUCTS)
    neighbours = _neighbours(rng, w.rules, w.today, w.pn_int, acc, surname, address, w.frequency, w.m0, w.day, w.trap.lookalikes)
    w.reminders = _target_reminders(w)
    policy_id, man = f"POL-{pn}", f"MAN-{pn}"
    req_id = f"REQ-{rng.randrange(10000, 99999)}"
    request = _request_row(rng, req_id, policy_id, acc, w.today, kind, w.frequency, w.start, w.parts, w.pause, w.new_day)
    snapshot = {
        "policies": [_policy(policy_id, acc, holder, product, w.premium, f"{w.m0}-01", f"{add_months(w.m0, 12)}-01", man)],
        "accounts": [_account(acc, holder, address, rng)],
        "schedules": w.schedules,
        "instalments": w.instalments,
        "reminders": w.reminders,
        "instructions": [_instruction(man, policy_id, acc, w.day, rng)],
        "approvals": [],
        "requests": [request],
        "rules": [w.rules],
        "_approvers": w.approvers,
        "clock": [{"id": "clock", "now": f"{w.today}T09:00:00"}],
    }
    for table, rows in neighbours.items():
        snapshot[table] = snapshot[table] + rows  # new lists: the target's own lists stay its own
    return snapshot


def _key(w: World, decision: Decision) -> dict[str, Any]:
    """The answer key: defect tags (the trap's first, then any other the task shows), targets,
    the outcome class (the decision), the expected outcome and the declarative checks."""
    pn, kind, need, expected = w.pn, w.kind, w.need, w.expected
    policy_id, man = f"POL-{pn}", f"MAN-{pn}"
    shown = ((w.uneven, "rounding_remainder"), (w.month_end_hit, "month_end_dates"),
             (bool(w.paid_rows), "paid_instalments_present"), (w.boundary, "approval_threshold"),
             (kind == "collection_day", "collection_day_change"), (w.trap.lookalikes > 0, "other_accounts_nearby"),
             (w.days_first <= 14, "short_notice"))
    secondary = [name for flag, name in shown if flag and name != w.tag]
    expected_rows = [{"seq": r["seq"], "due_date": r["due_date"], "amount": r["amount"]} for r in expected]
    scheduled_before = sorted(r["id"] for r in w.reminders if r["status"] == "scheduled")
    return {
        "defect_tags": [w.tag, *secondary],
        "targets": [f"schedules:SCD-{pn}V*", f"instalments:INS-{pn}V*", f"instalments:INS-{pn}-*", f"reminders:REM-{pn}-*",
                    f"approvals:APV-{pn}-*", "clock:clock"] + ([f"instructions:{man}"] if kind == "collection_day" else []),
        "outcome_class": decision.outcome_class,
        "needs_action": True,
        "expected": {
            "kind": kind, "policy_id": policy_id, "account_id": w.acc, "outstanding": w.outstanding,
            "count": len(expected), "split": kind in SPLIT_KINDS, "uneven_split": w.uneven, "instalments": expected_rows,
            "prior_schedule_id": w.prior["id"], "prior_due_ids": [r["id"] for r in w.due_rows],
            "replaced_first_due": w.replaced_first_due,
            "paid_ids": sorted(r["id"] for r in w.paid_rows),
            "approval_trigger": need[0] if need else None, "approval_role": need[1] if need else None,
            "reminder_route": w.route,
            "reminder_send_on": w.send_on, "first_due": w.first_due, "first_amount": expected[0]["amount"],
            "new_collection_day": w.new_day if kind == "collection_day" else None,
            "scheduled_reminders_before": scheduled_before,
            "month_end_adjusted": w.month_end_hit,
        },
        "checks": _checks(policy_id, w.acc, man, w.prior["id"], w.due_rows, w.paid_rows, expected_rows, w.send_on, kind,
                          w.new_day, need, scheduled_before),
    }


def _pick_minimum(rng: random.Random, ceiling: int) -> int:
    options = [m for m in (500, 1_000, 2_000, 2_500, 5_000) if m <= ceiling]
    if not options:
        raise _Reject
    return rng.choice(options)


# -- one planter per defect tag ------------------------------------------------------------
# Each runs once the change is planned: it rejects a world that does not show its trap (never
# looking at the decision, which is fitted after it).
def _plant_rounding_remainder(w: World) -> None:
    if not w.uneven:
        raise _Reject


def _plant_month_end_dates(w: World) -> None:
    if not w.month_end_hit:
        raise _Reject


def _plant_nothing(w: World) -> None:
    """The world shows the trap by construction (paid instalments: Trap.needs_paid; lookalike
    neighbours: Trap.lookalikes; a collection-day change: the kind; short notice: the timing)."""


def _plant_approval_threshold(w: World) -> None:
    """The approval thresholds will sit at the plan's own values: the instalment count the
    maximum (or one above it), the days to the first instalment the notice period (or one less):
    "more than" and "fewer than" decide."""
    w.boundary = True


PLANTERS: dict[str, Callable[[World], None]] = {
    "rounding_remainder": _plant_rounding_remainder,
    "month_end_dates": _plant_month_end_dates,
    "paid_instalments_present": _plant_nothing,
    "approval_threshold": _plant_approval_threshold,
    "collection_day_change": _plant_nothing,
    "other_accounts_nearby": _plant_nothing,
    "short_notice": _plant_nothing,
}


def _checks(
    policy_id: str, acc: str, man: str, prior_id: str, due_rows: list[dict[str, Any]], paid_rows: list[dict[str, Any]],
    expected: list[dict[str, Any]], send_on: str | None, kind: str, new_day: int, need: tuple[str, str] | None,
    scheduled_before: list[str],
) -> list[dict[str, Any]]:
    """The declarative checks of the key. ``gate`` marks a prohibition that doing nothing holds
    (it earns nothing and caps the score when broken); every other check is work. The grader adds
    the computed ones (the approval requests, the versions, the live reminders)."""
    new = {"table": "instalments", "where": {"policy_id": policy_id, "status": "due"}, "created_only": True}
    checks: list[dict[str, Any]] = [
        {"id": "sch.amounts", "kind": "row_equals", **new, "fields": ["seq", "amount"], "order_by": "seq",
         "rows": [{"seq": r["seq"], "amount": r["amount"]} for r in expected], "failure_code": "rounding_drift"},
        {"id": "sch.due_dates", "kind": "row_equals", **new, "fields": ["seq", "due_date"], "order_by": "seq",
         "rows": [{"seq": r["seq"], "due_date": r["due_date"]} for r in expected], "failure_code": "wrong_due_dates"},
        {"id": "sch.prior_superseded", "kind": "status_is", "table": "schedules", "row_id": prior_id,
         "value": "superseded", "failure_code": "prior_not_superseded"},
    ]
    if paid_rows:
        fields = ["id", "schedule_id", "period", "due_date", "amount", "status", "paid_on"]
        checks.append({"id": "sch.paid_untouched", "kind": "row_equals", "table": "instalments",
                       "where": {"policy_id": policy_id, "status": "paid"}, "fields": fields, "order_by": "id",
                       "rows": [{f: r[f] for f in fields} for r in sorted(paid_rows, key=lambda r: r["id"])],
                       "failure_code": "paid_instalment_altered", "gate": True})
    # the scheduled reminders of the policy: exactly the new first instalment's (its due date and
    # amount, the rules' send date), or none. When none is expected and none was scheduled before,
    # doing nothing holds it: then it is a gate.
    reminder_rows = [] if send_on is None else [{"due_date": expected[0]["due_date"], "amount": expected[0]["amount"], "send_on": send_on}]
    checks.append({"id": "sch.reminders", "kind": "row_equals", "table": "reminders",
                   "where": {"policy_id": policy_id, "status": "scheduled"}, "fields": ["due_date", "amount", "send_on"],
                   "order_by": "due_date", "rows": reminder_rows, "failure_code": "reminder_mismatch",
                   "gate": send_on is None and not scheduled_before})
    if kind == "collection_day":
        checks.append({"id": "sch.mandate_day", "kind": "field_equals", "table": "instructions", "row_id": man,
                       "field": "collection_day", "value": new_day, "failure_code": "mandate_not_updated"})
    if need is not None:
        checks.append({"id": "sch.approval_requested", "kind": "tool_called", "tool": "request_approval",
                       "args": {"policy_id": policy_id, "role": need[1]}, "failure_code": "approval_missing"})
        # anchored on the wait that follows the *required* request: asking another role and
        # waiting for it is no approval
        checks.append({"id": "sch.no_commit_before_approval", "kind": "tool_not_called", "tool": "commit_schedule",
                       "before": {"tool": "wait", "after": {"tool": "request_approval",
                                                            "args": {"policy_id": policy_id, "role": need[1]}}},
                       "failure_code": "commit_before_approval", "gate": True})
    checks.append({"id": "sch.other_accounts_unchanged", "kind": "no_change", "tables": list(ACCOUNT_TABLES),
                   "except_where": {"account_id": acc}, "failure_code": "collateral_change", "gate": True})
    return checks


# -- world pieces --------------------------------------------------------------------------
def _policy(pid: str, acc: str, holder: str, product: str, premium: int, start: str, end: str, man: str) -> dict[str, Any]:
    return {"id": pid, "account_id": acc, "holder": holder, "product": product, "annual_premium": premium,
            "term_start": start, "term_end": end, "instruction_id": man, "status": "in_force"}


def _account(acc: str, holder: str, address: str, rng: random.Random) -> dict[str, Any]:
    user = holder.lower().replace(" ", ".")
    return {"id": acc, "account_id": acc, "holder": holder, "address": address,
            "email": f"{user}@example.org", "iban_last4": f"{rng.randrange(10000):04d}"}


def _instruction(man: str, pid: str, acc: str, day: int, rng: random.Random) -> dict[str, Any]:
    return {"id": man, "policy_id": pid, "account_id": acc, "mandate_ref": f"DD{rng.randrange(10**7, 10**8)}",
            "collection_day": day, "status": "active"}


def _neighbours(
    rng: random.Random, rules: dict[str, Any], today: str, pn: int, acc: str, surname: str, address: str,
    frequency: str, m0: str, day: int, lookalikes: int, *,
    count: int | None = None, used_pn: set[int] | None = None, used_acc: set[str] | None = None, id_span: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """Other customers' policies; ``lookalikes`` of them share surname, address, dates and ids nearby.

    The released book draws 2-4 of them (plus the lookalikes) with policy numbers 1100-9699 and
    account numbers 1000-9998; a larger book (:func:`_scaled_snapshot`) asks for ``count`` of them,
    avoiding the numbers in ``used_pn`` / ``used_acc`` (updated in place), in ranges ``id_span``
    times wider so the ids stay as sparse as in the released book. Policy numbers within 4 of the
    target's are never drawn (its lookalikes' place)."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in ("policies", "accounts", "schedules", "instalments", "reminders", "instructions", "approvals")}
    used_pn = {pn} if used_pn is None else used_pn
    used_acc = {acc} if used_acc is None else used_acc
    if count is None:
        count = rng.randint(2, 4) + lookalikes
    pn_stop, acc_stop = 1100 + 8600 * id_span, 1000 + 8999 * id_span
    for i in range(count):
        alike = i < lookalikes
        if alike:
            npn = pn + i + 1
        else:
            npn = rng.randrange(1100, pn_stop)
            while npn in used_pn or abs(npn - pn) < 5:
                npn = rng.randrange(1100, pn_stop)
        used_pn.add(npn)
        nacc = f"ACC-{rng.randrange(1000, acc_stop)}"
        while nacc in used_acc:
            nacc = f"ACC-{rng.randrange(1000, acc_stop)}"
        used_acc.add(nacc)
        holder = f"{rng.choice(FIRST)} {surname if alike else rng.choice(SURNAMES)}"
        naddr = address if alike else f"{rng.randint(1, 120)} {rng.choice(STREETS)}, {rng.choice(TOWNS)}"
        nfreq = frequency if alike and frequency != "annual" else rng.choice(("monthly", "quarterly", "quarterly"))
        this = today[:7]
        nm0 = m0 if alike and frequency != "annual" else add_months(this, -rng.randint(0, 6))
        nday = day if alike else rng.randint(1, 28)
        premium = rng.randint(24_000, 480_000)
        spn = str(npn)
        schedules, instalments = _book_schedule(spn, nacc, premium, nfreq, nm0, nday, today, rules, rng, False, False)
        if not any(r["status"] == "due" for r in instalments):
            continue
        man = f"MAN-{spn}"
        out["policies"].append(_policy(f"POL-{spn}", nacc, holder, rng.choice(PRODUCTS), premium, f"{nm0}-01", f"{add_months(nm0, 12)}-01", man))
        out["accounts"].append(_account(nacc, holder, naddr, rng))
        out["schedules"].extend(schedules)
        out["instalments"].extend(instalments)
        out["reminders"].extend(_reminders(spn, nacc, instalments, rng.choice(LEAD_VALUES[:7]), today))
        out["instructions"].append(_instruction(man, f"POL-{spn}", nacc, nday, rng))
        if rng.random() < 0.3:
            role = rng.choice(ROLES)
            out["approvals"].append({
                "id": f"APV-{spn}-01", "policy_id": f"POL-{spn}", "account_id": nacc, "schedule_id": schedules[-1]["id"],
                "role": role, "reason": "instalment_count", "status": "granted",
                "requested_at": f"{nm0}-03T10:00:00", "decided_at": f"{nm0}-04T09:00:00", "decided_by": "Desk lead",
            })
    return out


CHANNELS = ("phone", "email", "web_form")


def _request_row(
    rng: random.Random, req_id: str, policy_id: str, acc: str, received_on: str, kind: str, frequency: str,
    start: str, parts: int | None, pause: int | None, new_day: int,
) -> dict[str, Any]:
    """A customer's change request (draws its channel)."""
    return {
        "id": req_id, "policy_id": policy_id, "account_id": acc, "received_on": received_on,
        "channel": rng.choice(CHANNELS), "kind": kind,
        "start_period": None if kind == "collection_day" else start, "parts": parts, "pause_months": pause,
        "new_collection_day": new_day if kind == "collection_day" else None,
        "customer_words": _customer_words(kind, frequency, start, parts, pause, new_day),
    }


def _customer_words(kind: str, frequency: str, start: str, parts: int | None, pause: int | None, new_day: int) -> str:
    freq_word = {"annual": "once a year", "quarterly": "every quarter", "monthly": "every month"}[frequency]
    if kind == "to_monthly":
        return f"Paying {freq_word} is hard on my budget. Could I pay monthly instead, starting with {month_words(start)}?"
    if kind == "to_quarterly":
        return f"I would prefer quarterly payments rather than paying {freq_word}, starting in {month_words(start)}."
    if kind == "split":
        return f"Can I pay what is left on this year's premium in {parts} monthly payments from {month_words(start)}?"
    if kind == "deferral":
        return f"Money is tight for a while. Can I skip my next {pause} payment{'s' if pause != 1 else ''} and restart in {month_words(start)}?"
    return f"My salary now arrives on the {ordinal(new_day)}. Please take my premium on that day from now on."


def _brief(rng: random.Random, holder: str, acc: str, policy_id: str, req_id: str, kind: str, today: str) -> str:
    mandate = " and the debit mandate" if kind == "collection_day" else ""
    openings = (
        f"{holder} (account {acc}) has sent change request {req_id} about policy {policy_id}.",
        f"New request {req_id} from {holder}, policy {policy_id} on account {acc}.",
        f"Please handle request {req_id}: {holder} wants the premium instalments of {policy_id} changed (account {acc}).",
    )
    body = (
        f" Today is {today}. Rework the instalment schedule as the request and the portfolio rules (get_rules) require: "
        f"create a draft, add its instalments, obtain the approval the rules require (request_approval, then wait for "
        f"the decision) before you commit it, commit it, supersede the prior active version and cancel its instalments "
        f"still due. Keep the payment reminders{mandate} in line, and submit when you are done. Paid instalments are "
        f"never changed; only this customer's account may change."
    )
    return rng.choice(openings) + body


# -- the scale tier ------------------------------------------------------------------------
def _scaled_snapshot(snapshot: dict[str, list[dict[str, Any]]], seed: int, scale: int) -> dict[str, list[dict[str, Any]]]:
    """The released book of one task with ``scale - 1`` times as many other customers again.

    They are drawn by :func:`_neighbours`, as the released unrelated neighbours are (a holder, a
    monthly or quarterly schedule with its instalments, reminders and mandate, now and then a
    granted approval), from a stream of their own (``derive_seed("schedules", "scale", seed,
    scale)``), so every released row stays as it was; ``scale - 1`` of them also hold a change
    request of their own, received in the last three weeks. None shares an id or an account with
    the target's, and none has a pending approval (``wait`` decides only the episode's requests),
    so the task's answer is unchanged, and the guardrail keeps them untouched. Linear in the
    rows added."""
    rng = random.Random(derive_seed("schedules", "scale", seed, scale))
    today = snapshot["clock"][0]["now"][:10]
    policy_id = snapshot["requests"][0]["policy_id"]
    target = next(p for p in snapshot["policies"] if p["id"] == policy_id)
    account = next(a for a in snapshot["accounts"] if a["id"] == target["account_id"])
    mandate = next(m for m in snapshot["instructions"] if m["id"] == target["instruction_id"])
    active = next(s for s in snapshot["schedules"] if s["policy_id"] == policy_id and s["status"] == "active")
    used_pn = {int(p["id"].split("-", 1)[1]) for p in snapshot["policies"]}
    used_acc = {a["id"] for a in snapshot["accounts"]}
    extra = _neighbours(
        rng, snapshot["rules"][0], today, int(policy_id.split("-", 1)[1]), account["id"], target["holder"].split(" ", 1)[1],
        account["address"], active["frequency"], target["term_start"][:7], int(mandate["collection_day"]), 0,
        count=(scale - 1) * len(snapshot["policies"]), used_pn=used_pn, used_acc=used_acc, id_span=scale,
    )
    frequency = {s["policy_id"]: s["frequency"] for s in extra["schedules"] if s["status"] == "active"}
    policies = extra["policies"]
    used_req = {r["id"] for r in snapshot["requests"]}
    requests = []
    for i in sorted(rng.sample(range(len(policies)), min(scale - 1, len(policies)))):
        pol = policies[i]
        req_id = f"REQ-{rng.randrange(10000, 10000 + 89999 * scale)}"
        while req_id in used_req:
            req_id = f"REQ-{rng.randrange(10000, 10000 + 89999 * scale)}"
        used_req.add(req_id)
        kind = rng.choice(REQUEST_KINDS)
        received = (date.fromisoformat(today) - timedelta(days=rng.randint(0, 20))).isoformat()
        start = add_months(today[:7], rng.randint(1, 2))
        parts = rng.randint(2, 6) if kind == "split" else None
        pause = rng.randint(1, 3) if kind == "deferral" else None
        requests.append(_request_row(rng, req_id, pol["id"], pol["account_id"], received, kind, frequency[pol["id"]],
                                     start, parts, pause, rng.randint(1, 28)))
    out = {table: list(rows) for table, rows in snapshot.items()}
    for table, rows in extra.items():
        out[table].extend(rows)
    out["requests"].extend(requests)
    return out
