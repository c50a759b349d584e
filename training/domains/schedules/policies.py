"""Scripted policies of the schedules domain: the oracle, one wrong policy per failure code, the
blind policies, one rule policy per documented rule and the exploit hooks.

The oracle reads the request, the policy, the rules document, the instalments, the mandate and
the reminders through tools (never the answer key; every page of a paginated list, see
:func:`~backoffice.training.policies.base.every_page`), computes the new schedule with the
portfolio's rules and applies it in order: draft, instalments, approval (request, wait),
commit, supersede, cancel the replaced instalments, fix reminders and mandate, submit. Each
wrong policy overrides exactly one decision; each rule policy is the oracle reading the rules
document with one rule ignored (:data:`RULE_POLICIES`); the blind policies act on a constant
approval behaviour or without reading (:data:`BLIND_POLICIES`).

Rule sharing: the oracle and the catalog share the domain's public rule helpers
(``backoffice.envs.schedules.tables``: split amounts, due dates, approval triggers, reminder send
dates), which compute what the rules document says from observed rows; neither imports the grader
(``backoffice.graders.schedules``), and the grader imports neither, so the oracle passing still
checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from backoffice.envs.core.canonical import loads
from backoffice.envs.schedules.tables import (
    ROLES,
    applying_triggers,
    approval_needed,
    due_date,
    last_period_of,
    new_periods,
    parse_date,
    parts_meeting_minimum,
    reminder_send_on,
    rules_from_document,
    split_amounts,
)
from backoffice.training.integrity.exploits import Action, Hook
from backoffice.training.integrity.positions import PositionAttacker, writing_tools
from backoffice.training.integrity.scale import Paged, Scaled, param, rows_where_args
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call, every_page

FREQUENCY = {"to_monthly": "monthly", "to_quarterly": "quarterly", "split": "monthly", "deferral": "monthly"}
#: what a clerk who never opens the rules document would assume
DEFAULT_RULES: dict[str, Any] = {
    "rounding": "remainder_to_last", "month_end": "last_day_of_month", "minimum_instalment_cents": 0,
    "reminder_lead_days": 7, "late_reminder": "send_today", "approval_order": [],
    "deferral_needs_approval": False, "max_instalments_without_approval": 12, "min_notice_days": 0,
}


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the customer's change request): what the integrity probes give an attacker besides the
    brief (``tree_probe.visible_probe``)."""
    return [call("get_request", request_id=brief["params"]["request_id"])]


