"""Generator of approval-desk worlds and tasks.

``generate(seed, defect_tag)`` draws an organisation (about 27 people with a reporting
hierarchy, nine approval roles, rules for six request types with amount bands, hard limits and
separation-of-duties flags), background role assignments and delegations (some ended the day
before the clock, some capped, expired or revoked), a pending queue and some history, then a
target request and a named approver whose situation is the task's trap. The result is checked
with :func:`backoffice.envs.approvals.authority.assess` so that the trap is the only problem;
a draw that fails the check is redrawn from a derived seed (still pure in the arguments).

``generate(seed, defect_tag, scale=k)`` builds the same task (brief, key and every row of its
world unchanged) in an organisation about ``k`` times larger: :func:`scale_up` adds ``k - 1``
extra teams from the same building blocks (people, assignments and delegations of the other
desks' roles, queued and decided requests with their decisions, ledger entries and orders), in
time linear in the rows added. ``scale=1`` is exactly the released generator.

Shortcuts fail on purpose: roles that cover other request types, delegations valid in time but
capped below the amount, roles that ended yesterday, approvers who report to the requester,
people who share the approver's name in another department, empty fields that the rule does
not require, and (when a rule allows it) approvers who legitimately report to the requester.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.approvals import authority as auth
from backoffice.envs.approvals.rules import is_ledger_type
from backoffice.envs.approvals.tables import INFO_FIELDS, ORDER_TYPES, REQUEST_TYPES, TYPE_LABELS, add_days, money
from backoffice.envs.approvals.tools import ALL_TOOLS
from backoffice.envs.core import Generated, retrying
from backoffice.envs.core.canonical import derive_seed

DEFECT_TAGS = (
    "clean", "valid_via_delegation", "self_approval", "approver_is_requesters_subordinate",
    "expired_delegation", "future_delegation", "revoked_delegation", "over_limit",
    "wrong_request_type", "role_ended", "needs_escalation", "missing_information",
)

FIRST = (
    "Aisha", "Ben", "Carla", "Dana", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Keiko", "Liam",
    "Maya", "Nikhil", "Olga", "Pablo", "Quinn", "Rosa", "Samir", "Tanja", "Umar", "Vera", "Wen", "Ximena",
    "Yusuf", "Zofia", "Amara", "Bruno", "Chiara", "Dmitri", "Esther", "Felix", "Gloria", "Hamid", "Ingrid",
    "Jamal", "Katya", "Lorenzo", "Mireille", "Noor", "Oskar", "Priya", "Rafael", "Sunita", "Tomasz",
)
LAST = (
    "Achterberg", "Bianchi", "Castillo", "Delacroix", "Eriksen", "Fontaine", "Gallagher", "Haddad",
    "Iwasaki", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Natarajan", "Okafor", "Petrova", "Quintero",
    "Rahman", "Schulz", "Takahashi", "Urquhart", "Varga", "Whitfield", "Xu", "Yilmaz", "Zimmermann",
    "Albrecht", "Brennan", "Costa", "Dubois", "Esposito", "Fischer", "Greco", "Horvath", "Ibrahim",
)

#: every (first name, surname) pair, drawn from by ``_add_people`` (built once)
NAME_PAIRS = tuple((f, s) for f in FIRST for s in LAST)

#: (key, title, department, manager key)
ORG = (
    ("cfo", "Chief Financial Officer", "Finance", None),
    ("coo", "Chief Operating Officer", "Operations", None),
    ("fd", "Finance Director", "Finance", "cfo"),
    ("fm1", "Finance Manager", "Finance", "fd"),
    ("fm2", "Finance Manager", "Finance", "fd"),
    ("fa1", "Financial Analyst", "Finance", "fm1"),
    ("fa2", "Financial Analyst", "Finance", "fm2"),
    ("apm", "Accounts Payable Manager", "Accounts Payable", "fd"),
    ("apc1", "Accounts Payable Clerk", "Accounts Payable", "apm"),
    ("apc2", "Accounts Payable Clerk", "Accounts Payable", "apm"),
    ("ccl", "Credit Control Lead", "Credit Control", "fd"),
    ("ccc1", "Credit Controller", "Credit Control", "ccl"),
    ("ccc2", "Credit Controller", "Credit Control", "ccl"),
    ("hop", "Head of Procurement", "Procurement", "cfo"),
    ("po1", "Procurement Officer", "Procurement", "hop"),
    ("po2", "Procurement Officer", "Procurement", "hop"),
    ("csm", "Customer Care Manager", "Customer Care", "coo"),
    ("tl1", "Customer Care Team Lead", "Customer Care", "csm"),
    ("tl2", "Customer Care Team Lead", "Customer Care", "csm"),
    ("ca1", "Customer Care Agent", "Customer Care", "tl1"),
    ("ca2", "Customer Care Agent", "Customer Care", "tl1"),
    ("ca3", "Customer Care Agent", "Customer Care", "tl2"),
    ("opm", "Operations Manager", "Operations", "coo"),
    ("ops1", "Operations Coordinator", "Operations", "opm"),
    ("sd", "Sales Director", "Sales", "coo"),
    ("sr1", "Account Manager", "Sales", "sd"),
    ("sr2", "Account Manager", "Sales", "sd"),
)

#: (key, name, request types, base limit in cents, level, natural holders)
ROLE_TEMPLATES = (
    ("cctl", "Team Lead Approver", ("refund", "credit_adjustment"), 2_500_00, 1, ("tl1", "tl2")),
    ("ccl", "Credit Control Approver", ("write_off", "credit_adjustment"), 5_000_00, 1, ("ccl",)),
    ("opm", "Operations Approver", ("expense_claim", "purchase_order"), 5_000_00, 1, ("opm",)),
    ("po", "Procurement Approver", ("purchase_order",), 10_000_00, 1, ("po1", "po2")),
    ("apm", "Payables Approver", ("vendor_payment",), 20_000_00, 1, ("apm",)),
    ("fm", "Finance Manager Approver", ("refund", "credit_adjustment", "write_off", "expense_claim"), 25_000_00, 2, ("fm1", "fm2")),
    ("hop", "Procurement Head Approver", ("purchase_order", "vendor_payment"), 100_000_00, 2, ("hop",)),
    ("fd", "Finance Director Approver", ("refund", "credit_adjustment", "write_off", "expense_claim", "vendor_payment"), 250_000_00, 3, ("fd",)),
    ("cfo", "Executive Approver", REQUEST_TYPES, 1_000_000_00, 4, ("cfo",)),
)

#: request type -> (role keys of the bands, lowest first; base hard limit; required fields)
RULE_TEMPLATES = {
    "refund": (("cctl", "fm", "fd"), 150_000_00, ("beneficiary_account", "justification")),
    "credit_adjustment": (("cctl", "fm", "fd"), 100_000_00, ("beneficiary_account", "justification")),
    "write_off": (("ccl", "fm", "fd"), 200_000_00, ("beneficiary_account", "cost_center", "justification")),
    "expense_claim": (("opm", "fm"), 20_000_00, ("beneficiary_account", "cost_center", "invoice_ref")),
    "purchase_order": (("po", "hop", "cfo"), 500_000_00, ("cost_center", "invoice_ref")),
    "vendor_payment": (("apm", "hop", "fd"), 200_000_00, ("beneficiary_account", "invoice_ref")),
}

REQUESTERS = {
    "refund": ("ca1", "ca2", "ca3", "sr1", "sr2", "tl1", "tl2"),
    "credit_adjustment": ("ca1", "ca2", "ca3", "sr1", "sr2", "ccc1", "ccc2"),
    "write_off": ("ccc1", "ccc2", "ccl"),
    "expense_claim": ("sr1", "sr2", "ops1", "fa1", "fa2", "po1", "ca1", "apc1"),
    "purchase_order": ("ops1", "po1", "po2", "fa1", "opm", "fa2"),
    "vendor_payment": ("apc1", "apc2", "apm"),
}

JUSTIFICATIONS = {
    "refund": ("duplicate card charge", "goods returned within 30 days", "service outage goodwill", "cancelled subscription"),
    "credit_adjustment": ("pricing error on invoice", "agreed volume rebate", "late delivery penalty", "billing-system migration error"),
    "write_off": ("customer insolvent", "debt older than 24 months", "uneconomic to pursue", "settled in court for less"),
    "expense_claim": ("client visit travel", "conference registration", "team offsite catering", "home-office equipment"),
    "purchase_order": ("replacement laptops", "warehouse shelving", "annual software licences", "office refurbishment"),
    "vendor_payment": ("quarterly logistics invoice", "consulting milestone", "facility maintenance", "cloud hosting invoice"),
}
SUPPLIERS = ("Northwind Traders", "Contoso Supplies", "Fabrikam Ltd", "Tailspin Logistics", "Wide World Importers", "Litware Inc")

INSTRUCTIONS = (
    "Hi desk, {name} ({dept}) has signed off {req}, a {label} of {amount}. Please record the approval and "
    "release it downstream if everything is in order; if it may not go ahead as asked, handle it the way the "
    "desk procedure says.",
    "Can you log {name} from {dept} as the approver of {req} ({label}, {amount})? If they cannot approve it, "
    "do whatever the procedure requires instead.",
    "{req} ({label}, {amount}) is waiting in the queue and {name} in {dept} says they approve it. Please "
    "record the right decision and only release the payout or order if the request may really proceed.",
    "Quick one: {name} ({dept}) is happy to approve {req} for {amount}. Sort it out on the desk, following "
    "the procedure.",
)
PROCEDURE_HINT = (
    " The desk procedure and the rules come with get_rules; cite the ids your decision rests on in basis_ids "
    "(the rule, and the role assignment or delegation that gives the approver authority, or for an escalation "
    "the fact that keeps them from deciding)."
)


@dataclass
class World:
    """A world under construction (plain dict rows)."""

    rng: random.Random
    now: str
    people: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)  # org key -> person id
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    role_by_key: dict[str, str] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules_by_type: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    role_holders: dict[str, dict[str, Any]] = field(default_factory=dict)
    delegations: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    ledger_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    used_ids: set[str] = field(default_factory=set)
    #: (delegator, delegate, role id, window kind) of the scenario's delegation, written once
    #: the request's submission date is known
    pending_delegation: tuple[str, str, str, str] | None = None
    #: extra digits of the ids drawn from now on (a scaled world's extra rows: wider id spaces,
    #: so they never collide with the task's own ids nor run out)
    extra_digits: int = 0

    @property
    def today(self) -> str:
        return self.now[:10]

    def new_id(self, prefix: str, digits: int) -> str:
        digits += self.extra_digits
        while True:
            rid = f"{prefix}-{self.rng.randrange(10 ** (digits - 1), 10 ** digits)}"
            if rid not in self.used_ids:
                self.used_ids.add(rid)
                return rid

    def tables(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {
            "people": self.people, "roles": self.roles, "rules": self.rules, "role_holders": self.role_holders,
            "delegations": self.delegations, "requests": self.requests, "decisions": self.decisions,
            "ledger_entries": self.ledger_entries, "orders": self.orders,
        }

    # -- building blocks -------------------------------------------------------------------
    def assign(self, person_id: str, role_id: str, valid_from: str, valid_to: str | None) -> dict[str, Any]:
        rid = self.new_id("RH", 4)
        row = {"id": rid, "person_id": person_id, "role_id": role_id, "valid_from": valid_from, "valid_to": valid_to}
        self.role_holders[rid] = row
        return row

    def delegate(self, delegator: str, delegate: str, role_id: str, valid_from: str, valid_to: str,
                 cap: int | None = None, revoked_at: str | None = None, reason: str = "annual leave") -> dict[str, Any]:
        rid = self.new_id("DLG", 4)
        row = {
            "id": rid, "delegator_id": delegator, "delegate_id": delegate, "role_id": role_id,
            "valid_from": valid_from, "valid_to": valid_to, "cap": cap, "revoked_at": revoked_at, "reason": reason,
        }
        self.delegations[rid] = row
        return row

    def holders(self, role_id: str) -> list[str]:
        """People holding ``role_id`` now (directly)."""
        return sorted({
            rh["person_id"] for rh in self.role_holders.values()
            if rh["role_id"] == role_id and auth.assignment_active(rh, self.now)
        })

    def clear_person(self, person_id: str) -> None:
        """Remove every assignment and delegation of a person (the scenario sets them)."""
        for rid in [k for k, rh in self.role_holders.items() if rh["person_id"] == person_id]:
            del self.role_holders[rid]
        for rid in [k for k, d in self.delegations.items() if person_id in (d["delegate_id"], d["delegator_id"])]:
            del self.delegations[rid]

    def band(self, rtype: str, index: int) -> dict[str, Any]:
        return self.rules_by_type[rtype][index]

    def amount_in(self, rule: dict[str, Any], boundary: float = 0.12) -> int:
        lo = rule["min_amount"]
        hi = rule["max_amount"] if rule["max_amount"] is not None else rule["hard_limit"]
        if self.rng.random() < boundary:
            return hi
        lo_c = max(lo, 1000)
        return self.rng.randrange(lo_c, max(lo_c + 1, hi + 1))

    def past_day(self, lo: int, hi: int) -> str:
        return add_days(self.today, -self.rng.randint(lo, hi))

    def instant(self, day: str) -> str:
        return f"{day}T{self.rng.randint(8, 17):02d}:{self.rng.choice((0, 5, 15, 20, 30, 40, 45, 50)):02d}:00"


def _scale(base: float, factor: float) -> int:
    return max(10_000, int(round(base * factor / 10_000)) * 10_000)


def build_world(rng: random.Random) -> World:
    """The organisation, roles, rules and background assignments (no task yet)."""
    day = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
    w = World(rng, f"{day}T{rng.randint(8, 16):02d}:{rng.choice((0, 15, 30, 45)):02d}:00")
    _add_people(w)
    factor = rng.choice((0.8, 1.0, 1.25, 1.5, 2.0))
    _add_roles(w, factor)
    _add_rules(w, factor)
    for key, _, _, _, _, natural in ROLE_TEMPLATES:
        for holder in natural:
            w.assign(w.by_key[holder], w.role_by_key[key], w.past_day(120, 900), None)
    return w


def _add_people(w: World) -> None:
    """The ``ORG`` chart with drawn names (surnames unique) and its reporting hierarchy."""
    rng = w.rng
    names = rng.sample(NAME_PAIRS, len(ORG))
    surnames_used: set[str] = set()
    for (key, title, dept, manager), (first, last) in zip(ORG, names):
        if last in surnames_used:  # keep surnames unique so find_people look-alikes are deliberate
            last = rng.choice([s for s in LAST if s not in surnames_used])
        surnames_used.add(last)
        pid = w.new_id("EMP", 4)
        w.by_key[key] = pid
        w.people[pid] = {
            "id": pid, "name": f"{first} {last}", "title": title, "department": dept,
            "email": f"{first.lower()}.{last.lower()}@example.com", "manager_id": None, "_mgr": manager,
        }
    for row in w.people.values():
        mgr = row.pop("_mgr")
        row["manager_id"] = w.by_key[mgr] if mgr else None


def _add_roles(w: World, factor: float) -> None:
    """The nine approval roles of ``ROLE_TEMPLATES``, limits scaled by ``factor``."""
    for key, name, types, limit, level, _ in ROLE_TEMPLATES:
        rid = w.new_id("R", 3)
        w.role_by_key[key] = rid
        w.roles[rid] = {"id": rid, "name": name, "request_types": list(types), "amount_limit": _scale(limit, factor), "level": level}


def _add_rules(w: World, factor: float) -> None:
    """Per request type, one rule per band of ``RULE_TEMPLATES`` (the band ends at its role's
    limit; the top band is open), hard limits scaled by ``factor``."""
    for rtype in REQUEST_TYPES:
        keys, hard, required = RULE_TEMPLATES[rtype]
        line_flag = w.rng.random() < 0.75
        lo = 1
        bands = []
        for i, rkey in enumerate(keys):
            role = w.roles[w.role_by_key[rkey]]
            top = None if i == len(keys) - 1 else role["amount_limit"]
            rid = w.new_id("RULE", 3)
            rule = {
                "id": rid, "request_type": rtype, "min_amount": lo, "max_amount": top,
                "required_role_id": role["id"], "required_level": role["level"], "hard_limit": _scale(hard, factor),
                "sod_not_requester": True, "sod_not_in_requester_line": line_flag, "required_fields": list(required),
            }
            w.rules[rid] = rule
            bands.append(rule)
            lo = (top or 0) + 1
        w.rules_by_type[rtype] = bands


def add_background(w: World, exclude: set[str]) -> None:
    """Distractors among people other than ``exclude``: ended assignments (one the day before
    the clock), delegations capped, expired, revoked or in effect."""
    others = sorted(p for p in w.people if p not in exclude)
    rng = w.rng
    for i in range(rng.randint(1, 2)):
        person = rng.choice(others)
        role = rng.choice(sorted(w.roles))
        ended = add_days(w.today, -1) if i == 0 or rng.random() < 0.5 else w.past_day(2, 60)
        w.assign(person, role, add_days(ended, -rng.randint(60, 400)), ended)
    delegable = [r for r in sorted(w.roles) if any(h not in exclude for h in w.holders(r))]
    for i in range(rng.randint(2, 4)):
        role = rng.choice(delegable)
        holders = [h for h in w.holders(role) if h not in exclude]
        delegator = rng.choice(holders)
        delegate = rng.choice([p for p in others if p != delegator])
        kind = "capped" if i == 0 else rng.choice(BACKGROUND_DELEGATIONS)
        background_delegation(w, kind, delegator, delegate, role)


#: the kinds of background delegation (see :func:`background_delegation`)
BACKGROUND_DELEGATIONS = ("capped", "expired", "active", "revoked", "future")


def background_delegation(w: World, kind: str, delegator: str, delegate: str, role: str) -> dict[str, Any]:
    """A distractor delegation of ``role``: ``capped`` (in effect, capped well below the role's
    limit), ``expired`` (ended yesterday), ``active``, ``revoked`` (a day or two ago) or
    ``future`` (starts in two days)."""
    rng = w.rng
    limit = w.roles[role]["amount_limit"]
    if kind == "capped":
        return w.delegate(delegator, delegate, role, w.past_day(0, 5), add_days(w.today, rng.randint(1, 15)), cap=_scale(limit * rng.uniform(0.1, 0.5), 1.0))
    if kind == "expired":
        return w.delegate(delegator, delegate, role, w.past_day(20, 40), add_days(w.today, -1))
    if kind == "active":
        return w.delegate(delegator, delegate, role, w.past_day(0, 5), add_days(w.today, rng.randint(0, 15)))
    if kind == "revoked":
        return w.delegate(delegator, delegate, role, w.past_day(3, 9), add_days(w.today, 10), revoked_at=w.instant(w.past_day(1, 2)))
    return w.delegate(delegator, delegate, role, add_days(w.today, 2), add_days(w.today, 12))


def make_request(w: World, rtype: str, amount: int, requester: str, submitted_at: str, status: str = "pending") -> dict[str, Any]:
    rng = w.rng
    rid = w.new_id("REQ", 4)
    row = {
        "id": rid, "type": rtype, "amount": amount, "currency": "EUR", "requester_id": requester,
        "beneficiary_account": f"ACC-{rng.randrange(100000, 999999)}",
        "cost_center": f"CC-{rng.randrange(100, 999)}", "invoice_ref": f"INV-{rng.randrange(10000, 99999)}",
        "justification": rng.choice(JUSTIFICATIONS[rtype]), "order_id": None,
        "submitted_at": submitted_at, "status": status,
    }
    required = w.rules_by_type[rtype][0]["required_fields"]
    for f in INFO_FIELDS:  # empty fields the rule does not require: not a reason to hold
        if f not in required and rng.random() < 0.3:
            row[f] = None if rng.random() < 0.7 else ""
    if rtype in ORDER_TYPES:
        oid = w.new_id("PO", 5)
        row["order_id"] = oid
        w.orders[oid] = {
            "id": oid, "request_id": rid, "supplier": rng.choice(SUPPLIERS), "amount": amount,
            "status": "awaiting_approval" if status in ("pending", "on_hold") else "released",
            "released_at": None,
        }
    w.requests[rid] = row
    return row


def queued_request(w: World, rtype: str, amount: int, requester: str) -> dict[str, Any]:
    """A request in the queue (pending, or on hold), submitted in the last two weeks."""
    rng = w.rng
    return make_request(w, rtype, amount, requester, w.instant(w.past_day(1, 15)), rng.choice(("pending", "pending", "on_hold")))


def add_queue_and_history(w: World, target: dict[str, Any]) -> None:
    """Other pending requests (some look like the target) and a few decided ones."""
    rng = w.rng
    for i in range(rng.randint(4, 7)):
        rtype = target["type"] if i < 2 else rng.choice(REQUEST_TYPES)
        requester = target["requester_id"] if i == 0 else w.by_key[rng.choice(REQUESTERS[rtype])]
        rule = rng.choice(w.rules_by_type[rtype])
        amount = target["amount"] + rng.choice((-100, 100, 5000)) if i == 1 else w.amount_in(rule, 0.0)
        queued_request(w, rtype, max(100, amount), requester)
    for _ in range(rng.randint(2, 4)):
        rtype = rng.choice(REQUEST_TYPES)
        rule = w.rules_by_type[rtype][0]
        holder = w.holders(rule["required_role_id"])
        requester = w.by_key[rng.choice(REQUESTERS[rtype])]
        if not holder or holder[0] == requester:
            continue
        rh = next(r for r in w.role_holders.values() if r["person_id"] == holder[0] and r["role_id"] == rule["required_role_id"])
        decided_request(w, rtype, rule, holder[0], rh["id"], requester)


def decided_request(w: World, rtype: str, rule: dict[str, Any], approver: str, assignment_id: str,
                    requester: str) -> dict[str, Any]:
    """A request of the history, approved weeks ago by ``approver`` (citing the rule and their
    assignment ``assignment_id``) and released downstream (ledger entry or order release)."""
    day = w.past_day(20, 80)
    req = make_request(w, rtype, w.amount_in(rule, 0.0), requester, w.instant(add_days(day, -2)), "approved")
    did = f"DEC-{req['id']}-1"
    w.decisions[did] = {
        "id": did, "request_id": req["id"], "outcome": "proceed", "approver_id": approver,
        "basis_ids": [rule["id"], assignment_id], "escalated_to": None, "note": "", "decided_at": w.instant(day),
    }
    if is_ledger_type(rtype):
        lid = f"LE-{req['id']}-1"
        w.ledger_entries[lid] = {
            "id": lid, "request_id": req["id"], "account": req["beneficiary_account"] or "ACC-000000",
            "amount": req["amount"], "memo": "", "posted_at": w.instant(day),
        }
    else:
        w.orders[req["order_id"]]["released_at"] = w.instant(day)
    return req


def add_look_alike(w: World, person_id: str, request: dict[str, Any] | None, rule: Mapping[str, Any]) -> str:
    """Someone with the approver's exact name in another department (sometimes an approver)."""
    rng = w.rng
    src = w.people[person_id]
    depts = sorted({p["department"] for p in w.people.values()} - {src["department"]})
    dept = rng.choice(depts)
    manager = next(p["id"] for p in sorted(w.people.values(), key=lambda p: p["id"]) if p["department"] == dept)
    pid = w.new_id("EMP", 4)
    first, last = src["name"].split(" ", 1)
    w.people[pid] = {
        "id": pid, "name": src["name"], "title": "Senior Specialist", "department": dept,
        "email": f"{first.lower()}.{last.lower()}2@example.com", "manager_id": manager,
    }
    if rng.random() < 0.4:
        w.assign(pid, rule["required_role_id"], w.past_day(30, 300), None)
    return pid


