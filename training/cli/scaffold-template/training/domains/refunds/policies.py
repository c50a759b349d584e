"""Policies of the refunds domain: the oracle, one wrong policy per failure code, blind
policies, one rule policy per documented rule and the exploit table.

The oracle reads only tool results and applies the public rules
(``backoffice.envs.refunds.tables.decide``); it never imports the grader.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from backoffice.envs.refunds.tables import RULES, available_cents, decide
from backoffice.training.integrity.exploits import Hook, boundary_write, repeat_last_write
from backoffice.training.integrity.scale import Paged, Scaled, rows_where_args
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call, every_page

Row = Mapping[str, Any]


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the customer's requests): what the integrity probes give an
    attacker besides the brief."""
    return [call("list_requests", customer=brief["params"]["customer"])]


class Oracle(ScriptedPolicy):
    """List the customer's requests, find the one on the brief's order, read the desk's rules,
    decide once, submit."""

    name = "oracle"
    #: rules of ``RULES`` this policy leaves out (the rule policies set it)
    ignore: Collection[str] = ()

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        rows = yield from every_page("list_requests", "requests", customer=params["customer"])
        target = self.pick(rows, params["order_id"])
        if target is None:
            return
        rules = yield call("get_rules")
        if rules.get("status") != "ok":
            return
        desk = desk_values(rules["result"])
        outcome, amount = self.decide(target, desk)
        yield call("decide_refund", request_id=target["id"], outcome=outcome, amount_cents=amount)
        yield from self.after(rows, target, outcome, amount)

    def pick(self, rows: Sequence[Row], order_id: str) -> Row | None:
        return next((r for r in rows if r["order_id"] == order_id), None)

    def decide(self, row: Row, desk: Row) -> tuple[str, int]:
        return decide(row, desk, ignore=self.ignore)

    def after(self, rows: Sequence[Row], target: Row, outcome: str, amount: int) -> Plan:
        """Calls after the decision (none: the oracle submits)."""
        return
        yield {}


def desk_values(document: Mapping[str, Any]) -> dict[str, Any]:
    """The desk's rule values, read from its rule document (``get_rules``)."""
    value = {r["id"]: r.get("value") for r in document["rules"]}
    return {"restocking_pct": value["restocking_fee"], "double_from": value["late_fee"]["double_from"],
            "triple_from": value["late_fee"]["triple_from"], "last_day": value["late_window"]}


# -- one wrong policy per failure code --------------------------------------------------------
class WrongAmount(Oracle):
    """Approves one cent more than due (and approves what must be rejected)."""

    def decide(self, row: Row, desk: Row) -> tuple[str, int]:
        outcome, amount = super().decide(row, desk)
        return ("approve", amount + 1) if outcome == "approve" else ("approve", max(1, available_cents(row)))


class ExtraDecision(Oracle):
    """Sends the right decision twice."""

    def after(self, rows: Sequence[Row], target: Row, outcome: str, amount: int) -> Plan:
        yield call("decide_refund", request_id=target["id"], outcome=outcome, amount_cents=amount)


class ForbiddenWrite(Oracle):
    """Decides its request right, then also rejects another request of the customer."""

    def after(self, rows: Sequence[Row], target: Row, outcome: str, amount: int) -> Plan:
        other = next(r for r in rows if r["id"] != target["id"])
        yield call("decide_refund", request_id=other["id"], outcome="reject", amount_cents=0)


WRONG_POLICIES: dict[str, type[Policy]] = {
    "wrong_amount": WrongAmount, "extra_decision": ExtraDecision, "forbidden_write": ForbiddenWrite,
}


# -- blind policies (tests/integrity/test_integrity.py: each passes <= 10 % of heldout) -----------------
class _Blind(Oracle):
    """Finds the request as the oracle does, then decides without the desk's rules."""

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        params = brief["params"]
        rows = yield from every_page("list_requests", "requests", customer=params["customer"])
        target = self.pick(rows, params["order_id"])
        if target is not None:
            outcome, amount = self.choose(target)
            yield call("decide_refund", request_id=target["id"], outcome=outcome, amount_cents=amount)

    def choose(self, row: Row) -> tuple[str, int]:  # pragma: no cover - interface
        raise NotImplementedError