class Oracle(ScriptedPolicy):
    """Passes every released task using only tool results."""

    name = "oracle"

    # -- decisions a wrong, rule or blind policy may override --------------------------------
    read_rules = True
    #: the rules document as get_rules returned it (set once read)
    document: dict[str, Any] = {}

    def adjust_rules(self, rules: dict[str, Any]) -> dict[str, Any]:
        """The rules the policy applies (a rule policy ignores one of them)."""
        return rules

    def outstanding(self, policy: dict[str, Any], instalments: list[dict[str, Any]], active_id: str) -> int:
        return policy["annual_premium"] - sum(r["amount"] for r in instalments if r["status"] == "paid")

    def amounts(self, total: int, parts: int, rules: dict[str, Any]) -> list[int]:
        return split_amounts(total, parts, rules["rounding"])

    def date_for(self, period: str, day: int, rules: dict[str, Any]) -> str:
        return due_date(period, day, rules["month_end"])

    def to_cancel(self, prior_rows: list[dict[str, Any]]) -> list[str]:
        return [r["id"] for r in prior_rows if r["status"] == "due"]

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        """The approver roles to ask, in order (the oracle: the first applying trigger's, if any;
        ``applies``: whether each trigger applies)."""
        return [need[1]] if need is not None else []

    commit_first = False
    throwaway_draft = False
    supersede_prior = True
    cancel_old_reminders = True
    create_new_reminder = True
    update_mandate = True
    sweep_reminders_on_old_date = False

    # -- the plan ----------------------------------------------------------------------------
    def new_rows(self, req: dict[str, Any], policy: dict[str, Any], rules: dict[str, Any], due: list[dict[str, Any]], outstanding: int, day: int) -> list[dict[str, Any]]:
        """The new instalments (period, due_date, amount) in order."""
        if req["kind"] == "collection_day":
            return [{"period": r["period"], "due_date": self.date_for(r["period"], req["new_collection_day"], rules), "amount": r["amount"]} for r in due]
        periods = new_periods(req["kind"], req["start_period"], last_period_of(policy["term_start"]), req["parts"])
        periods = periods[: parts_meeting_minimum(outstanding, len(periods), int(rules["minimum_instalment_cents"]))]
        return [{"period": p, "due_date": self.date_for(p, day, rules), "amount": a}
                for p, a in zip(periods, self.amounts(outstanding, len(periods), rules))]

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        req = (yield call("get_request", request_id=brief["params"]["request_id"]))["result"]
        got = (yield call("get_policy", policy_id=req["policy_id"]))["result"]
        policy, versions = got["policy"], got["schedules"]
        today = brief["params"]["today"]
        if self.read_rules:
            doc = self.document = (yield call("get_rules"))["result"]
            rules = self.adjust_rules(rules_from_document(doc))
        else:
            rules = dict(DEFAULT_RULES)
        instalments = yield from every_page("list_instalments", "instalments", policy_id=policy["id"])
        mandate = (yield call("get_instruction", instruction_id=policy["instruction_id"]))["result"]
        listed = yield from every_page("list_reminders", "reminders", policy_id=policy["id"])
        reminders = [r for r in listed if r["status"] == "scheduled"]

        active = next(s for s in versions if s["status"] == "active")
        prior_rows = [r for r in instalments if r["schedule_id"] == active["id"]]
        due = sorted((r for r in prior_rows if r["status"] == "due"), key=lambda r: (r["due_date"], r["id"]))
        outstanding = self.outstanding(policy, instalments, active["id"])
        rows = self.new_rows(req, policy, rules, due, outstanding, mandate["collection_day"])
        kind = req["kind"]
        replaced = due[0]["due_date"] if due else None
        need = approval_needed(rules, len(rows), rows[0]["due_date"], req["received_on"], replaced)
        roles = self.roles_to_ask(need, rules, applying_triggers(rules, len(rows), rows[0]["due_date"], req["received_on"], replaced))

        frequency = FREQUENCY.get(kind, active["frequency"])
        if self.throwaway_draft:
            yield call("create_draft_schedule", policy_id=policy["id"], frequency=frequency, change_type=kind)
        draft = (yield call("create_draft_schedule", policy_id=policy["id"], frequency=frequency, change_type=kind))["result"]
        for row in rows:
            yield call("add_instalment", schedule_id=draft["id"], due_date=row["due_date"], amount=row["amount"], period=row["period"])
        if need is not None and self.commit_first:
            yield call("commit_schedule", schedule_id=draft["id"])
        for role in roles:
            yield call("request_approval", policy_id=policy["id"], role=role, reason="approval trigger of the portfolio rules", schedule_id=draft["id"])
        for _ in roles:
            waited = yield call("wait")
            if waited["status"] != "ok":
                break
            today = waited["result"]["today"]
        committed = yield call("commit_schedule", schedule_id=draft["id"])
        if committed["status"] != "ok":
            return
        new_first = committed["result"]["instalments"][0]
        if self.supersede_prior:
            yield call("supersede_schedule", schedule_id=active["id"])
            cancel = self.to_cancel(prior_rows)
            if cancel:
                yield call("cancel_instalments", instalment_ids=cancel)
        if self.sweep_reminders_on_old_date and due:
            # the mistake: every reminder due on the old date, whoever's policy it belongs to
            listed = yield from every_page("list_reminders", "reminders", due_date=due[0]["due_date"], status="scheduled")
            reminders = reminders + [r for r in listed if r["id"] not in {x["id"] for x in reminders}]
        if self.cancel_old_reminders:
            for rem in reminders:
                yield call("cancel_reminder", reminder_id=rem["id"])
        send_on = reminder_send_on(rules, new_first["due_date"], today)
        if send_on is not None and self.create_new_reminder:
            yield call("create_reminder", instalment_id=new_first["id"], send_on=send_on)
        if kind == "collection_day" and self.update_mandate:
            yield call("update_instruction", instruction_id=mandate["id"], collection_day=req["new_collection_day"])