# -- scenarios --------------------------------------------------------------------------------
def _pick_type(w: World, min_bands: int = 1) -> str:
    return w.rng.choice([t for t in REQUEST_TYPES if len(w.rules_by_type[t]) >= min_bands])


def _requester_for(w: World, rtype: str, approver: str, rule: Mapping[str, Any]) -> str:
    rng = w.rng
    line = auth.reporting_line(w.tables(), approver)
    if not rule["sod_not_in_requester_line"] and line and rng.random() < 0.3:
        return rng.choice(line)  # allowed by this rule: the approver may report to the requester
    options = [w.by_key[k] for k in REQUESTERS[rtype] if w.by_key[k] != approver and w.by_key[k] not in line]
    if not options:
        options = sorted(p for p in w.people if p != approver and p not in line)
    return rng.choice(options)


def _natural_or_any(w: World, role_id: str, avoid: set[str]) -> str:
    key = next(k for k, rid in w.role_by_key.items() if rid == role_id)
    natural = [w.by_key[h] for t in ROLE_TEMPLATES if t[0] == key for h in t[5] if w.by_key[h] not in avoid]
    if natural and w.rng.random() < 0.8:
        return w.rng.choice(natural)
    return w.rng.choice(sorted(p for p in w.people if p not in avoid))


