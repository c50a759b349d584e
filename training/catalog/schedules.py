"""Catalog of the schedules domain: a customer's instalment-schedule change as ``Discrete(19)``.

The clerk reads the request, the policy, the rules, the policy's instalments, the debit mandate
and the policy's scheduled reminders. From those reads the spec computes what a clerk computes
with the portfolio rules: the new schedule (periods, due dates with the month-end rule, amounts
with the rounding rule and the minimum instalment), which approval trigger applies first (if
any) and when the new first instalment's reminder is due. The actions apply the work one tool
call at a time: draft, add the next planned instalment, request approval from the role of a
trigger (one action per trigger), wait, commit, supersede the prior version, cancel its due
instalments, cancel an old reminder, create the new reminder, move the mandate's collection day,
submit.

The mask expresses legality only. An action is removed when
 (a) its call cannot be formed from what was observed: a read's id not yet known, no draft to
     add to or commit, no planned instalment left to add, no committed first instalment to remind
     of, no listed reminder left, no requested collection day to put on the mandate;
 (b) it repeats a read whose answer is known, or a write already applied with the same
     arguments (the mandate's collection day); a paginated list (instalments, reminders) is
     known once its last page is read: until then its action reads the next page (the cursor
     of the page before), and the plan waits for every page;
 (c) the tool is certain to reject it, visibly: a tool outside ``allowed_tools``; ``wait`` with
     none of our approval requests pending (the tool answers precondition_failed: the book starts
     with no pending request, decisions arrive only for requests made); a second request to a role whose request is pending
     or granted; committing an empty draft, a draft already committed, a draft the tool refused
     for ``approval_required`` with no approval granted since, or one that failed a precondition
     and has not changed since; superseding before a new version is active or twice; cancelling
     the prior due instalments or a reminder twice; a second reminder for the new first
     instalment.
Everything else is the agent's judgement, learned from the features: whether to ask for
approval and from which role (the ``request_approval[t]`` of the first applying trigger), waiting
for the decision before committing, adding every planned instalment before committing (commit is
offered as soon as the draft holds one), not creating a second draft, superseding and cancelling
the prior version, replacing the reminder only when the rules give a send date (``create_reminder``
is offered even when the rules say skip: it then sends today), moving the mandate, and when to
submit (``submit`` is forced on by the wrapper; the trainer's ``finish_bias`` keeps early
exploration from submitting at once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import numpy as np

from backoffice.envs.schedules.tables import (
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
from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, scale

KINDS = ("to_monthly", "to_quarterly", "split", "deferral", "collection_day")
TRIGGERS = ("deferral", "instalment_count", "short_notice")
#: frequency of the new schedule per request kind (a collection-day change keeps the active one's)
FREQUENCY = {"to_monthly": "monthly", "to_quarterly": "quarterly", "split": "monthly", "deferral": "monthly"}
READS = ("get_request", "get_policy", "get_rules", "list_instalments", "get_instruction", "list_reminders")


def _ok(result: Mapping[str, Any]) -> bool:
    return result.get("status") == "ok" and isinstance(result.get("result"), dict)


def _page(cursor: str | None) -> dict[str, Any]:
    """The paging argument of a list call: the next page's cursor, none for the first page."""
    return {"cursor": cursor} if cursor else {}


