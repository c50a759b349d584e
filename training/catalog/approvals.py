"""Catalog of the approvals domain: the approval desk as ``Discrete(18)`` actions.

The episode has the shape of the rule document ``get_rules`` returns:

1. read the request, its bands (the band holding the amount), the roles, and resolve the named
   approver (name *and* department) with ``find_people``;
2. check separation of duties (the requester; the reporting line from ``get_person`` when the
   band sets ``sod_not_in_requester_line``) and the authority rules of each of the approver's
   role assignments (``get_person``) and delegations received (``lookup_delegations``, every
   one): role_type, role_level, role_limit, window, revocation, delegator_holds (the holders of
   each delegated role: the *candidate roles*, holder slot ``i`` is the i-th by role id) and
   delegation_cap;
3. if they may not decide: ``escalate`` to the band's required role citing the band and the
   blocking fact (the request / the requester for separation of duties, else an assignment or
   delegation failing exactly one authority rule, else the approver);
4. otherwise their decision, citing the band and their authority: ``reject`` above the hard
   limit, ``hold`` when a required field is empty, else ``proceed`` and then the downstream
   release.

Features are facts read from tool results and the comparisons a clerk makes from them
(``over_hard_limit``, ``sod_breach``, ``authority_found``, ``no_usable_authority`` ...), up to
the procedure's conclusion so far (``procedure_reject`` / ``_hold`` / ``_escalate`` /
``_proceed``: which outcome the facts read so far establish, ``procedure_open`` while they
establish none).

The mask expresses **legality only**, never judgement. An action is masked only when

- its call cannot be formed from what was observed: a read whose argument is unknown (the
  rules before the request, ``get_person`` / ``lookup_delegations`` before the approver is
  resolved, a holder slot beyond the candidate roles), a decision before the band it must cite
  was read (``proceed`` / ``hold`` / ``reject`` also need the resolved approver, whose decision
  it is), a ledger entry without a beneficiary account, an order release without an order;
- it repeats a read whose answer is already known (a paginated read -- ``list_roles``,
  ``find_people``, ``lookup_role_holders`` -- stays available, asking for the next page, until
  its last page was read; in the released worlds every answer fits on one page);
- the tool is certain to refuse it, visibly: a second decision (the request is no longer
  open), a ledger entry for an order-type request (or a second one), an order release for a
  ledger-type request or of an order that is not awaiting approval (or already released);
- the work is visibly finished: after a recorded ``reject`` / ``hold`` / ``escalate``, or a
  ``proceed`` and its downstream release, only ``submit``.

So every decision is available as soon as it can be grounded, whatever the facts say: deciding
too early, on the wrong outcome, deciding without an authority to cite (the decision then cites
the band alone), escalating before the blocking fact is known (``escalate`` then cites the band
alone) or releasing money before a decision are the agent's mistakes to avoid, learned from
the features.

Rule-sharing policy: the catalog computes the rules with the domain's public rule helpers,
:mod:`backoffice.envs.approvals.rules` (band lookup, the authority rules of one entry, missing
fields, windows, ledger types, the blocking fact), shared with the oracle; it never imports the grader
nor :mod:`backoffice.envs.approvals.authority` (the grader's whole-snapshot verdict), and the
grader never imports the catalog.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np

from backoffice.envs.approvals.rules import (
    ORDER_TYPES,
    applicable_rule,
    authorising,
    blocking_choice,
    failed_checks,
    in_window,
    is_ledger_type,
    is_missing,
    line_breach,
    missing_fields,
    near_misses,
)
from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, slots

#: holder-lookup slots: the roles of the approver's delegations (three in the release)
N_ROLE_SLOTS = 5


ACTIONS: tuple[ActionDef, ...] = (
    ActionDef("get_request", "get_request", "Read the target request (brief's request_id)."),
    ActionDef("get_rules", "get_rules", "Read the rule document and the bands of the request's type (needs the request)."),
    ActionDef("list_roles", "list_roles", "Read every approval role (types covered, level, amount limit)."),
    ActionDef("find_people", "find_people", "Find the named approver by the brief's approver_name (matched with the department)."),
    ActionDef("get_person", "get_person", "Read the resolved approver's reporting line and role assignments (needs find_people)."),
    *slots("lookup_role_holders", "lookup_role_holders", N_ROLE_SLOTS,
           "Holders now of candidate role {i} (the {i}-th by id of the roles of the delegations the approver "
           "received: rule delegator_holds)."),
    ActionDef("lookup_delegations", "lookup_delegations",
              "Every delegation the resolved approver received, in effect or not (include_inactive; needs find_people)."),
    ActionDef("decide_reject", "record_decision",
              "Record the approver's outcome 'reject', citing the band and the authority found so far (the band alone while none)."),
    ActionDef("decide_hold", "record_decision",
              "Record the approver's outcome 'hold', citing the band and the authority found so far (the band alone while none)."),
    ActionDef("escalate", "escalate",
              "Escalate the request to the band's required_role_id, citing the band and the blocking fact found so "
              "far (the band alone while none)."),
    ActionDef("decide_proceed", "record_decision",
              "Record the approver's outcome 'proceed', citing the band and the authorising assignments or delegations "
              "found so far (the band alone while none was found)."),
    ActionDef("post_ledger_entry", "post_ledger_entry",
              "Post the ledger entry (beneficiary_account, full amount) of a refund / credit adjustment / write-off / expense "
              "claim (possible before a decision too: releasing before a valid proceed is a mistake)."),
    ActionDef("release_order", "release_order",
              "Release the request's order (purchase order / vendor payment); possible before a decision too."),
    ActionDef("submit", "submit", "Finish the episode."),
)

_INDEX = {a.name: i for i, a in enumerate(ACTIONS)}
A_REQUEST = _INDEX["get_request"]
A_RULES = _INDEX["get_rules"]
A_ROLES = _INDEX["list_roles"]
A_FIND = _INDEX["find_people"]
A_PERSON = _INDEX["get_person"]
A_HOLDERS = tuple(_INDEX[f"lookup_role_holders[{i}]"] for i in range(N_ROLE_SLOTS))
A_DELEG = _INDEX["lookup_delegations"]
A_REJECT = _INDEX["decide_reject"]
A_HOLD = _INDEX["decide_hold"]
A_ESCALATE = _INDEX["escalate"]
A_PROCEED = _INDEX["decide_proceed"]
A_LEDGER = _INDEX["post_ledger_entry"]
A_ORDER = _INDEX["release_order"]
A_SUBMIT = _INDEX["submit"]
DECISIONS = (A_REJECT, A_HOLD, A_ESCALATE, A_PROCEED)

FEATURES: tuple[FeatureDef, ...] = (
    # what has been read
    FeatureDef("request_read", "1 once get_request returned the target request"),
    FeatureDef("rules_read", "1 once get_rules returned the rule document and the band is known (the band holding the amount, "
               "rule band)"),
    FeatureDef("roles_read", "1 once list_roles returned the roles"),
    FeatureDef("approver_resolved", "1 once find_people returned exactly the person with the brief's approver_name and approver_department"),
    FeatureDef("approver_not_found", "1 if find_people returned no person with that name and department"),
    FeatureDef("person_read", "1 once get_person returned the approver's reporting line"),
    FeatureDef("delegations_read", "1 once lookup_delegations returned every delegation the approver received"),
    # the request
    FeatureDef("is_ledger_type", "1 if the request type is refund / credit_adjustment / write_off / expense_claim (released by post_ledger_entry)"),
    FeatureDef("is_order_type", "1 if the request type is purchase_order / vendor_payment (released by release_order)"),
    FeatureDef("amount_log", "log10(request amount in cents) / 10"),
    FeatureDef("amount_over_hard_limit_ratio", "(amount - the band's hard_limit) / hard_limit, clipped to [-1, 1] (0 until both read)"),
    FeatureDef("over_hard_limit", "1 if the request amount is above the band's hard_limit (rule hard_limit: reject)"),
    FeatureDef("missing_required_field", "1 if a field in the band's required_fields is empty on the request (rule required_fields: hold)"),
    FeatureDef("n_missing_fields", "number of required fields empty on the request / 4"),
    # separation of duties
    FeatureDef("approver_is_requester", "1 if the resolved approver's id is the request's requester_id"),
    FeatureDef("rule_sod_line", "1 if the band sets sod_not_in_requester_line"),
    FeatureDef("requester_in_line", "1 if the requester is in the approver's reporting_line (get_person)"),
    FeatureDef("line_breach", "1 if the band sets sod_not_in_requester_line and the requester is in the approver's reporting_line"),
    FeatureDef("sod_breach", "1 if approver_is_requester or line_breach (rules requester, reporting_line: the approver may not decide)"),
    FeatureDef("sod_checked", "1 once the separation-of-duties facts are known: request, band and approver read, and the "
               "reporting line read unless the band does not set sod_not_in_requester_line (or the approver is the requester)"),
    FeatureDef("sod_clear", "1 if sod_checked and not sod_breach"),
    # authority now
    FeatureDef("n_assignments", "role assignments of the approver (any window, get_person) / 5"),
    FeatureDef("assignment_candidate_now", "1 if an assignment of the approver in its window now has a role covering the request type"),
    FeatureDef("n_delegations_inactive", "delegations received by the approver not in their window or revoked now / 5"),
    FeatureDef("blocking_fact_found", "1 if the approver may not decide and the fact that blocks them is known (what escalate cites)"),
    FeatureDef("n_candidate_roles", "number of candidate roles: the roles of the delegations the approver received, whose holders "
               "rule delegator_holds reads (lookup slots, by role id) / 5"),
    FeatureDef("candidates_checked", "candidate roles whose holders were looked up / 5"),
    FeatureDef("candidates_unchecked", "candidate roles not yet looked up / 5"),
    FeatureDef("all_candidates_checked", "1 if the holders of every candidate role were looked up (and the delegations were read)"),
    FeatureDef("holds_candidate_role", "1 if an assignment of the approver passes every authority rule (role_type, role_level, "
               "role_limit, window)"),
    FeatureDef("n_delegations_received", "delegations received by the approver in their window and not revoked now / 5"),
    FeatureDef("delegation_candidate_role", "1 if a delegation received, in its window and not revoked, is for a role covering the "
               "type with level and amount limit enough"),
    FeatureDef("delegation_capped_below", "1 if such a delegation has a cap below the amount"),
    FeatureDef("delegation_unconfirmed", "1 if a delegation received awaits the lookup of its role's holders"),
    FeatureDef("delegation_usable", "1 if a delegation received passes every authority rule (its delegator among the role's holders)"),
    FeatureDef("authority_found", "1 if holds_candidate_role or delegation_usable (an authority id to cite)"),
    FeatureDef("authority_search_complete", "1 if authority_found, or the authority rules of every assignment and delegation are known"),
    FeatureDef("no_usable_authority", "1 if the search is complete and no authority was found (rule escalation)"),
    # the procedure's conclusion from the facts read so far (at most one is 1)
    FeatureDef("procedure_reject", "1 if sod_clear, authority_found and over_hard_limit (rule hard_limit)"),
    FeatureDef("procedure_hold", "1 if sod_clear, authority_found, not over_hard_limit and missing_required_field (rule required_fields)"),
    FeatureDef("procedure_escalate", "1 if request and band read and sod_breach, or no_usable_authority, or find_people found "
               "no such approver (rule escalation)"),
    FeatureDef("procedure_proceed", "1 if sod_clear, authority_found, within the hard limit and no required field missing (rule required_fields)"),
    FeatureDef("procedure_open", "1 if none of the four procedure_* conclusions holds yet (more reads are needed)"),
    # what has been written
    FeatureDef("decision_recorded", "1 once a decision (record_decision or escalate) on the request succeeded"),
    FeatureDef("decided_proceed", "1 if the recorded decision is proceed"),
    FeatureDef("decided_other", "1 if the recorded decision is hold, reject or escalate"),
    FeatureDef("downstream_done", "1 once the ledger entry was posted or the order released"),
    FeatureDef("downstream_due", "1 if decided_proceed and not downstream_done (the release is the remaining work)"),
    FeatureDef("last_write_error", "1 if the last writing call returned an error"),
)
_F = {f.name: i for i, f in enumerate(FEATURES)}

#: the note of each recorded outcome, and of an escalation
DECISION_NOTES = {"reject": "hard limit exceeded", "hold": "required information missing",
                  "proceed": "authority checked at decision time"}
ESCALATE_NOTE = "named approver may not decide this request"
#: the tools every tier grounds alike (:meth:`ApprovalsDesk._desk_call`)
DESK_TOOLS = frozenset({"get_request", "get_rules", "list_roles", "find_people", "post_ledger_entry", "release_order", "submit"})
WRITE_TOOLS = frozenset({"record_decision", "escalate", "post_ledger_entry", "release_order"})


class ApprovalsDesk(CatalogSpec):
    """What every approvals tier observes and grounds alike: the brief, the request and its
    order, the rule bands, the roles, the holders of roles and the approver's name search
    (every page), the decision and the downstream release. A tier adds whom the approver is,
    the citations and the features (:meth:`_observe_approver` and the abstract methods)."""

    domain = "approvals"

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params") or {}
        self.request_id: str | None = params.get("request_id")
        self.approver_name: str | None = params.get("approver_name")
        self.approver_dept: str | None = params.get("approver_department")
        self.request: dict[str, Any] | None = None
        self.order: dict[str, Any] | None = None
        self.now: str | None = None
        self.rules: list[dict[str, Any]] | None = None
        self.roles: list[dict[str, Any]] | None = None  # every page read
        self.find_done = False
        self.holders: dict[str, list[dict[str, Any]]] = {}  # role id -> holders now (every page read)
        # paginated reads under way: rows of the pages read so far and the next page's cursor
        self._roles_read: list[dict[str, Any]] = []
        self._roles_cursor: str | None = None
        self._find_cursor: str | None = None
        self._holders_read: dict[str, list[dict[str, Any]]] = {}
        self._holders_cursor: dict[str, str] = {}
        self._delegations_read: dict[str, list[dict[str, Any]]] = {}  # person id -> delegations read so far
        self._delegations_cursor: dict[str, str] = {}
        self.decision: str | None = None
        self.downstream_done = False
        self.last_write_error = False

    # -- derived facts ------------------------------------------------------------------------
    def _band(self) -> dict[str, Any] | None:
        """The applicable rule: the band holding the amount (the top band above every band)."""
        if not self.rules or self.request is None:
            return None
        # applicable_rule returns one of the rows it is given (self.rules' dicts), typed as Mapping
        return cast("dict[str, Any] | None", applicable_rule(self.rules, self.request["amount"]))

    def _in_window(self, row: dict[str, Any]) -> bool:
        return self.now is not None and in_window(row, self.now)

    def _finished(self) -> bool:
        """After a recorded reject / hold / escalate, or a proceed and its release."""
        return self.decision is not None and (self.decision != "proceed" or self.downstream_done)

    # -- grounding ----------------------------------------------------------------------------
    def _desk_call(self, tool: str) -> dict[str, Any] | None:
        """The call of a :data:`DESK_TOOLS` action (``None``: not groundable yet)."""
        req, rid = self.request, self.request_id
        if tool == "get_request":
            return None if rid is None else {"tool": "get_request", "args": {"request_id": rid}}
        if tool == "get_rules":
            return None if req is None else {"tool": "get_rules", "args": {"request_type": req["type"]}}
        if tool == "list_roles":
            return {"tool": "list_roles", "args": _after({}, self._roles_cursor)}
        if tool == "find_people":
            if not self.approver_name:
                return None
            return {"tool": "find_people", "args": _after({"name": self.approver_name}, self._find_cursor)}
        if tool == "post_ledger_entry":
            if req is None or is_missing(req.get("beneficiary_account")):
                return None
            return {"tool": "post_ledger_entry", "args": {"request_id": req["id"], "account": req["beneficiary_account"],
                                                          "amount": req["amount"], "memo": f"{req['type']} {req['id']}"}}
        if tool == "release_order":
            oid = (self.order or {}).get("id") or (req or {}).get("order_id")
            return None if not oid else {"tool": "release_order", "args": {"order_id": oid}}
        if tool == "submit":
            return {"tool": "submit", "args": {}}
        return None

    def _delegations_call(self, person_id: str | None) -> dict[str, Any] | None:
        if person_id is None:
            return None
        return {"tool": "lookup_delegations",
                "args": _after({"person_id": person_id, "include_inactive": True}, self._delegations_cursor.get(person_id))}

    def _take_delegations(self, person_id: str, res: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """Every delegation ``person_id`` received, once the last page of ``lookup_delegations``
        was read (``None`` while pages remain: the next call asks for the next one)."""
        self._delegations_read.setdefault(person_id, []).extend(res.get("delegations") or [])
        cursor = res.get("next_cursor")
        if cursor is not None:
            self._delegations_cursor[person_id] = cursor
            return None
        self._delegations_cursor.pop(person_id, None)
        return self._delegations_read.pop(person_id)

    def _holders_call(self, role_id: str | None) -> dict[str, Any] | None:
        if role_id is None:
            return None
        return {"tool": "lookup_role_holders", "args": _after({"role_id": role_id}, self._holders_cursor.get(role_id))}

    def _decision_call(self, outcome: str, approver_id: str, basis: list[str]) -> dict[str, Any]:
        return {"tool": "record_decision", "args": {"request_id": self.request_id, "outcome": outcome, "approver_id": approver_id,
                                                    "basis_ids": basis, "note": DECISION_NOTES[outcome]}}

    def _escalate_call(self, rule: dict[str, Any], basis: list[str]) -> dict[str, Any]:
        return {"tool": "escalate", "args": {"request_id": self.request_id, "role_id": rule["required_role_id"],
                                             "basis_ids": basis, "note": ESCALATE_NOTE}}

    # -- observing ----------------------------------------------------------------------------
    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = self.actions[action].tool
        ok = result.get("status") == "ok"
        res = result.get("result") if ok else None
        if tool in WRITE_TOOLS:
            self.last_write_error = not ok
        if not ok or not isinstance(res, dict):
            return
        args = call.get("args") or {}
        if tool == "get_request":
            self.request, self.order, self.now = res.get("request"), res.get("order"), res.get("now")
        elif tool == "get_rules":
            self._take_rules(list((res.get("tables") or {}).get("bands") or []))
        elif tool == "list_roles":
            self._roles_read.extend(res.get("roles") or [])
            self._roles_cursor = res.get("next_cursor")
            if self._roles_cursor is None:  # the last page: the roles are known
                self.roles = self._known_roles(self._roles_read)
        elif tool == "lookup_role_holders":
            role_id = args.get("role_id", "")
            self._holders_read.setdefault(role_id, []).extend(res.get("holders") or [])
            cursor = res.get("next_cursor")
            if cursor is None:  # the last page: the role's holders are known
                self.holders[role_id] = self._holders_read.pop(role_id)
                self._holders_cursor.pop(role_id, None)
            else:
                self._holders_cursor[role_id] = cursor
        elif tool in ("record_decision", "escalate"):
            self.decision = (res.get("decision") or {}).get("outcome")
        elif tool in ("post_ledger_entry", "release_order"):
            self.downstream_done = True
        else:
            self._observe_approver(tool, args, res)

    def _take_rules(self, rules: list[dict[str, Any]]) -> None:
        """Keep the rules ``get_rules`` returned."""
        self.rules = rules

    def _known_roles(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The roles once every page of ``list_roles`` was read."""
        return list(rows)

    def _observe_approver(self, tool: str, args: dict[str, Any], res: dict[str, Any]) -> None:
        """Take in a successful ``find_people`` / ``get_person`` / ``lookup_delegations``."""
        raise NotImplementedError

    # -- mask ---------------------------------------------------------------------------------
    def _desk_legal(self, tool: str) -> bool:
        """Whether a request / rules / roles read or a release is legal now (before the work is
        finished): a read once, once its argument is known; the request's own kind of release,
        once, whenever it can be grounded and is not visibly refused."""
        req = self.request
        if tool == "get_request":
            return req is None
        if tool == "get_rules":
            return req is not None and self.rules is None
        if tool == "list_roles":
            return self.roles is None
        if req is None or self.downstream_done:
            return False
        ledger = is_ledger_type(req["type"])
        if tool == "post_ledger_entry":
            return ledger and self._desk_call(tool) is not None
        awaiting = self.order is None or self.order.get("status") == "awaiting_approval"
        return tool == "release_order" and not ledger and awaiting and self._desk_call(tool) is not None


