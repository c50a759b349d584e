"""The approvals catalog's observation state, the **desk**: what every tier has read, how a call is
grounded from it and when a call is legal.

The desk keeps the tool results as the tools returned them, tier-neutral: the brief, the request
and its order, the rule bands (by ``min_amount``), the roles (by id), the people ``find_people``
returned, each file ``get_person`` opened (the last one is the person **on file**), the
delegations each person received, the holders of each role looked up, the decision and the
downstream release. Paginated reads (``list_roles``, ``find_people``, ``lookup_role_holders``,
``lookup_delegations``) are known once their last page was read; until then the next call asks
for the next page.

Two readings of "whose authority" sit side by side, one per kind of tier:

- the **approver** (``conclusions``): the one person ``find_people`` returned with the brief's
  name *and* department, once every page was read; their file, their delegations, the
  *candidate roles* (the roles of those delegations, whose holders rule delegator_holds reads)
  and what the rule document concludes from them (:meth:`ApprovalsDesk.failures`,
  :meth:`~ApprovalsDesk.conclusion`, :meth:`~ApprovalsDesk.blocking`);
- the **person on file** (``facts``, ``raw``): whoever the agent opened last; their row slots
  (:meth:`ApprovalsDesk.rows`).

Rule-sharing policy: the desk computes the rules with the domain's public rule helpers,
:mod:`backoffice.envs.approvals.rules` (band lookup, the authority rules of one entry, missing
fields, windows, ledger types, the blocking fact), shared with the oracle; it never imports the
grader nor :mod:`backoffice.envs.approvals.authority` (the grader's whole-snapshot verdict), and
the grader never imports the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from backoffice.envs.approvals.rules import (
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
from backoffice.training.catalog.features import Desk, derived

Row = dict[str, Any]

#: candidate-role slots (conclusions): the roles of the approver's delegations (three in the release)
N_CANDIDATES = 5
#: person slots: the people ``find_people`` returns for the approver's name (1-2 in the release)
N_PEOPLE = 3
#: band slots (raw): a request type's rules by min_amount (2-3 in the release)
N_BANDS = 3
#: row slots: the on-file person's assignments then received delegations (at most 6 in the release)
N_ROWS = 6
#: role slots (raw): the roles by id (9 in every released world)
N_ROLES = 9
#: the outcomes ``record_decision`` records (an escalation is its own tool)
OUTCOMES = ("reject", "hold", "proceed")
#: the note of each recorded outcome, and of an escalation
DECISION_NOTES = {"reject": "hard limit exceeded", "hold": "required information missing",
                  "proceed": "authority checked at decision time"}
ESCALATE_NOTE = "named approver may not decide this request"
WRITE_TOOLS = frozenset({"record_decision", "escalate", "post_ledger_entry", "release_order"})


def _after(args: dict[str, Any], cursor: str | None) -> dict[str, Any]:
    """``args`` of a paginated read, with the cursor of the next page once one was returned."""
    return args if cursor is None else {**args, "cursor": cursor}


class ApprovalsDesk(Desk):
    """What the agent has read at the approval desk (see the module docstring)."""

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params") or {}
        self.request_id: str | None = params.get("request_id")
        self.approver_name: str | None = params.get("approver_name")
        self.approver_dept: str | None = params.get("approver_department")
        self.request: Row | None = None
        self.order: Row | None = None
        self.now: str | None = None
        self.rules: list[Row] | None = None  # the bands of the request's type, by min_amount
        self.roles: list[Row] | None = None  # every page read, by id
        self.people: list[Row] = []  # find_people rows, the pages read so far
        self.find_done = False
        #: the one person returned with the brief's name and department, once every page was read
        self.approver_id: str | None = None
        self.files: dict[str, Row] = {}  # person id -> reporting line and assignments (get_person)
        self.on_file: str | None = None  # the person get_person opened last
        self.delegations_of: str | None = None  # the person lookup_delegations read last
        #: person id -> every delegation they received, in effect or not (``None`` while pages remain)
        self.received: dict[str, list[Row] | None] = {}
        self.holders: dict[str, list[Row]] = {}  # role id -> holders now (every page read)
        self.decision: str | None = None
        self.downstream_done = False
        self.last_write_error = False
        # paginated reads under way: rows of the pages read so far and the next page's cursor
        self._roles_read: list[Row] = []
        self._roles_cursor: str | None = None
        self._find_cursor: str | None = None
        self._holders_read: dict[str, list[Row]] = {}
        self._holders_cursor: dict[str, str] = {}
        self._delegations_read: dict[str, list[Row]] = {}
        self._delegations_cursor: dict[str, str] = {}

    # -- observing ----------------------------------------------------------------------------
    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = call.get("tool")
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
            self.rules = sorted((res.get("tables") or {}).get("bands") or [], key=lambda r: r["min_amount"])
        elif tool == "list_roles":
            self._roles_read.extend(res.get("roles") or [])
            self._roles_cursor = res.get("next_cursor")
            if self._roles_cursor is None:  # the last page: the roles are known
                self.roles = sorted(self._roles_read, key=lambda r: r["id"])
        elif tool == "find_people":
            self.people.extend(res.get("people") or [])
            self._find_cursor = res.get("next_cursor")
            self.find_done = self._find_cursor is None
            if self.find_done:  # every page read: the approver is resolved when exactly one matches
                hits = sorted(p["id"] for p in self.people
                              if p.get("name") == self.approver_name and p.get("department") == self.approver_dept)
                self.approver_id = hits[0] if len(hits) == 1 else None
        elif tool == "get_person":
            pid = args.get("person_id")
            if isinstance(pid, str):
                self.files[pid] = {"line": list(res.get("reporting_line") or []), "assignments": list(res.get("assignments") or [])}
                self.on_file = pid
        elif tool == "lookup_delegations":
            pid = args.get("person_id")
            if isinstance(pid, str):
                self.received[pid] = self._take_delegations(pid, res)
                self.delegations_of = pid
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

    def _take_delegations(self, person_id: str, res: Mapping[str, Any]) -> list[Row] | None:
        """Every delegation ``person_id`` received, once the last page of ``lookup_delegations``
        was read (``None`` while pages remain: the next call asks for the next one)."""
        self._delegations_read.setdefault(person_id, []).extend(res.get("delegations") or [])
        cursor = res.get("next_cursor")
        if cursor is not None:
            self._delegations_cursor[person_id] = cursor
            return None
        self._delegations_cursor.pop(person_id, None)
        return self._delegations_read.pop(person_id)

    # -- what every tier reads alike ------------------------------------------------------------
    @derived
    def band(self) -> Row | None:
        """The applicable rule, the one every decision and escalation cites: the band holding
        the amount (the top band above every band)."""
        if not self.rules or self.request is None:
            return None
        # applicable_rule returns one of the rows it is given, typed as Mapping
        return cast("Row | None", applicable_rule(self.rules, self.request["amount"]))

    @derived
    def roles_by_id(self) -> dict[str, Row]:
        return {r["id"]: r for r in self.roles or []}

    def in_window(self, row: Row) -> bool:
        """In its window today and not revoked now."""
        return self.now is not None and in_window(row, self.now)

    def finished(self) -> bool:
        """After a recorded reject / hold / escalate, or a proceed and its release: only submit."""
        return self.decision is not None and (self.decision != "proceed" or self.downstream_done)

    def n_missing_fields(self) -> int:
        """The band's required fields empty on the request (0 until both are read)."""
        band = self.band()
        if self.request is None or band is None:
            return 0
        return len(missing_fields(self.request, band))

    # -- the approver (conclusions) -------------------------------------------------------------
    def approver_file(self) -> Row | None:
        """The approver's file: the one ``get_person`` opened last (the conclusions tier opens the
        resolved approver's only, so it stays theirs if a repeated search unsettles the name)."""
        return None if self.on_file is None else self.files.get(self.on_file)

    def approver_line(self) -> list[str] | None:
        file = self.approver_file()
        return None if file is None else cast("list[str]", file["line"])

    def approver_assignments(self) -> list[Row] | None:
        file = self.approver_file()
        return None if file is None else cast("list[Row]", file["assignments"])

    def approver_delegations(self) -> list[Row] | None:
        """Every delegation the approver received, in effect or not (``None`` until read): those
        ``lookup_delegations`` read last (the conclusions tier reads the resolved approver's only)."""
        return None if self.delegations_of is None else self.received.get(self.delegations_of)

    def approver_delegations_now(self) -> list[Row] | None:
        """The approver's delegations in their window and not revoked now."""
        received = self.approver_delegations()
        return None if received is None else [d for d in received if self.in_window(d)]

    @derived
    def candidates(self) -> list[str]:
        """The candidate roles: the roles of the approver's delegations, by role id (rule
        delegator_holds reads their holders)."""
        return sorted({d["role_id"] for d in self.approver_delegations() or []})

    @derived
    def failures(self) -> tuple[dict[str, list[str]], bool]:
        """The authority rules each assignment and delegation of the approver fails, for those
        whose rules are known (a delegation once its role's holders were looked up), and
        whether every one is known."""
        req, rule, now, assignments = self.request, self.band(), self.now, self.approver_assignments()
        if req is None or rule is None or now is None or self.roles is None or assignments is None:
            return {}, False
        by_id = self.roles_by_id()
        out = {rh["id"]: failed_checks(rh, by_id.get(rh["role_id"]), req, rule, now, delegation=False) for rh in assignments}
        received = self.approver_delegations()
        complete = received is not None
        for d in received or []:
            holders = self.holders.get(d["role_id"])
            if holders is None:
                complete = False
                continue
            out[d["id"]] = failed_checks(d, by_id.get(d["role_id"]), req, rule, now, delegation=True,
                                         delegator_holds=any(h["person_id"] == d["delegator_id"] for h in holders))
        return out, complete

    def authority(self) -> list[str]:
        """Every assignment or delegation known to give the approver authority, by id."""
        return authorising(self.failures()[0])

    def search_complete(self) -> bool:
        """Authority found, or the rules of every assignment and delegation known."""
        return bool(self.authority()) or self.failures()[1]

    def no_usable_authority(self) -> bool:
        return self.failures()[1] and not self.authority()

    def is_self(self) -> bool:
        """The approver is the request's requester."""
        return self.request is not None and self.approver_id is not None and self.request["requester_id"] == self.approver_id

    def line_breach(self) -> bool:
        """The band forbids approvers in the requester's line and the approver is in it."""
        req, rule, line = self.request, self.band(), self.approver_line()
        return req is not None and rule is not None and line is not None and line_breach(rule, req, line)

    def sod_breach(self) -> bool:
        return self.is_self() or self.line_breach()

    def sod_checked(self) -> bool:
        """The separation-of-duties facts are known."""
        rule = self.band()
        if self.request is None or rule is None or self.approver_id is None:
            return False
        return self.sod_breach() or not rule["sod_not_in_requester_line"] or self.approver_line() is not None

    @derived
    def blocking(self) -> str | None:
        """The fact that keeps the approver from deciding (what escalate cites), once known."""
        req = self.request
        if req is None or self.band() is None:
            return None
        if self.is_self() or self.line_breach():
            return blocking_choice(self.is_self(), self.line_breach(), req, [], self.approver_id)
        if not self.no_usable_authority():
            return None
        return blocking_choice(False, False, req, near_misses(self.failures()[0]), self.approver_id)

    @derived
    def conclusion(self) -> str | None:
        """The outcome the facts read so far establish (the rule document), or ``None``."""
        req, rule = self.request, self.band()
        if req is None or rule is None:
            return None
        if self.sod_breach() or self.no_usable_authority() or (self.find_done and self.approver_id is None):
            return "escalate"
        if not (self.sod_checked() and self.authority()):
            return None
        if req["amount"] > rule["hard_limit"]:
            return "reject"
        if self.n_missing_fields() > 0:
            return "hold"
        return "proceed"

    @derived
    def sufficient_delegations(self) -> list[Row]:
        """The approver's delegations in effect now whose role covers the type with level and
        amount limit enough (the role rules a delegation passes before its cap and delegator)."""
        req, rule, roles = self.request, self.band(), self.roles_by_id()
        if req is None or rule is None:
            return []
        return [d for d in self.approver_delegations_now() or [] if (role := roles.get(d["role_id"])) is not None
                and req["type"] in role["request_types"] and role["level"] >= rule["required_level"]
                and role["amount_limit"] >= req["amount"]]

    # -- the person on file (facts, raw) ----------------------------------------------------------
    def file(self) -> Row | None:
        """The on-file person's file: ``line``, ``assignments`` (``None``: nobody on file)."""
        return None if self.on_file is None else self.files[self.on_file]

    def on_file_delegations(self) -> list[Row] | None:
        """Every delegation the person on file received (``None`` until read)."""
        return None if self.on_file is None else self.received.get(self.on_file)

    @derived
    def rows(self) -> list[tuple[str, Row]]:
        """The on-file person's row slots: assignments then received delegations, each by id
        (``("assignment" | "delegation", row)``)."""
        f = self.file()
        if f is None:
            return []
        rows = [("assignment", rh) for rh in sorted(f["assignments"], key=lambda r: r["id"])]
        rows += [("delegation", d) for d in sorted(self.on_file_delegations() or [], key=lambda d: d["id"])]
        return rows[:N_ROWS]

    def row_role(self, slot: int) -> str | None:
        """The role of row slot ``slot`` (what the facts tier's holder lookup reads)."""
        rows = self.rows()
        return rows[slot][1]["role_id"] if slot < len(rows) else None

    def role_slot(self, slot: int) -> str | None:
        """The id of role slot ``slot``: the roles by id, the pages read so far while pages remain
        (what the raw tier's holder lookup reads)."""
        roles = self.roles or self._roles_read
        return roles[slot]["id"] if slot < len(roles) else None

    # -- grounding --------------------------------------------------------------------------------
    def request_call(self) -> dict[str, Any] | None:
        return None if self.request_id is None else {"tool": "get_request", "args": {"request_id": self.request_id}}

    def rules_call(self) -> dict[str, Any] | None:
        return None if self.request is None else {"tool": "get_rules", "args": {"request_type": self.request["type"]}}

    def roles_call(self) -> dict[str, Any]:
        return {"tool": "list_roles", "args": _after({}, self._roles_cursor)}

    def find_call(self) -> dict[str, Any] | None:
        if not self.approver_name:
            return None
        return {"tool": "find_people", "args": _after({"name": self.approver_name}, self._find_cursor)}

    def person_call(self, person_id: str | None) -> dict[str, Any] | None:
        return None if person_id is None else {"tool": "get_person", "args": {"person_id": person_id}}

    def delegations_call(self, person_id: str | None) -> dict[str, Any] | None:
        if person_id is None:
            return None
        return {"tool": "lookup_delegations",
                "args": _after({"person_id": person_id, "include_inactive": True}, self._delegations_cursor.get(person_id))}

    def holders_call(self, role_id: str | None) -> dict[str, Any] | None:
        if role_id is None:
            return None
        return {"tool": "lookup_role_holders", "args": _after({"role_id": role_id}, self._holders_cursor.get(role_id))}

    def decision_call(self, outcome: str, approver_id: str, basis: list[str]) -> dict[str, Any]:
        return {"tool": "record_decision", "args": {"request_id": self.request_id, "outcome": outcome, "approver_id": approver_id,
                                                    "basis_ids": basis, "note": DECISION_NOTES[outcome]}}

    def escalate_call(self, rule: Row, basis: list[str]) -> dict[str, Any]:
        return {"tool": "escalate", "args": {"request_id": self.request_id, "role_id": rule["required_role_id"],
                                             "basis_ids": basis, "note": ESCALATE_NOTE}}

    def ledger_call(self) -> dict[str, Any] | None:
        """The ledger entry of the request: its beneficiary_account and full amount."""
        req = self.request
        if req is None or is_missing(req.get("beneficiary_account")):
            return None
        return {"tool": "post_ledger_entry", "args": {"request_id": req["id"], "account": req["beneficiary_account"],
                                                      "amount": req["amount"], "memo": f"{req['type']} {req['id']}"}}

    def order_call(self) -> dict[str, Any] | None:
        oid = (self.order or {}).get("id") or (self.request or {}).get("order_id")
        return None if not oid else {"tool": "release_order", "args": {"order_id": oid}}

    # -- legality (legality only, never judgement: see :mod:`.actions`) ------------------------------
    def may_release(self, ledger: bool) -> bool:
        """The request's own kind of release (``ledger``: the ledger entry, else the order), once,
        while the order awaits approval, whenever it can be grounded."""
        req = self.request
        if self.finished() or req is None or self.downstream_done or is_ledger_type(req["type"]) != ledger:
            return False
        if ledger:
            return self.ledger_call() is not None
        awaiting = self.order is None or self.order.get("status") == "awaiting_approval"
        return awaiting and self.order_call() is not None

    def may_decide(self) -> bool:
        """No decision is recorded yet (a second one is refused) and the band to cite is known."""
        return self.decision is None and self.band() is not None


__all__ = ["N_BANDS", "N_CANDIDATES", "N_PEOPLE", "N_ROLES", "N_ROWS", "OUTCOMES", "ApprovalsDesk"]