class ScheduleDesk(CatalogSpec):
    """What every schedules tier reads, grounds and masks alike: the brief, the six reads (the
    two lists every page), the approvals asked and decided, the open draft's life (created,
    refused, committed) and the writes on the prior version, the reminders and the mandate.
    A tier keeps its own view of the policy's versions, the listing, the mandate, the draft's
    rows, the commit and the reminder (the ``_take_*`` / ``_observed`` hooks).

    Result rows are never mutated (the native env may hand out live rows): statuses changed by
    the episode's own writes are kept beside them.
    """

    domain = "schedules"
    #: the index of each action name
    _index: dict[str, int]

    def __init__(self) -> None:
        self._index = {a.name: i for i, a in enumerate(self.actions)}
        self.reset({}, {})

    # -- episode state ---------------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params") or {}
        self.request_id: str | None = params.get("request_id")
        self.policy_id: str | None = params.get("policy_id")
        self.allowed = frozenset(info.get("allowed_tools") or brief.get("allowed_tools") or ())
        self.request: Mapping[str, Any] | None = None
        self.policy: Mapping[str, Any] | None = None
        self.versions: list[Mapping[str, Any]] = []          # get_policy's schedule versions
        self.rules: Mapping[str, Any] | None = None
        self.today: str | None = params.get("today")   # the brief's date; wait moves the clock
        self.instalments: list[Mapping[str, Any]] | None = None   # every listed row, once the last page is read
        self.reminders: list[Mapping[str, Any]] | None = None     # listed scheduled reminders, once the last page is read
        self.cancelled_reminders: set[str] = set()
        # pages of the two paginated lists read so far, and the cursor of the next page
        self._instalment_pages: list[Mapping[str, Any]] = []
        self._instalment_cursor: str | None = None
        self._reminder_pages: list[Mapping[str, Any]] = []
        self._reminder_cursor: str | None = None
        self.draft_id: str | None = None       # the last created draft, while not committed
        self.approvals: dict[str, str] = {}    # role -> status of our request (pending / granted / declined)
        self.grants = 0                        # grants seen in wait results
        self.refused_at: int | None = None     # grants count when commit answered approval_required
        self.commit_failed = False             # a precondition error on the open draft as it stands
        self.superseded = False
        self.due_cancelled = False
        self.mandate_updated = False

    # -- what the reads give -----------------------------------------------------------------------
    def _active(self) -> Mapping[str, Any] | None:
        """The version get_policy listed as active: the one the change replaces."""
        return next((s for s in self.versions if s.get("status") == "active"), None)

    def _rule(self, key: str, default: Any = None) -> Any:
        return (self.rules or {}).get(key, default)

    def _role(self, trigger: str) -> str | None:
        """The role the rules name for ``trigger``."""
        return (self.rules or {}).get(f"approval_role_{trigger}")

    def _pending(self) -> bool:
        return any(s == "pending" for s in self.approvals.values())

    def _remaining_reminders(self) -> list[str]:
        """The listed scheduled reminders not cancelled yet."""
        return [r["id"] for r in self.reminders or () if r["id"] not in self.cancelled_reminders]

    def _read_known(self) -> dict[str, bool]:
        """Whether each read's answer is known (in :data:`READS` order)."""
        return {"get_request": self.request is not None, "get_policy": self.policy is not None,
                "get_rules": self.rules is not None, "list_instalments": self.instalments is not None,
                "get_instruction": self._mandate_read(), "list_reminders": self.reminders is not None}

    def _mandate_read(self) -> bool:
        raise NotImplementedError

    # -- grounding ---------------------------------------------------------------------------------
    def _read_args(self, name: str) -> dict[str, Any] | None:
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

    def _approval_args(self, role: str | None, reason: str) -> dict[str, Any] | None:
        if role is None or not self.policy_id:
            return None
        args: dict[str, Any] = {"policy_id": self.policy_id, "role": role, "reason": reason}
        if self.draft_id is not None:
            args["schedule_id"] = self.draft_id
        return args

    def _commit_args(self) -> dict[str, Any] | None:
        return {"schedule_id": self.draft_id} if self.draft_id else None

    def _trigger_approval_args(self, name: str) -> dict[str, Any] | None:
        """``request_approval[trigger]``: ask the role the rules name for the trigger."""
        trigger = name[len("request_approval["):-1]
        return self._approval_args(self._role(trigger), f"{trigger} trigger of the portfolio rules")

    def _prior_args(self, name: str) -> dict[str, Any] | None:
        """``supersede_prior``: the active version; ``cancel_prior_due``: its instalments still
        due (the tier's :meth:`_prior_due`); ``cancel_old_reminder``: the next listed reminder."""
        if name == "supersede_prior":
            active = self._active()
            return {"schedule_id": active["id"]} if active else None
        if name == "cancel_prior_due":
            due = self._prior_due()
            return {"instalment_ids": [r["id"] for r in due]} if due else None
        remaining = self._remaining_reminders()
        return {"reminder_id": remaining[0]} if remaining else None

    def _prior_due(self) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    # -- reading results ---------------------------------------------------------------------------
    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = self.actions[action].tool
        ok = _ok(result)
        body: Mapping[str, Any] = result.get("result") if ok else {}  # type: ignore[assignment]
        if tool == "commit_schedule" and result.get("status") != "ok":
            if result.get("code") == "approval_required":
                self.refused_at = self.grants
            elif result.get("code") != "invalid_args":
                self.commit_failed = True  # the draft as it stands breaks a rule of the book
        if not ok:
            return
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
        elif tool == "list_reminders":
            self._reminder_pages.extend(body.get("reminders") or [])
            self._reminder_cursor = body.get("next_cursor")
            if not self._reminder_cursor:
                self.reminders = list(self._reminder_pages)
        elif tool == "create_draft_schedule":
            self.draft_id = body.get("id")
            self.refused_at = None
            self.commit_failed = False
        elif tool == "add_instalment":
            self.commit_failed = False
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
        elif tool == "supersede_schedule":
            self.superseded = True
        elif tool == "cancel_instalments":
            self.due_cancelled = True
        elif tool == "cancel_reminder":
            self.cancelled_reminders.add(call["args"]["reminder_id"])
        elif tool == "update_instruction":
            self.mandate_updated = True
        self._observed(action, tool, body)

    def _take_versions(self, rows: list[Mapping[str, Any]]) -> None:
        """Keep get_policy's schedule versions."""
        self.versions = rows

    def _take_listing(self, rows: list[Mapping[str, Any]]) -> None:
        """Keep the complete instalment listing."""
        self.instalments = rows

    def _observed(self, action: int, tool: str, body: Mapping[str, Any]) -> None:
        """The tier's own bookkeeping of an ok result (after the shared one)."""

    # -- mask ----------------------------------------------------------------------------------------
    def _reads_legal(self) -> dict[str, bool]:
        """Each read: formable and its answer not known yet."""
        known = self._read_known()
        return {name: self._read_args(name) is not None and not known[name] for name in READS}

    def _only_allowed(self, m: np.ndarray) -> np.ndarray:
        """``m`` without the tools outside ``allowed_tools`` and without ``submit`` (the wrapper
        forces the finishing action on)."""
        if self.allowed:
            for i, a in enumerate(self.actions):
                if a.tool not in self.allowed:
                    m[i] = False
        m[self._index["submit"]] = False
        return m