class ApprovalsCatalog(ApprovalsDesk):
    """The approval desk: reads, the four decisions and the downstream release."""

    actions = ACTIONS
    features = FEATURES
    max_steps = 30
    #: escalating right after the rules is correct ~48% of the time and ends the episode early, so
    #: with ent_coef 0.01 the policy settles there before any proceed (~10 reads, then the
    #: release) is ever completed; more entropy and longer rollouts keep exploring until it is
    #: (100% validation at 100k / 160k steps, seeds 0 / 1)
    hyperparams = {"ent_coef": 0.1, "n_steps": 128}

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        self.rule: dict[str, Any] | None = None
        self.approver_id: str | None = None
        self.line: list[str] | None = None
        self._find_hits: list[str] = []
        self.received_all: list[dict[str, Any]] | None = None  # every delegation received
        self.assignments: list[dict[str, Any]] | None = None

    # -- derived facts ------------------------------------------------------------------------
    def _candidates(self) -> list[str]:
        """The lookup slots: the roles of the delegations received, by role id (rule
        delegator_holds reads their holders)."""
        return sorted({d["role_id"] for d in self.received_all or []})

    @property
    def received(self) -> list[dict[str, Any]] | None:
        """Delegations received in their window and not revoked now."""
        if self.received_all is None:
            return None
        return [d for d in self.received_all if self._in_window(d)]

    def _failures(self) -> tuple[dict[str, list[str]], bool]:
        """The authority rules each assignment and delegation of the approver fails, for those
        whose rules are known (a delegation once its role's holders were looked up), and
        whether every one is known."""
        req, rule, now = self.request, self.rule, self.now
        if req is None or rule is None or now is None or self.roles is None or self.assignments is None:
            return {}, False
        by_id = {r["id"]: r for r in self.roles}
        out = {rh["id"]: failed_checks(rh, by_id.get(rh["role_id"]), req, rule, now, delegation=False)
               for rh in self.assignments}
        complete = self.received_all is not None
        for d in self.received_all or []:
            holders = self.holders.get(d["role_id"])
            if holders is None:
                complete = False
                continue
            out[d["id"]] = failed_checks(d, by_id.get(d["role_id"]), req, rule, now, delegation=True,
                                         delegator_holds=any(h["person_id"] == d["delegator_id"] for h in holders))
        return out, complete

    def _authority(self) -> list[str]:
        """Every assignment or delegation known to give authority, by id."""
        return authorising(self._failures()[0])

    def _search_complete(self) -> bool:
        """Authority found, or the rules of every assignment and delegation known."""
        failures, complete = self._failures()
        return bool(authorising(failures)) or complete

    def _no_usable_authority(self) -> bool:
        failures, complete = self._failures()
        return complete and not authorising(failures)

    def _blocking(self) -> str | None:
        """The fact that keeps the approver from deciding (what escalate cites), once known."""
        req = self.request
        if req is None or self.rule is None:
            return None
        if self._is_self() or self._line_breach():
            return blocking_choice(self._is_self(), self._line_breach(), req, [], self.approver_id)
        if not self._no_usable_authority():
            return None
        return blocking_choice(False, False, req, near_misses(self._failures()[0]), self.approver_id)

    def _missing_fields(self) -> int:
        if self.request is None or self.rule is None:
            return 0
        return len(missing_fields(self.request, self.rule))

    # -- the interface ------------------------------------------------------------------------
    def to_call(self, action: int) -> dict[str, Any] | None:
        rule = self.rule
        tool = ACTIONS[action].tool if 0 <= action < len(ACTIONS) else ""
        if tool in DESK_TOOLS:
            return self._desk_call(tool)
        if action == A_PERSON:
            return None if self.approver_id is None else {"tool": "get_person", "args": {"person_id": self.approver_id}}
        if action in A_HOLDERS:
            cands = self._candidates()
            i = A_HOLDERS.index(action)
            return self._holders_call(cands[i] if i < len(cands) else None)
        if action == A_DELEG:
            return self._delegations_call(self.approver_id)
        if action in (A_REJECT, A_HOLD, A_PROCEED):
            # well-formed as soon as the approver and the band are known: it cites the authority
            # found so far, or the band alone (a decision without authority is the agent's mistake)
            if self.request_id is None or rule is None or self.approver_id is None:
                return None
            outcome = {A_REJECT: "reject", A_HOLD: "hold", A_PROCEED: "proceed"}[action]
            return self._decision_call(outcome, self.approver_id, [rule["id"], *self._authority()])
        if action == A_ESCALATE:
            if self.request_id is None or rule is None:
                return None
            blocking = self._blocking()
            return self._escalate_call(rule, [rule["id"]] + ([blocking] if blocking is not None else []))
        return None

    def _take_rules(self, rules: list[dict[str, Any]]) -> None:
        self.rules = rules
        self.rule = self._band()

    def _observe_approver(self, tool: str, args: dict[str, Any], res: dict[str, Any]) -> None:
        if tool == "find_people":
            self._find_hits.extend(
                p["id"] for p in res.get("people") or []
                if p.get("name") == self.approver_name and p.get("department") == self.approver_dept
            )
            self._find_cursor = res.get("next_cursor")
            if self._find_cursor is None:  # every page read: resolved when exactly one matches
                self.find_done = True
                hits = sorted(self._find_hits)
                self.approver_id = hits[0] if len(hits) == 1 else None
        elif tool == "get_person":
            self.line = list(res.get("reporting_line") or [])
            self.assignments = list(res.get("assignments") or [])
        elif tool == "lookup_delegations" and isinstance(args.get("person_id"), str):
            self.received_all = self._take_delegations(args["person_id"], res)

    def mask(self) -> np.ndarray:
        """Legality only (see the module docstring): groundable, not a repeated read, not a
        visibly refused call, not after the work is finished."""
        m = np.zeros(len(ACTIONS), dtype=bool)
        m[A_SUBMIT] = True
        if self._finished():
            return m  # the work is finished: only submit
        # reads: each once, once its arguments are known; the downstream release: the request's
        # own kind, once, whenever it can be grounded
        for a in (A_REQUEST, A_RULES, A_ROLES, A_LEDGER, A_ORDER):
            m[a] = self._desk_legal(ACTIONS[a].tool)
        m[A_FIND] = not self.find_done
        m[A_PERSON] = self.approver_id is not None and self.line is None
        cands = self._candidates()
        for i, a in enumerate(A_HOLDERS):
            m[a] = i < len(cands) and cands[i] not in self.holders
        m[A_DELEG] = self.approver_id is not None and self.received_all is None
        # decisions: one per request (a second one is refused), once the band to cite is known;
        # a decision in the approver's name also needs the approver
        if self.decision is None and self.request is not None and self.rule is not None:
            m[A_ESCALATE] = True
            m[A_REJECT] = m[A_HOLD] = m[A_PROCEED] = self.approver_id is not None
        return m

    def _line_breach(self) -> bool:
        return (self.request is not None and self.rule is not None and self.line is not None
                and line_breach(self.rule, self.request, self.line))

    def _is_self(self) -> bool:
        return self.request is not None and self.approver_id is not None and self.request["requester_id"] == self.approver_id

    def _sod_breach(self) -> bool:
        return self._is_self() or self._line_breach()

    def _sod_checked(self) -> bool:
        if self.request is None or self.rule is None or self.approver_id is None:
            return False
        return self._sod_breach() or not self.rule["sod_not_in_requester_line"] or self.line is not None

    def _conclusion(self) -> str | None:
        """The outcome the facts read so far establish (the rule document), or ``None``."""
        req, rule = self.request, self.rule
        if req is None or rule is None:
            return None
        if self._sod_breach() or self._no_usable_authority() or (self.find_done and self.approver_id is None):
            return "escalate"
        if not (self._sod_checked() and self._authority()):
            return None
        if req["amount"] > rule["hard_limit"]:
            return "reject"
        if self._missing_fields() > 0:
            return "hold"
        return "proceed"

    def feature_vector(self) -> np.ndarray:
        req, rule = self.request, self.rule
        f = np.zeros(len(FEATURES), dtype=np.float32)

        def put(name: str, value: float | bool) -> None:
            f[_F[name]] = float(value)

        put("request_read", req is not None)
        put("rules_read", rule is not None)
        put("roles_read", self.roles is not None)
        put("approver_resolved", self.approver_id is not None)
        put("approver_not_found", self.find_done and self.approver_id is None)
        put("person_read", self.line is not None)
        put("delegations_read", self.received_all is not None)
        if req is not None:
            put("is_ledger_type", is_ledger_type(req["type"]))
            put("is_order_type", req["type"] in ORDER_TYPES)
            put("amount_log", min(1.0, math.log10(max(1, req["amount"])) / 10))
            if self.approver_id is not None:
                put("approver_is_requester", req["requester_id"] == self.approver_id)
        if req is not None and rule is not None:
            hard = rule["hard_limit"]
            put("amount_over_hard_limit_ratio", max(-1.0, min(1.0, (req["amount"] - hard) / max(1, hard))))
            put("over_hard_limit", req["amount"] > hard)
            n_missing = self._missing_fields()
            put("missing_required_field", n_missing > 0)
            put("n_missing_fields", min(1.0, n_missing / 4))
        if rule is not None:
            put("rule_sod_line", bool(rule["sod_not_in_requester_line"]))
        if req is not None and self.line is not None:
            put("requester_in_line", req["requester_id"] in self.line)
        put("line_breach", self._line_breach())
        put("sod_breach", self._sod_breach())
        put("sod_checked", self._sod_checked())
        put("sod_clear", self._sod_checked() and not self._sod_breach())
        conclusion = self._conclusion()
        for outcome in ("reject", "hold", "escalate", "proceed"):
            put(f"procedure_{outcome}", conclusion == outcome)
        put("procedure_open", conclusion is None)
        cands = self._candidates()
        checked = sum(1 for r in cands if r in self.holders)
        put("n_candidate_roles", len(cands) / N_ROLE_SLOTS)
        put("candidates_checked", checked / N_ROLE_SLOTS)
        put("candidates_unchecked", (len(cands) - checked) / N_ROLE_SLOTS)
        put("all_candidates_checked", self.received_all is not None and checked == len(cands))
        failures, _ = self._failures()
        assignment_ids = {rh["id"] for rh in self.assignments or []}
        put("holds_candidate_role", any(not failures.get(i, ["?"]) for i in assignment_ids))
        put("n_delegations_received", min(1.0, len(self.received or []) / 5))
        put("n_assignments", min(1.0, len(self.assignments or []) / 5))
        roles = {r["id"]: r for r in self.roles or []}
        if req is not None:
            put("assignment_candidate_now", any(
                self._in_window(rh) and req["type"] in roles.get(rh["role_id"], {}).get("request_types", ())
                for rh in self.assignments or []))
        put("n_delegations_inactive", min(1.0, (len(self.received_all or []) - len(self.received or [])) / 5))
        put("blocking_fact_found", conclusion == "escalate" and self._blocking() is not None)
        if req is not None and rule is not None:
            sufficient = [d for d in self.received or [] if (role := roles.get(d["role_id"])) is not None
                          and req["type"] in role["request_types"] and role["level"] >= rule["required_level"]
                          and role["amount_limit"] >= req["amount"]]
            put("delegation_candidate_role", bool(sufficient))
            put("delegation_capped_below", any(d["cap"] is not None and d["cap"] < req["amount"] for d in sufficient))
        put("delegation_unconfirmed", any(d["role_id"] not in self.holders for d in self.received_all or []))
        put("delegation_usable", any(not failures.get(d["id"], ["?"]) for d in self.received_all or []))
        put("authority_found", bool(authorising(failures)))
        put("authority_search_complete", self._search_complete())
        put("no_usable_authority", self._no_usable_authority())
        put("decision_recorded", self.decision is not None)
        put("decided_proceed", self.decision == "proceed")
        put("decided_other", self.decision is not None and self.decision != "proceed")
        put("downstream_done", self.downstream_done)
        put("downstream_due", self.decision == "proceed" and not self.downstream_done)
        put("last_write_error", self.last_write_error)
        return f


