"""The ``facts`` and ``raw`` feature tiers of the schedules catalog (issue 14).

The ``conclusions`` tier (:class:`~backoffice.training.catalog.schedules.SchedulesCatalog`)
computes the new schedule for the agent: ``add_next_instalment`` grounds the planned row (month,
due date under the month-end rule, amount under the rounding and minimum rules), and features say
which approval trigger applies first, whether a reminder is needed, when the work is complete.
The two tiers here keep the same episode (read, draft, add the instalments, approve, commit,
supersede, cancel, fix the reminders and the mandate, submit) but leave those conclusions to the
agent.

How an amount is grounded (both tiers). A new instalment's amount is not a value any tool
returns, and ``Discrete(K)`` cannot name an integer of cents, so the agent **declares** the count
``n`` when it drafts (``create_draft[n]``: one ``create_draft_schedule`` call; ``n`` is the
divisor the later add actions use) and picks a **share** per row: ``floor(D / n)``,
``floor(D / n) + 1`` or ``floor(D / n) + (D mod n)``, with ``D`` the total of the listed
instalments still due (what the tool's own ``get_schedule`` reports as the active version's due
amount, which is the outstanding premium), or the amount of the listed instalment of the same
month. That is the only arithmetic the catalog does for an argument; the count (period rules,
minimum instalment) and which row takes which share (rounding rule) are the agent's.

``facts`` (``Discrete(38)``): observed facts and plain comparisons only. No plan, no "needed",
"due" or "complete" flags, no first applying trigger. Actions ground a call but do not pick the
right candidate: ``create_draft[n]`` for every ``n``, ``add_instalment[share,end]`` (the month is
the request's next month: the start period stepped by the request's frequency, or the next
still-due instalment's month for a collection-day change; the day is the request's collection day
or the mandate's; ``end`` says where a day past the month's end goes: ``clamp`` to the month's last
day or ``roll`` to the 1st of the next month), ``request_approval[t]`` per trigger (the role the
rules name for ``t``), ``create_reminder[lead]`` / ``create_reminder[today]``, and the grounded
``supersede_prior``, ``cancel_prior_due``, ``cancel_old_reminder``, ``update_mandate`` of the
conclusions tier.

``raw`` (``Discrete(68)``): per-slot observed values only (exactly decodable: amounts / 2^19,
dates as days since 2024-01-01 / 2048, months since 2024-01 / 128, small counts / 32, the rules'
day counts / 64), one-hot categories and "same entity" equalities (an instalment belongs to
version slot ``v``: the last two listed versions that are not drafts). Primitive
actions: ``create_draft[n]``, ``add_instalment[src,end,share]`` (``src``: the request's start
month, or one or three months after the last row added; the day is the mandate's collection day
as last observed, so a collection-day change updates the mandate first), ``cancel_instalment[i]``
per listed slot, ``supersede[v]`` per version slot, ``request_approval[role]`` per role,
``cancel_reminder[j]`` per listed reminder, ``create_reminder[lead|today]``. The outstanding, the
count, the shares, the month-end handling, the approval trigger and its role, which rows to cancel
and whether the reminder is late are all computed by the agent from the slot values.

Both tiers keep the catalog rules: features come from the brief and tool results only; the mask
says only what cannot be formed, repeats a known read, or is certain to be rejected (see
:meth:`_Observed.mask`); one action is one native call; ``submit`` is always valid.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Mapping
from datetime import date, timedelta
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from backoffice.envs.schedules.tables import (
    LATE_REMINDER_RULES,
    MONTH_END_RULES,
    ROLES,
    ROUNDING_RULES,
    add_months,
    due_date,
    months_between,
    parse_date,
)
from backoffice.training.catalog.base import ActionDef, CatalogAgent, FeatureDef, FeatureReader
from backoffice.training.catalog.schedules import FREQUENCY, KINDS, READS, TRIGGERS, ScheduleDesk, SchedulesCatalog

#: counts a draft can be declared with (every released plan has 1-12 instalments)
COUNTS = tuple(range(1, 13))
#: where a day past the month's end goes: the month's last day, or the 1st of the next month
ENDS = {"clamp": "last_day_of_month", "roll": "first_day_of_next_month"}
#: the frequencies of an existing version (one-hot)
PRIOR_FREQUENCIES = ("annual", "quarterly", "monthly")
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

_READ_DEFS = SchedulesCatalog.actions[:6]
_BY_NAME = {a.name: a for a in SchedulesCatalog.actions}


@lru_cache(maxsize=4096)
def _days(text: str | None) -> float:
    """A date as days since 2024-01-01 / 2048 (0 when unknown)."""
    if not text:
        return 0.0
    return (parse_date(text) - EPOCH).days / DATE_SCALE


@lru_cache(maxsize=1024)
def _month(period: str | None) -> float:
    """A ``YYYY-MM`` month as months since 2024-01 / 128 (0 when unknown)."""
    if not period:
        return 0.0
    return (int(period[:4]) * 12 + int(period[5:7]) - 1 - EPOCH_MONTH) / MONTH_SCALE


def _amount(cents: Any) -> float:
    return min(1.0, int(cents) / AMOUNT_SCALE) if cents is not None else 0.0


def _small(n: Any) -> float:
    return min(1.0, int(n) / SMALL_SCALE) if n is not None else 0.0


def _days_count(n: Any) -> float:
    return min(1.0, int(n) / DAYS_SCALE) if n is not None else 0.0


def _month_days(period: str) -> int:
    return calendar.monthrange(int(period[:4]), int(period[5:7]))[1]


def _valid_period(period: Any) -> bool:
    return isinstance(period, str) and len(period) == 7 and period[:4].isdigit() and period[5:].isdigit() and 1 <= int(period[5:]) <= 12


#: tools whose ok result changes what the memoised feature blocks read
_MEMO_TOOLS = frozenset({*READS, "update_instruction", "wait"})


class _Observed(ScheduleDesk):
    """What both tiers read from the tool results beyond the shared desk, and the calls they
    share."""

    hyperparams = dict(SchedulesCatalog.hyperparams)

    def __init__(self) -> None:
        #: (family, parameter) of each action: ``add_instalment[even,clamp]`` -> ("add_instalment", "even,clamp")
        self._parsed = [(a.name.split("[", 1)[0], a.name[a.name.find("[") + 1:-1] if "[" in a.name else "") for a in self.actions]
        super().__init__()

    # -- episode state ---------------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        # self.versions: in version order
        self.version_status: dict[str, str] = {}             # their status, as our writes changed it
        # what the complete listing gives (set once, when its last page is read)
        self._due_rows: list[Mapping[str, Any]] = []         # listed due, in due-date order
        self._due_sum: int | None = None                     # their total D
        self._month_due: dict[str, int | None] = {}          # period -> amount of the one listed due row (None: several)
        self._month_any: dict[str, int | None] = {}          # period -> amount of the one listed due/paid row
        self._slot_rows: list[Mapping[str, Any]] = []        # listed due or paid rows, by due date (raw slots)
        self.version_slots: list[Mapping[str, Any]] = []     # the raw tier's version slots
        self.listed_status: dict[str, str] = {}              # status as listed
        self.status: dict[str, str] = {}                     # status as our writes changed it
        self.mandate_day: int | None = None                  # the mandate's collection day as last observed
        self.mandate_id: str | None = None
        self.declared: int | None = None       # the count the last create_draft[n] declared
        self.draft_rows: list[Mapping[str, Any]] = []   # ok add_instalment results of the open draft
        self.new_rows: list[Mapping[str, Any]] = []     # the ok commit's instalments (seq order)
        self.new_version: int | None = None
        self.reminder_created: Mapping[str, Any] | None = None
        #: feature blocks that change only with a read (or the mandate / the clock): cleared by them
        self._memo: dict[str, Any] = {}

    # -- what the reads give -----------------------------------------------------------------------
    def _mandate_read(self) -> bool:
        return self.mandate_id is not None

    def _take_versions(self, rows: list[Mapping[str, Any]]) -> None:
        self.versions = sorted((s for s in rows if isinstance(s, Mapping) and "id" in s), key=lambda s: (s.get("version", 0), s["id"]))
        self.version_status = {s["id"]: str(s.get("status")) for s in self.versions}
        #: the raw tier's version slots: the last VERSION_SLOTS listed versions that are not drafts
        #: (an abandoned draft is never the version a change replaces)
        self.version_slots = [s for s in self.versions if s.get("status") != "draft"][-VERSION_SLOTS:]

    def _take_listing(self, rows: list[Mapping[str, Any]]) -> None:
        """The complete instalment listing and what it gives (statuses, due rows and total, months)."""
        self.instalments = rows
        self.listed_status = {r["id"]: str(r.get("status")) for r in rows}
        self.status = dict(self.listed_status)
        self._due_rows = sorted((r for r in rows if r.get("status") == "due"), key=lambda r: (r["due_date"], r["id"]))
        self._due_sum = sum(int(r["amount"]) for r in self._due_rows)
        for table, statuses in ((self._month_due, ("due",)), (self._month_any, ("due", "paid"))):
            for r in rows:
                if r.get("status") in statuses:
                    period = str(r.get("period"))
                    table[period] = None if period in table else int(r["amount"])
        self._slot_rows = sorted((r for r in rows if r.get("status") in ("due", "paid")),
                                 key=lambda r: (str(r.get("due_date")), r["id"]))[:INSTALMENT_SLOTS]

    def _listed_due(self) -> list[Mapping[str, Any]]:
        """Listed instalments whose listed status is due, in due-date order."""
        return self._due_rows

    def _due_total(self) -> int | None:
        """The total of the listed instalments still due (the tool's due amount of the active version)."""
        return self._due_sum

    def _same_month_amount(self, period: str, due_only: bool) -> int | None:
        """The amount of the one listed (not cancelled when listed) instalment of ``period``."""
        return (self._month_due if due_only else self._month_any).get(period)

    def _share(self, share: str) -> int | None:
        """``even``: floor(D / n); ``even_plus_one``: + 1; ``even_plus_remainder``: + D mod n."""
        total = self._due_total()
        if total is None or not self.declared:
            return None
        base, rest = divmod(total, self.declared)
        return {"even": base, "even_plus_one": base + 1, "even_plus_remainder": base + rest}[share]

    def _row_formable(self, period: str | None, day: int | None, amount: int | None) -> bool:
        """A row of ``period`` on ``day`` for ``amount`` cents can be added to the open draft:
        a valid month and day, 1 .. 10^8 cents (what the tool takes), fewer than 24 rows."""
        return (self.draft_id is not None and len(self.draft_rows) < 24 and _valid_period(period) and day is not None
                and 1 <= day <= 31 and amount is not None and 1 <= amount <= 100_000_000)

    def _row_args(self, period: str | None, day: int | None, end: str, amount: int | None) -> dict[str, Any] | None:
        """``add_instalment`` arguments for a row of ``period`` on ``day`` (``end``: a day past the
        month's end is clamped or rolled), or ``None`` if they cannot be formed."""
        if not self._row_formable(period, day, amount):
            return None
        assert period is not None and day is not None
        return {"schedule_id": self.draft_id, "due_date": due_date(period, day, ENDS[end]), "amount": amount, "period": period}

    def _first_new(self) -> Mapping[str, Any] | None:
        return self.new_rows[0] if self.new_rows else None

    def _reminder_date(self, when: str) -> str | None:
        """``lead``: the new first instalment's due date - reminder_lead_days; ``today``: today."""
        first = self._first_new()
        if first is None or self.rules is None or self.today is None:
            return None
        if when == "today":
            return self.today
        return (parse_date(first["due_date"]) - timedelta(days=int(self.rules["reminder_lead_days"]))).isoformat()

    def _reminder_call(self, when: str) -> dict[str, Any] | None:
        send_on = self._reminder_date(when)
        first = self._first_new()
        if send_on is None or first is None:
            return None
        return {"instalment_id": first["id"], "send_on": send_on}

    def _reminder_legal(self, when: str) -> bool:
        """Formable, none created yet, and the send date between today and the due date (else the tool rejects it)."""
        send_on, first = self._reminder_date(when), self._first_new()
        if send_on is None or first is None or self.reminder_created is not None or self.today is None:
            return False
        return self.today <= send_on <= first["due_date"]

    def _draft_call(self, frequency: str | None) -> dict[str, Any] | None:
        active = self._active()
        if self.request is None or self.policy is None or active is None:
            return None
        kind = self.request.get("kind")
        return {"policy_id": self.policy["id"], "frequency": frequency or FREQUENCY.get(str(kind), active["frequency"]),
                "change_type": kind}

    def _commit_legal(self) -> bool:
        """A draft with rows, not refused since its last change, not refused for approval with no grant since."""
        return (self.draft_id is not None and bool(self.draft_rows) and not self.commit_failed
                and (self.refused_at is None or self.grants > self.refused_at))

    def _mandate_call(self) -> dict[str, Any] | None:
        day = (self.request or {}).get("new_collection_day")
        if self.mandate_id is None or day is None:
            return None
        return {"instruction_id": self.mandate_id, "collection_day": int(day)}

    def _declare(self, action: int) -> None:
        name = self.actions[action].name
        self.declared = int(name[name.index("[") + 1:-1])

    # -- reading results ---------------------------------------------------------------------------
    def _observed(self, action: int, tool: str, body: Mapping[str, Any]) -> None:
        if tool in _MEMO_TOOLS:
            self._memo.clear()
        if tool == "get_instruction":
            self.mandate_id = body.get("id")
            self.mandate_day = body.get("collection_day")
        elif tool == "create_draft_schedule":
            self._declare(action)
            self.draft_rows = []
        elif tool == "add_instalment":
            self.draft_rows.append(body)
        elif tool == "commit_schedule":
            self.new_rows = list(body.get("instalments") or [])
            self.new_version = len(self.versions) + 1
        elif tool == "supersede_schedule":
            self.version_status[str(body.get("id"))] = str(body.get("status"))
        elif tool == "cancel_instalments":
            for iid in body.get("cancelled") or []:
                self.status[iid] = "cancelled"
        elif tool == "create_reminder":
            self.reminder_created = body
        elif tool == "update_instruction":
            self.mandate_day = body.get("collection_day", self.mandate_day)

    # -- mask ----------------------------------------------------------------------------------------
    def mask(self) -> np.ndarray:
        """Legality only: (a) the call can be formed from what was observed; (b) a read whose
        answer is known, or a write already applied (the mandate, a cancellation, the reminder),
        is not repeated; (c) no call the tool is certain to reject, visibly: a tool outside
        ``allowed_tools``, ``wait`` with none of our requests pending, a second request to a role
        whose request is pending or granted, committing an empty draft (or one refused and not
        changed or approved since), an instalment added to a full draft (24 rows), a reminder
        dated before today or after its due date. ``submit`` is left to the wrapper."""
        m = np.zeros(len(self.actions), dtype=bool)
        for i, ok in enumerate(self._legal()):
            m[i] = ok
        return self._only_allowed(m)

    def _legal(self) -> list[bool]:  # pragma: no cover - each tier implements it
        raise NotImplementedError

    def _common_legal(self) -> dict[str, bool]:
        """Legality of the actions both tiers share, by action name."""
        out = self._reads_legal()
        drafting = self._draft_call(None) is not None
        out.update({f"create_draft[{n}]": drafting for n in COUNTS})
        out.update({"wait": self._pending(), "commit_draft": self._commit_legal(), "submit": True,
                    "create_reminder[lead]": self._reminder_legal("lead"), "create_reminder[today]": self._reminder_legal("today"),
                    "update_mandate": self._mandate_call() is not None and not self.mandate_updated})
        return out

    def _common_call(self, name: str, draft_frequency: str | None) -> dict[str, Any] | None | bool:
        """Arguments of the actions both tiers share (``False``: not one of them)."""
        if name in READS:
            return self._read_args(name)
        if name.startswith("create_draft["):
            return self._draft_call(draft_frequency)
        if name in ("wait", "submit"):
            return {}
        if name == "commit_draft":
            return self._commit_args()
        if name.startswith("create_reminder["):
            return self._reminder_call(name[len("create_reminder["):-1])
        if name == "update_mandate":
            return self._mandate_call()
        return False

    def to_call(self, action: int) -> dict[str, Any] | None:
        args = self._args(self.actions[action].name)
        return None if args is None else {"tool": self.actions[action].tool, "args": args}

    def _args(self, name: str) -> dict[str, Any] | None:  # pragma: no cover - each tier implements it
        raise NotImplementedError

    # -- shared feature pieces ------------------------------------------------------------------------
    def _read_flags(self) -> list[float]:
        return [float(v) for v in self._read_known().values()]



class _Scheduler(FeatureReader):
    """The procedure both tiers' feature policies follow over (features, mask): the six reads;
    the tier's first step (:meth:`first_step`); one draft declaring :meth:`draft_count`
    instalments; the tier's next row (:meth:`row_action`) until the draft holds them; the first
    trigger of the rules' approval order that applies (:meth:`applies`): ask its role, wait for
    the decision; commit; then the tier's clean-up after the commit (:meth:`after_commit`);
    submit. A tier says how its features give each step."""

    #: the feature "the rules put trigger ``t`` at position ``p`` of the approval order"
    order_feature: ClassVar[str]

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        on, choose = self.on, self.choose
        for read in READS:
            if mask[self.act[read]]:
                return self.act[read]
        kind = next((k for k in KINDS if on(f"request_kind_{k}")), None)
        if kind is None:
            return self.finish
        self._read_kind(kind)
        step = self.first_step(kind)
        if step is not None:
            return step
        committed = on("new_version_active")
        if not any(on(f"taken[create_draft[{n}]]") for n in COUNTS):
            choice = choose(f"create_draft[{self.draft_count(kind)}]")
            return self.finish if choice is None else choice
        if on("draft_exists") and not committed:
            row = self.row_action(kind)
            if row is not None and (choice := choose(row)) is not None:
                return choice
            applies = self.applies(kind)
            first = next((t for p in (1, 2, 3) for t in TRIGGERS if on(self.order_feature.format(t=t, p=p)) and applies[t]), None)
            if first is not None:
                key = self.approver(first)
                if not on(f"approval[{key}]_granted"):
                    choice = choose("wait") if on(f"approval[{key}]_pending") else choose(f"request_approval[{key}]")
                    return self.finish if choice is None else choice
            choice = choose("commit_draft")
            if choice is not None:
                return choice
        if committed and (step := self.after_commit(kind)) is not None:
            return step
        return self.finish

    def _read_kind(self, kind: str) -> None:
        """Read what the hooks share, once the request's kind is known."""

    def first_step(self, kind: str) -> int | None:
        """An action due before the draft (``None``: none)."""
        return None

    def draft_count(self, kind: str) -> int:
        raise NotImplementedError

    def row_action(self, kind: str) -> str | None:
        """The add action of the draft's next row (``None``: the draft holds its declared rows)."""
        raise NotImplementedError

    def applies(self, kind: str) -> dict[str, bool]:
        """Whether each approval trigger applies to the draft."""
        raise NotImplementedError

    def approver(self, trigger: str) -> str:
        """What the approval features and ``request_approval[...]`` name for ``trigger``."""
        return trigger

    def after_commit(self, kind: str) -> int | None:
        raise NotImplementedError


def _read_features() -> tuple[FeatureDef, ...]:
    return (
        FeatureDef("request_read", "1 once get_request answered ok"),
        FeatureDef("policy_read", "1 once get_policy answered ok"),
        FeatureDef("rules_read", "1 once get_rules answered ok"),
        FeatureDef("instalments_listed", "1 once list_instalments answered ok with its last page"),
        FeatureDef("mandate_read", "1 once get_instruction answered ok"),
        FeatureDef("reminders_listed", "1 once list_reminders (policy, scheduled) answered ok with its last page"),
    )


def _reminder_actions() -> tuple[ActionDef, ...]:
    return (
        ActionDef("create_reminder[lead]", "create_reminder",
                  "remind of the new first instalment (the committed seq 1) on its due date - reminder_lead_days"),
        ActionDef("create_reminder[today]", "create_reminder", "remind of the new first instalment today"),
    )


def _draft_actions(frequency_doc: str) -> tuple[ActionDef, ...]:
    return tuple(
        ActionDef(f"create_draft[{n}]", "create_draft_schedule",
                  f"create the draft of the next version ({frequency_doc}, change_type = the request's kind), declaring "
                  f"{n} instalment{'s' if n > 1 else ''}: the add actions' shares split the due total by {n}")
        for n in COUNTS)


# =====================================================================================================
# facts
# =====================================================================================================
FACT_SHARES = ("even", "even_plus_one", "even_plus_remainder", "keep")
_SHARE_DOC = {
    "even": "floor(D / n)", "even_plus_one": "floor(D / n) + 1", "even_plus_remainder": "floor(D / n) + (D mod n)",
    "keep": "the amount of the listed still-due instalment of the same month",
    "same_month": "the amount of the listed (due or paid) instalment of the same month",
}


class SchedulesFactsCatalog(_Observed):
    """Schedules, ``facts`` tier: observed facts and comparisons; the plan is the agent's (see the module docstring)."""

    tier = "facts"
    max_steps = 40
    actions = (
        *_READ_DEFS,
        *_draft_actions("frequency from the request's kind, as the conclusions tier"),
        *(ActionDef(f"add_instalment[{share},{end}]", "add_instalment",
                    f"add the request's next month (its start period stepped by its frequency, or the next still-due "
                    f"instalment's month for a collection-day change) on the request's collection day or the mandate's "
                    f"({end}: a day past the month's end goes to {ENDS[end].replace('_', ' ')}); amount {_SHARE_DOC[share]}")
          for share in FACT_SHARES for end in ENDS),
        *(_BY_NAME[f"request_approval[{t}]"] for t in TRIGGERS),
        _BY_NAME["wait"],
        _BY_NAME["commit_draft"],
        _BY_NAME["supersede_prior"],
        _BY_NAME["cancel_prior_due"],
        _BY_NAME["cancel_old_reminder"],
        *_reminder_actions(),
        _BY_NAME["update_mandate"],
        _BY_NAME["submit"],
    )
    features = (
        *_read_features(),
        *(FeatureDef(f"request_kind_{k}", f"1 if the request's kind (get_request) is {k}") for k in KINDS),
        FeatureDef("request_parts", "the request's parts (split), / 12"),
        FeatureDef("request_pause_months", "the request's pause_months (deferral), / 12"),
        FeatureDef("request_names_collection_day", "1 if the request names a new_collection_day"),
        FeatureDef("request_day_differs_from_mandate", "1 if the request's new_collection_day differs from the mandate's day as observed"),
        FeatureDef("months_left_from_start", "months from the request's start_period to the policy year's last month (term_start + 11), "
                   "both included, / 12"),
        *(FeatureDef(f"prior_frequency_{f}", f"1 if the active version (get_policy) is {f}") for f in PRIOR_FREQUENCIES),
        FeatureDef("premium", "the policy's annual premium (get_policy), / 2^19 cents"),
        FeatureDef("paid_instalments", "listed instalments with status paid, / 12"),
        FeatureDef("paid_total", "their amounts' total, / 2^19 cents"),
        FeatureDef("due_instalments", "listed instalments with status due, / 12"),
        FeatureDef("due_total", "their amounts' total D, / 2^19 cents"),
        FeatureDef("minimum_instalment", "the rules' minimum_instalment_cents, / 2^16"),
        *(FeatureDef(f"share_meets_minimum[{k}]", f"1 if floor(due_total / {k}) >= minimum_instalment_cents") for k in COUNTS),
        *(FeatureDef(f"rounding_{r}", f"1 if the rules' rounding is {r}") for r in ROUNDING_RULES),
        *(FeatureDef(f"month_end_{m}", f"1 if the rules' month_end is {m}") for m in MONTH_END_RULES),
        *(FeatureDef(f"late_reminder_{x}", f"1 if the rules' late_reminder is {x}") for x in LATE_REMINDER_RULES),
        *(FeatureDef(f"approval_order[{t}]={p}", f"1 if {t} is trigger number {p} of the rules' approval_order")
          for t in TRIGGERS for p in (1, 2, 3)),
        FeatureDef("deferral_needs_approval", "1 if the rules' deferral_needs_approval is true and the open draft's earliest due "
                   "date is after the earliest listed due instalment's (the change postpones collection: the deferral "
                   "trigger's condition; 0 without a draft row)"),
        FeatureDef("max_instalments_without_approval", "the rules' max_instalments_without_approval, / 12"),
        FeatureDef("min_notice_days", "the rules' min_notice_days, / 64"),
        FeatureDef("reminder_lead_days", "the rules' reminder_lead_days, / 64"),
        FeatureDef("draft_exists", "1 while the last created draft (create_draft_schedule ok) is not committed"),
        FeatureDef("declared_count", "the n of the last create_draft[n] that answered ok, / 12"),
        FeatureDef("draft_instalments", "rows added to the open draft (add_instalment ok), / 12"),
        FeatureDef("declared_remainder", "due_total mod declared_count, / 12"),
        FeatureDef("next_row_is_first", "1 if the open draft holds no row"),
        FeatureDef("next_row_is_last_declared", "1 if the open draft holds declared_count - 1 rows"),
        FeatureDef("next_row_below_remainder", "1 if the open draft holds fewer rows than declared_remainder"),
        FeatureDef("next_row_in_last_remainder", "1 if the open draft holds at least declared_count - declared_remainder rows"),
        FeatureDef("next_row_day_overflows", "1 if the collection day of the add actions is past the end of the next row's month"),
        FeatureDef("next_row_month_has_due_instalment", "1 if a listed still-due instalment falls in the next row's month"),
        FeatureDef("next_row_after_policy_year", "1 if the next row's month is after the policy year's last month"),
        FeatureDef("draft_exceeds_max_without_approval", "1 if the open draft holds more rows than max_instalments_without_approval"),
        FeatureDef("draft_first_due_within_min_notice", "1 if the open draft's earliest due date is fewer than min_notice_days days "
                   "after the request's received_on"),
        *(f for t in TRIGGERS for f in (
            FeatureDef(f"approval[{t}]_pending", f"1 while our request to the role the rules name for {t} is pending"),
            FeatureDef(f"approval[{t}]_granted", f"1 once a wait result showed the role the rules name for {t} granted"))),
        FeatureDef("approval_pending_any", "1 while any of our approval requests is pending"),
        FeatureDef("commit_answered_approval_required", "1 if commit_schedule answered approval_required and no grant was seen since"),
        FeatureDef("new_version_active", "1 once commit_schedule answered ok"),
        FeatureDef("new_instalments", "instalments the ok commit made due, / 12"),
        FeatureDef("new_first_lead_date_before_today", "1 if the committed first due date - reminder_lead_days is before today"),
        FeatureDef("prior_version_superseded", "1 once supersede_schedule answered ok"),
        FeatureDef("prior_due_instalments_cancelled", "1 once cancel_instalments answered ok"),
        FeatureDef("listed_reminders_scheduled", "listed scheduled reminders not cancelled by us, / 3"),
        FeatureDef("reminder_created", "1 once create_reminder answered ok"),
        FeatureDef("mandate_day_updated", "1 once update_instruction answered ok"),
    )

    # -- the request's months --------------------------------------------------------------------
    def _next_period(self) -> str | None:
        """The request's next month: start_period + i * step (3 for to_quarterly, else 1), or the
        i-th still-due listed instalment's month for a collection-day change (i: rows in the draft)."""
        if self.request is None:
            return None
        i = len(self.draft_rows) if self.draft_id is not None else 0
        if self.request.get("kind") == "collection_day":
            due = self._listed_due() if self.instalments is not None else []
            return due[i]["period"] if i < len(due) else None
        start = self.request.get("start_period")
        if not _valid_period(start):
            return None
        return add_months(start, i * (3 if self.request.get("kind") == "to_quarterly" else 1))

    def _day(self) -> int | None:
        day = (self.request or {}).get("new_collection_day")
        if day is None:
            day = self.mandate_day
        return int(day) if day is not None else None

    def _row_amount(self, share: str, period: str | None) -> int | None:
        if share == "keep":
            return self._same_month_amount(period, due_only=True) if period else None
        return self._share(share)

    def _prior_due(self) -> list[Mapping[str, Any]]:
        active = self._active()
        if active is None or self.instalments is None:
            return []
        rows = [r for r in self.instalments if r.get("schedule_id") == active["id"] and self.status.get(r["id"]) == "due"]
        return sorted(rows, key=lambda r: (r["due_date"], r["id"]))

    # -- grounding -------------------------------------------------------------------------------------
    def _args(self, name: str) -> dict[str, Any] | None:
        common = self._common_call(name, None)
        if common is not False:
            return common  # type: ignore[return-value]
        if name.startswith("add_instalment["):
            share, end = name[len("add_instalment["):-1].split(",")
            period = self._next_period()
            return self._row_args(period, self._day(), end, self._row_amount(share, period))
        if name.startswith("request_approval["):
            return self._trigger_approval_args(name)
        if name in ("supersede_prior", "cancel_prior_due", "cancel_old_reminder"):
            return self._prior_args(name)
        return None  # pragma: no cover - every action is handled above

    def _legal(self) -> list[bool]:
        common = self._common_legal()
        period = self._next_period() if self.draft_id is not None else None
        day = self._day()
        adds = {share: period is not None and self._row_formable(period, day, self._row_amount(share, period)) for share in FACT_SHARES}
        out = []
        for a, (family, param) in zip(self.actions, self._parsed):
            if a.name in common:
                out.append(common[a.name])
            elif family == "add_instalment":
                out.append(adds[param.split(",")[0]])
            elif family == "request_approval":
                role = self._role(param)
                out.append(self._args(a.name) is not None and self.approvals.get(role or "") not in ("pending", "granted"))
            elif family == "supersede_prior":
                out.append(self._active() is not None and bool(self.new_rows) and not self.superseded)
            elif family == "cancel_prior_due":
                out.append(not self.due_cancelled and bool(self._prior_due()))
            else:  # cancel_old_reminder
                out.append(bool(self._remaining_reminders()))
        return out

    # -- features ------------------------------------------------------------------------------------------
    @property
    def _deferral_at(self) -> int:
        return next(i for i, f in enumerate(self.features) if f.name == "deferral_needs_approval")

    def _postpones(self) -> bool:
        """The open draft's earliest due date is after the earliest listed due instalment's."""
        due = self._listed_due()
        if self.draft_id is None or not self.draft_rows or not due:
            return False
        return min(str(r["due_date"]) for r in self.draft_rows) > str(due[0]["due_date"])

    def _static_features(self) -> list[float]:
        """The features that change only with a read: the request, policy, listing and rules
        (``deferral_needs_approval`` is set per step: it reads the draft too)."""
        req = self.request or {}
        kind = req.get("kind")
        rules = self.rules or {}
        paid = [r for r in self.instalments or () if self.listed_status.get(r["id"]) == "paid"]
        due_total = self._due_total()
        minimum = int(rules.get("minimum_instalment_cents", 0) or 0)
        active = self._active()
        months_left = None
        start, term = req.get("start_period"), (self.policy or {}).get("term_start")
        if _valid_period(start) and term:
            months_left = months_between(str(start), add_months(str(term)[:7], 11)) + 1
        order = list(rules.get("approval_order") or ())
        new_day = req.get("new_collection_day")
        return [
            *self._read_flags(),
            *(float(kind == k) for k in KINDS),
            _ratio(req.get("parts"), 12),
            _ratio(req.get("pause_months"), 12),
            float(new_day is not None),
            float(new_day is not None and self.mandate_day is not None and int(new_day) != int(self.mandate_day)),
            _ratio(months_left, 12),
            *(float(active is not None and active.get("frequency") == f) for f in PRIOR_FREQUENCIES),
            _amount((self.policy or {}).get("annual_premium")),
            _ratio(len(paid), 12),
            _amount(sum(int(r["amount"]) for r in paid)),
            _ratio(len(self._listed_due()), 12),
            _amount(due_total),
            min(1.0, minimum / MINIMUM_SCALE),
            *(float(due_total is not None and self.rules is not None and due_total // k >= minimum) for k in COUNTS),
            *(float(rules.get("rounding") == r) for r in ROUNDING_RULES),
            *(float(rules.get("month_end") == m) for m in MONTH_END_RULES),
            *(float(rules.get("late_reminder") == x) for x in LATE_REMINDER_RULES),
            *(float(t in order and order.index(t) == p - 1) for t in TRIGGERS for p in (1, 2, 3)),
            float(bool(rules.get("deferral_needs_approval"))),
            _ratio(rules.get("max_instalments_without_approval"), 12),
            _ratio(rules.get("min_notice_days"), DAYS_SCALE),
            _ratio(rules.get("reminder_lead_days"), DAYS_SCALE),
        ]

    def feature_vector(self) -> np.ndarray:
        static = self._memo.get("static")
        if static is None:
            static = self._memo["static"] = self._static_features()
        static = list(static)
        static[self._deferral_at] = float(self._postpones() and bool((self.rules or {}).get("deferral_needs_approval")))
        req = self.request or {}
        rules = self.rules or {}
        due_total = self._due_total()
        n = self.declared or 0
        draft_open = self.draft_id is not None
        rows = len(self.draft_rows) if draft_open else 0
        remainder = (due_total % n) if (due_total is not None and n) else 0
        term = (self.policy or {}).get("term_start")
        period = self._next_period()
        day = self._day()
        overflow = bool(period and day is not None and day > _month_days(period))
        year_end = add_months(str(term)[:7], 11) if term else None
        first_draft_due = min((r["due_date"] for r in self.draft_rows), default=None) if draft_open else None
        notice = None
        if first_draft_due and req.get("received_on"):
            notice = (parse_date(first_draft_due) - parse_date(req["received_on"])).days
        first_new = self._first_new()
        lead_before_today = False
        if first_new is not None and self.rules is not None and self.today is not None:
            lead_before_today = (parse_date(first_new["due_date"]) - timedelta(days=int(rules["reminder_lead_days"]))) < parse_date(self.today)
        values = [
            *static,
            float(draft_open),
            _ratio(n, 12),
            _ratio(rows, 12),
            _ratio(remainder, 12),
            float(draft_open and rows == 0),
            float(draft_open and n > 0 and rows == n - 1),
            float(draft_open and rows < remainder),
            float(draft_open and n > 0 and rows >= n - remainder),
            float(overflow),
            float(period is not None and self._same_month_amount(period, due_only=True) is not None),
            float(period is not None and year_end is not None and period > year_end),
            float(draft_open and self.rules is not None and rows > int(rules.get("max_instalments_without_approval", 99))),
            float(notice is not None and self.rules is not None and notice < int(rules.get("min_notice_days", 0))),
            *(v for t in TRIGGERS for v in (float(self.approvals.get(self._role(t) or "") == "pending"),
                                            float(self.approvals.get(self._role(t) or "") == "granted"))),
            float(self._pending()),
            float(self.refused_at is not None and self.grants <= self.refused_at),
            float(first_new is not None),
            _ratio(len(self.new_rows), 12),
            float(lead_before_today),
            float(self.superseded),
            float(self.due_cancelled),
            _ratio(len(self._remaining_reminders()), 3),
            float(self.reminder_created is not None),
            float(self.mandate_updated),
        ]
        return np.asarray(values, dtype=np.float32)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
        """The hand-written policy over (features, mask), reading facts and comparisons only:

        1. the six reads;
        2. the count: for a collection-day change the due instalments; else the request's months
           (``months_left_from_start``; every third for to_quarterly; ``request_parts`` for a
           split), cut to the largest ``k`` with ``share_meets_minimum[k]``: ``create_draft[n]``;
        3. ``add_instalment[share,end]`` until the draft holds ``n`` rows: ``keep`` for a
           collection-day change, else the rounding rule's share for this row (from
           ``next_row_is_first`` / ``_is_last_declared`` / ``_below_remainder`` /
           ``_in_last_remainder``); ``end`` from ``month_end``;
        4. the first trigger of ``approval_order`` that applies (deferral:
           ``deferral_needs_approval``; instalment_count: ``draft_exceeds_max_without_approval``;
           short_notice: ``draft_first_due_within_min_notice``): request it, wait, then commit;
        5. supersede, cancel the prior due instalments and the listed reminders, the reminder
           (``lead`` unless ``new_first_lead_date_before_today``; then ``today`` only under
           send_today), the mandate when the request's day differs; submit.
        """
        return _FactsScheduler(agent)


class _FactsScheduler(_Scheduler):
    """The procedure reading the facts tier's comparisons."""

    order_feature = "approval_order[{t}]={p}"

    def count(self, name: str, full: float = 12) -> int:
        return int(round(float(self.obs[self.idx[name]]) * full))

    def draft_count(self, kind: str) -> int:
        if kind == "collection_day":
            return max(1, self.count("due_instalments"))
        months = self.count("months_left_from_start")
        periods = {"to_quarterly": (months - 1) // 3 + 1, "split": self.count("request_parts")}.get(kind, months)
        return max([k for k in COUNTS if k <= periods and self.on(f"share_meets_minimum[{k}]")], default=1)

    def row_action(self, kind: str) -> str | None:
        on = self.on
        if self.count("draft_instalments") >= self.count("declared_count"):
            return None
        end = "clamp" if on("month_end_last_day_of_month") else "roll"
        if kind == "collection_day":
            share = "keep"
        elif on("rounding_remainder_to_first"):
            share = "even_plus_remainder" if on("next_row_is_first") else "even"
        elif on("rounding_remainder_to_last"):
            share = "even_plus_remainder" if on("next_row_is_last_declared") else "even"
        elif on("rounding_spread_from_first"):
            share = "even_plus_one" if on("next_row_below_remainder") else "even"
        else:
            share = "even_plus_one" if on("next_row_in_last_remainder") else "even"
        return f"add_instalment[{share},{end}]"

    def applies(self, kind: str) -> dict[str, bool]:
        return {
            "deferral": self.on("deferral_needs_approval"),
            "instalment_count": self.on("draft_exceeds_max_without_approval"),
            "short_notice": self.on("draft_first_due_within_min_notice"),
        }

    def after_commit(self, kind: str) -> int | None:
        on, mask, a = self.on, self.mask, self.act
        if not on("prior_version_superseded") and mask[a["supersede_prior"]]:
            return a["supersede_prior"]
        if not on("prior_due_instalments_cancelled") and mask[a["cancel_prior_due"]]:
            return a["cancel_prior_due"]
        if self.obs[self.idx["listed_reminders_scheduled"]] > 0 and mask[a["cancel_old_reminder"]]:
            return a["cancel_old_reminder"]
        if not on("reminder_created"):
            when = "today" if on("new_first_lead_date_before_today") else "lead"
            if (when == "lead" or on("late_reminder_send_today")) and mask[a[f"create_reminder[{when}]"]]:
                return a[f"create_reminder[{when}]"]
        if on("request_day_differs_from_mandate") and mask[a["update_mandate"]]:
            return a["update_mandate"]
        return None




def _ratio(value: Any, full: float) -> float:
    if value is None:
        return 0.0
    return float(max(-1.0, min(1.0, float(value) / full)))


# =====================================================================================================
# raw
# =====================================================================================================
#: instalment slots: the listed due or paid rows (not cancelled, not an abandoned draft's), by due
#: date (at most 12 in the release)
INSTALMENT_SLOTS = 12
VERSION_SLOTS = 2
REMINDER_SLOTS = 2
SOURCES = ("start", "next1", "next3")
RAW_SHARES = ("even", "even_plus_one", "even_plus_remainder", "same_month")
INSTALMENT_STATUSES = ("due", "paid", "cancelled")
VERSION_STATUSES = ("active", "superseded")
APPROVAL_STATUSES = ("pending", "granted", "declined")


class SchedulesRawCatalog(_Observed):
    """Schedules, ``raw`` tier: per-slot values and primitive actions (see the module docstring)."""

    tier = "raw"
    max_steps = 60
    #: the 2 envs this tier's runs were made on, with the rollout size of the other tiers (2 x 1024)
    hyperparams = {**_Observed.hyperparams, "n_envs": 2, "n_steps": 1024}
    actions = (
        *_READ_DEFS,
        *_draft_actions("frequency custom: the catalog claims none"),
        *(ActionDef(f"add_instalment[{src},{end},{share}]", "add_instalment",
                    f"add a row for {'the request start_period (or, when it names none, the month of the first due slot: slots go by due date)' if src == 'start' else ('the month after' if src == 'next1' else 'three months after') + ' the last row added'} "
                    f"on the mandate's collection day as last observed ({end}: a day past the month's end goes to "
                    f"{ENDS[end].replace('_', ' ')}); amount {_SHARE_DOC[share]}")
          for src in SOURCES for end in ENDS for share in RAW_SHARES),
        *(ActionDef(f"cancel_instalment[{i}]", "cancel_instalments", f"cancel instalment slot {i} (one id)") for i in range(INSTALMENT_SLOTS)),
        *(ActionDef(f"request_approval[{r}]", "request_approval", f"ask the role {r} to approve the change") for r in ROLES),
        _BY_NAME["wait"],
        _BY_NAME["commit_draft"],
        *(ActionDef(f"supersede[{v}]", "supersede_schedule", f"mark version slot {v} superseded (slots: the last {VERSION_SLOTS} versions get_policy lists that are not drafts, in its order)")
          for v in range(VERSION_SLOTS)),
        *(ActionDef(f"cancel_reminder[{j}]", "cancel_reminder", f"cancel listed reminder slot {j}") for j in range(REMINDER_SLOTS)),
        *_reminder_actions(),
        ActionDef("update_mandate", "update_instruction", "set the mandate's collection day to the request's new_collection_day"),
        _BY_NAME["submit"],
    )
    features = (
        *_read_features(),
        *(FeatureDef(f"request_kind_{k}", f"1 if the request's kind is {k}") for k in KINDS),
        FeatureDef("request_start_period", "the request's start_period, months since 2024-01 / 128"),
        FeatureDef("request_parts", "the request's parts, / 32"),
        FeatureDef("request_pause_months", "the request's pause_months, / 32"),
        FeatureDef("request_new_collection_day", "the request's new_collection_day, / 32"),
        FeatureDef("request_received_on", "the request's received_on, days since 2024-01-01 / 2048"),
        FeatureDef("policy_premium", "the annual premium, / 2^19 cents"),
        FeatureDef("policy_term_start", "the policy's term_start month, months since 2024-01 / 128"),
        *(f for v in range(VERSION_SLOTS) for f in (
            FeatureDef(f"version[{v}]_present", f"1 if get_policy listed a version slot {v}"),
            *(FeatureDef(f"version[{v}]_status_{s}", f"1 if version slot {v}'s status (as last observed) is {s}") for s in VERSION_STATUSES),
            *(FeatureDef(f"version[{v}]_frequency_{q}", f"1 if version slot {v}'s frequency is {q}") for q in PRIOR_FREQUENCIES))),
        FeatureDef("today", "today (the brief, wait), days since 2024-01-01 / 2048"),
        *(FeatureDef(f"rules_rounding_{r}", f"1 if the rules' rounding is {r}") for r in ROUNDING_RULES),
        *(FeatureDef(f"rules_month_end_{m}", f"1 if the rules' month_end is {m}") for m in MONTH_END_RULES),
        *(FeatureDef(f"rules_late_reminder_{x}", f"1 if the rules' late_reminder is {x}") for x in LATE_REMINDER_RULES),
        FeatureDef("rules_minimum_instalment", "minimum_instalment_cents, / 2^16"),
        FeatureDef("rules_reminder_lead_days", "reminder_lead_days, / 64"),
        FeatureDef("rules_max_instalments_without_approval", "max_instalments_without_approval, / 32"),
        FeatureDef("rules_min_notice_days", "min_notice_days, / 64"),
        FeatureDef("rules_deferral_needs_approval", "deferral_needs_approval"),
        *(FeatureDef(f"rules_order[{t}]={p}", f"1 if {t} is number {p} of approval_order") for t in TRIGGERS for p in (1, 2, 3)),
        *(FeatureDef(f"rules_role[{t}]={r}", f"1 if approval_role_{t} is {r}") for t in TRIGGERS for r in ROLES),
        *(f for i in range(INSTALMENT_SLOTS) for f in (
            FeatureDef(f"inst[{i}]_present", f"1 if instalment slot {i} holds a listed due or paid row"),
            *(FeatureDef(f"inst[{i}]_status_{s}", f"1 if slot {i}'s status (as last observed) is {s}") for s in INSTALMENT_STATUSES),
            FeatureDef(f"inst[{i}]_amount", f"slot {i}'s amount, / 2^19 cents"),
            FeatureDef(f"inst[{i}]_period", f"slot {i}'s period, months since 2024-01 / 128"),
            FeatureDef(f"inst[{i}]_due_date", f"slot {i}'s due date, days since 2024-01-01 / 2048"),
            *(FeatureDef(f"inst[{i}]_version[{v}]", f"1 if slot {i} belongs to version slot {v} (same schedule id)") for v in range(VERSION_SLOTS)))),
        FeatureDef("mandate_collection_day", "the mandate's collection day as last observed (get_instruction, update_instruction), / 32"),
        *(f for j in range(REMINDER_SLOTS) for f in (
            FeatureDef(f"rem[{j}]_present", f"1 if reminder slot {j} holds a listed scheduled reminder"),
            FeatureDef(f"rem[{j}]_cancelled", f"1 once cancel_reminder of slot {j} answered ok"),
            FeatureDef(f"rem[{j}]_due_date", f"slot {j}'s instalment due date, days since 2024-01-01 / 2048"),
            FeatureDef(f"rem[{j}]_amount", f"slot {j}'s amount, / 2^19 cents"))),
        FeatureDef("draft_exists", "1 while the last created draft is not committed"),
        FeatureDef("draft_declared_count", "the n of the last create_draft[n] that answered ok, / 32"),
        FeatureDef("draft_rows", "rows added to the open draft, / 32"),
        FeatureDef("draft_first_due_date", "the earliest due date among the open draft's rows, days since 2024-01-01 / 2048"),
        FeatureDef("draft_last_period", "the period of the last row added to the open draft, months since 2024-01 / 128"),
        *(f for r in ROLES for f in (
            FeatureDef(f"approval[{r}]_{s}", f"1 if our request to {r} is {s} (as last observed)") for s in APPROVAL_STATUSES)),
        FeatureDef("commit_answered_approval_required", "1 if commit_schedule answered approval_required and no grant was seen since"),
        FeatureDef("new_version_active", "1 once commit_schedule answered ok"),
        FeatureDef("new_rows", "rows the ok commit made due, / 32"),
        FeatureDef("new_first_due_date", "the committed seq-1 row's due date, days since 2024-01-01 / 2048"),
        FeatureDef("new_first_amount", "its amount, / 2^19 cents"),
        FeatureDef("new_reminder_created", "1 once create_reminder answered ok"),
        FeatureDef("new_reminder_send_on", "its send date, days since 2024-01-01 / 2048"),
    )

    # -- slots ------------------------------------------------------------------------------------------
    def _slots(self) -> list[Mapping[str, Any]]:
        return self._slot_rows

    def _reminder_slots(self) -> list[Mapping[str, Any]]:
        return list(self.reminders or ())[:REMINDER_SLOTS]

    def _source_period(self, src: str) -> str | None:
        if src == "start":
            start = (self.request or {}).get("start_period")
            if start is None and self.request is not None and self.instalments is not None:
                due = [r for r in self._slots() if self.listed_status.get(r["id"]) == "due"]
                start = due[0]["period"] if due else None
            return start if _valid_period(start) else None
        if not self.draft_rows or self.draft_id is None:
            return None
        last = self.draft_rows[-1].get("period")
        return add_months(last, 1 if src == "next1" else 3) if _valid_period(last) else None

    def _raw_amount(self, share: str, period: str | None) -> int | None:
        if share == "same_month":
            return self._same_month_amount(period, due_only=False) if period else None
        return self._share(share)

    # -- grounding -----------------------------------------------------------------------------------------
    def _args(self, name: str) -> dict[str, Any] | None:
        common = self._common_call(name, "custom")
        if common is not False:
            return common  # type: ignore[return-value]
        inner = name[name.find("[") + 1:-1] if "[" in name else ""
        if name.startswith("add_instalment["):
            src, end, share = inner.split(",")
            period = self._source_period(src)
            return self._row_args(period, self.mandate_day, end, self._raw_amount(share, period))
        if name.startswith("cancel_instalment["):
            slots = self._slots()
            i = int(inner)
            return {"instalment_ids": [slots[i]["id"]]} if i < len(slots) else None
        if name.startswith("request_approval["):
            role = inner if self.rules is not None and inner in {self._rule(f"approval_role_{t}") for t in TRIGGERS} else None
            return self._approval_args(role, "schedule change approval under the portfolio rules")
        if name.startswith("supersede["):
            v = int(inner)
            return {"schedule_id": self.version_slots[v]["id"]} if v < len(self.version_slots) else None
        if name.startswith("cancel_reminder["):
            slots = self._reminder_slots()
            j = int(inner)
            return {"reminder_id": slots[j]["id"]} if j < len(slots) else None
        return None  # pragma: no cover - every action is handled above

    def _legal(self) -> list[bool]:
        common = self._common_legal()
        slots = self._slots()
        rem_slots = self._reminder_slots()
        adds: dict[tuple[str, str], bool] = {}
        if self.draft_id is not None:
            shares = {share: self._share(share) for share in RAW_SHARES if share != "same_month"}
            for src in SOURCES:
                period = self._source_period(src)
                if period is not None:
                    shares["same_month"] = self._same_month_amount(period, due_only=False)
                for share in RAW_SHARES:
                    adds[src, share] = period is not None and self._row_formable(period, self.mandate_day, shares[share])
        named_roles = {self._rule(f"approval_role_{t}") for t in TRIGGERS} if self.rules is not None and self.policy_id else set()
        out = []
        for a, (family, inner) in zip(self.actions, self._parsed):
            if a.name in common:
                out.append(common[a.name])
                continue
            if family == "add_instalment":
                src, _, share = inner.split(",")
                out.append(adds.get((src, share), False))
            elif family == "cancel_instalment":
                i = int(inner)
                # due and paid rows can be cancelled (a paid one is refunded); a cancelled one is final
                out.append(i < len(slots) and self.status.get(slots[i]["id"]) in ("due", "paid"))
            elif family == "request_approval":
                out.append(inner in named_roles and self.approvals.get(inner) not in ("pending", "granted"))
            elif family == "supersede":
                v = int(inner)
                # the tool supersedes an active version only when a newer version is active
                out.append(v < len(self.version_slots) and self.version_status.get(self.version_slots[v]["id"]) == "active"
                           and self.new_version is not None)
            else:  # cancel_reminder[j]
                j = int(inner)
                out.append(j < len(rem_slots) and rem_slots[j]["id"] not in self.cancelled_reminders)
        return out

    # -- features --------------------------------------------------------------------------------------------
    def _head_features(self) -> list[float]:
        """Read flags, the request and the policy (they change only with a read)."""
        req = self.request or {}
        policy = self.policy or {}
        return [*self._read_flags(), *(float(req.get("kind") == k) for k in KINDS),
                _month(req.get("start_period")), _small(req.get("parts")), _small(req.get("pause_months")),
                _small(req.get("new_collection_day")), _days(req.get("received_on")),
                _amount(policy.get("annual_premium")), _month(str(policy.get("term_start") or "")[:7] or None)]

    def _rules_features(self) -> list[float]:
        """The rules document (it changes only with a read)."""
        rules = self.rules or {}
        order = list(rules.get("approval_order") or ())
        return [*(float(rules.get("rounding") == r) for r in ROUNDING_RULES),
                *(float(rules.get("month_end") == m) for m in MONTH_END_RULES),
                *(float(rules.get("late_reminder") == x) for x in LATE_REMINDER_RULES),
                min(1.0, int(rules.get("minimum_instalment_cents", 0) or 0) / MINIMUM_SCALE),
                _days_count(rules.get("reminder_lead_days")), _small(rules.get("max_instalments_without_approval")),
                _days_count(rules.get("min_notice_days")), float(bool(rules.get("deferral_needs_approval"))),
                *(float(t in order and order.index(t) == p - 1) for t in TRIGGERS for p in (1, 2, 3)),
                *(float(rules.get(f"approval_role_{t}") == r) for t in TRIGGERS for r in ROLES)]

    def _slot_values(self) -> list[tuple[str, list[float]]]:
        """Per instalment slot: its id and the values that change only with a read (amount,
        period, due date, version slot)."""
        version_ids = [s["id"] for s in self.version_slots]
        version_ids += [None] * (VERSION_SLOTS - len(version_ids))
        return [(row["id"], [_amount(row.get("amount")), _month(row.get("period")), _days(row.get("due_date")),
                             *(float(vid is not None and row.get("schedule_id") == vid) for vid in version_ids)])
                for row in self._slots()]

    def feature_vector(self) -> np.ndarray:
        memo = self._memo
        if "head" not in memo:
            memo["head"], memo["rules"], memo["slots"] = self._head_features(), self._rules_features(), self._slot_values()
        values: list[float] = list(memo["head"])
        for v in range(VERSION_SLOTS):
            s = self.version_slots[v] if v < len(self.version_slots) else None
            status = self.version_status.get(s["id"]) if s else None
            values += [float(s is not None), *(float(status == x) for x in VERSION_STATUSES),
                       *(float(s is not None and s.get("frequency") == q) for q in PRIOR_FREQUENCIES)]
        values.append(_days(self.today))
        values += memo["rules"]
        slots = memo["slots"]
        for i in range(INSTALMENT_SLOTS):
            if i >= len(slots):
                values += [0.0] * (1 + len(INSTALMENT_STATUSES) + 3 + VERSION_SLOTS)
                continue
            iid, static = slots[i]
            status = self.status.get(iid)
            values += [1.0, *(float(status == s) for s in INSTALMENT_STATUSES), *static]
        values.append(_small(self.mandate_day))
        rem_slots = self._reminder_slots()
        for j in range(REMINDER_SLOTS):
            rem = rem_slots[j] if j < len(rem_slots) else None
            if rem is None:
                values += [0.0] * 4
            else:
                values += [1.0, float(rem["id"] in self.cancelled_reminders), _days(rem.get("due_date")), _amount(rem.get("amount"))]
        draft_open = self.draft_id is not None
        rows = self.draft_rows if draft_open else []
        values += [float(draft_open), _small(self.declared or 0), _small(len(rows)),
                   _days(min((r["due_date"] for r in rows), default=None)), _month(rows[-1].get("period") if rows else None)]
        values += [float(self.approvals.get(r) == s) for r in ROLES for s in APPROVAL_STATUSES]
        first = self._first_new()
        created = self.reminder_created
        values += [float(self.refused_at is not None and self.grants <= self.refused_at), float(first is not None),
                   _small(len(self.new_rows)), _days(first["due_date"] if first else None), _amount(first["amount"] if first else None),
                   float(created is not None), _days(created.get("send_on") if created else None)]
        return np.asarray(values, dtype=np.float32)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
        """The hand-written policy over (features, mask): it decodes the slot values exactly and
        does the arithmetic, matching and selection itself.

        1. the six reads; a collection-day change updates the mandate first (the add actions use
           the mandate's day);
        2. the outstanding D = the due slots' amounts; the count n: the due slots for a
           collection-day change, else the request's months (every third for to_quarterly, the
           parts for a split) cut to ``max(1, D // minimum)``: ``create_draft[n]``;
        3. n rows: the first from ``start``, the next ``next3`` for to_quarterly (or when the due
           slots are three months apart), else ``next1``; ``end`` from the month-end rule; the
           share: ``same_month`` for a collection-day change, else the rounding rule's row for
           ``D mod n``;
        4. the triggers in ``approval_order`` (deferral: the flag and the draft's first due date after
           the first due slot's; instalment_count: n above
           the maximum; short_notice: the draft's first due date fewer than min_notice_days after
           received_on): ask the first applying trigger's role, wait, commit;
        5. supersede the active version slot, cancel the due slots and the listed reminders, the
           reminder (``lead`` if its date is not before today, else ``today`` under send_today);
           submit.
        """
        return _RawScheduler(agent)


class _RawScheduler(_Scheduler):
    """The procedure decoding the raw tier's slot values and doing the arithmetic itself."""

    order_feature = "rules_order[{t}]={p}"

    def num(self, name: str, full: float) -> int:
        return int(round(float(self.obs[self.idx[name]]) * full))

    def _read_kind(self, kind: str) -> None:
        on, num = self.on, self.num
        slots = [i for i in range(INSTALMENT_SLOTS) if on(f"inst[{i}]_present")]
        self.due = [i for i in slots if on(f"inst[{i}]_status_due")]
        self.outstanding = sum(num(f"inst[{i}]_amount", AMOUNT_SCALE) for i in self.due)

    def first_step(self, kind: str) -> int | None:
        new_day = self.num("request_new_collection_day", SMALL_SCALE)
        if kind == "collection_day" and new_day != self.num("mandate_collection_day", SMALL_SCALE):
            choice = self.choose("update_mandate")
            return self.finish if choice is None else choice
        return None

    def draft_count(self, kind: str) -> int:
        num = self.num
        if kind == "collection_day":
            return max(1, len(self.due))
        start = num("request_start_period", MONTH_SCALE)
        last = num("policy_term_start", MONTH_SCALE) + 11
        months = last - start + 1
        periods = {"to_quarterly": (months - 1) // 3 + 1 if months > 0 else 0,
                   "split": num("request_parts", SMALL_SCALE)}.get(kind, months)
        minimum = num("rules_minimum_instalment", MINIMUM_SCALE)
        return max(1, min(periods, self.outstanding // minimum if minimum > 0 else periods))

    def row_action(self, kind: str) -> str | None:
        on, num = self.on, self.num
        n = num("draft_declared_count", SMALL_SCALE)
        rows = num("draft_rows", SMALL_SCALE)
        if rows >= n:
            return None
        if rows == 0:
            src = "start"
        elif kind == "to_quarterly":
            src = "next3"
        elif kind == "collection_day":
            due_months = sorted(num(f"inst[{i}]_period", MONTH_SCALE) for i in self.due)
            step = due_months[rows] - due_months[rows - 1] if rows < len(due_months) else 1
            src = "next3" if step == 3 else "next1"
        else:
            src = "next1"
        end = "clamp" if on("rules_month_end_last_day_of_month") else "roll"
        if kind == "collection_day":
            share = "same_month"
        else:
            rest = self.outstanding % n if n else 0
            first_row, last_row = rows == 0, rows == n - 1
            share = {
                "remainder_to_first": "even_plus_remainder" if first_row else "even",
                "remainder_to_last": "even_plus_remainder" if last_row else "even",
                "spread_from_first": "even_plus_one" if rows < rest else "even",
                "spread_from_last": "even_plus_one" if rows >= n - rest else "even",
            }[next(r for r in ROUNDING_RULES if on(f"rules_rounding_{r}"))]
        return f"add_instalment[{src},{end},{share}]"

    def applies(self, kind: str) -> dict[str, bool]:
        on, num = self.on, self.num
        rows = num("draft_rows", SMALL_SCALE)
        notice = num("draft_first_due_date", DATE_SCALE) - num("request_received_on", DATE_SCALE)
        return {
            "deferral": on("rules_deferral_needs_approval") and bool(self.due)
                        and num("draft_first_due_date", DATE_SCALE) > min(num(f"inst[{i}]_due_date", DATE_SCALE) for i in self.due),
            "instalment_count": rows > num("rules_max_instalments_without_approval", SMALL_SCALE),
            "short_notice": notice < num("rules_min_notice_days", DAYS_SCALE),
        }

    def approver(self, trigger: str) -> str:
        return next(r for r in ROLES if self.on(f"rules_role[{trigger}]={r}"))

    def after_commit(self, kind: str) -> int | None:
        on, num, mask, a = self.on, self.num, self.mask, self.act
        for v in range(VERSION_SLOTS):
            if on(f"version[{v}]_status_active") and mask[a[f"supersede[{v}]"]]:
                return a[f"supersede[{v}]"]
        for i in self.due:
            if mask[a[f"cancel_instalment[{i}]"]]:
                return a[f"cancel_instalment[{i}]"]
        for j in range(REMINDER_SLOTS):
            if on(f"rem[{j}]_present") and not on(f"rem[{j}]_cancelled") and mask[a[f"cancel_reminder[{j}]"]]:
                return a[f"cancel_reminder[{j}]"]
        if not on("new_reminder_created"):
            send = num("new_first_due_date", DATE_SCALE) - num("rules_reminder_lead_days", DAYS_SCALE)
            when = "lead" if send >= num("today", DATE_SCALE) else "today"
            if (when == "lead" or on("rules_late_reminder_send_today")) and mask[a[f"create_reminder[{when}]"]]:
                return a[f"create_reminder[{when}]"]
        return None




__all__ = ["SchedulesFactsCatalog", "SchedulesRawCatalog"]