class SchedulesCatalog(ScheduleDesk):
    """Schedules as a fixed catalog: 6 reads, 12 writes, submit (see the module docstring)."""

    actions = (
        ActionDef("get_request", "get_request", "read the change request (request_id from the brief)"),
        ActionDef("get_policy", "get_policy", "read the policy and its schedule versions (policy_id from the brief)"),
        ActionDef("get_rules", "get_rules", "read the rules document (one entry per rule, the approval roles table)"),
        ActionDef("list_instalments", "list_instalments", "list every instalment of the policy, all versions"),
        ActionDef("get_instruction", "get_instruction", "read the debit mandate (instruction_id from the policy)"),
        ActionDef("list_reminders", "list_reminders", "list the policy's scheduled reminders (the ones to replace)"),
        ActionDef("create_draft", "create_draft_schedule",
                  "create a draft of the next version (frequency from the request kind, change_type = kind)"),
        ActionDef("add_next_instalment", "add_instalment",
                  "add the next planned instalment not yet in the open draft (due date, amount, period of the computed plan)"),
        *(ActionDef(f"request_approval[{t}]", "request_approval",
                    f"ask the role the rules name for the {t} trigger (approval_role_{t}) to approve the change")
          for t in TRIGGERS),
        ActionDef("wait", "wait", "advance the clock to the pending approver's decision"),
        ActionDef("commit_draft", "commit_schedule", "commit the open draft (its instalments become due)"),
        ActionDef("supersede_prior", "supersede_schedule", "mark the prior active version superseded"),
        ActionDef("cancel_prior_due", "cancel_instalments", "cancel the prior version's instalments still due (never paid ones)"),
        ActionDef("cancel_old_reminder", "cancel_reminder", "cancel the next listed scheduled reminder not yet cancelled"),
        ActionDef("create_reminder", "create_reminder",
                  "remind of the new first instalment on max(its due date - reminder_lead_days, today)"),
        ActionDef("update_mandate", "update_instruction", "set the mandate's collection day to the request's new_collection_day"),
        ActionDef("submit", "submit", "finish the task"),
    )
    features = (
        FeatureDef("plan_facts_read", "1 once request, policy, rules, instalments and mandate have all been read (the plan is computable)"),
        *(FeatureDef(f"kind_{k}", f"1 if the request's kind (get_request) is {k}") for k in KINDS),
        FeatureDef("outstanding", "annual premium (get_policy) minus every paid instalment (list_instalments, any version), / 500000 cents"),
        FeatureDef("paid_count", "paid instalments of the policy (list_instalments), / 12"),
        FeatureDef("prior_due_count", "instalments still due in the active version (get_policy + list_instalments), / 12"),
        FeatureDef("plan_count", "instalments of the computed new schedule, / 12"),
        FeatureDef("draft_open", "1 while the last created draft (create_draft_schedule ok) is not committed"),
        FeatureDef("draft_rows", "instalments added to the open draft (ok add_instalment results), / 12"),
        FeatureDef("rows_remaining", "planned instalments not yet in the open draft (plan_count - draft_rows; 0 without a draft), / 12"),
        FeatureDef("draft_complete", "1 if the open draft holds every planned instalment"),
        FeatureDef("approval_needed", "1 if an approval trigger of the rules (in approval_order) applies to the computed plan"),
        *(FeatureDef(f"first_trigger_{t}", f"1 if the first applying approval trigger (approval_order) is {t}") for t in TRIGGERS),
        *(FeatureDef(f"applies_{t}", f"1 if the {t} approval trigger applies to the computed plan (rules, request)") for t in TRIGGERS),
        FeatureDef("approval_requested", "1 once any request_approval answered ok"),
        FeatureDef("approval_pending", "1 while one of our approval requests is pending (request_approval / wait results)"),
        FeatureDef("needed_approval_requested", "1 once the role of the first applying trigger was asked (request_approval ok)"),
        FeatureDef("needed_approval_granted", "1 once a wait result showed the role of the first applying trigger granted"),
        FeatureDef("approval_outstanding", "approval_needed and not needed_approval_granted"),
        FeatureDef("commit_refused", "1 if commit_schedule answered approval_required and no approval was granted since"),
        FeatureDef("committed", "1 once commit_schedule answered ok"),
        FeatureDef("committed_count", "instalments the ok commit made due (commit_schedule result), / 12"),
        FeatureDef("prior_superseded", "1 once supersede_schedule of the prior version answered ok"),
        FeatureDef("prior_due_cancelled", "1 once cancel_instalments of the prior due instalments answered ok"),
        FeatureDef("old_reminders_listed", "1 once list_reminders (policy, scheduled) answered ok, its last page read"),
        FeatureDef("old_reminders_remaining", "listed scheduled reminders not yet cancelled, / 3"),
        FeatureDef("new_reminder_late", "1 if the new first due date - reminder_lead_days is before today (the brief / wait)"),
        FeatureDef("late_rule_send_today", "1 if the rules' late_reminder is send_today (0 if skip or not read)"),
        FeatureDef("new_reminder_needed", "1 if the rules give a send date for the new first instalment's reminder (not late, or late and send_today)"),
        FeatureDef("new_reminder_created", "1 once create_reminder answered ok"),
        FeatureDef("mandate_change_needed", "1 if the request is a collection-day change to a day other than the mandate's (get_request, get_instruction)"),
        FeatureDef("mandate_updated", "1 once update_instruction answered ok"),
        FeatureDef("work_complete", "1 once the change is fully applied as observed: committed, prior superseded and its due "
                   "instalments cancelled, no listed reminder left, the reminder created iff new_reminder_needed, "
                   "the mandate updated iff mandate_change_needed"),
        FeatureDef("notice_days", "days from the request's received_on to the plan's first due date, / 60"),
        FeatureDef("uneven_split", "1 if the plan re-splits and outstanding is not a multiple of the instalment count"),
        FeatureDef("month_end_hit", "1 if a planned due date is not on the collection day (month-end rule applied)"),
        FeatureDef("approval_tools_allowed", "1 if request_approval and wait are in the task's allowed tools (always, since seeds v1)"),
        FeatureDef("mandate_tool_allowed", "1 if update_instruction is in the task's allowed tools (always, since seeds v1)"),
    )
    max_steps = 40
    #: tuned (revision run 3: 99 % validation at 60k steps, 92.2 % heldout): a stronger finish
    #: prior for a long procedure, longer rollouts and horizon; -3 collapsed to an early submit
    #: ``progress``: under the shaped reward MaskablePPO settles on submitting at once (0 % heldout)
    hyperparams = {"finish_bias": -5.0, "n_steps": 256, "gamma": 0.995, "reward_mode": "progress"}

    # -- episode state -------------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        self.mandate: Mapping[str, Any] | None = None
        self.drafts = 0
        self.added = 0                        # planned rows added to the open draft (in plan order)
        self.new_first: Mapping[str, Any] | None = None
        self.committed_rows = 0
        self.reminder_created = False
        self._plan: list[dict[str, Any]] | None = None
        self._applies: dict[str, bool] = {}
        self._need: tuple[str, str] | None = None

    # -- what the reads imply --------------------------------------------------------------------
    def _mandate_read(self) -> bool:
        return self.mandate is not None

    def _prior_due(self) -> list[Mapping[str, Any]]:
        active = self._active()
        if active is None or self.instalments is None:
            return []
        rows = [r for r in self.instalments if r.get("schedule_id") == active["id"] and r.get("status") == "due"]
        return sorted(rows, key=lambda r: (r["due_date"], r["id"]))

    def _outstanding(self) -> int | None:
        if self.policy is None or self.instalments is None:
            return None
        return int(self.policy["annual_premium"]) - sum(int(r["amount"]) for r in self.instalments if r.get("status") == "paid")

    def _facts_read(self) -> bool:
        return None not in (self.request, self.policy, self.rules, self.instalments, self.mandate)

    def _compute_plan(self) -> None:
        """The new instalments (period, due_date, amount) and the approval triggers that apply."""
        self._plan, self._need, self._applies = None, None, {}
        if not self._facts_read():
            return
        req, rules = self.request, self.rules
        assert req is not None and rules is not None and self.policy is not None and self.mandate is not None
        try:
            if req["kind"] == "collection_day":
                day = int(req["new_collection_day"])
                rows = [{"period": r["period"], "due_date": due_date(r["period"], day, rules["month_end"]), "amount": int(r["amount"])}
                        for r in self._prior_due()]
            else:
                outstanding = self._outstanding()
                assert outstanding is not None
                day = int(self.mandate["collection_day"])
                periods = new_periods(req["kind"], req["start_period"], last_period_of(self.policy["term_start"]), req.get("parts"))
                periods = periods[: parts_meeting_minimum(outstanding, len(periods), int(rules["minimum_instalment_cents"]))]
                amounts = split_amounts(outstanding, len(periods), rules["rounding"])
                rows = [{"period": p, "due_date": due_date(p, day, rules["month_end"]), "amount": a} for p, a in zip(periods, amounts)]
            if not rows:
                return
            first, received = rows[0]["due_date"], req["received_on"]
            prior = self._prior_due()
            replaced = prior[0]["due_date"] if prior else None
            self._applies = applying_triggers(rules, len(rows), first, received, replaced)
            self._plan = rows
            self._need = approval_needed(rules, len(rows), first, received, replaced)
        except (KeyError, TypeError, ValueError):
            self._plan, self._need, self._applies = None, None, {}

    def _first_due(self) -> str | None:
        if self.new_first is not None:
            return self.new_first.get("due_date")
        return self._plan[0]["due_date"] if self._plan else None

    def _send_on(self) -> str | None:
        """The reminder date the rules give (``None``: late and the rules say skip)."""
        first = self._first_due()
        if first is None or self.rules is None or self.today is None:
            return None
        return reminder_send_on(self.rules, first, self.today)

    def _late(self) -> bool:
        first = self._first_due()
        if first is None or self.rules is None or self.today is None:
            return False
        return days_between(self.today, first) < int(self.rules["reminder_lead_days"])

    def _reminder_date(self) -> str | None:
        """What create_reminder sends: due - lead days, or today when that is past (whatever the late rule)."""
        first = self._first_due()
        if first is None or self.rules is None or self.today is None:
            return None
        send = parse_date(first) - timedelta(days=int(self.rules["reminder_lead_days"]))
        return max(send, parse_date(self.today)).isoformat()

    def _needed_status(self) -> str | None:
        return self.approvals.get(self._need[1]) if self._need else None

    def _new_day(self) -> int | None:
        day = (self.request or {}).get("new_collection_day")
        return int(day) if day is not None else None

    def _mandate_change(self) -> bool:
        day = self._new_day()
        return (self.request is not None and self.request.get("kind") == "collection_day" and self.mandate is not None
                and day is not None and day != int(self.mandate.get("collection_day", 0)))

    def _work_complete(self) -> bool:
        return (self.new_first is not None and self.superseded and self.due_cancelled and self.reminders is not None
                and not self._remaining_reminders() and self.reminder_created == (self._send_on() is not None)
                and self.mandate_updated == self._mandate_change())

    def _next_row(self) -> dict[str, Any] | None:
        if self.draft_id is None or not self._plan or self.added >= len(self._plan):
            return None
        return self._plan[self.added]

    # -- grounding ---------------------------------------------------------------------------------
    def to_call(self, action: int) -> dict[str, Any] | None:
        name = self.actions[action].name
        args = self._args(name)
        return None if args is None else {"tool": self.actions[action].tool, "args": args}

    def _args(self, name: str) -> dict[str, Any] | None:
        if name in READS:
            return self._read_args(name)
        if name in ("wait", "submit"):
            return {}
        if name == "create_draft":
            active = self._active()
            if self.request is None or self.policy is None or active is None:
                return None
            kind = self.request["kind"]
            return {"policy_id": self.policy["id"], "frequency": FREQUENCY.get(kind, active["frequency"]), "change_type": kind}
        if name == "add_next_instalment":
            row = self._next_row()
            if row is None:
                return None
            return {"schedule_id": self.draft_id, "due_date": row["due_date"], "amount": row["amount"], "period": row["period"]}
        if name.startswith("request_approval["):
            return self._trigger_approval_args(name)
        if name == "commit_draft":
            return self._commit_args()
        if name in ("supersede_prior", "cancel_prior_due", "cancel_old_reminder"):
            return self._prior_args(name)
        if name == "create_reminder":
            send_on = self._reminder_date()
            if self.new_first is None or send_on is None:
                return None
            return {"instalment_id": self.new_first["id"], "send_on": send_on}
        if name == "update_mandate":
            day = self._new_day()
            if self.mandate is None or day is None:
                return None
            return {"instruction_id": self.mandate["id"], "collection_day": day}
        return None  # pragma: no cover - every action is handled above

    # -- reading results ---------------------------------------------------------------------------
    def _observed(self, action: int, tool: str, body: Mapping[str, Any]) -> None:
        if tool == "get_instruction":
            self.mandate = body
        elif tool == "create_draft_schedule":
            self.drafts += 1
            self.added = 0
        elif tool == "add_instalment":
            self.added += 1
        elif tool == "commit_schedule":
            rows = body.get("instalments") or []
            self.new_first = rows[0] if rows else None
            self.committed_rows = len(rows)
        elif tool == "create_reminder":
            self.reminder_created = True
        if tool in ("get_request", "get_policy", "get_rules", "list_instalments", "get_instruction"):
            self._compute_plan()

    # -- mask ----------------------------------------------------------------------------------------
    def mask(self) -> np.ndarray:
        """Legality only (see the module docstring: (a) formable, (b) no known repeat, (c) no
        certain rejection). ``submit`` is left to the wrapper, which forces it on."""
        m = np.array([self.to_call(i) is not None for i in range(len(self.actions))], dtype=bool)
        for name, legal in self._reads_legal().items():
            m[self._index[name]] = legal
        for t in TRIGGERS:
            m[self._index[f"request_approval[{t}]"]] &= self.approvals.get(self._role(t) or "") not in ("pending", "granted")
        m[self._index["wait"]] = self._pending()
        m[self._index["commit_draft"]] &= (self.added > 0 and not self.commit_failed
                                           and (self.refused_at is None or self.grants > self.refused_at))
        committed = self.new_first is not None
        m[self._index["supersede_prior"]] &= committed and not self.superseded
        m[self._index["cancel_prior_due"]] &= not self.due_cancelled
        m[self._index["create_reminder"]] &= not self.reminder_created
        m[self._index["update_mandate"]] &= not self.mandate_updated
        return self._only_allowed(m)

    # -- features ------------------------------------------------------------------------------------
    def feature_vector(self) -> np.ndarray:
        kind = self.request.get("kind") if self.request else None
        plan = self._plan or []
        outstanding = self._outstanding()
        paid = sum(1 for r in self.instalments or [] if r.get("status") == "paid")
        draft_open = self.draft_id is not None
        rows_remaining = max(0, len(plan) - self.added) if draft_open else 0
        notice = None
        if plan and self.request is not None:
            notice = days_between(self.request["received_on"], plan[0]["due_date"])
        uneven = bool(plan) and kind != "collection_day" and outstanding is not None and outstanding % len(plan) != 0
        day = None
        if kind == "collection_day":
            day = self._new_day()
        elif self.mandate is not None:
            day = self.mandate.get("collection_day")
        month_end = bool(plan) and day is not None and any(int(r["due_date"][8:10]) != int(day) for r in plan)
        trigger = self._need[0] if self._need else None
        needed = self._needed_status()
        s = scale

        values = [
            float(self._facts_read()),
            *(float(kind == k) for k in KINDS),
            s(outstanding, 500_000),
            s(paid, 12),
            s(len(self._prior_due()), 12),
            s(len(plan), 12),
            float(draft_open),
            s(self.added if draft_open else 0, 12),
            s(rows_remaining, 12),
            float(draft_open and bool(plan) and self.added >= len(plan)),
            float(self._need is not None),
            *(float(trigger == t) for t in TRIGGERS),
            *(float(self._applies.get(t, False)) for t in TRIGGERS),
            float(bool(self.approvals)),
            float(self._pending()),
            float(needed is not None),
            float(needed == "granted"),
            float(self._need is not None and needed != "granted"),
            float(self.refused_at is not None and self.grants <= self.refused_at),
            float(self.new_first is not None),
            s(self.committed_rows, 12),
            float(self.superseded),
            float(self.due_cancelled),
            float(self.reminders is not None),
            s(len(self._remaining_reminders()), 3),
            float(self._late()),
            float((self.rules or {}).get("late_reminder") == "send_today"),
            float(self._send_on() is not None),
            float(self.reminder_created),
            float(self._mandate_change()),
            float(self.mandate_updated),
            float(self._work_complete()),
            s(notice, 60),
            float(uneven),
            float(month_end),
            float(not self.allowed or {"request_approval", "wait"} <= self.allowed),
            float(not self.allowed or "update_instruction" in self.allowed),
        ]
        return np.asarray(values, dtype=np.float32)


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """The hand-written policy over (features, mask), a short decision list:

    1. the six reads (each offered until answered);
    2. one draft (``taken[create_draft]``), then ``add_next_instalment`` while ``rows_remaining``;
    3. while ``approval_outstanding``: ``wait`` if ``approval_pending``, else
       ``request_approval[t]`` of ``first_trigger_t``; no commit before;
    4. ``commit_draft`` once ``draft_complete``;
    5. after ``committed``: supersede, cancel the prior due instalments, cancel the old reminders
       while ``old_reminders_remaining``, ``create_reminder`` iff ``new_reminder_needed``,
       ``update_mandate`` iff ``mandate_change_needed``; then submit.
    """
    f = {d.name: i for i, d in enumerate(agent.feature_defs)}
    a = {d.name: i for i, d in enumerate(agent.spec.actions)}

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(feature: str) -> bool:
            return bool(obs[f[feature]] > 0.5)

        def first(*names: str) -> int | None:
            return next((a[n] for n in names if mask[a[n]]), None)

        read = first(*READS)
        if read is not None:
            return read
        if not on("taken[create_draft]") and mask[a["create_draft"]]:
            return a["create_draft"]
        if obs[f["rows_remaining"]] > 0 and mask[a["add_next_instalment"]]:
            return a["add_next_instalment"]
        if on("approval_outstanding"):
            if on("approval_pending") and mask[a["wait"]]:
                return a["wait"]
            for t in TRIGGERS:
                if on(f"first_trigger_{t}") and mask[a[f"request_approval[{t}]"]]:
                    return a[f"request_approval[{t}]"]
        elif on("draft_complete") and mask[a["commit_draft"]]:
            return a["commit_draft"]
        if on("committed"):
            if not on("prior_superseded") and mask[a["supersede_prior"]]:
                return a["supersede_prior"]
            if not on("prior_due_cancelled") and mask[a["cancel_prior_due"]]:
                return a["cancel_prior_due"]
            if obs[f["old_reminders_remaining"]] > 0 and mask[a["cancel_old_reminder"]]:
                return a["cancel_old_reminder"]
            if on("new_reminder_needed") and mask[a["create_reminder"]]:
                return a["create_reminder"]
            if on("mandate_change_needed") and mask[a["update_mandate"]]:
                return a["update_mandate"]
        return agent.finish

    return act


#: the catalog's feature tiers (``backoffice.training.catalog.TIERS``): this module's catalog is the
#: ``conclusions`` tier; ``facts`` and ``raw`` live in :mod:`.schedules_tiers` (named, not imported)
TIERS = {
    "conclusions": "SchedulesCatalog",
    "facts": "backoffice.training.catalog.schedules_tiers:SchedulesFactsCatalog",
    "raw": "backoffice.training.catalog.schedules_tiers:SchedulesRawCatalog",
}