def _after(args: dict[str, Any], cursor: str | None) -> dict[str, Any]:
    """``args`` of a paginated read, with the cursor of the next page once one was returned."""
    return args if cursor is None else {**args, "cursor": cursor}


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """The desk procedure as a decision list over features (and the mask): release after a
    proceed; decide as soon as the facts establish an outcome; otherwise the next read."""
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}
    decide = (("procedure_reject", "decide_reject"), ("procedure_hold", "decide_hold"),
              ("procedure_escalate", "escalate"), ("procedure_proceed", "decide_proceed"))
    reads = ("get_request", "get_rules", "list_roles", "find_people", "get_person",
             *(f"lookup_role_holders[{i}]" for i in range(N_ROLE_SLOTS)), "lookup_delegations")

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(name: str) -> bool:
            return bool(obs[idx[name]] > 0.5)

        if on("downstream_due"):
            return act["post_ledger_entry"] if on("is_ledger_type") else act["release_order"]
        if on("decision_recorded"):
            return act["submit"]
        for flag, action in decide:
            if on(flag):
                return act[action]
        for read in reads:
            if mask[act[read]]:
                return act[read]
        return act["submit"]

    return policy


#: the catalog's feature tiers (``backoffice.training.catalog.TIERS``): this module's catalog is the
#: ``conclusions`` tier; ``facts`` and ``raw`` live in :mod:`.approvals_tiers` (named, not imported)
TIERS = {
    "conclusions": "ApprovalsCatalog",
    "facts": "backoffice.training.catalog.approvals_tiers:ApprovalsFactsCatalog",
    "raw": "backoffice.training.catalog.approvals_tiers:ApprovalsRawCatalog",
}


__all__ = ["TIERS", "ApprovalsCatalog", "feature_policy"]
