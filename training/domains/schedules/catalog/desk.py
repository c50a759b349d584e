"""The schedules catalog's one observation state: what the clerk has read and written so far,
and the helpers every tier grounds its calls and decides legality with.

The desk keeps the brief, the six reads (the two paginated lists once their last page is read),
the approvals asked and decided, the open draft's life (created, rows added, refused, committed)
and the writes on the prior version, the reminders and the mandate. Result rows are never
mutated (the native env may hand out live rows): statuses changed by the episode's own writes are
kept beside them (:attr:`ScheduleDesk.status`, :attr:`ScheduleDesk.version_status`).

Two caches: :meth:`~backoffice.training.catalog.features.Desk.memo` (until the next
observation) and :func:`settles` (until the next read, wait, or write that changes
what was read: what is computed from the reads and their statuses, such as the conclusions
tier's plan or the raw tier's slots).
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache, wraps
from typing import Any, TypeVar

from backoffice.envs.schedules.tables import (
    add_months,
    applying_triggers,
    approval_needed,
    days_between,
    due_date,
    last_period_of,
    new_periods,
    parse_date,
    parts_meeting_minimum,
    reminder_send_on,
    rules_from_document,
    split_amounts,
)
from backoffice.training.catalog.features import Desk

KINDS = ("to_monthly", "to_quarterly", "split", "deferral", "collection_day")
TRIGGERS = ("deferral", "instalment_count", "short_notice")
#: frequency of the new schedule per request kind (a collection-day change keeps the active one's)
FREQUENCY = {"to_monthly": "monthly", "to_quarterly": "quarterly", "split": "monthly", "deferral": "monthly"}
READS = ("get_request", "get_policy", "get_rules", "list_instalments", "get_instruction", "list_reminders")
#: counts a draft can be declared with (every released plan has 1-12 instalments)
COUNTS = tuple(range(1, 13))
#: where a day past the month's end goes: the month's last day, or the 1st of the next month
ENDS = {"clamp": "last_day_of_month", "roll": "first_day_of_next_month"}
#: the frequencies of an existing version (one-hot)
PRIOR_FREQUENCIES = ("annual", "quarterly", "monthly")
#: instalment slots: the listed due or paid rows (not cancelled, not an abandoned draft's), by due
#: date (at most 12 in the release)
INSTALMENT_SLOTS = 12
#: version slots: the last listed versions that are not drafts
VERSION_SLOTS = 2
REMINDER_SLOTS = 2
#: the exact scales: amounts, dates, months (numbers stay exactly decodable from float32)
AMOUNT_SCALE = 2.0**19
MINIMUM_SCALE = 2.0**16
DATE_SCALE = 2048.0
MONTH_SCALE = 128.0
SMALL_SCALE = 32.0
#: day counts of the rules (reminder lead time, notice period: up to 56 days since seeds v2)
DAYS_SCALE = 64.0
EPOCH = date(2024, 1, 1)
EPOCH_MONTH = 2024 * 12

#: tools whose ok result changes what :func:`settles` values are computed from: the
#: reads, the approvals and the clock, and the writes that change what was read (a status, the
#: mandate's day)
SETTLING_TOOLS = frozenset({*READS, "request_approval", "wait", "update_instruction", "supersede_schedule", "cancel_instalments",
                            "cancel_reminder"})


T = TypeVar("T")


def settles(fn: Callable[[Any], T]) -> Callable[[Any], T]:
    """A value of the desk computed from the reads and their statuses: cached (under the
    function's qualified name) until the next ok call of :data:`SETTLING_TOOLS`."""
    key = f"{fn.__module__}.{fn.__qualname__}"

    @wraps(fn)
    def get(desk: Any) -> T:
        cache = desk._settled
        if key in cache:
            return cache[key]
        value: T = fn(desk)
        cache[key] = value
        return value

    return get


# -- scales ---------------------------------------------------------------------------------------
def ratio(value: Any, full: float) -> float:
    """``value / full`` clipped to ``[-1, 1]`` (0 for ``None``)."""
    if value is None:
        return 0.0
    return float(max(-1.0, min(1.0, float(value) / full)))


@lru_cache(maxsize=4096)
def days(text: str | None) -> float:
    """A date as days since 2024-01-01 / 2048 (0 when unknown)."""
    if not text:
        return 0.0
    return (parse_date(text) - EPOCH).days / DATE_SCALE


@lru_cache(maxsize=1024)
def month(period: str | None) -> float:
    """A ``YYYY-MM`` month as months since 2024-01 / 128 (0 when unknown)."""
    if not period:
        return 0.0
    return (int(period[:4]) * 12 + int(period[5:7]) - 1 - EPOCH_MONTH) / MONTH_SCALE


def amount(cents: Any) -> float:
    """Cents / 2^19 (at most 1; 0 when unknown)."""
    return min(1.0, int(cents) / AMOUNT_SCALE) if cents is not None else 0.0


def small(n: Any) -> float:
    """A small count / 32 (at most 1; 0 when unknown)."""
    return min(1.0, int(n) / SMALL_SCALE) if n is not None else 0.0


def day_count(n: Any) -> float:
    """A day count of the rules / 64 (at most 1; 0 when unknown)."""
    return min(1.0, int(n) / DAYS_SCALE) if n is not None else 0.0


@lru_cache(maxsize=1024)
def month_days(period: str) -> int:
    """The days of a ``YYYY-MM`` month."""
    return calendar.monthrange(int(period[:4]), int(period[5:7]))[1]


def valid_period(period: Any) -> bool:
    return isinstance(period, str) and len(period) == 7 and period[:4].isdigit() and period[5:].isdigit() and 1 <= int(period[5:]) <= 12


def _page(cursor: str | None) -> dict[str, Any]:
    """The paging argument of a list call: the next page's cursor, none for the first page."""
    return {"cursor": cursor} if cursor else {}


@dataclass(frozen=True)
class Plan:
    """The new schedule the portfolio rules give for the request (the conclusions tier's
    computation): the rows (period, due_date, amount) in order, the approval triggers that apply
    and the first of them in the rules' approval order with its role (``need``)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    need: tuple[str, str] | None = None
    applies: Mapping[str, bool] = field(default_factory=dict)


NO_PLAN = Plan()


class ScheduleDesk(Desk):
    """What every schedules tier reads, grounds and masks alike (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.reset({}, {})

    # -- episode state -------------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params") or {}
        self.request_id: str | None = params.get("request_id")
        self.policy_id: str | None = params.get("policy_id")
        self.allowed = frozenset(info.get("allowed_tools") or brief.get("allowed_tools") or ())
        self.today: str | None = params.get("today")   # the brief's date; wait moves the clock
        self.request: Mapping[str, Any] | None = None
        self.policy: Mapping[str, Any] | None = None
        self.versions: list[Mapping[str, Any]] = []          # get_policy's schedule versions, in version order
        self.version_status: dict[str, str] = {}             # their status, as our writes changed it
        self.version_slots: list[Mapping[str, Any]] = []     # the last VERSION_SLOTS versions that are not drafts
        self.active_version: Mapping[str, Any] | None = None  # the one listed active (the change replaces it)
        self.rules: Mapping[str, Any] | None = None
        self.mandate: Mapping[str, Any] | None = None        # get_instruction's answer
        self.mandate_day: int | None = None                  # the mandate's collection day as last observed
        # the complete instalment listing (once its last page is read) and what it gives
        self.instalments: list[Mapping[str, Any]] | None = None
        self.listed_status: dict[str, str] = {}              # status as listed
        self.status: dict[str, str] = {}                     # status as our writes changed it
        self.listed_due: list[Mapping[str, Any]] = []        # listed due, in due-date order
        self.due_total: int | None = None                    # their total D
        self._month_due: dict[str, int | None] = {}          # period -> amount of the one listed due row (None: several)
        self._month_any: dict[str, int | None] = {}          # period -> amount of the one listed due/paid row
        self.slot_rows: list[Mapping[str, Any]] = []         # listed due or paid rows, by due date (instalment slots)
        self.reminders: list[Mapping[str, Any]] | None = None  # listed scheduled reminders, once the last page is read
        self.cancelled_reminders: set[str] = set()
        # pages of the two paginated lists read so far, and the cursor of the next page
        self._instalment_pages: list[Mapping[str, Any]] = []
        self._instalment_cursor: str | None = None
        self._reminder_pages: list[Mapping[str, Any]] = []
        self._reminder_cursor: str | None = None
        self.draft_id: str | None = None       # the last created draft, while not committed
        self.declared: int | None = None       # the count the last create_draft[n] declared
        self.draft_rows: list[Mapping[str, Any]] = []  # ok add_instalment results of the last draft
        self.approvals: dict[str, str] = {}    # role -> status of our request (pending / granted / declined)
        self.grants = 0                        # grants seen in wait results
        self.refused_at: int | None = None     # grants count when commit answered approval_required
        self.commit_failed = False             # a precondition error on the open draft as it stands
        self.new_rows: list[Mapping[str, Any]] = []  # the ok commit's instalments (seq order)
        self.new_version: int | None = None
        self.superseded = False
        self.due_cancelled = False
        self.reminder_created: Mapping[str, Any] | None = None
        self.mandate_updated = False
        self._settled: dict[str, Any] = {}  # the values of :func:`settles`

    # -- reading results -------------------------------------------------------------------------
    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = call["tool"]
        ok = result.get("status") == "ok" and isinstance(result.get("result"), dict)
        if tool == "commit_schedule" and result.get("status") != "ok":
            if result.get("code") == "approval_required":
                self.refused_at = self.grants
            elif result.get("code") != "invalid_args":
                self.commit_failed = True  # the draft as it stands breaks a rule of the book
        if not ok:
            return
        body: Mapping[str, Any] = result["result"]
        if tool in SETTLING_TOOLS:
            self._settled.clear()
        if tool == "get_request":
            self.request = body
        elif tool == "get_policy":
            self.policy = body.get("policy")
            self._take_versions(list(body.get("schedules") or []))
        elif tool == "get_rules":
            self.rules = rules_from_document(body)
        elif tool == "list_instalments":
            self._instalment_pages.extend(body.get("instalments") or [])
            self._instalment_cursor = body.get("next_cursor")
            if not self._instalment_cursor:
                self._take_listing(list(self._instalment_pages))
        elif tool == "get_instruction":
            self.mandate = body
            self.mandate_day = body.get("collection_day")
        elif tool == "list_reminders":
            self._reminder_pages.extend(body.get("reminders") or [])
            self._reminder_cursor = body.get("next_cursor")
            if not self._reminder_cursor:
                self.reminders = list(self._reminder_pages)
        elif tool == "create_draft_schedule":
            self.draft_id = body.get("id")
            self.refused_at = None
            self.commit_failed = False
            if "[" in action:  # create_draft[n] declares the count its add actions divide by
                self.declared = int(action[action.index("[") + 1:action.index("]")])
            self.draft_rows = []
        elif tool == "add_instalment":
            self.commit_failed = False
            self.draft_rows.append(body)
        elif tool == "request_approval":
            self.approvals[str(body.get("role"))] = str(body.get("status", "pending"))
        elif tool == "wait":
            self.today = body.get("today", self.today)
            for row in body.get("decided") or []:
                role = row.get("role")
                if role in self.approvals and row.get("policy_id") == self.policy_id:
                    self.approvals[role] = str(row.get("status"))
                    if row.get("status") == "granted":
                        self.grants += 1
        elif tool == "commit_schedule":
            self.draft_id = None
            self.refused_at = None
            self.new_rows = list(body.get("instalments") or [])
            self.new_version = len(self.versions) + 1
        elif tool == "supersede_schedule":
            self.superseded = True
            self.version_status[str(body.get("id"))] = str(body.get("status"))
        elif tool == "cancel_instalments":
            self.due_cancelled = True
            for iid in body.get("cancelled") or []:
                self.status[iid] = "cancelled"
        elif tool == "cancel_reminder":
            self.cancelled_reminders.add(call["args"]["reminder_id"])
        elif tool == "create_reminder":
            self.reminder_created = body
        elif tool == "update_instruction":
            self.mandate_updated = True
            self.mandate_day = body.get("collection_day", self.mandate_day)

    def _take_versions(self, rows: list[Mapping[str, Any]]) -> None:
        self.versions = sorted((s for s in rows if isinstance(s, Mapping) and "id" in s), key=lambda s: (s.get("version", 0), s["id"]))
        self.version_status = {s["id"]: str(s.get("status")) for s in self.versions}
        # an abandoned draft is never the version a change replaces
        self.version_slots = [s for s in self.versions if s.get("status") != "draft"][-VERSION_SLOTS:]
        self.active_version = next((s for s in self.versions if s.get("status") == "active"), None)

    def _take_listing(self, rows: list[Mapping[str, Any]]) -> None:
        """The complete instalment listing and what it gives (statuses, due rows and total, months)."""
        self.instalments = rows
        self.listed_status = {r["id"]: str(r.get("status")) for r in rows}
        self.status = dict(self.listed_status)
        self.listed_due = sorted((r for r in rows if r.get("status") == "due"), key=lambda r: (r["due_date"], r["id"]))
        self.due_total = sum(int(r["amount"]) for r in self.listed_due)
        # the month tables are not cleared: a month listed again (a read repeated) counts as several
        for table, statuses in ((self._month_due, ("due",)), (self._month_any, ("due", "paid"))):
            for r in rows:
                if r.get("status") in statuses:
                    period = str(r.get("period"))
                    table[period] = None if period in table else int(r["amount"])
        self.slot_rows = sorted((r for r in rows if r.get("status") in ("due", "paid")),
                                key=lambda r: (str(r.get("due_date")), r["id"]))[:INSTALMENT_SLOTS]

    # -- what the reads give ---------------------------------------------------------------------
    def allows(self, tool: str) -> bool:
        """``tool`` is in the task's ``allowed_tools`` (every tool when the brief names none)."""
        return not self.allowed or tool in self.allowed

    @settles
    def read_known(self) -> tuple[bool, ...]:
        """Whether each read's answer is known, in :data:`READS` order."""
        return (self.request is not None, self.policy is not None, self.rules is not None,
                self.instalments is not None, self.mandate is not None, self.reminders is not None)

    def facts_read(self) -> bool:
        """Request, policy, rules, instalments and mandate are read: the plan is computable."""
        return None not in (self.request, self.policy, self.rules, self.instalments, self.mandate)

    def active(self) -> Mapping[str, Any] | None:
        """The version get_policy listed as active: the one the change replaces."""
        return self.active_version

    def can_draft(self) -> bool:
        """A draft of the next version can be formed: the request, the policy and its active version are known."""
        return self.request is not None and self.policy is not None and self.active_version is not None

    def rule(self, key: str, default: Any = None) -> Any:
        return (self.rules or {}).get(key, default)

    def role(self, trigger: str) -> str | None:
        """The role the rules name for ``trigger``."""
        return (self.rules or {}).get(f"approval_role_{trigger}")

    def pending(self) -> bool:
        """One of our approval requests is pending."""
        return any(s == "pending" for s in self.approvals.values())

    def commit_refused(self) -> bool:
        """commit_schedule answered approval_required and no grant was seen since."""
        return self.refused_at is not None and self.grants <= self.refused_at

    def rows_in_draft(self) -> int:
        """Rows added to the open draft (0 without one)."""
        return len(self.draft_rows) if self.draft_id is not None else 0

    def new_first(self) -> Mapping[str, Any] | None:
        """The committed version's first instalment."""
        return self.new_rows[0] if self.new_rows else None

    @settles
    def remaining_reminders(self) -> list[str]:
        """The listed scheduled reminders not cancelled yet."""
        return [r["id"] for r in self.reminders or () if r["id"] not in self.cancelled_reminders]

    @settles
    def paid_rows(self) -> list[Mapping[str, Any]]:
        """Listed instalments whose listed status is paid."""
        return [r for r in self.instalments or () if self.listed_status.get(r["id"]) == "paid"]

    def same_month_amount(self, period: str, due_only: bool) -> int | None:
        """The amount of the one listed (due, or ``due_only=False``: due or paid) instalment of ``period``."""
        return (self._month_due if due_only else self._month_any).get(period)

    @settles
    def prior_due_listed(self) -> list[Mapping[str, Any]]:
        """The active version's instalments listed as due, by due date: what the change replaces."""
        active = self.active()
        if active is None or self.instalments is None:
            return []
        rows = [r for r in self.instalments if r.get("schedule_id") == active["id"] and r.get("status") == "due"]
        return sorted(rows, key=lambda r: (r["due_date"], r["id"]))

    def prior_due_now(self) -> list[Mapping[str, Any]]:
        """The active version's instalments still due after our cancellations, by due date."""
        def compute() -> list[Mapping[str, Any]]:
            active = self.active()
            if active is None or self.instalments is None:
                return []
            rows = [r for r in self.instalments if r.get("schedule_id") == active["id"] and self.status.get(r["id"]) == "due"]
            return sorted(rows, key=lambda r: (r["due_date"], r["id"]))
        return self.memo("prior_due_now", compute)

    @settles
    def outstanding(self) -> int | None:
        """The annual premium minus every paid instalment (any version)."""
        if self.policy is None or self.instalments is None:
            return None
        return int(self.policy["annual_premium"]) - sum(int(r["amount"]) for r in self.instalments if r.get("status") == "paid")

    @settles
    def policy_year_end(self) -> str | None:
        """The policy year's last month (term_start + 11)."""
        term = (self.policy or {}).get("term_start")
        return add_months(str(term)[:7], 11) if term else None

    def new_day(self) -> int | None:
        """The request's new collection day."""
        day = (self.request or {}).get("new_collection_day")
        return int(day) if day is not None else None

    # -- the conclusions tier's computation --------------------------------------------------------
    @settles
    def plan(self) -> Plan:
        """The new schedule under the rules, once the plan's facts are read (:data:`NO_PLAN` before)."""
        if not self.facts_read():
            return NO_PLAN
        req, rules, policy, mandate = self.request, self.rules, self.policy, self.mandate
        assert req is not None and rules is not None and policy is not None and mandate is not None
        try:
            if req["kind"] == "collection_day":
                day = int(req["new_collection_day"])
                rows = [{"period": r["period"], "due_date": due_date(r["period"], day, rules["month_end"]), "amount": int(r["amount"])}
                        for r in self.prior_due_listed()]
            else:
                outstanding = self.outstanding()
                assert outstanding is not None
                day = int(mandate["collection_day"])
                periods = new_periods(req["kind"], req["start_period"], last_period_of(policy["term_start"]), req.get("parts"))
                periods = periods[: parts_meeting_minimum(outstanding, len(periods), int(rules["minimum_instalment_cents"]))]
                amounts = split_amounts(outstanding, len(periods), rules["rounding"])
                rows = [{"period": p, "due_date": due_date(p, day, rules["month_end"]), "amount": a} for p, a in zip(periods, amounts)]
            if not rows:
                return NO_PLAN
            first, received = rows[0]["due_date"], req["received_on"]
            prior = self.prior_due_listed()
            replaced = prior[0]["due_date"] if prior else None
            return Plan(rows, approval_needed(rules, len(rows), first, received, replaced),
                        applying_triggers(rules, len(rows), first, received, replaced))
        except (KeyError, TypeError, ValueError):
            return NO_PLAN

    def needed_status(self) -> str | None:
        """The status of our request to the role of the first applying trigger."""
        need = self.plan().need
        return self.approvals.get(need[1]) if need else None

    def next_planned_row(self) -> dict[str, Any] | None:
        """The planned row the open draft holds next (``None``: no draft, or it holds them all)."""
        rows = self.plan().rows
        added = len(self.draft_rows)
        if self.draft_id is None or not rows or added >= len(rows):
            return None
        return rows[added]

    def first_due(self) -> str | None:
        """The new first instalment's due date: committed, else planned."""
        first = self.new_first()
        if first is not None:
            return first.get("due_date")
        rows = self.plan().rows
        return rows[0]["due_date"] if rows else None

    def send_on(self) -> str | None:
        """The reminder date the rules give (``None``: late and the rules say skip)."""
        first = self.first_due()
        if first is None or self.rules is None or self.today is None:
            return None
        return reminder_send_on(self.rules, first, self.today)

    def reminder_late(self) -> bool:
        """The new first due date - reminder_lead_days is before today."""
        first = self.first_due()
        if first is None or self.rules is None or self.today is None:
            return False
        return days_between(self.today, first) < int(self.rules["reminder_lead_days"])

    def catch_up_reminder_date(self) -> str | None:
        """What create_reminder sends: due - lead days, or today when that is past (whatever the late rule)."""
        first = self.first_due()
        if first is None or self.rules is None or self.today is None:
            return None
        send = parse_date(first) - timedelta(days=int(self.rules["reminder_lead_days"]))
        return max(send, parse_date(self.today)).isoformat()

    def mandate_change(self) -> bool:
        """A collection-day change to a day other than the mandate's (as read)."""
        day = self.new_day()
        return (self.request is not None and self.request.get("kind") == "collection_day" and self.mandate is not None
                and day is not None and day != int(self.mandate.get("collection_day", 0)))

    # -- the facts tier's next row -----------------------------------------------------------------
    def next_period(self) -> str | None:
        """The request's next month: start_period + i * step (3 for to_quarterly, else 1), or the
        i-th still-due listed instalment's month for a collection-day change (i: rows in the draft)."""
        def compute() -> str | None:
            if self.request is None:
                return None
            i = self.rows_in_draft()
            if self.request.get("kind") == "collection_day":
                due = self.listed_due if self.instalments is not None else []
                return due[i]["period"] if i < len(due) else None
            start = self.request.get("start_period")
            if not valid_period(start):
                return None
            return add_months(start, i * (3 if self.request.get("kind") == "to_quarterly" else 1))
        return self.memo("next_period", compute)

    def collection_day(self) -> int | None:
        """The request's new collection day, else the mandate's as last observed."""
        day = (self.request or {}).get("new_collection_day")
        if day is None:
            day = self.mandate_day
        return int(day) if day is not None else None

    def postpones(self) -> bool:
        """The open draft's earliest due date is after the earliest listed due instalment's."""
        due = self.listed_due
        if self.draft_id is None or not self.draft_rows or not due:
            return False
        return min(str(r["due_date"]) for r in self.draft_rows) > str(due[0]["due_date"])

    def share(self, share: str) -> int | None:
        """``even``: floor(D / n); ``even_plus_one``: + 1; ``even_plus_remainder``: + D mod n."""
        total = self.due_total
        if total is None or not self.declared:
            return None
        base, rest = divmod(total, self.declared)
        return {"even": base, "even_plus_one": base + 1, "even_plus_remainder": base + rest}[share]

    # -- the raw tier's months -----------------------------------------------------------------------
    def source_period(self, src: str) -> str | None:
        """``start``: the request's start_period (or, when it names none, the first due slot's
        month); ``next1`` / ``next3``: one or three months after the last row added."""
        if src == "start":
            start = (self.request or {}).get("start_period")
            if start is None and self.request is not None and self.instalments is not None:
                due = [r for r in self.slot_rows if self.listed_status.get(r["id"]) == "due"]
                start = due[0]["period"] if due else None
            return start if valid_period(start) else None
        if not self.draft_rows or self.draft_id is None:
            return None
        last = self.draft_rows[-1].get("period")
        return add_months(last, 1 if src == "next1" else 3) if valid_period(last) else None

    def reminder_slots(self) -> list[Mapping[str, Any]]:
        return list(self.reminders or ())[:REMINDER_SLOTS]

    # -- grounding -------------------------------------------------------------------------------------
    def read_args(self, name: str) -> dict[str, Any] | None:
        """The arguments of a read (``None``: not formable yet)."""
        if name == "get_request":
            return {"request_id": self.request_id} if self.request_id else None
        if name == "get_policy":
            return {"policy_id": self.policy_id} if self.policy_id else None
        if name == "get_rules":
            return {}
        if name == "list_instalments":
            return {"policy_id": self.policy_id, **_page(self._instalment_cursor)} if self.policy_id else None
        if name == "get_instruction":
            return {"instruction_id": self.policy["instruction_id"]} if self.policy else None
        if name == "list_reminders":
            return {"policy_id": self.policy_id, "status": "scheduled", **_page(self._reminder_cursor)} if self.policy_id else None
        raise KeyError(name)  # pragma: no cover

    def draft_args(self, frequency: str | None) -> dict[str, Any] | None:
        """A draft of the next version (``frequency``: the request kind's when ``None``)."""
        active = self.active_version
        if self.request is None or self.policy is None or active is None:
            return None
        kind = self.request.get("kind")
        return {"policy_id": self.policy["id"], "frequency": frequency or FREQUENCY.get(str(kind), active["frequency"]),
                "change_type": kind}

    def row_formable(self, period: str | None, day: int | None, cents: int | None) -> bool:
        """A row of ``period`` on ``day`` for ``cents`` can be added to the open draft: a valid
        month and day, 1 .. 10^8 cents (what the tool takes), fewer than 24 rows."""
        return (self.draft_id is not None and len(self.draft_rows) < 24 and valid_period(period) and day is not None
                and 1 <= day <= 31 and cents is not None and 1 <= cents <= 100_000_000)

    def row_args(self, period: str | None, day: int | None, end: str, cents: int | None) -> dict[str, Any] | None:
        """``add_instalment`` arguments for a row of ``period`` on ``day`` (``end``: a day past the
        month's end is clamped or rolled), or ``None`` if they cannot be formed."""
        if not self.row_formable(period, day, cents):
            return None
        assert period is not None and day is not None
        return {"schedule_id": self.draft_id, "due_date": due_date(period, day, ENDS[end]), "amount": cents, "period": period}

    def approval_args(self, role: str | None, reason: str) -> dict[str, Any] | None:
        if role is None or not self.policy_id:
            return None
        args: dict[str, Any] = {"policy_id": self.policy_id, "role": role, "reason": reason}
        if self.draft_id is not None:
            args["schedule_id"] = self.draft_id
        return args

    def asked(self, role: str | None) -> bool:
        """Our request to ``role`` is pending or granted (a second one is refused)."""
        return self.approvals.get(role or "") in ("pending", "granted")

    def commit_legal(self) -> bool:
        """A draft with rows, not refused since its last change, not refused for approval with no grant since."""
        return (self.draft_id is not None and bool(self.draft_rows) and not self.commit_failed
                and (self.refused_at is None or self.grants > self.refused_at))

    def reminder_date(self, when: str) -> str | None:
        """``lead``: the new first instalment's due date - reminder_lead_days; ``today``: today."""
        first = self.new_first()
        if first is None or self.rules is None or self.today is None:
            return None
        if when == "today":
            return self.today
        return (parse_date(first["due_date"]) - timedelta(days=int(self.rules["reminder_lead_days"]))).isoformat()

    def reminder_legal(self, when: str) -> bool:
        """Formable, none created yet, and the send date between today and the due date (else the tool rejects it)."""
        send_on, first = self.reminder_date(when), self.new_first()
        if send_on is None or first is None or self.reminder_created is not None or self.today is None:
            return False
        return self.today <= send_on <= first["due_date"]

    def mandate_args(self) -> dict[str, Any] | None:
        """The mandate's collection day set to the request's new one."""
        mandate_id, day = (self.mandate or {}).get("id"), self.new_day()
        if mandate_id is None or day is None:
            return None
        return {"instruction_id": mandate_id, "collection_day": day}


__all__ = ["COUNTS", "ENDS", "FREQUENCY", "KINDS", "READS", "TRIGGERS", "Plan", "ScheduleDesk"]