def _non_authorised(w: World, rtype: str, avoid: set[str]) -> str:
    """A person with no role covering ``rtype`` (e.g. an analyst or a clerk)."""
    covering = {r["id"] for r in w.roles.values() if rtype in r["request_types"]}
    holding = {rh["person_id"] for rh in w.role_holders.values() if rh["role_id"] in covering}
    options = sorted(
        p for p in w.people if p not in avoid and p not in holding and w.people[p]["manager_id"] is not None
    )
    return w.rng.choice(options)


def _delegation_window(w: World, submitted_day: str, kind: str) -> dict[str, Any]:
    rng = w.rng
    days_since = _days_between(submitted_day, w.today)
    if kind == "valid":
        return {"valid_from": w.past_day(0, 10), "valid_to": w.today if rng.random() < 0.2 else add_days(w.today, rng.randint(1, 20))}
    if kind == "expired":
        return {"valid_from": add_days(submitted_day, -rng.randint(3, 20)),
                "valid_to": add_days(w.today, -1 if rng.random() < 0.5 else -rng.randint(1, max(1, days_since - 1)))}
    if kind == "future":
        start = add_days(w.today, rng.randint(1, 14))
        return {"valid_from": start, "valid_to": add_days(start, rng.randint(3, 20))}
    # revoked: in its window now, revoked between the submission and now (maybe earlier today)
    minutes = rng.randint(10, max(11, (days_since - 1) * 1440)) if rng.random() < 0.6 else rng.randint(10, 60)
    revoked = _minus_minutes(w.now, minutes)
    return {"valid_from": add_days(submitted_day, -rng.randint(1, 10)), "valid_to": add_days(w.today, rng.randint(1, 20)), "revoked_at": revoked}


