"""The refunds catalog env for stable-baselines3 (``backoffice/Refunds-Catalog-v0``).

One desk (what was read: the customer's requests, the one on the brief's order, the desk's
rule values, the decisions sent), one registry of named features and one of actions, one tier
(``conclusions``). The mask is legality only: a decision needs the request found (an approval
of the amount due also needs the rules read); a decided request may be decided again (the
grader judges that, not the mask). Add a ``facts`` or ``raw`` tier as another declaration over
the same registries (docs/CATALOG.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from backoffice.envs.refunds.tables import available_cents, decide, fee_multiple, past_window
from backoffice.training.catalog.base import CatalogAgent, scale
from backoffice.training.catalog.features import Actions, Desk, Features
from backoffice.training.catalog.tier import DomainCatalog, Hyper, Tier

#: cents: the scale of amount features
FULL_AMOUNT = 100_000


class RefundsDesk(Desk):
    """What the agent has read of its task."""

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params", {})
        self.customer, self.order_id = str(params.get("customer", "")), str(params.get("order_id", ""))
        self.rows: list[dict[str, Any]] = []
        self.listed = False  # every page of the customer's requests read
        self.cursor: str | None = None
        self.target: dict[str, Any] | None = None
        self.desk: dict[str, Any] | None = None
        self.decisions = 0

    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:
        if result.get("status") != "ok":
            return
        out = result["result"]
        if call["tool"] == "list_requests":
            self.rows.extend(out["requests"])
            self.cursor = out["next_cursor"]
            self.listed = self.cursor is None
            self.target = next((r for r in self.rows if r["order_id"] == self.order_id), None)
        elif call["tool"] == "get_rules":
            value = {r["id"]: r.get("value") for r in out["rules"]}
            self.desk = {"restocking_pct": value["restocking_fee"], "double_from": value["late_fee"]["double_from"],
                         "triple_from": value["late_fee"]["triple_from"], "last_day": value["late_window"]}
        elif call["tool"] == "decide_refund":
            self.decisions += 1

    def regime(self) -> int:
        """0 until the request and the rules are read; then 1, 2 or 3 (the fee's multiple), 4 past the window."""
        if self.target is None or self.desk is None:
            return 0
        days = int(self.target["days_since_delivery"])
        return 4 if past_window(days, self.desk) else fee_multiple(days, self.desk)


FEATURES: Features[RefundsDesk] = Features()
ACTIONS: Actions[RefundsDesk] = Actions()


@FEATURES.feature("requests_listed", "1 once every page of the customer's requests was read")
def requests_listed(desk: RefundsDesk) -> float:
    return float(desk.listed)


@FEATURES.feature("request_found", "1 once the request on the brief's order was listed")
def request_found(desk: RefundsDesk) -> float:
    return float(desk.target is not None)


@FEATURES.feature("rules_read", "1 once get_rules returned the desk's rules")
def rules_read(desk: RefundsDesk) -> float:
    return float(desk.desk is not None)


@FEATURES.feature("asked", "amount asked / 1000.00")
def asked(desk: RefundsDesk) -> float:
    return scale(desk.target["amount_cents"], FULL_AMOUNT) if desk.target else 0.0


@FEATURES.feature("asks_more_than_covered", "1 if the amount asked exceeds paid - refunded")
def asks_more_than_covered(desk: RefundsDesk) -> float:
    return float(desk.target is not None and desk.target["amount_cents"] > available_cents(desk.target))


@FEATURES.feature("fee_pct", "the desk's restocking fee percent / 50")
def fee_pct(desk: RefundsDesk) -> float:
    return scale(desk.desk["restocking_pct"], 50) if desk.desk else 0.0


@FEATURES.block([("fee_once", "1 if the fee applies once (request and rules read)"),
                 ("fee_twice", "1 if the fee doubles on this request's day"),
                 ("fee_thrice", "1 if the fee triples on this request's day"),
                 ("past_window", "1 if the request is past the desk's last day")])
def regime(desk: RefundsDesk) -> list[float]:
    r = desk.regime()
    return [float(r == k) for k in (1, 2, 3, 4)]


@FEATURES.feature("decisions", "successful decisions sent / 2")
def decisions(desk: RefundsDesk) -> float:
    return scale(desk.decisions, 2)


def _decision(desk: RefundsDesk, outcome: str, amount: int) -> dict[str, Any] | None:
    if desk.target is None:
        return None
    return {"tool": "decide_refund", "args": {"request_id": desk.target["id"], "outcome": outcome, "amount_cents": max(0, amount)}}


@ACTIONS.action("list_requests", "list_requests", "List the customer's requests (the next page while one is left).",
                legal=lambda desk: not desk.listed)
def list_requests(desk: RefundsDesk) -> dict[str, Any]:
    return {"tool": "list_requests", "args": {"customer": desk.customer, **({"cursor": desk.cursor} if desk.cursor else {})}}


@ACTIONS.action("get_rules", "get_rules", "Read the desk's refund rules.", legal=lambda desk: desk.desk is None)
def get_rules(desk: RefundsDesk) -> dict[str, Any]:
    return {"tool": "get_rules", "args": {}}


@ACTIONS.action("approve_due", "decide_refund", "Approve what the desk's rules give: the capped amount less the fee.",
                legal=lambda desk: desk.target is not None and desk.desk is not None)
def approve_due(desk: RefundsDesk) -> dict[str, Any] | None:
    if desk.target is None or desk.desk is None:
        return None
    _, amount = decide(desk.target, {**desk.desk, "last_day": 10**6})  # the amount, were it approved
    return _decision(desk, "approve", amount)


@ACTIONS.action("approve_asked", "decide_refund", "Approve the amount asked.", legal=lambda desk: desk.target is not None)
def approve_asked(desk: RefundsDesk) -> dict[str, Any] | None:
    return _decision(desk, "approve", int(desk.target["amount_cents"])) if desk.target else None


@ACTIONS.action("approve_covered", "decide_refund", "Approve min(asked, paid - refunded), no fee.",
                legal=lambda desk: desk.target is not None)
def approve_covered(desk: RefundsDesk) -> dict[str, Any] | None:
    t = desk.target
    return _decision(desk, "approve", min(int(t["amount_cents"]), available_cents(t))) if t else None


@ACTIONS.action("reject", "decide_refund", "Reject the request (amount 0).", legal=lambda desk: desk.target is not None)
def reject(desk: RefundsDesk) -> dict[str, Any] | None:
    return _decision(desk, "reject", 0)


@ACTIONS.action("submit", "submit", "Finish the task.")
def submit(desk: RefundsDesk) -> dict[str, Any]:
    return {"tool": "submit", "args": {}}


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """List -> read the rules -> reject past the window, else approve what is due -> submit."""
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        if mask[act["list_requests"]]:
            return act["list_requests"]
        if obs[idx["request_found"]] < 0.5:
            return agent.finish
        if mask[act["get_rules"]]:
            return act["get_rules"]
        if obs[idx["decisions"]] > 0:
            return agent.finish
        return act["reject" if obs[idx["past_window"]] > 0.5 else "approve_due"]

    return policy


CONCLUSIONS = Tier(
    "conclusions",
    features=("requests_listed", "request_found", "rules_read", "asked", "asks_more_than_covered", "fee_pct",
              "fee_once", "fee_twice", "fee_thrice", "past_window", "decisions"),
    actions=("list_requests", "get_rules", "approve_due", "approve_asked", "approve_covered", "reject", "submit"),
    hyperparams={"gamma": Hyper(0.95, "episodes are four or five calls long"),
                 "timesteps": Hyper(50_000, "the conclusions tier is learnt well within it")},
    feature_policy=feature_policy,
)

CATALOG = DomainCatalog("refunds", RefundsDesk, FEATURES, ACTIONS, {"conclusions": CONCLUSIONS})