class ApproveAsAsked(_Blind):
    def choose(self, row: Row) -> tuple[str, int]:
        return "approve", int(row["amount_cents"])


class RejectAll(_Blind):
    def choose(self, row: Row) -> tuple[str, int]:
        return "reject", 0


class ApproveCappedNoFee(_Blind):
    def choose(self, row: Row) -> tuple[str, int]:
        return "approve", max(0, min(int(row["amount_cents"]), available_cents(row)))


class ApproveLessTenPercent(_Blind):
    """A fee guessed, not read: 10 % of the capped amount."""

    def choose(self, row: Row) -> tuple[str, int]:
        base = max(0, min(int(row["amount_cents"]), available_cents(row)))
        return "approve", base - base * 10 // 100


class RejectTheFirstListed(ScriptedPolicy):
    """Acts without reading the request: rejects the customer's first listed request."""

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        got = yield call("list_requests", customer=brief["params"]["customer"])
        rows = got.get("result", {}).get("requests", []) if got.get("status") == "ok" else []
        if rows:
            yield call("decide_refund", request_id=rows[0]["id"], outcome="reject", amount_cents=0)


BLIND_POLICIES: dict[str, type[Policy]] = {
    "approve_as_asked": ApproveAsAsked, "reject_all": RejectAll, "approve_capped_no_fee": ApproveCappedNoFee,
    "approve_less_ten_percent": ApproveLessTenPercent, "reject_the_first_listed": RejectTheFirstListed,
}


# -- rule policies: the oracle ignoring one documented rule (each must fail >= 20 tasks) -------
def _ignoring(rule: str) -> type[Policy]:
    return type(f"Ignore_{rule}", (Oracle,), {"ignore": (rule,), "__doc__": f"The oracle ignoring {rule}."})


RULE_POLICIES: dict[str, type[Policy]] = {rule: _ignoring(rule) for rule in RULES}


# -- exploits (backoffice.training.integrity.exploits): the oracle plus one injected call -----
def _decision(trace: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for rec in reversed(trace):
        if rec["tool"] == "decide_refund" and rec["result_status"] == "ok":
            return rec
    return None


def flip_decision(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before submit, a second decision on the request with the other outcome."""
    rec = _decision(trace) if action.get("tool") == "submit" else None
    if rec is None:
        return []
    args = rec["args"]
    if args["outcome"] == "approve":
        return [call("decide_refund", request_id=args["request_id"], outcome="reject", amount_cents=0)]
    return [call("decide_refund", request_id=args["request_id"], outcome="approve", amount_cents=1_000)]


def decide_neighbour(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before submit, a decision on another request the customer's list showed."""
    rec = _decision(trace) if action.get("tool") == "submit" else None
    if rec is None:
        return []
    listed = [r["id"] for t in trace if t["tool"] == "list_requests" and t["result_status"] == "ok"
              for r in t["result"]["requests"]]
    other = next((i for i in listed if i != rec["args"]["request_id"]), None)
    return [] if other is None else [call("decide_refund", request_id=other, outcome="reject", amount_cents=0)]


EXPLOITS: dict[str, Hook | None] = {
    "extra_decision": flip_decision,
    "extra_request": decide_neighbour,
    "repeated_write": repeat_last_write,  # the same decision again: a second decision
    "boundary_values": boundary_write,  # amount 0 (or -1, refused as invalid_args)
    # not applicable: the only write is a decision, and re-sending the same decision is itself
    # a second decision (graded extra_decision), so no write can preserve the graded value
    "value_preserving_update": None,
    # not applicable: every graded value is an integer amount or an enumerated outcome; there
    # is no normalised free-text field to format differently
    "formatting_only": None,
}


# -- scale (tests/integrity/test_scale.py): the paginated tools, read in a world ten times the size --------
def _busiest_customer(env: Any) -> dict[str, Any]:
    customers = sorted({r["customer"] for r in env.state.iter_rows("requests")})
    return {"customer": max(customers, key=lambda c: env.state.count("requests", customer=c))}


SCALE = Scaled(
    world={"generate": 1, "scale": 30},
    paged=(Paged("list_requests", "requests", rows_where_args("requests"), _busiest_customer),),
    wrong=("wrong_amount", "forbidden_write"),
)
