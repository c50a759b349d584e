"""The ``facts`` and ``raw`` feature tiers of the approvals catalog (issue 14).

The ``conclusions`` tier (:class:`~backoffice.training.catalog.approvals.ApprovalsCatalog`) hands
the agent the desk procedure's conclusions (``procedure_proceed``, ``authority_found``,
``sod_breach`` ...) and actions that pick the right answer for it (``decide_proceed`` cites "the
authority found so far", ``escalate`` "the blocking fact found so far", the named approver is
matched by the catalog). The two tiers here keep the same native calls but leave the choices to
the agent:

- **whom**: ``find_people`` lists the people sharing the approver's name (often a namesake in
  another department); the agent opens one file with ``get_person[p]``. That person is **on
  file**: the reporting line, the row slots, ``lookup_delegations`` and the decisions (their
  ``approver_id``) are theirs, until another ``get_person`` puts someone else on file.
- **which id to cite**: the row slots are the on-file person's role assignments (``get_person``,
  by id) then the delegations they received (``lookup_delegations``, in effect or not, by id);
  ``decide_<outcome>[s]`` cites row ``s`` as the authority, ``escalate_cite[s]`` cites it as the
  blocking fact (or ``escalate_cite_request`` / ``_requester`` / ``_approver``).
- **which outcome**: the four decisions are always the agent's.
- **what to look up**: the holders of a role (needed to see that a delegator still holds the
  role they delegated) by row slot (``facts``) or by role slot (``raw``).

What the catalog still grounds in both tiers (arguments that are fixed by what was read, with
no alternative to weigh): the request id and type of the reads, the brief's name for
``find_people``, the next page of a paginated read, the ledger entry's account and amount (the
request's ``beneficiary_account`` and its full ``amount``: the only observed values that
fit those arguments), the request's order, and **the cited rule: the band whose
``[min_amount, max_amount]`` holds the amount** (the top band above every band), whose
``required_role_id`` an escalation is routed to. Citing a band by slot would multiply every
decision action by three (K ~ 100 and, with the ``taken`` bits, over 300 features).

**facts** features are observed facts and plain comparisons between observed values. Since
the catalog grounds the cited rule, the facts tier shows that rule's values and compares
against it: "amount > its hard_limit", its required level, its separation-of-duties flags and
required fields (as they are: whether a required field is empty is two features, the agent's to
combine); per person slot ``name == brief name``, ``department == brief department``; per row
slot "its role covers the request type", "its role's level >= the rule's required level",
"valid_from <= today", "revoked at or before now", "cap >= amount", "the delegator is among the
role's holders now" ... never a conclusion (no "may decide", "authority found", "blocking fact",
"missing required field", no "due" flag): combining them into the procedure's verdict is the
agent's work. (Until 2026-12 the tier gave every band's values and per-row comparisons with
each band, leaving the agent to repeat a lookup the catalog makes anyway; the change moved the
flat MLP's behaviour-cloning ceiling only from 65 to 66.7 % of heldout.) The ``raw`` tier still
gives the bands by slot and leaves the lookup to the agent.

**raw** features are per-slot observed values only: amounts in cents / 1e9, dates as days from
the desk clock / 1000, levels / 4, one-hot categories (request type, the request types a role
covers), and id equalities between slots only as "same entity" facts (a row's role is role slot
``i``; the person is the requester; the requester is in the on-file person's reporting line;
the delegator is among the holders). Every comparison (band lookup, windows, caps, levels,
limits), every match (person, role of a row) and every selection is the agent's.

Both tiers keep the catalog rules: features from the brief and tool results only, a mask that
expresses legality only (the same rules as the conclusions tier: groundable, not a repeated
read, not visibly refused, not after the work is visibly finished), one action one native call,
``submit`` always valid. Each tier's ``feature_policy`` (a staticmethod, found on the class by
``catalog-features@<tier>``) is the desk procedure written over the tier's features and mask
only, and passes every released task: the tier suffices.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from backoffice.envs.approvals.rules import ORDER_TYPES, is_ledger_type, is_missing
from backoffice.envs.approvals.tables import INFO_FIELDS, REQUEST_TYPES, today
from backoffice.training.catalog.approvals import DESK_TOOLS, ApprovalsCatalog, ApprovalsDesk
from backoffice.training.catalog.base import ActionDef, CatalogAgent, FeatureDef, FeatureReader, slots
from backoffice.training.rl.train import rollout_on

#: person slots: the people ``find_people`` returns for the approver's name (1-2 in the release)
N_PEOPLE = 3
#: band slots: a request type's rules by min_amount (2-3 in the release)
N_BANDS = 3
#: row slots: the on-file person's assignments then received delegations (at most 6 in the release)
N_ROWS = 6
#: role slots (raw): the roles by id (9 in every released world)
N_ROLES = 9
#: amounts in cents are given as cents / AMOUNT_FULL (the largest released value is 2e8)
AMOUNT_FULL = 1e9
#: dates are given as days from the desk clock / DAYS_FULL
DAYS_FULL = 1000.0
OUTCOMES = ("reject", "hold", "proceed")


def _days(a: str, b: str) -> float:
    """``a - b`` in days (dates or datetimes, ISO)."""
    def parse(x: str) -> dt.datetime:
        return dt.datetime.fromisoformat(x if len(x) > 10 else x + "T00:00:00")
    return (parse(a) - parse(b)).total_seconds() / 86400.0


def _clip(x: float) -> float:
    return float(max(-1.0, min(1.0, x)))


def _reads(holders: tuple[ActionDef, ...]) -> tuple[ActionDef, ...]:
    return (
        ActionDef("get_request", "get_request", "Read the target request (brief's request_id)."),
        ActionDef("get_rules", "get_rules", "Read the approval rules (amount bands) of the request's type (needs the request)."),
        ActionDef("list_roles", "list_roles", "Read every approval role (types covered, level, amount limit); the next page while one is left."),
        ActionDef("find_people", "find_people", "Find the people called by the brief's approver_name (every page)."),
        *slots("get_person", "get_person", N_PEOPLE,
               "Open the file of person slot {i} (the {i}-th person find_people returned, by id): reporting line and role "
               "assignments. That person is then on file: the row slots, lookup_delegations and the decisions are theirs."),
        ActionDef("lookup_delegations", "lookup_delegations",
                  "Every delegation received/given by the person on file, in effect or not (include_inactive)."),
        *holders,
    )


def _writes() -> tuple[ActionDef, ...]:
    return (
        *(a for o in OUTCOMES for a in slots(
            f"decide_{o}", "record_decision", N_ROWS,
            f"Record the on-file person's decision '{o}', citing the band holding the amount and row slot {{i}} "
            "(their assignment or delegation) as the authority.")),
        ActionDef("escalate_cite_request", "escalate",
                  "Escalate to the required_role_id of the band holding the amount, citing that band and the request id."),
        ActionDef("escalate_cite_requester", "escalate",
                  "Escalate to the band's required_role_id, citing the band and the requester's person id."),
        ActionDef("escalate_cite_approver", "escalate",
                  "Escalate to the band's required_role_id, citing the band and the on-file person's id."),
        *slots("escalate_cite", "escalate", N_ROWS,
               "Escalate to the band's required_role_id, citing the band and row slot {i} (an assignment or delegation of "
               "the person on file)."),
        ActionDef("post_ledger_entry", "post_ledger_entry",
                  "Post the ledger entry of the request: its beneficiary_account, its full amount (possible before a decision too)."),
        ActionDef("release_order", "release_order", "Release the request's order (possible before a decision too)."),
        ActionDef("submit", "submit", "Finish the episode."),
    )


FACTS_ACTIONS: tuple[ActionDef, ...] = (
    *_reads(slots("lookup_role_holders", "lookup_role_holders", N_ROWS,
                  "Holders now of the role of row slot {i} (the role the assignment or delegation is for).")),
    *_writes(),
)
RAW_ACTIONS: tuple[ActionDef, ...] = (
    *_reads(slots("lookup_role_holders", "lookup_role_holders", N_ROLES,
                  "Holders now of role slot {i} (the {i}-th role list_roles returned, by id).")),
    *_writes(),
)


class _ApprovalsTier(ApprovalsDesk):
    """What both tiers observe and how they ground and mask actions; the features are the tier's."""

    max_steps = ApprovalsCatalog.max_steps
    hyperparams = ApprovalsCatalog.hyperparams
    #: what lookup_role_holders[i] looks up: the role of row slot i, or role slot i
    holders_by: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._index = {a.name: i for i, a in enumerate(cls.actions)}
        cls._fidx = {f.name: i for i, f in enumerate(cls.features)}
        # action index -> (kind, slot)
        kinds: list[tuple[str, int]] = []
        for a in cls.actions:
            base, _, rest = a.name.partition("[")
            kinds.append((base, int(rest[:-1]) if rest else -1))
        cls._kinds = tuple(kinds)

    _index: ClassVar[dict[str, int]]
    _fidx: ClassVar[dict[str, int]]
    _kinds: ClassVar[tuple[tuple[str, int], ...]]

    # -- state ------------------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        # self.rules: by min_amount; self.roles: by id
        self.people: list[dict[str, Any]] = []  # find_people rows, by id, the pages read so far
        self.files: dict[str, dict[str, Any]] = {}  # person id -> line, assignments, received (None until read)
        self.on_file: str | None = None

    def _take_rules(self, rules: list[dict[str, Any]]) -> None:
        self.rules = sorted(rules, key=lambda r: r["min_amount"])

    def _known_roles(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(rows, key=lambda r: r["id"])

    def _file(self) -> dict[str, Any] | None:
        return None if self.on_file is None else self.files[self.on_file]

    def _rows(self) -> list[tuple[str, dict[str, Any]]]:
        """The on-file person's row slots: assignments then received delegations, each by id."""
        f = self._file()
        if f is None:
            return []
        rows = [("assignment", rh) for rh in sorted(f["assignments"], key=lambda r: r["id"])]
        rows += [("delegation", d) for d in sorted(f["received"] or [], key=lambda d: d["id"])]
        return rows[:N_ROWS]

    def _role(self, role_id: str) -> dict[str, Any] | None:
        return next((r for r in self.roles or [] if r["id"] == role_id), None)

    def _holders_role(self, slot: int) -> str | None:
        """The role lookup_role_holders[slot] reads."""
        if self.holders_by == "row":
            rows = self._rows()
            return rows[slot][1]["role_id"] if slot < len(rows) else None
        roles = self.roles or self._roles_read
        return roles[slot]["id"] if slot < len(roles) else None

    # -- grounding --------------------------------------------------------------------------
    def to_call(self, action: int) -> dict[str, Any] | None:
        if not 0 <= action < len(self._kinds):
            return None
        kind, slot = self._kinds[action]
        req, rid = self.request, self.request_id
        if kind in DESK_TOOLS:
            return self._desk_call(kind)
        if kind == "get_person":
            return None if slot >= len(self.people) else {"tool": "get_person", "args": {"person_id": self.people[slot]["id"]}}
        if kind == "lookup_delegations":
            return self._delegations_call(self.on_file)
        if kind == "lookup_role_holders":
            return self._holders_call(self._holders_role(slot))
        band = self._band()
        if kind.startswith("decide_"):
            rows = self._rows()
            if rid is None or band is None or self.on_file is None or slot >= len(rows):
                return None
            return self._decision_call(kind[len("decide_"):], self.on_file, [band["id"], rows[slot][1]["id"]])
        if kind.startswith("escalate_cite"):
            if rid is None or req is None or band is None:
                return None
            cited: str | None
            if kind == "escalate_cite_request":
                cited = req["id"]
            elif kind == "escalate_cite_requester":
                cited = req.get("requester_id")
            elif kind == "escalate_cite_approver":
                cited = self.on_file
            else:
                rows = self._rows()
                cited = rows[slot][1]["id"] if slot < len(rows) else None
            return self._escalate_call(band, [band["id"], cited]) if cited else None
        return None

    def _observe_approver(self, tool: str, args: dict[str, Any], res: dict[str, Any]) -> None:
        pid = args.get("person_id")
        if tool == "find_people":
            self.people.extend(res.get("people") or [])
            self._find_cursor = res.get("next_cursor")
            self.find_done = self._find_cursor is None
        elif tool == "get_person":
            if isinstance(pid, str):
                known = self.files.get(pid, {}).get("received")
                self.files[pid] = {"line": list(res.get("reporting_line") or []),
                                   "assignments": list(res.get("assignments") or []), "received": known}
                self.on_file = pid
        elif tool == "lookup_delegations":
            if isinstance(pid, str) and pid in self.files:
                self.files[pid]["received"] = self._take_delegations(pid, res)

    def mask(self) -> np.ndarray:
        """Legality only: groundable, not a repeated read, not visibly refused, not after the
        work is visibly finished (the conclusions tier's rules)."""
        m = np.zeros(len(self.actions), dtype=bool)
        m[self._index["submit"]] = True
        if self._finished():
            return m
        band = self._band()
        rows = self._rows()
        f = self._file()
        for i, (kind, slot) in enumerate(self._kinds):
            if kind in ("get_request", "get_rules", "list_roles", "post_ledger_entry", "release_order"):
                m[i] = self._desk_legal(kind)
            elif kind == "find_people":
                m[i] = not self.find_done and bool(self.approver_name)
            elif kind == "get_person":
                m[i] = slot < len(self.people) and self.people[slot]["id"] not in self.files
            elif kind == "lookup_delegations":
                m[i] = f is not None and f["received"] is None
            elif kind == "lookup_role_holders":
                role_id = self._holders_role(slot)
                m[i] = role_id is not None and role_id not in self.holders
            elif kind.startswith("decide_"):
                m[i] = self.decision is None and band is not None and self.on_file is not None and slot < len(rows)
            elif kind.startswith("escalate_cite"):
                m[i] = self.decision is None and band is not None and self.to_call(i) is not None
        return m

    # -- shared observed facts --------------------------------------------------------------
    def _band_facts(self, put: Callable[[str, float | bool], None], r: int, band: dict[str, Any]) -> None:
        """Band ``r``'s values both tiers give alike: present, level, flags, required fields."""
        put(f"band[{r}].present", True)
        put(f"band[{r}].required_level", _clip(band["required_level"] / 4))
        put(f"band[{r}].sod_not_requester", bool(band.get("sod_not_requester", True)))
        put(f"band[{r}].sod_not_in_requester_line", bool(band["sod_not_in_requester_line"]))
        for fld in INFO_FIELDS:
            put(f"band[{r}].requires[{fld}]", fld in band["required_fields"])

    def _people_facts(self, put: Callable[[str, float | bool], None], line_feature: str) -> None:
        """The person slots and ``line_feature`` (the requester is in the on-file person's line)."""
        req = self.request
        for p, person in enumerate(self.people[:N_PEOPLE]):
            put(f"person[{p}].present", True)
            put(f"person[{p}].name_equal", person.get("name") == self.approver_name)
            put(f"person[{p}].department_equal", person.get("department") == self.approver_dept)
            put(f"person[{p}].on_file", person["id"] == self.on_file)
            put(f"person[{p}].is_requester", req is not None and person["id"] == req["requester_id"])
        file = self._file()
        if file is not None and req is not None:
            put(line_feature, req["requester_id"] in file["line"])

    def _row_facts(self, put: Callable[[str, float | bool], None], s: int, kind: str, row: dict[str, Any]) -> None:
        """Row ``s``'s values both tiers give alike: present, kind, its role's holders."""
        put(f"row[{s}].present", True)
        put(f"row[{s}].is_delegation", kind == "delegation")
        holders = self.holders.get(row["role_id"])
        put(f"row[{s}].holders_read", holders is not None)
        if kind == "delegation" and holders is not None:
            put(f"row[{s}].delegator_among_holders", any(h["person_id"] == row["delegator_id"] for h in holders))

    def _vector(self) -> tuple[np.ndarray, Callable[[str, float | bool], None]]:
        """The tier's feature vector with the status features (``_STATUS_FEATURES``) put, and
        the function that puts a feature by name."""
        f = np.zeros(len(self.features), dtype=np.float32)
        idx = self._fidx

        def put(name: str, value: float | bool) -> None:
            f[idx[name]] = float(value)

        put("request_read", self.request is not None)
        put("rules_read", self.rules is not None)
        put("roles_read", self.roles is not None)
        put("people_read", self.find_done)
        put("person_on_file", self.on_file is not None)
        file = self._file()
        put("delegations_read", file is not None and file["received"] is not None)
        put("decision_recorded", self.decision is not None)
        put("decided_proceed", self.decision == "proceed")
        put("downstream_done", self.downstream_done)
        put("last_write_error", self.last_write_error)
        return f, put


_STATUS_FEATURES: tuple[FeatureDef, ...] = (
    FeatureDef("request_read", "1 once get_request returned the request"),
    FeatureDef("rules_read", "1 once get_rules returned the request type's bands"),
    FeatureDef("roles_read", "1 once list_roles returned every role"),
    FeatureDef("people_read", "1 once find_people returned its last page"),
    FeatureDef("person_on_file", "1 once get_person opened someone's file (the person on file)"),
    FeatureDef("delegations_read", "1 once lookup_delegations returned the on-file person's delegations"),
    FeatureDef("decision_recorded", "1 once record_decision or escalate on the request succeeded"),
    FeatureDef("decided_proceed", "1 if the recorded decision's outcome is proceed"),
    FeatureDef("downstream_done", "1 once post_ledger_entry or release_order succeeded"),
    FeatureDef("last_write_error", "1 if the last writing call returned an error"),
)


class _DeskProcedure(FeatureReader):
    """The rule document over a tier's features and the mask (both tiers' feature policies):
    release after a proceed; read; open the file of the one person whose name and department
    match; look up the holders of each delegation's role; check separation of duties; check the
    authority rules of every row; decide citing the first authorising row (reject above the
    hard limit, hold when a required field is empty, else proceed) or escalate citing the
    first row failing exactly one authority rule (the approver when none does). A tier says how
    its features give the band and each authority rule of a row (the methods below)."""

    #: the feature "the requester is in the on-file person's reporting line"
    line_feature: ClassVar[str]
    #: the feature "the request's ``{fld}`` is empty"
    empty_feature: ClassVar[str]

    def _read(self) -> None:
        """Read what the tier's hooks share from ``self.obs``."""

    def typed(self) -> bool:
        """Whether the request type is known (the procedure needs it)."""
        return True

    def ledger(self) -> bool:
        raise NotImplementedError

    def band(self, bands: list[int]) -> int:
        """The band slot holding the amount, among the present ``bands`` (the top one above all)."""
        raise NotImplementedError

    def covers(self, s: int) -> bool:
        """Rule role_type: row ``s``'s role covers the request type."""
        raise NotImplementedError

    def holders_slot(self, s: int) -> int | None:
        """The ``lookup_role_holders`` slot of row ``s``'s role."""
        return s

    def level_ok(self, s: int, band: int) -> bool:
        """Rule role_level."""
        raise NotImplementedError

    def limit_ok(self, s: int) -> bool:
        """Rule role_limit."""
        raise NotImplementedError

    def window(self, s: int) -> bool:
        """Rule window: row ``s``'s window covers today."""
        raise NotImplementedError

    def revoked(self, s: int) -> bool:
        """Rule revocation: row ``s`` was revoked at or before now."""
        raise NotImplementedError

    def cap_ok(self, s: int) -> bool:
        """Rule delegation_cap: row ``s`` has no cap below the amount."""
        raise NotImplementedError

    def over_hard_limit(self, band: int) -> bool:
        raise NotImplementedError

    def band_flag(self, band: int, name: str) -> bool:
        """Band ``band``'s ``name`` flag (``sod_not_in_requester_line``, ``requires[<field>]`` ...)."""
        return self.on(f"band[{band}].{name}")

    def failures(self, s: int, band: int) -> int:
        """How many authority rules row ``s`` fails."""
        on = self.on
        checks = [self.covers(s), self.level_ok(s, band), self.limit_ok(s), self.window(s)]
        if on(f"row[{s}].is_delegation"):
            checks += [not self.revoked(s), on(f"row[{s}].delegator_among_holders"), self.cap_ok(s)]
        return sum(not c for c in checks)

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        self._read()
        on, act = self.on, self.act
        if on("decision_recorded"):
            if on("decided_proceed") and not on("downstream_done"):
                release = act["post_ledger_entry" if self.ledger() else "release_order"]
                if mask[release]:
                    return release
            return act["submit"]
        for read in ("get_request", "get_rules", "list_roles", "find_people"):
            if mask[act[read]]:
                return act[read]
        match = [p for p in range(N_PEOPLE) if on(f"person[{p}].present") and on(f"person[{p}].name_equal")
                 and on(f"person[{p}].department_equal")]
        if len(match) != 1 or not self.typed():
            return act["submit"]  # no such approver (never in the release)
        p = match[0]
        if not on(f"person[{p}].on_file"):
            return act[f"get_person[{p}]"]
        if mask[act["lookup_delegations"]]:
            return act["lookup_delegations"]
        band = self.band([r for r in range(N_BANDS) if self.band_flag(r, "present")])
        rows = [s for s in range(N_ROWS) if on(f"row[{s}].present")]
        # rule delegator_holds: look up the holders of every delegation's role
        for s in rows:
            if on(f"row[{s}].is_delegation") and not on(f"row[{s}].holders_read"):
                return act[f"lookup_role_holders[{self.holders_slot(s)}]"]
        # separation of duties
        if on(f"person[{p}].is_requester"):
            return act["escalate_cite_request"]
        if on(self.line_feature) and self.band_flag(band, "sod_not_in_requester_line"):
            return act["escalate_cite_requester"]
        failed = {s: self.failures(s, band) for s in rows}
        authorising = [s for s in rows if failed[s] == 0]
        if authorising:
            s = authorising[0]
            if self.over_hard_limit(band):
                return act[f"decide_reject[{s}]"]
            if any(self.band_flag(band, f"requires[{fld}]") and on(self.empty_feature.format(fld=fld)) for fld in INFO_FIELDS):
                return act[f"decide_hold[{s}]"]
            return act[f"decide_proceed[{s}]"]
        near = [s for s in rows if failed[s] == 1]
        return act[f"escalate_cite[{near[0]}]"] if near else act["escalate_cite_approver"]


def _band_defs(r: int, values: list[FeatureDef]) -> list[FeatureDef]:
    """Band ``r``'s features: present, the tier's ``values``, then those both tiers give alike
    (:meth:`_ApprovalsTier._band_facts`)."""
    return [
        FeatureDef(f"band[{r}].present", f"1 if get_rules returned a band {r} (bands by min_amount)"),
        *values,
        FeatureDef(f"band[{r}].required_level", f"band {r}'s required_level / 4"),
        FeatureDef(f"band[{r}].sod_not_requester", f"1 when band {r} is present (rule requester holds in every band)"),
        FeatureDef(f"band[{r}].sod_not_in_requester_line", f"band {r}'s sod_not_in_requester_line flag"),
        *(FeatureDef(f"band[{r}].requires[{fld}]", f"1 if {fld} is in band {r}'s required_fields") for fld in INFO_FIELDS),
    ]


def _row_defs(s: int, values: list[FeatureDef], delegator: str) -> list[FeatureDef]:
    """Row ``s``'s features: present and kind, the tier's ``values``, then its role's holders
    (:meth:`_ApprovalsTier._row_facts`; ``delegator`` ends the last one's doc)."""
    return [
        FeatureDef(f"row[{s}].present", f"1 if the person on file has a row slot {s}"),
        FeatureDef(f"row[{s}].is_delegation", f"1 if row {s} is a delegation received (else a role assignment)"),
        *values,
        FeatureDef(f"row[{s}].holders_read", f"1 once the holders now of row {s}'s role were looked up"),
        FeatureDef(f"row[{s}].delegator_among_holders", f"1 if row {s} is a delegation whose delegator is {delegator}"),
    ]


# -- facts --------------------------------------------------------------------------------------
def _facts_features() -> tuple[FeatureDef, ...]:
    out: list[FeatureDef] = list(_STATUS_FEATURES)
    out += [
        FeatureDef("request_is_ledger_type", "1 if the request type is refund / credit_adjustment / write_off / expense_claim"),
        FeatureDef("request_is_order_type", "1 if the request type is purchase_order / vendor_payment"),
        FeatureDef("request_amount_log", "log10(request amount in cents) / 10"),
        FeatureDef("order_awaiting_approval", "1 if the request's order has status awaiting_approval"),
        *(FeatureDef(f"request_empty[{fld}]", f"1 if the request's {fld} is empty (null or blank)") for fld in INFO_FIELDS),
        # the rule every decision and escalation cites (the catalog grounds it in every tier)
        FeatureDef("rule.present", "1 once the cited rule is known: the band of get_rules whose [min_amount, max_amount] "
                   "holds the amount (the top band above every band)"),
        FeatureDef("rule.amount_gt_hard_limit", "1 if the amount > the cited rule's hard_limit"),
        FeatureDef("rule.required_level", "the cited rule's required_level / 4"),
        FeatureDef("rule.sod_not_requester", "1 once the band is known (rule requester holds in every band)"),
        FeatureDef("rule.sod_not_in_requester_line", "the cited rule's sod_not_in_requester_line flag"),
        *(FeatureDef(f"rule.requires[{fld}]", f"1 if {fld} is in the cited rule's required_fields") for fld in INFO_FIELDS),
    ]
    for p in range(N_PEOPLE):
        out += [
            FeatureDef(f"person[{p}].present", f"1 if find_people returned a person slot {p}"),
            FeatureDef(f"person[{p}].name_equal", f"1 if person {p}'s name equals the brief's approver_name"),
            FeatureDef(f"person[{p}].department_equal", f"1 if person {p}'s department equals the brief's approver_department"),
            FeatureDef(f"person[{p}].on_file", f"1 if person {p} is the person on file"),
            FeatureDef(f"person[{p}].is_requester", f"1 if person {p}'s id is the request's requester_id"),
        ]
    out.append(FeatureDef("requester_in_reporting_line", "1 if the requester's id is in the on-file person's reporting_line"))
    for s in range(N_ROWS):
        out += _row_defs(s, [
            FeatureDef(f"row[{s}].covers_request_type", f"1 if the request type is in row {s}'s role's request_types"),
            FeatureDef(f"row[{s}].level_ge_required", f"1 if row {s}'s role level >= the cited rule's required_level"),
            FeatureDef(f"row[{s}].limit_ge_amount", f"1 if row {s}'s role amount_limit >= the amount"),
            FeatureDef(f"row[{s}].cap_below_amount", f"1 if row {s} is a delegation whose cap is below the amount"),
            FeatureDef(f"row[{s}].from_le_today", f"1 if row {s}'s valid_from <= today (the desk clock's date)"),
            FeatureDef(f"row[{s}].to_ge_today", f"1 if row {s}'s valid_to >= today or is null"),
            FeatureDef(f"row[{s}].revoked_by_now", f"1 if row {s} has a revoked_at at or before now"),
        ], "among the holders now of its role (looked up)")
    return tuple(out)


class ApprovalsFactsCatalog(_ApprovalsTier):
    """The approval desk, ``facts`` tier: observed facts and plain comparisons; the agent picks
    the approver's file, the row to cite and the outcome."""

    tier = "facts"
    holders_by = "row"
    #: the slot-factored policy (one scorer for the rows, one for the people) on fresh generated
    #: tasks (the train distribution; validation stays on released train tasks, heldout unseen):
    #: 95 % heldout at 600k steps (seed 0, 6.6 CPU-min). On the 380 released train tasks the same
    #: policy reached 83 % (validation 90-92 %: it fits those tasks), the flat MLP 55-60 %
    hyperparams = {**ApprovalsCatalog.hyperparams, "timesteps": 600_000, "policy": "slots", "train_split": "generated"}
    slot_actions = {"get_person": "person", "lookup_role_holders": "row", "escalate_cite": "row",
                    **{f"decide_{o}": "row" for o in OUTCOMES}}
    actions = FACTS_ACTIONS
    features = _facts_features()

    def feature_vector(self) -> np.ndarray:
        f, put = self._vector()
        req, now, rule = self.request, self.now, self._band()
        if req is not None:
            amount = req["amount"]
            put("request_is_ledger_type", is_ledger_type(req["type"]))
            put("request_is_order_type", req["type"] in ORDER_TYPES)
            put("request_amount_log", min(1.0, math.log10(max(1, amount)) / 10))
            put("order_awaiting_approval", self.order is not None and self.order.get("status") == "awaiting_approval")
            for fld in INFO_FIELDS:
                put(f"request_empty[{fld}]", is_missing(req.get(fld)))
            if rule is not None:
                put("rule.present", True)
                put("rule.amount_gt_hard_limit", amount > rule["hard_limit"])
                put("rule.required_level", _clip(rule["required_level"] / 4))
                put("rule.sod_not_requester", bool(rule.get("sod_not_requester", True)))
                put("rule.sod_not_in_requester_line", bool(rule["sod_not_in_requester_line"]))
                for fld in INFO_FIELDS:
                    put(f"rule.requires[{fld}]", fld in rule["required_fields"])
        self._people_facts(put, "requester_in_reporting_line")
        for s, (kind, row) in enumerate(self._rows()):
            self._row_facts(put, s, kind, row)
            role = self._role(row["role_id"])
            if role is not None and req is not None:
                put(f"row[{s}].covers_request_type", req["type"] in role["request_types"])
                put(f"row[{s}].limit_ge_amount", role["amount_limit"] >= req["amount"])
                if rule is not None:
                    put(f"row[{s}].level_ge_required", role["level"] >= rule["required_level"])
            if kind == "delegation" and req is not None:
                put(f"row[{s}].cap_below_amount", row.get("cap") is not None and row["cap"] < req["amount"])
            if now is not None:
                put(f"row[{s}].from_le_today", row.get("valid_from") is None or row["valid_from"] <= today(now))
                put(f"row[{s}].to_ge_today", row.get("valid_to") is None or today(now) <= row["valid_to"])
                put(f"row[{s}].revoked_by_now", row.get("revoked_at") is not None and row["revoked_at"] <= now)
        return f

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
        """The desk procedure over the facts features and the mask: read, open the file of the
        person whose name and department match, check separation of duties and each row's
        authority from the comparisons, then decide citing the authorising row or escalate
        citing the blocking one; release after a proceed."""
        return _FactsProcedure(agent)


class _FactsProcedure(_DeskProcedure):
    """The desk procedure reading the facts tier's comparisons (against the cited rule)."""

    line_feature = "requester_in_reporting_line"
    empty_feature = "request_empty[{fld}]"

    def ledger(self) -> bool:
        return self.on("request_is_ledger_type")

    def band_flag(self, band: int, name: str) -> bool:
        # one rule, the cited one: band slot 0 stands for it
        return band == 0 and self.on(f"rule.{name}")

    def band(self, bands: list[int]) -> int:
        return 0

    def covers(self, s: int) -> bool:
        return self.on(f"row[{s}].covers_request_type")

    def level_ok(self, s: int, band: int) -> bool:
        return self.on(f"row[{s}].level_ge_required")

    def limit_ok(self, s: int) -> bool:
        return self.on(f"row[{s}].limit_ge_amount")

    def window(self, s: int) -> bool:
        return self.on(f"row[{s}].from_le_today") and self.on(f"row[{s}].to_ge_today")

    def revoked(self, s: int) -> bool:
        return self.on(f"row[{s}].revoked_by_now")

    def cap_ok(self, s: int) -> bool:
        return not self.on(f"row[{s}].cap_below_amount")

    def over_hard_limit(self, band: int) -> bool:
        return self.on("rule.amount_gt_hard_limit")



# -- raw ----------------------------------------------------------------------------------------
def _raw_features() -> tuple[FeatureDef, ...]:
    out: list[FeatureDef] = list(_STATUS_FEATURES)
    out += [
        FeatureDef("request.amount", f"the request amount in cents / {AMOUNT_FULL:.0e}"),
        *(FeatureDef(f"request.type[{t}]", f"1 if the request type is {t}") for t in REQUEST_TYPES),
        *(FeatureDef(f"request.empty[{fld}]", f"1 if the request's {fld} is null or blank") for fld in INFO_FIELDS),
        FeatureDef("order.awaiting_approval", "1 if the request's order has status awaiting_approval"),
    ]
    for r in range(N_BANDS):
        out += _band_defs(r, [
            FeatureDef(f"band[{r}].min_amount", f"band {r}'s min_amount in cents / {AMOUNT_FULL:.0e}"),
            FeatureDef(f"band[{r}].max_amount", f"band {r}'s max_amount in cents / {AMOUNT_FULL:.0e} (1 when null: no bound)"),
            FeatureDef(f"band[{r}].hard_limit", f"band {r}'s hard_limit in cents / {AMOUNT_FULL:.0e}"),
        ])
    for i in range(N_ROLES):
        out += [
            *(FeatureDef(f"role[{i}].covers[{t}]", f"1 if {t} is in role {i}'s request_types") for t in REQUEST_TYPES),
            FeatureDef(f"role[{i}].amount_limit", f"role {i}'s amount_limit in cents / {AMOUNT_FULL:.0e}"),
            FeatureDef(f"role[{i}].level", f"role {i}'s level / 4 (0: no role slot {i}; roles by id)"),
        ]
    for p in range(N_PEOPLE):
        out += [
            FeatureDef(f"person[{p}].present", f"1 if find_people returned a person slot {p}"),
            FeatureDef(f"person[{p}].name_equal", f"1 if person {p}'s name is the brief's approver_name (the same string)"),
            FeatureDef(f"person[{p}].department_equal", f"1 if person {p}'s department is the brief's approver_department "
                       "(the same category)"),
            FeatureDef(f"person[{p}].on_file", f"1 if person {p} is the person on file (same entity)"),
            FeatureDef(f"person[{p}].is_requester", f"1 if person {p} is the request's requester (same entity)"),
        ]
    out.append(FeatureDef("reporting_line.has_requester", "1 if one of the on-file person's reporting_line ids is the "
                          "requester (same entity)"))
    for s in range(N_ROWS):
        out += _row_defs(s, [
            *(FeatureDef(f"row[{s}].role[{i}]", f"1 if row {s}'s role is role slot {i} (same entity)") for i in range(N_ROLES)),
            FeatureDef(f"row[{s}].valid_from", f"row {s}'s valid_from - today, in days / {DAYS_FULL:.0f} (-1 when null)"),
            FeatureDef(f"row[{s}].valid_to", f"row {s}'s valid_to - today, in days / {DAYS_FULL:.0f} (1 when null)"),
            FeatureDef(f"row[{s}].revoked_at", f"row {s}'s revoked_at - now, in days / {DAYS_FULL:.0f} (1 when null)"),
            FeatureDef(f"row[{s}].cap", f"row {s}'s cap in cents / {AMOUNT_FULL:.0e} (1 when null or an assignment)"),
        ], "one of the holders now of its role (same entity)")
    return tuple(out)


class ApprovalsRawCatalog(_ApprovalsTier):
    """The approval desk, ``raw`` tier: per-slot observed values; comparisons, matching and
    selection are the agent's."""

    tier = "raw"
    holders_by = "role"
    #: the 2 envs this tier's runs were made on, with the rollout size of the other tiers
    hyperparams = rollout_on(ApprovalsCatalog.hyperparams, 2)
    actions = RAW_ACTIONS
    features = _raw_features()

    def feature_vector(self) -> np.ndarray:
        f, put = self._vector()
        req, now = self.request, self.now

        def money(x: int | None) -> float:
            return 1.0 if x is None else _clip(x / AMOUNT_FULL)

        if req is not None:
            put("request.amount", money(req["amount"]))
            if req["type"] in REQUEST_TYPES:
                put(f"request.type[{req['type']}]", True)
            for fld in INFO_FIELDS:
                put(f"request.empty[{fld}]", is_missing(req.get(fld)))
            put("order.awaiting_approval", self.order is not None and self.order.get("status") == "awaiting_approval")
        for r, band in enumerate((self.rules or [])[:N_BANDS]):
            self._band_facts(put, r, band)
            put(f"band[{r}].min_amount", money(band["min_amount"]))
            put(f"band[{r}].max_amount", money(band["max_amount"]))
            put(f"band[{r}].hard_limit", money(band["hard_limit"]))
        role_slot: dict[str, int] = {}
        for i, role in enumerate((self.roles or [])[:N_ROLES]):
            role_slot[role["id"]] = i
            for t in REQUEST_TYPES:
                put(f"role[{i}].covers[{t}]", t in role["request_types"])
            put(f"role[{i}].amount_limit", money(role["amount_limit"]))
            put(f"role[{i}].level", _clip(role["level"] / 4))
        self._people_facts(put, "reporting_line.has_requester")
        for s, (kind, row) in enumerate(self._rows()):
            self._row_facts(put, s, kind, row)
            if row["role_id"] in role_slot:
                put(f"row[{s}].role[{role_slot[row['role_id']]}]", True)
            if now is not None:
                vf, vt, rv = row.get("valid_from"), row.get("valid_to"), row.get("revoked_at")
                put(f"row[{s}].valid_from", -1.0 if vf is None else _clip(_days(vf, today(now)) / DAYS_FULL))
                put(f"row[{s}].valid_to", 1.0 if vt is None else _clip(_days(vt, today(now)) / DAYS_FULL))
                put(f"row[{s}].revoked_at", 1.0 if rv is None else _clip(_days(rv, now) / DAYS_FULL))
            put(f"row[{s}].cap", money(row.get("cap") if kind == "delegation" else None))
        return f

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
        """The desk procedure over the raw values and the mask: the policy finds the band
        holding the amount, matches the approver's file, each row's role slot, and compares
        windows, levels, limits and caps itself."""
        return _RawProcedure(agent)


class _RawProcedure(_DeskProcedure):
    """The desk procedure making the raw tier's comparisons itself."""

    line_feature = "reporting_line.has_requester"
    empty_feature = "request.empty[{fld}]"

    def _read(self) -> None:
        self.rtype = next((t for t in REQUEST_TYPES if self.on(f"request.type[{t}]")), None)
        self.amount = self.v("request.amount")

    def typed(self) -> bool:
        return self.rtype is not None

    def ledger(self) -> bool:
        return self.rtype is not None and is_ledger_type(self.rtype)

    def band(self, bands: list[int]) -> int:
        v = self.v
        return next((r for r in bands if v(f"band[{r}].min_amount") <= self.amount <= v(f"band[{r}].max_amount")), bands[-1])

    def _role_of(self, s: int) -> int | None:
        return next((i for i in range(N_ROLES) if self.on(f"row[{s}].role[{i}]")), None)

    def covers(self, s: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.on(f"role[{i}].covers[{self.rtype}]")

    def holders_slot(self, s: int) -> int | None:
        return self._role_of(s)

    def level_ok(self, s: int, band: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.v(f"role[{i}].level") >= self.v(f"band[{band}].required_level")

    def limit_ok(self, s: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.v(f"role[{i}].amount_limit") >= self.amount

    def window(self, s: int) -> bool:
        v = self.v
        return v(f"row[{s}].valid_from") <= 0 <= v(f"row[{s}].valid_to")

    def revoked(self, s: int) -> bool:
        return self.v(f"row[{s}].revoked_at") <= 0

    def cap_ok(self, s: int) -> bool:
        return self.v(f"row[{s}].cap") >= self.amount

    def over_hard_limit(self, band: int) -> bool:
        return self.amount > self.v(f"band[{band}].hard_limit")



__all__ = ["ApprovalsFactsCatalog", "ApprovalsRawCatalog"]