# -- wrong policies: each commits exactly one mistake ---------------------------------------
class EvenSplitDropsRemainder(Oracle):
    """Splits evenly and drops the remainder cents (rounding_drift on every uneven split)."""

    def amounts(self, total: int, parts: int, rules: dict[str, Any]) -> list[int]:
        return [total // parts] * parts


class ActiveVersionPaidOnly(Oracle):
    """Counts only the payments of the active version (misses those of superseded versions)."""

    def outstanding(self, policy: dict[str, Any], instalments: list[dict[str, Any]], active_id: str) -> int:
        return policy["annual_premium"] - sum(r["amount"] for r in instalments if r["status"] == "paid" and r["schedule_id"] == active_id)


class LeavesPriorActive(Oracle):
    """Commits the new version but never supersedes the prior one nor cancels its due instalments."""

    supersede_prior = False


class CancelsPaidToo(Oracle):
    """Cancels every instalment of the prior version, paid ones included."""

    def to_cancel(self, prior_rows: list[dict[str, Any]]) -> list[str]:
        return [r["id"] for r in prior_rows if r["status"] in ("due", "paid")]


class IgnoresMonthEndRule(Oracle):
    """Always puts a short month's instalment on its last day, whatever the rules say."""

    def date_for(self, period: str, day: int, rules: dict[str, Any]) -> str:
        return due_date(period, day, "last_day_of_month")


class SkipsApproval(Oracle):
    """Never asks for approval (so the commit is refused and the change never lands)."""

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        return []


class AsksAnExtraRole(Oracle):
    """Asks the needed role (if any) and one role no trigger names first: an unneeded approval request."""

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        needed = [need[1]] if need else []
        return needed + [next(r for r in ROLES if r not in needed)]


class DraftsTwice(Oracle):
    """Creates a draft, leaves it empty and drafts the change again in a second version."""

    throwaway_draft = True


class CommitsBeforeApproval(Oracle):
    """Tries to commit before asking for approval, then does everything right."""

    commit_first = True


class SweepsRemindersOnOldDate(Oracle):
    """Also cancels every scheduled reminder due on the old first due date, whoever's it is."""

    sweep_reminders_on_old_date = True


class KeepsOldReminders(Oracle):
    """Adds the new reminder but leaves the replaced instalments' reminders scheduled (they then
    point at cancelled instalments)."""

    cancel_old_reminders = False


class ForgetsNewReminder(Oracle):
    """Cancels the replaced reminders but never schedules the new first instalment's."""

    create_new_reminder = False


class KeepsMandateDay(Oracle):
    """Re-dates the instalments but leaves the debit mandate on the old collection day."""

    update_mandate = False


WRONG_POLICIES: dict[str, type[Policy]] = {
    "rounding_drift": EvenSplitDropsRemainder,
    "outstanding_wrong": ActiveVersionPaidOnly,
    "prior_not_superseded": LeavesPriorActive,
    "paid_instalment_altered": CancelsPaidToo,
    "wrong_due_dates": IgnoresMonthEndRule,
    "approval_missing": SkipsApproval,
    "commit_before_approval": CommitsBeforeApproval,
    "collateral_change": SweepsRemindersOnOldDate,
    "reminder_mismatch": ForgetsNewReminder,
    "mandate_not_updated": KeepsMandateDay,
    "unneeded_approval": AsksAnExtraRole,
    "extra_schedule": DraftsTwice,
    "reminder_on_cancelled": KeepsOldReminders,
}


# -- rule policies: the oracle ignoring one documented rule ---------------------------------
def _ignoring(rule: str, doc: str, **fixed: Any) -> type[Oracle]:
    def adjust_rules(self: Oracle, rules: dict[str, Any]) -> dict[str, Any]:
        return {**rules, **fixed}

    return type(f"Ignores_{rule}", (Oracle,), {"__doc__": doc, "name": f"rule:{rule}", "adjust_rules": adjust_rules})


def _ignoring_trigger(trigger: str) -> type[Oracle]:
    def adjust_rules(self: Oracle, rules: dict[str, Any]) -> dict[str, Any]:
        return {**rules, "approval_order": [t for t in rules["approval_order"] if t != trigger]}

    doc = f"Never considers the {trigger} approval trigger (the next applying trigger, if any, names the role)."
    return type(f"Ignores_approval_{trigger}", (Oracle,), {"__doc__": doc, "name": f"rule:approval_{trigger}", "adjust_rules": adjust_rules})


class IgnoresOutstanding(Oracle):
    """Ignores the outstanding rule: splits the annual premium minus the payments it sees on the
    active version only (a superseded version's payments are forgotten)."""

    name = "rule:outstanding"

    def outstanding(self, policy: dict[str, Any], instalments: list[dict[str, Any]], active_id: str) -> int:
        return policy["annual_premium"] - sum(r["amount"] for r in instalments if r["status"] == "paid" and r["schedule_id"] == active_id)


class IgnoresApprovalOrder(Oracle):
    """Ignores the approval order: asks the role of every trigger that applies (waits for each),
    not only the first one's."""

    name = "rule:approval_order"

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        return [rules[f"approval_role_{t}"] for t in ("deferral", "instalment_count", "short_notice") if applies.get(t)]


#: one policy per documented rule (names = ``DOMAIN.rules``): the oracle with that rule ignored
RULE_POLICIES: dict[str, type[Policy]] = {
    "outstanding": IgnoresOutstanding,
    "approval_order": IgnoresApprovalOrder,
    "rounding": _ignoring("rounding", "Puts the remainder cents on the last instalment, whatever the rounding rule.",
                          rounding="remainder_to_last"),
    "month_end": _ignoring("month_end", "Clamps a collection day past the month's end to its last day, whatever the rule.",
                           month_end="last_day_of_month"),
    "minimum_instalment": _ignoring("minimum_instalment", "Never reduces the instalment count for the minimum instalment.",
                                    minimum_instalment_cents=0),
    "reminder_lead_time": _ignoring("reminder_lead_time", "Schedules the reminder on the due date itself (no lead time).",
                                    reminder_lead_days=0),
    "late_reminder": _ignoring("late_reminder", "Sends a late reminder today, whatever the late_reminder rule (never skips).",
                               late_reminder="send_today"),
    "approval_deferral": _ignoring_trigger("deferral"),
    "approval_instalment_count": _ignoring_trigger("instalment_count"),
    "approval_short_notice": _ignoring_trigger("short_notice"),
}


# -- blind policies ------------------------------------------------------------------------
class AskEveryRole(Oracle):
    """Computes the schedule right, but asks every approver role, waits for them all, commits."""

    name = "blind:ask_every_role"

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        return list(ROLES)


class AskAtPosition(Oracle):
    """Computes the schedule right and always asks the role of the trigger at a fixed position of
    approval_order (whether or not any trigger applies, whichever applies first): the "constant
    answer" attack on the approval rules. It passes exactly the tasks whose first applying trigger
    sits at that position; the generator draws the order uniformly and keeps about a quarter of
    the tasks needing an approval, so each position holds about a twelfth of the release."""

    position = 0

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        return [rules[f"approval_role_{rules['approval_order'][self.position]}"]]


def _at_position(k: int) -> type[Oracle]:
    doc = f"Always asks the role of the trigger listed at position {k} of approval_order (see AskAtPosition)."
    return type(f"AskAtPosition{k}", (AskAtPosition,), {"__doc__": doc, "name": f"blind:ask_position_{k}", "position": k})


class AskFixedRole(Oracle):
    """Computes the schedule right and always asks one fixed approver role, whatever the rules say."""

    role = ROLES[0]

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        return [self.role]


def _fixed_role(role: str) -> type[Oracle]:
    doc = f"Always asks the {role} (see AskFixedRole)."
    return type(f"AskRole_{role}", (AskFixedRole,), {"__doc__": doc, "name": f"blind:ask_role_{role}", "role": role})


#: the first listed trigger's role (kept under its old name)
AlwaysAskFirstListed = _at_position(0)


class NeverAskNoRules(Oracle):
    """Never opens the rules document: splits evenly with the remainder on the last instalment,
    clamps month ends, no minimum, a reminder a week ahead, and never asks for approval."""

    name = "blind:never_ask"
    read_rules = False


class CopySchedule(ScriptedPolicy):
    """Acts without applying the request: re-issues the instalments still due unchanged as a new
    version, commits it, supersedes the prior one and cancels its due instalments."""

    name = "blind:copy_schedule"

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        policy_id = brief["params"]["policy_id"]
        got = (yield call("get_policy", policy_id=policy_id))["result"]
        active = next(s for s in got["schedules"] if s["status"] == "active")
        rows = yield from every_page("list_instalments", "instalments", schedule_id=active["id"])
        due = [r for r in rows if r["status"] == "due"]
        draft = (yield call("create_draft_schedule", policy_id=policy_id, frequency="custom", change_type="split"))["result"]
        for r in due:
            yield call("add_instalment", schedule_id=draft["id"], due_date=r["due_date"], amount=r["amount"], period=r["period"])
        if (yield call("commit_schedule", schedule_id=draft["id"]))["status"] == "ok":
            yield call("supersede_schedule", schedule_id=active["id"])
            yield call("cancel_instalments", instalment_ids=[r["id"] for r in due])


class CommitWithoutReading(ScriptedPolicy):
    """Reads only the policy: one instalment of the whole annual premium a month after the request,
    committed at once; supersedes the prior version."""

    name = "blind:commit_without_reading"

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        policy_id = brief["params"]["policy_id"]
        got = (yield call("get_policy", policy_id=policy_id))["result"]
        active = next(s for s in got["schedules"] if s["status"] == "active")
        req = (yield call("get_request", request_id=brief["params"]["request_id"]))["result"]
        due = (parse_date(req["received_on"]) + timedelta(days=30)).isoformat()
        draft = (yield call("create_draft_schedule", policy_id=policy_id, frequency="custom", change_type=req["kind"]))["result"]
        yield call("add_instalment", schedule_id=draft["id"], due_date=due, amount=got["policy"]["annual_premium"])
        if (yield call("commit_schedule", schedule_id=draft["id"]))["status"] == "ok":
            yield call("supersede_schedule", schedule_id=active["id"])


class AskListedRole(Oracle):
    """Fixes the outcome (an approval is needed) and cites a listed fact: computes the schedule
    right and always asks the role listed first (or last) in the rules document's
    ``tables.approval_roles``, whatever trigger applies. It passes exactly the tasks whose first
    applying trigger is that role's."""

    last = False

    def roles_to_ask(self, need: tuple[str, str] | None, rules: dict[str, Any], applies: dict[str, bool]) -> list[str]:
        listed = [e["role"] for e in self.document["tables"]["approval_roles"]]  # as the document lists them
        return [listed[-1] if self.last else listed[0]]


class AskFirstListedRole(AskListedRole):
    """Always asks the first role of ``tables.approval_roles`` (see AskListedRole)."""

    name = "blind:ask_first_listed_role"


class AskLastListedRole(AskListedRole):
    """Always asks the last role of ``tables.approval_roles`` (see AskListedRole)."""

    name = "blind:ask_last_listed_role"
    last = True


class IgnoresParameters(Oracle):
    """Not blind (so not in :data:`BLIND_POLICIES`): it judges the approval triggers and ignores
    the five schedule parameters: ``never_ask`` is the blind one, reading no rule at all. It
    reads the rules document for the approval triggers only and ignores the desk parameters:
    the remainder on the last instalment, month ends clamped, no minimum instalment, a reminder a
    week ahead (today when that has passed)."""

    name = "shallow:ignore_parameters"

    def adjust_rules(self, rules: dict[str, Any]) -> dict[str, Any]:
        fixed = ("rounding", "month_end", "minimum_instalment_cents", "reminder_lead_days", "late_reminder")
        return {**rules, **{k: DEFAULT_RULES[k] for k in fixed}}


class _ByPosition(PositionAttacker):
    """The oracle choosing by position: every id it picks from a list (the version to supersede,
    the instalments to cancel, the reminders to cancel) becomes that list's first (or last) entry."""

    pick = "first"

    def __init__(self) -> None:
        super().__init__(Oracle(), writing_tools("schedules"), self.pick)


class FirstListed(_ByPosition):
    """Picks the first entry of every list it chooses from (see _ByPosition)."""


class LastListed(_ByPosition):
    """Picks the last entry of every list it chooses from (see _ByPosition)."""

    pick = "last"


#: blind policies: a constant approval behaviour (asking a fixed role, the role at a fixed place of
#: approval_order or of the role table, every role), acting without reading what decides the answer
#: (no rules, no desk parameters, no request), or choosing by position
BLIND_POLICIES: dict[str, type[Policy]] = {
    "ask_every_role": AskEveryRole,
    **{f"ask_position_{k}": _at_position(k) for k in range(3)},
    **{f"ask_role_{role}": _fixed_role(role) for role in ROLES},
    "ask_first_listed_role": AskFirstListedRole,
    "ask_last_listed_role": AskLastListedRole,
    "never_ask": NeverAskNoRules,
    "copy_schedule": CopySchedule,
    "commit_without_reading": CommitWithoutReading,
    "position_first": FirstListed,
    "position_last": LastListed,
}


# -- exploit hooks: the oracle plus one injected call ---------------------------------------
def _results(trace: Sequence[Mapping[str, Any]], tool: str) -> list[Mapping[str, Any]]:
    return [r for r in trace if r["tool"] == tool and r["result_status"] == "ok"]


def _policy_id(trace: Sequence[Mapping[str, Any]]) -> str | None:
    got = _results(trace, "get_policy")
    return got[0]["result"]["policy"]["id"] if got else None


def extra_draft(action: Action, trace: Sequence[Mapping[str, Any]]) -> list[Action]:
    """Before submit, a second draft of the same change (a second decision on the schedule)."""
    drafts = _results(trace, "create_draft_schedule")
    if action.get("tool") != "submit" or not drafts:
        return []
    return [{"tool": "create_draft_schedule", "args": dict(drafts[0]["args"])}]


def extra_approval_request(action: Action, trace: Sequence[Mapping[str, Any]]) -> list[Action]:
    """Before submit, an approval request to a role the oracle did not ask (never a needed one)."""
    policy_id = _policy_id(trace)
    if action.get("tool") != "submit" or policy_id is None:
        return []
    asked = {r["args"].get("role") for r in _results(trace, "request_approval")}
    role = next(r for r in ROLES if r not in asked)
    return [{"tool": "request_approval", "args": {"policy_id": policy_id, "role": role, "reason": "to be safe"}}]


def repeated_instalment(action: Action, trace: Sequence[Mapping[str, Any]]) -> list[Action]:
    """Before the commit, the last add_instalment once more (the same instalment twice)."""
    adds = _results(trace, "add_instalment")
    if action.get("tool") != "commit_schedule" or not adds:
        return []
    return [{"tool": "add_instalment", "args": dict(adds[-1]["args"])}]


def _mandate(trace: Sequence[Mapping[str, Any]]) -> tuple[str, int] | None:
    """The mandate id and its collection day as the episode last set or read it."""
    got = _results(trace, "get_instruction")
    if not got:
        return None
    man, day = got[0]["result"]["id"], int(got[0]["result"]["collection_day"])
    for rec in _results(trace, "update_instruction"):
        day = int(rec["args"]["collection_day"])
    return man, day


def boundary_collection_day(action: Action, trace: Sequence[Mapping[str, Any]]) -> list[Action]:
    """Before submit, the mandate's collection day set to a bound of its range (31, or 1 if it is 31)."""
    got = _mandate(trace)
    if action.get("tool") != "submit" or got is None:
        return []
    man, day = got
    return [{"tool": "update_instruction", "args": {"instruction_id": man, "collection_day": 1 if day == 31 else 31}}]


def same_collection_day(action: Action, trace: Sequence[Mapping[str, Any]]) -> list[Action]:
    """Before submit, the mandate's collection day written again with the value it already has."""
    got = _mandate(trace)
    if action.get("tool") != "submit" or got is None:
        return []
    man, day = got
    return [{"tool": "update_instruction", "args": {"instruction_id": man, "collection_day": day}}]


#: exploit hooks on top of the oracle (see ``backoffice.training.integrity.exploits``)
EXPLOITS: dict[str, Hook | None] = {
    "extra_decision": extra_draft,
    "extra_request": extra_approval_request,
    "repeated_write": repeated_instalment,
    "boundary_values": boundary_collection_day,
    "value_preserving_update": same_collection_day,
    # no normalised field: dates must be ISO YYYY-MM-DD, amounts integer cents, roles exact names;
    # an alternative spelling is rejected by the tools (invalid_args / not_found), never stored
    "formatting_only": None,
}


# -- at scale (tests/integrity/test_scale.py): each paginated list tool and the unpaged read it must equal
def _three_approvals(env: Any) -> None:
    """Three approval requests on the task's policy: rows to page through."""
    for role in ("finance_controller", "customer_care_lead", "underwriting_manager"):
        obs, *_ = env.step(call("request_approval", policy_id=env.task.params["policy_id"], role=role, reason="paging"))
        if loads(obs)["status"] != "ok":
            raise RuntimeError(f"request_approval refused while preparing the scale world: {obs!r}")


def _due_date(env: Any) -> dict[str, Any]:
    return {"due_date": env.state.rows("reminders", policy_id=env.task.params["policy_id"])[0]["due_date"]}


SCALE = Scaled(
    world={"generate": 3, "scale": 30},
    prepare=_three_approvals,
    paged=(
        Paged("list_reminders", "reminders", rows_where_args("reminders"), lambda env: {"status": "scheduled"},
              cursor="max", resorted=True, min_rows=51),
        Paged("list_reminders", "reminders", rows_where_args("reminders"), _due_date, cursor="max", resorted=True),
        Paged("list_instalments", "instalments", rows_where_args("instalments"), param("policy_id"), cursor="max", resorted=True),
        Paged("list_approvals", "approvals", rows_where_args("approvals"), param("policy_id"), min_rows=3),
    ),
    wrong=("collateral_change", "rounding_drift", "unneeded_approval", "reminder_on_cancelled"),
)