def _days_between(a: str, b: str) -> int:
    return (dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days


def _minus_minutes(now: str, minutes: int) -> str:
    return (dt.datetime.fromisoformat(now) - dt.timedelta(minutes=minutes)).isoformat()


@dataclass
class Plan:
    """The target request to create once the approver's situation is planted."""

    rtype: str
    amount: int
    requester: str | None
    approver: str
    blank_field: str | None = None


@dataclass
class Target:
    """The first draw of every scenario: a request type, a band of its rules and an amount in
    it (some planters draw their own instead, after this one)."""

    rtype: str
    bands: list[dict[str, Any]]
    rule: dict[str, Any]
    amount: int

    @property
    def role(self) -> str:
        return self.rule["required_role_id"]


def _draw_target(w: World) -> Target:
    rtype = _pick_type(w)
    bands = w.rules_by_type[rtype]
    rule = bands[w.rng.randrange(len(bands))]
    return Target(rtype, bands, rule, w.amount_in(rule))


def _assign_current(w: World, approver: str, role: str) -> None:
    """A current assignment of ``role`` (sometimes starting today, sometimes ending soon)."""
    rng = w.rng
    start = w.today if rng.random() < 0.1 else w.past_day(30, 700)
    end = None if rng.random() < 0.7 else (w.today if rng.random() < 0.3 else add_days(w.today, rng.randint(1, 90)))
    w.assign(approver, role, start, end)


def _plant_clean(w: World, t: Target) -> Plan:
    """The approver holds the rule's role (sometimes a more senior one) directly."""
    role = t.role
    if w.rng.random() < 0.2:  # a more senior role also authorises
        role = w.rng.choice(auth.accepted_roles(w.tables(), t.rtype, t.amount, t.rule["required_level"]))
    approver = _natural_or_any(w, role, set())
    w.clear_person(approver)
    _assign_current(w, approver, role)
    return Plan(t.rtype, t.amount, None, approver)


def _plant_self_approval(w: World, t: Target) -> Plan:
    """The approver holds the role but is the requester."""
    approver = _natural_or_any(w, t.role, set())
    w.clear_person(approver)
    _assign_current(w, approver, t.role)
    return Plan(t.rtype, t.amount, approver, approver)


def _plant_approver_is_requesters_subordinate(w: World, t: Target) -> Plan:
    """The rule forbids approvers in the requester's line; the requester is the approver's manager."""
    for r in w.rules_by_type[t.rtype]:
        r["sod_not_in_requester_line"] = True
    approver = _natural_or_any(w, t.role, set())
    if not auth.reporting_line(w.tables(), approver):
        approver = w.rng.choice(sorted(p for p in w.people if w.people[p]["manager_id"]))
    w.clear_person(approver)
    _assign_current(w, approver, t.role)
    return Plan(t.rtype, t.amount, w.rng.choice(auth.reporting_line(w.tables(), approver)), approver)


def _plant_missing_information(w: World, t: Target) -> Plan:
    """The approver may decide (directly or by a delegation in effect); a required field is blank."""
    rng = w.rng
    approver = _natural_or_any(w, t.role, set())
    w.clear_person(approver)
    _assign_current(w, approver, t.role)
    if rng.random() < 0.3:
        w.clear_person(approver)
        holder = rng.choice([h for h in w.holders(t.role) if h != approver] or [approver])
        if holder == approver:
            w.assign(approver, t.role, w.past_day(30, 700), None)
        else:
            w.delegate(holder, approver, t.role, w.past_day(0, 10), add_days(w.today, rng.randint(0, 20)))
    return Plan(t.rtype, t.amount, None, approver, rng.choice(t.rule["required_fields"]))


def _plant_role_ended(w: World, t: Target) -> Plan:
    """The approver's assignment of the role ended yesterday (maybe moved to another role)."""
    rng = w.rng
    approver = _natural_or_any(w, t.role, set())
    w.clear_person(approver)
    w.assign(approver, t.role, w.past_day(100, 700), add_days(w.today, -1))
    if rng.random() < 0.5:  # moved on to a role that does not cover this type
        new = [r for r in w.roles.values() if t.rtype not in r["request_types"]]
        if new:
            w.assign(approver, rng.choice(new)["id"], w.today, None)
    return Plan(t.rtype, t.amount, None, approver)


def _delegated(w: World, t: Target, kind: str) -> Plan:
    """A delegation of the rule's role to someone with no covering role; its window (``kind``:
    valid, expired, future, revoked) is written once the submission date is known."""
    delegator = w.rng.choice(w.holders(t.role))
    approver = _non_authorised(w, t.rtype, {delegator})
    # keep a natural role the approver may have (it covers other types only)
    w.pending_delegation = (delegator, approver, t.role, kind)
    return Plan(t.rtype, t.amount, None, approver)


def _plant_valid_via_delegation(w: World, t: Target) -> Plan:
    return _delegated(w, t, "valid")


def _plant_expired_delegation(w: World, t: Target) -> Plan:
    return _delegated(w, t, "expired")


def _plant_future_delegation(w: World, t: Target) -> Plan:
    return _delegated(w, t, "future")


def _plant_revoked_delegation(w: World, t: Target) -> Plan:
    return _delegated(w, t, "revoked")


def _plant_over_limit(w: World, t: Target) -> Plan:
    """A senior approver who may decide, but the amount is above the top band's hard limit."""
    rng = w.rng
    top = t.bands[-1]
    over = [r for r in w.roles.values() if t.rtype in r["request_types"] and r["level"] >= top["required_level"] and r["amount_limit"] > top["hard_limit"]]
    big = rng.choice(sorted(over, key=lambda r: r["id"]))
    amount = rng.randint(top["hard_limit"] + 1, min(big["amount_limit"], int(top["hard_limit"] * 1.6)))
    approver = _natural_or_any(w, big["id"], set())
    w.clear_person(approver)
    w.assign(approver, big["id"], w.past_day(60, 900), None)
    return Plan(t.rtype, amount, None, approver)


def _plant_wrong_request_type(w: World, t: Target) -> Plan:
    """The approver holds a senior enough role that does not cover the request type (redrawn)."""
    rng = w.rng
    for _ in range(20):
        rtype = _pick_type(w)
        rule = rng.choice(w.rules_by_type[rtype])
        amount = w.amount_in(rule)
        others = [r for r in w.roles.values() if rtype not in r["request_types"] and r["level"] >= rule["required_level"] and r["amount_limit"] >= amount]
        if others:
            break
    other = rng.choice(sorted(others, key=lambda r: r["id"]))
    approver = _natural_or_any(w, other["id"], set())
    w.clear_person(approver)
    w.assign(approver, other["id"], w.past_day(60, 900), None)
    return Plan(rtype, amount, None, approver)


def _plant_needs_escalation(w: World, t: Target) -> Plan:
    """The approver falls short: a lower band's role, or a delegation capped below the amount."""
    rtype = _pick_type(w, 2)
    bands = w.rules_by_type[rtype]
    if w.rng.random() < 0.5:
        return _lower_band_role(w, rtype, bands)
    return _capped_delegation(w, rtype, bands)


def _lower_band_role(w: World, rtype: str, bands: list[dict[str, Any]]) -> Plan:
    """A lower role: the amount sits in a higher band."""
    b = w.rng.randrange(1, len(bands))
    amount = w.amount_in(bands[b])
    low = bands[b - 1]["required_role_id"]
    approver = _natural_or_any(w, low, set())
    w.clear_person(approver)
    w.assign(approver, low, w.past_day(60, 900), None)
    return Plan(rtype, amount, None, approver)


def _capped_delegation(w: World, rtype: str, bands: list[dict[str, Any]]) -> Plan:
    """A delegation in effect but capped below the amount."""
    rng = w.rng
    rule = bands[rng.randrange(len(bands))]
    amount = max(w.amount_in(rule), 200_00)
    role = rule["required_role_id"]
    delegator = rng.choice(w.holders(role))
    approver = _non_authorised(w, rtype, {delegator})
    w.clear_person(approver)
    cap = max(100_00, (amount * rng.randint(30, 90) // 100) // 100_00 * 100_00)
    window = _delegation_window(w, w.today, "valid")
    w.delegate(delegator, approver, role, window["valid_from"], window["valid_to"], cap=min(cap, amount - 1))
    return Plan(rtype, amount, None, approver)


#: defect tag -> the function planting its trap (after the common :func:`_draw_target`)
PLANTERS: dict[str, Callable[[World, Target], Plan]] = {
    "clean": _plant_clean,
    "valid_via_delegation": _plant_valid_via_delegation,
    "self_approval": _plant_self_approval,
    "approver_is_requesters_subordinate": _plant_approver_is_requesters_subordinate,
    "expired_delegation": _plant_expired_delegation,
    "future_delegation": _plant_future_delegation,
    "revoked_delegation": _plant_revoked_delegation,
    "over_limit": _plant_over_limit,
    "wrong_request_type": _plant_wrong_request_type,
    "role_ended": _plant_role_ended,
    "needs_escalation": _plant_needs_escalation,
    "missing_information": _plant_missing_information,
}


def scenario(w: World, tag: str) -> Plan:
    """Set up the approver's authority for ``tag``; return the target request's plan."""
    target = _draw_target(w)
    if tag not in PLANTERS:
        raise ValueError(f"unknown defect tag {tag!r}")
    return PLANTERS[tag](w, target)


#: Tags whose trap is sometimes only a decoy, with the chance of it: the approver also has a
#: valid authority (so citing the expired / future / revoked delegation, the ended assignment,
#: the role of another request type or the capped delegation is wrong), the requester only
#: shares the approver's name (self_approval), or the rule does not set
#: ``sod_not_in_requester_line`` (approver_is_requesters_subordinate).
DECOY_RATE = {
    "expired_delegation": 0.65, "future_delegation": 0.65, "revoked_delegation": 0.65, "role_ended": 0.6,
    "wrong_request_type": 0.6, "needs_escalation": 0.5, "self_approval": 0.3, "approver_is_requesters_subordinate": 0.3,
}
DECOY_TAGS = tuple(DECOY_RATE)
#: chance that a task whose approver may decide (and that is not over the hard limit) also has
#: an empty required field, so the right outcome is hold
HOLD_OVERLAY = 0.38
#: chance that a task whose approver may not decide also has an empty required field (the
#: escalation still comes first)
NOISE_OVERLAY = 0.25
#: chance that the approver also has assignments that give no authority for the request
DISTRACTOR_RATE = 0.9


def add_distractor_assignments(w: World, approver: str, request: dict[str, Any]) -> None:
    """Two or three assignments of the approver that give no authority for this request: an
    assignment that ended weeks ago, or a current one of a role not covering the request type
    (so the approver's first assignment is not always the one to cite)."""
    rng = w.rng
    others = sorted(r["id"] for r in w.roles.values() if request["type"] not in r["request_types"])
    for _ in range(rng.randint(2, 3)):
        if others and rng.random() < 0.5:
            w.assign(approver, rng.choice(others), w.past_day(30, 500), None)
        else:
            end = w.past_day(20, 200)
            w.assign(approver, rng.choice(sorted(w.roles)), add_days(end, -rng.randint(60, 400)), end)


def add_other_authority(w: World, approver: str, request: dict[str, Any], rule: Mapping[str, Any]) -> None:
    """Give ``approver`` a valid authority besides the trap: a current delegation from another
    holder of a sufficient role, or (for an ended role) a re-appointment starting today."""
    rng = w.rng
    ended = [rh for rh in w.role_holders.values() if rh["person_id"] == approver and rh["valid_to"] is not None and rh["valid_to"] < w.today]
    if ended and rng.random() < 0.6:
        w.assign(approver, ended[0]["role_id"], w.today, None)
        return
    busy = {d["delegator_id"] for d in w.delegations.values() if d["delegate_id"] == approver}
    options = [
        (role, h) for role in auth.accepted_roles(w.tables(), request["type"], request["amount"], rule["required_level"])
        for h in w.holders(role) if h != approver and h not in busy and h != request["requester_id"]
    ]
    if not options:  # nobody else to delegate: a direct assignment of the rule's role
        w.assign(approver, rule["required_role_id"], w.past_day(0, 30), None)
        return
    role, holder = rng.choice(options)
    window = _delegation_window(w, w.today, "valid")
    w.delegate(holder, approver, role, window["valid_from"], window["valid_to"], reason="cover during project")


def _instructions(w: World, rng: random.Random, request: dict[str, Any], approver: dict[str, Any]) -> str:
    text = rng.choice(INSTRUCTIONS).format(
        name=approver["name"], dept=approver["department"], req=request["id"],
        label=TYPE_LABELS[request["type"]], amount=money(request["amount"]),
    )
    return text + PROCEDURE_HINT


#: the approver problems of each tag's trap (when it is not a decoy)
EXPECTED_APPROVER = {
    "clean": [], "valid_via_delegation": [], "self_approval": [auth.SELF],
    "approver_is_requesters_subordinate": [auth.REPORTING_LINE],
    "expired_delegation": [auth.INACTIVE_DELEGATION], "future_delegation": [auth.INACTIVE_DELEGATION],
    "revoked_delegation": [auth.INACTIVE_DELEGATION], "over_limit": [],
    "wrong_request_type": [auth.NO_AUTHORITY], "role_ended": [auth.NO_AUTHORITY],
    "needs_escalation": [auth.LIMIT], "missing_information": [],
}


def _attempt(seed: int, tag: str, attempt: int, scale: int = 1) -> Generated | None:
    """One task whose trap is ``defect_tag`` (pure in its arguments), in a world about
    ``scale`` times the released size (:func:`scale_up`)."""
    rng = random.Random(derive_seed("approvals", seed, attempt))
    w = build_world(rng)
    plan = scenario(w, tag)
    rule = auth.applicable_rule(w.tables(), plan.rtype, plan.amount)
    assert rule is not None
    decoy = tag in DECOY_RATE and rng.random() < DECOY_RATE[tag]
    look_alike = _separation_decoy(w, tag, plan, rule) if decoy else None
    request, submitted_day = _target_request(w, plan, rule)
    _write_pending_delegation(w, plan, submitted_day)
    if decoy and tag not in ("self_approval", "approver_is_requesters_subordinate"):
        add_other_authority(w, plan.approver, request, rule)
    approver_problems = [] if decoy else EXPECTED_APPROVER[tag]
    blank = _blank_field(w, tag, plan, rule, request, approver_problems)
    if rng.random() < DISTRACTOR_RATE:
        add_distractor_assignments(w, plan.approver, request)
    add_background(w, {plan.approver, request["requester_id"]})
    add_queue_and_history(w, request)
    if look_alike is None and rng.random() < 0.7:
        add_look_alike(w, plan.approver, request, rule)
    verdict = auth.assess(w.tables(), request, plan.approver, w.now)
    if not _consistent(w, tag, plan, verdict, approver_problems, blank):
        return None
    key = _key(tag, decoy, blank, request, plan, verdict)
    task = _task(w, request, plan)
    if scale > 1:
        scale_up(w, scale, random.Random(derive_seed("approvals-scale", seed, attempt, scale)))
        _check_unchanged(w, request, plan, verdict)
    return Generated(task=task, snapshot=_snapshot(w), key=key)


def _separation_decoy(w: World, tag: str, plan: Plan, rule: Mapping[str, Any]) -> str | None:
    """The decoy of a separation-of-duties tag: the requester only shares the approver's name
    (self_approval; returns the look-alike), or the rule allows approvers in the requester's
    line (approver_is_requesters_subordinate)."""
    look_alike: str | None = None
    if tag == "self_approval":
        look_alike = add_look_alike(w, plan.approver, None, rule)
        plan.requester = look_alike
    if tag == "approver_is_requesters_subordinate":
        for r in w.rules_by_type[plan.rtype]:
            r["sod_not_in_requester_line"] = False
    return look_alike


def _target_request(w: World, plan: Plan, rule: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The target request (every field the rule requires filled in) and its submission day."""
    rng = w.rng
    requester = plan.requester or _requester_for(w, plan.rtype, plan.approver, rule)
    submitted_day = w.past_day(2, 12)
    request = make_request(w, plan.rtype, plan.amount, requester, w.instant(submitted_day))
    for f in rule["required_fields"]:
        if request[f] is None or request[f] == "":
            request[f] = {"beneficiary_account": f"ACC-{rng.randrange(100000, 999999)}", "cost_center": f"CC-{rng.randrange(100, 999)}",
                          "invoice_ref": f"INV-{rng.randrange(10000, 99999)}", "justification": rng.choice(JUSTIFICATIONS[plan.rtype])}[f]
    return request, submitted_day


def _write_pending_delegation(w: World, plan: Plan, submitted_day: str) -> None:
    """The delegation tags' delegation, its window relative to the submission (maybe capped)."""
    if w.pending_delegation is None:
        return
    rng = w.rng
    delegator, delegate, role, kind = w.pending_delegation
    window = _delegation_window(w, submitted_day, kind)
    limit = w.roles[role]["amount_limit"]
    cap = None if rng.random() < 0.5 else (plan.amount if rng.random() < 0.3 else min(limit, _scale(plan.amount * 1.5, 1.0)))
    w.delegate(delegator, delegate, role, window["valid_from"], window["valid_to"], cap=cap, revoked_at=window.get("revoked_at"))


def _blank_field(w: World, tag: str, plan: Plan, rule: Mapping[str, Any], request: dict[str, Any],
                 approver_problems: list[str]) -> str | None:
    """The required field left empty (the missing_information trap, or an overlay), if any."""
    rng = w.rng
    blank = plan.blank_field
    if blank is None and tag != "over_limit":
        if rng.random() < (NOISE_OVERLAY if approver_problems else HOLD_OVERLAY):
            blank = rng.choice(rule["required_fields"])
    if blank:
        request[blank] = None if rng.random() < 0.7 else ""
    return blank


def _consistent(w: World, tag: str, plan: Plan, verdict: auth.Assessment, approver_problems: list[str],
                blank: str | None) -> bool:
    """The world says what the key will say: exactly the planted problems, the authority of the
    expected kind, and one person with the approver's name in their department."""
    if verdict.approver_problems != approver_problems:
        return False
    if (auth.HARD_LIMIT in verdict.problems) != (tag == "over_limit") or (auth.MISSING_INFO in verdict.problems) != bool(blank):
        return False
    if tag == "clean" and any(i.startswith("DLG") for i in verdict.authority_ids):
        return False
    if tag == "valid_via_delegation" and any(not i.startswith("DLG") for i in verdict.authority_ids):
        return False
    approver = w.people[plan.approver]
    same = [p for p in w.people.values() if p["name"] == approver["name"] and p["department"] == approver["department"]]
    return len(same) == 1


def _key(tag: str, decoy: bool, blank: str | None, request: dict[str, Any], plan: Plan,
         verdict: auth.Assessment) -> dict[str, Any]:
    """The answer key: tags, targets (the rows the task may write) and the expected decision."""
    rid = request["id"]
    ledger = is_ledger_type(plan.rtype)
    downstream: dict[str, Any] = {"kind": "ledger" if ledger else "order",
                                  "order_id": request["order_id"], "account": request["beneficiary_account"], "amount": request["amount"]}
    targets = [f"requests:{rid}", f"decisions:DEC-{rid}-*"]
    targets.append(f"ledger_entries:LE-{rid}-*" if ledger else f"orders:{request['order_id']}")
    tags = [tag] + (["missing_information"] if blank and tag != "missing_information" else [])
    return {
        "defect_tags": tags, "decoy": decoy, "targets": targets, "outcome_class": verdict.outcome, "needs_action": True,
        "expected": {
            "request_id": rid, "approver_id": plan.approver, "outcome": verdict.outcome, "rule_id": verdict.rule_id,
            "accepted_roles": verdict.accepted_roles, "required_role_id": verdict.required_role_id,
            "authority_ids": verdict.authority_ids, "blocking_ids": sorted(verdict.blocking_ids),
            "downstream": downstream,
        },
    }


def _task(w: World, request: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """The brief: the colleague's instructions naming the request and the approver."""
    approver = w.people[plan.approver]
    return {
        "instructions": _instructions(w, w.rng, request, approver),
        "allowed_tools": list(ALL_TOOLS),
        "params": {"request_id": request["id"], "approver_name": approver["name"], "approver_department": approver["department"]},
        "max_steps": 40,
    }


def _snapshot(w: World) -> dict[str, list[dict[str, Any]]]:
    snapshot = {name: list(rows.values()) for name, rows in w.tables().items()}
    snapshot["clock"] = [{"id": "clock", "now": w.now}]
    return snapshot


# -- the scale tier ------------------------------------------------------------------------------
#: Approval roles of the organisation's other desks (travel, hiring, IT access, ...): (name,
#: request types, limit in cents, level). A scaled world's extra staff hold and delegate them;
#: they cover none of this desk's request types, so they never authorise a decision here, are
#: never an escalation target that counts, and never change an answer.
OTHER_DESK_ROLES = (
    ("Travel Desk Approver", ("travel_booking",), 20_000_00, 1),
    ("Hiring Approver", ("new_hire", "contract_extension"), 150_000_00, 2),
    ("IT Access Approver", ("system_access",), 10_000_00, 1),
    ("Contract Signatory", ("contract_signature",), 500_000_00, 3),
    ("Marketing Spend Approver", ("marketing_spend",), 50_000_00, 2),
    ("Facilities Approver", ("facilities_work_order",), 25_000_00, 1),
)
#: departments of the extra staff: the desk's own and the other desks'
SCALE_DEPARTMENTS = tuple(dict.fromkeys(d for _, _, d, _ in ORG)) + (
    "Human Resources", "IT", "Legal", "Marketing", "Facilities", "Travel Office",
)
_STEMS = ("Ander", "Bal", "Cor", "Dahl", "Eng", "Fal", "Grun", "Hal", "Ibs", "Jor", "Kell", "Lund", "Mar", "Nord",
          "Ost", "Pell", "Rand", "Sol", "Tor", "Vall", "Wick", "Yard", "Zell", "Ash", "Birk", "Cald", "Dun", "Ferr",
          "Gil", "Holm")
_ENDINGS = ("berg", "strom", "wood", "ley", "field", "ford", "mont", "vik", "dale", "by", "ton", "wick", "hurst",
            "stead", "well")
#: surnames of the extra staff: none is, starts or ends like a surname of ``LAST``, so
#: ``find_people`` on a task's approver finds the same people at every scale
SCALE_SURNAMES = tuple(
    name for name in (stem + ending for stem in _STEMS for ending in _ENDINGS)
    if not any(name.lower().startswith(s.lower()) or s.lower().startswith(name.lower())
               or name.lower().endswith(s.lower()) for s in LAST)
)
#: people, role assignments and requests of one extra team: about what the task's own world
#: has (27 people, 16 assignments, 9 requests, a few delegations and decisions)
TEAM_LEADS = 3
TEAM_STAFF = 23


def scale_up(w: World, scale: int, rng: random.Random) -> None:
    """Grow the finished world to about ``scale`` times its size with ``scale - 1`` extra teams
    of the same organisation (the same building blocks as the task's own world: people,
    assignments, delegations, queued and decided requests with their decisions, ledger entries
    and orders), drawn from ``rng`` with wider ids.

    The extra rows cannot change the task's answer: the extra staff have surnames no task
    person has, hold only the other desks' roles (:data:`OTHER_DESK_ROLES`), delegate among
    themselves, and file their own requests; the history's decisions are by the task world's
    first holder of each type's first-band role. Linear in the rows added.
    """
    w.rng = rng
    other_roles = []
    for name, types, limit, level in OTHER_DESK_ROLES:
        rid = w.new_id("R", 3)
        w.roles[rid] = {"id": rid, "name": name, "request_types": list(types), "amount_limit": limit, "level": level}
        other_roles.append(rid)
    # who signs the history's decisions, per request type (the task world's, fixed before growing)
    signers: dict[str, tuple[str, str]] = {}
    for rtype in REQUEST_TYPES:
        role = w.rules_by_type[rtype][0]["required_role_id"]
        holder = w.holders(role)
        if holder:
            rh = next(r for r in w.role_holders.values() if r["person_id"] == holder[0] and r["role_id"] == role)
            signers[rtype] = (holder[0], rh["id"])
    executives = [w.by_key["cfo"], w.by_key["coo"]]
    w.extra_digits = 2
    for _ in range(scale - 1):
        _add_team(w, rng.choice(executives), other_roles, signers)


def _add_team(w: World, reports_to: str, roles: list[str], signers: Mapping[str, tuple[str, str]]) -> None:
    """One extra team: a manager, leads and staff; their assignments of the other desks'
    roles (current or ended) and delegations; their queued and decided requests."""
    rng = w.rng
    dept = rng.choice(SCALE_DEPARTMENTS)

    def person(title: str, manager: str) -> str:
        pid = w.new_id("EMP", 4)
        first, last = rng.choice(FIRST), rng.choice(SCALE_SURNAMES)
        w.people[pid] = {
            "id": pid, "name": f"{first} {last}", "title": title, "department": dept,
            "email": f"{first.lower()}.{last.lower()}.{pid[4:]}@example.com", "manager_id": manager,
        }
        return pid

    head = person(f"{dept} Manager", reports_to)
    leads = [person(f"{dept} Team Lead", head) for _ in range(TEAM_LEADS)]
    staff = [person(f"{dept} Specialist", rng.choice(leads)) for _ in range(TEAM_STAFF)]
    team = [head, *leads, *staff]
    holders: list[tuple[str, str]] = []
    for pid in (head, *leads):
        role = rng.choice(roles)
        w.assign(pid, role, w.past_day(30, 900), None)
        holders.append((pid, role))
    for pid in staff:
        if rng.random() < 0.5:
            continue
        role = rng.choice(roles)
        if rng.random() < 0.5:
            w.assign(pid, role, w.past_day(30, 700), None)
            holders.append((pid, role))
        else:
            ended = w.past_day(1, 120)
            w.assign(pid, role, add_days(ended, -rng.randint(60, 400)), ended)
    for _ in range(rng.randint(2, 5)):
        delegator, role = rng.choice(holders)
        delegate = rng.choice([p for p in team if p != delegator])
        background_delegation(w, rng.choice(BACKGROUND_DELEGATIONS), delegator, delegate, role)
    for _ in range(rng.randint(4, 7)):
        rtype = rng.choice(REQUEST_TYPES)
        queued_request(w, rtype, w.amount_in(rng.choice(w.rules_by_type[rtype]), 0.0), rng.choice(team))
    for _ in range(rng.randint(2, 4)):
        rtype = rng.choice(REQUEST_TYPES)
        if rtype in signers:
            approver, assignment = signers[rtype]
            decided_request(w, rtype, w.rules_by_type[rtype][0], approver, assignment, rng.choice(team))


def _check_unchanged(w: World, request: dict[str, Any], plan: Plan, verdict: auth.Assessment) -> None:
    """The grown world gives the task's verdict and still names one approver: a guard on
    :func:`scale_up`'s promise (a failure is a bug, never a redraw)."""
    grown = auth.assess(auth.TablesReader(w.tables()), request, plan.approver, w.now)
    approver = w.people[plan.approver]
    same = [p for p in w.people.values() if p["name"] == approver["name"] and p["department"] == approver["department"]]
    if grown != verdict or len(same) != 1:
        raise RuntimeError(f"scaling the world changed the answer of request {request['id']}")


_generate = retrying(_attempt, DEFECT_TAGS, tries=200)


def generate(seed: int, defect_tag: str, scale: int = 1) -> Generated:
    """One task whose trap is ``defect_tag``, pure in its arguments; ``scale`` > 1 builds the
    same task (the same brief and answer key) in a world about ``scale`` times the released size
    (:func:`scale_up`). Raises ``ValueError`` for an unknown tag or a scale below 1."""
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    if scale == 1:
        return _generate(seed, defect_tag)
    return retrying(lambda s, t, a: _attempt(s, t, a, scale), DEFECT_TAGS, tries=200)(seed, defect_tag)
