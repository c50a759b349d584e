"""Generator of approval-desk worlds and tasks.

``generate(seed, defect_tag)`` draws an organisation (27 people with a reporting hierarchy, nine
approval roles, three amount bands for each of six request types with hard limits, required
fields and a separation-of-duties flag), background role assignments and delegations, a pending
queue and some history, then a target request and a named approver whose situation is the task's
trap. The result is checked with :func:`backoffice.envs.approvals.authority.assess` so that the
world says exactly what was planned; a draw that fails the check is redrawn from a derived seed
(still pure in the arguments).

What the agent sees before it judges carries nothing about the answer (seeds v2):

- the amount is drawn from one distribution whatever the outcome, and the world (role limits,
  bands, hard limits) is drawn *around* it, so the amount alone says nothing of the band, the
  hard limit or the approver's authority;
- every request has one or two empty fields, whatever the outcome; the request type's bands
  list which fields are required, so an empty field is a reason to hold only when the rules say so;
- the named approver is any of the desk's managers and leads, whatever the trap;
- every approver has three role assignments and three delegations received, among which the one
  that gives authority (or the one that falls short by a single check) stands anywhere, beside
  near misses (an assignment or delegation that fails exactly one authority rule: a role that
  does not cover the type, too junior, with too low a limit; a window that ended or has not
  begun; a revocation; a delegator who left the role; a cap below the amount) and far misses;
- the approver shares their name with one or two people in other departments.

So every authority rule of the rule document changes the answer in many tasks: ignoring it makes
a near miss look like authority.

``generate(seed, defect_tag, scale=k)`` builds the same task (brief, key and every row of its
world unchanged) in an organisation about ``k`` times larger: :func:`scale_up` adds ``k - 1``
extra teams from the same building blocks (people, assignments and delegations of the other
desks' roles, queued and decided requests with their decisions, ledger entries and orders), in
time linear in the rows added. ``scale=1`` is exactly the released generator.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.approvals import authority as auth
from backoffice.envs.approvals.rules import ASSIGNMENT_CHECKS, DELEGATION_CHECKS, failed_checks, is_ledger_type
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

#: the people a task may name as its approver, whatever its trap: the desk's managers, leads and
#: directors (each has a manager, so the reporting-line trap can always be planted)
APPROVER_KEYS = ("fd", "fm1", "fm2", "apm", "ccl", "hop", "csm", "tl1", "tl2", "opm", "sd")

#: (key, name, request types, level, natural holders): the desk's nine approval roles. Every
#: request type is covered by two level-1 roles, one level-2 role and the level-3 and level-4
#: roles, so at most five roles may approve a request. Limits are drawn per world (:func:`_roles`).
ROLE_TEMPLATES = (
    ("cctl", "Team Lead Approver", ("refund", "credit_adjustment", "write_off"), 1, ("tl1", "tl2")),
    ("ccl", "Credit Control Approver", ("write_off", "credit_adjustment", "refund"), 1, ("ccl",)),
    ("opm", "Operations Approver", ("expense_claim", "purchase_order"), 1, ("opm",)),
    ("po", "Procurement Approver", ("purchase_order", "vendor_payment"), 1, ("po1", "po2")),
    ("apm", "Payables Approver", ("vendor_payment", "expense_claim"), 1, ("apm",)),
    ("fm", "Finance Manager Approver", ("refund", "credit_adjustment", "write_off", "expense_claim"), 2, ("fm1", "fm2")),
    ("hop", "Procurement Head Approver", ("purchase_order", "vendor_payment"), 2, ("hop",)),
    ("fd", "Finance Director Approver", REQUEST_TYPES, 3, ("fd",)),
    ("cfo", "Executive Approver", REQUEST_TYPES, 4, ("cfo",)),
)

#: the target amount: log-uniform in this range (cents), the same for every outcome
AMOUNT_RANGE = (1_000_00, 40_000_00)
#: band 2's top over band 1's, and the hard limit over band 2's top (log-uniform)
BAND_RATIO = (2.5, 5.0)
HARD_RATIO = (1.6, 3.0)
#: how far inside its band the amount stands (a share of the band's edges), so no amount sits
#: on a boundary it could be mistaken for
EDGE = 0.04

#: the authority tags: their trap is an assignment or delegation that fails one authority rule;
#: it blocks the approver (an escalation) in BLOCK_RATE of them, else it is a decoy beside a
#: valid authority
AUTHORITY_TAGS = ("expired_delegation", "future_delegation", "revoked_delegation", "wrong_request_type",
                  "role_ended", "needs_escalation")
BLOCK_RATE = 0.2
#: over the hard limit / a required field empty, among the authority tags' decided tasks (the
#: rest proceed), and among escalations (where they change nothing)
P_OVER, P_MISSING = 0.33, 0.5
P_OVER_BLOCKED, P_MISSING_BLOCKED = 0.33, 0.5
#: a separation-of-duties tag's approver holds a valid authority (else a near miss)
SOD_VALID = 0.5
#: near misses beside a valid authority: how many (weights of 1, 2, 3)
NEAR_COUNT = (0.3, 0.45, 0.25)
#: decoys of separation of duties: the rule lets approvers report to the requester and one does;
#: the requester only shares the approver's name
LINE_DECOY, SELF_DECOY = 0.25, 0.1
#: assignments and delegations received of every approver (the catalog tiers give six row slots)
N_ASSIGNMENTS = N_DELEGATIONS = 3

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
    " Amounts are in cents. The desk procedure (its rules, and the request type's bands) comes with get_rules; "
    "record_decision takes request_id, outcome, approver_id (required: the approver's person id) and basis_ids, "
    "escalate takes request_id, role_id and basis_ids; cite in basis_ids the band id and the role assignment or "
    "delegation that gives the approver authority, or for an escalation the fact that keeps them from deciding."
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
    rules_by_type: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # bands by min_amount
    role_holders: dict[str, dict[str, Any]] = field(default_factory=dict)
    delegations: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    ledger_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    used_ids: set[str] = field(default_factory=set)
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


def nice(cents: float) -> int:
    """``cents`` rounded to two significant digits (at least 100.00 EUR): a limit as a desk
    would set it."""
    value = max(10_000.0, cents)
    step = 10 ** max(0, int(math.floor(math.log10(value))) - 1)
    return int(round(value / step)) * step


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


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


# -- the plan --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One role assignment or delegation received of the approver to plant: which authority
    rules it fails (none: it gives authority; one: a near miss; two: a far miss) and, for a
    failed window, whether it ended (``past``), ended yesterday, or has not begun (``future``)."""

    delegation: bool
    fails: tuple[str, ...] = ()
    window: str = "past"


@dataclass
class Plan:
    """What the task is made of, drawn before the world: the request (type, amount, band), the
    outcome's ingredients and the approver's entries."""

    tag: str
    rtype: str
    amount: int
    band: int  # 0, 1, 2: the band index by min_amount (required_level band + 1)
    over: bool
    missing: bool
    empty: tuple[str, ...]  # the request's empty fields (one or two, whatever the outcome)
    sod: str | None  # "self" / "line": the approver may not decide whatever their authority
    blocked: bool  # no assignment or delegation of theirs gives authority
    entries: list[Entry]
    line_decoy: bool = False
    self_decoy: bool = False

    @property
    def level(self) -> int:
        return self.band + 1


def _trap(rng: random.Random, tag: str) -> Entry:
    """The assignment or delegation failing one authority rule that an authority tag plants."""
    if tag == "expired_delegation":
        return Entry(True, ("delegator_holds",)) if rng.random() < 0.3 else Entry(True, ("window",), "expired")
    if tag == "future_delegation":
        return Entry(True, ("window",), "future")
    if tag == "revoked_delegation":
        return Entry(True, ("revocation",))
    if tag == "role_ended":
        return Entry(False, ("window",), "yesterday" if rng.random() < 0.5 else "past")
    if tag == "wrong_request_type":
        return Entry(rng.random() < 0.4, ("role_type",))
    kind = rng.choice(("role_level", "role_limit", "delegation_cap"))
    return Entry(kind == "delegation_cap" or rng.random() < 0.5, (kind,))


def _bands_for(entries: list[Entry]) -> list[int]:
    """The bands a set of planted entries can stand in: a type near miss needs a role of the
    required level that does not cover the type (none at level 3), a level near miss a band
    above the first."""
    checks = {c for e in entries for c in e.fails}
    bands = [0, 1, 2]
    if "role_type" in checks:
        bands = [b for b in bands if b < 2]
    if "role_level" in checks:
        bands = [b for b in bands if b > 0]
    return bands


def _near(rng: random.Random, n: int, band: int | None) -> list[Entry]:
    """``n`` near misses of random authority rules (feasible in ``band`` when known)."""
    out: list[Entry] = []
    for _ in range(n):
        kinds = ["role_type", "role_level", "role_limit", "window", "revocation", "delegator_holds", "delegation_cap"]
        if band is not None:
            kinds = [k for k in kinds if not (k == "role_type" and band == 2) and not (k == "role_level" and band == 0)]
        kind = rng.choice(kinds)
        delegation = kind in ("revocation", "delegator_holds", "delegation_cap") or rng.random() < 0.5
        out.append(Entry(delegation, (kind,), rng.choice(("past", "yesterday", "future"))))
    return out


def draw_plan(rng: random.Random, tag: str) -> Plan:
    """The task's plan for ``tag``: who may decide, what the request lacks, the approver's
    entries. The amount and the empty fields are drawn alike for every tag."""
    rtype = rng.choice(REQUEST_TYPES)
    amount = int(_log_uniform(rng, *AMOUNT_RANGE))
    emptyable = [f for f in INFO_FIELDS if not (is_ledger_type(rtype) and f == "beneficiary_account")]
    empty = tuple(sorted(rng.sample(emptyable, rng.choice((1, 2)))))
    sod = {"self_approval": "self", "approver_is_requesters_subordinate": "line"}.get(tag)
    entries: list[Entry] = []
    blocked = False
    if tag in AUTHORITY_TAGS:
        trap = _trap(rng, tag)
        blocked = rng.random() < BLOCK_RATE
        entries.append(trap)
        if not blocked:
            entries.append(Entry(rng.random() < 0.5))
    elif sod is not None:
        if rng.random() < SOD_VALID:
            entries.append(Entry(rng.random() < 0.5))
        else:
            entries.append(_near(rng, 1, None)[0])
            blocked = True
    else:  # clean: a role held directly; valid_via_delegation: a delegation; else either
        entries.append(Entry(tag == "valid_via_delegation" if tag in ("clean", "valid_via_delegation") else rng.random() < 0.5))
    decided = not blocked and sod is None
    if tag == "over_limit":
        over, missing = True, rng.random() < 0.5
    elif tag == "missing_information":
        over, missing = False, True
    elif tag in ("clean", "valid_via_delegation"):
        over, missing = False, False
    elif decided:
        over, missing = rng.random() < P_OVER, rng.random() < P_MISSING
    else:
        over, missing = rng.random() < P_OVER_BLOCKED, rng.random() < P_MISSING_BLOCKED
    bands = _bands_for(entries)
    if over and 2 not in bands:
        over = False
    band = 2 if over else rng.choice(bands)
    if not blocked or sod is not None:  # near misses beside the authority (or beside the SoD block)
        count = rng.choices((1, 2, 3), NEAR_COUNT)[0] if not blocked else rng.randint(0, 2)
        entries += _near(rng, count, band)
    plan = Plan(tag, rtype, amount, band, over, missing, empty, sod, blocked, entries)
    if sod is None:
        plan.line_decoy = rng.random() < LINE_DECOY
        plan.self_decoy = rng.random() < SELF_DECOY
    return plan


# -- roles and bands, drawn around the amount --------------------------------------------------------
def _structure(rng: random.Random, plan: Plan) -> tuple[float, float, float]:
    """The target type's band tops and hard limit ``(T1, T2, H)``, drawn so that the amount
    stands inside its planned band (well inside, :data:`EDGE`), above the hard limit exactly
    when planned."""
    r2, r3 = _log_uniform(rng, *BAND_RATIO), _log_uniform(rng, *HARD_RATIO)
    lo_edge, hi_edge = 1 + EDGE, 1 - EDGE
    if plan.over:
        lo, hi = r2 * r3 * lo_edge, r2 * r3 * 1.5
    elif plan.band == 0:
        lo, hi = 0.3, hi_edge
    elif plan.band == 1:
        lo, hi = lo_edge, r2 * hi_edge
    else:
        lo, hi = r2 * lo_edge, r2 * r3 * hi_edge
    x = _log_uniform(rng, lo, hi)  # the amount in units of band 1's top
    t1 = plan.amount / x
    return t1, t1 * r2, t1 * r2 * r3


def _roles(w: World, t1: float, t2: float, hard: float) -> None:
    """The nine roles, limits drawn around the target type's bands (cfo's set once every
    type's bands are known, :func:`_bands`)."""
    rng = w.rng
    for key, name, types, level, _ in ROLE_TEMPLATES:
        rid = w.new_id("R", 3)
        w.role_by_key[key] = rid
        base = {1: (t1, 0.45, 2.5), 2: (t2, 0.55, 2.0), 3: (hard, 0.7, 2.0), 4: (hard, 2.0, 3.0)}[level]
        limit = nice(base[0] * _log_uniform(rng, base[1], base[2]))
        w.roles[rid] = {"id": rid, "name": name, "request_types": list(types), "amount_limit": limit, "level": level}


def _bands(w: World, plan: Plan, tops: tuple[float, float, float], required: dict[str, list[str]],
           line_flags: dict[str, bool]) -> None:
    """Three bands per request type (the target type's from ``tops``, the others drawn alike
    around them), each naming the least senior role that may approve every amount in it (covers
    the type, level >= the band's, limit >= its top, or >= the hard limit for the top band)."""
    rng = w.rng
    t1, t2, hard = tops
    structures: dict[str, tuple[int, int, int]] = {}
    for rtype in REQUEST_TYPES:
        if rtype == plan.rtype:
            structures[rtype] = (nice(t1), nice(t2), nice(hard))
        else:
            a = t1 * _log_uniform(rng, 0.6, 1.6)
            b = a * _log_uniform(rng, *BAND_RATIO)
            structures[rtype] = (nice(a), nice(b), nice(b * _log_uniform(rng, *HARD_RATIO)))
    cfo = w.roles[w.role_by_key["cfo"]]
    cfo["amount_limit"] = max(cfo["amount_limit"], nice(max(h for _, _, h in structures.values()) * 1.7))
    for rtype in REQUEST_TYPES:
        top1, top2, hard_limit = structures[rtype]
        bands = []
        lo = 1
        for level, top in ((1, top1), (2, top2), (3, None)):
            need = top if top is not None else hard_limit
            role = min((r for r in w.roles.values() if rtype in r["request_types"] and r["level"] >= level
                        and r["amount_limit"] >= need), key=lambda r: (r["level"], r["amount_limit"], r["id"]))
            rid = w.new_id("BAND", 3)
            band = {
                "id": rid, "request_type": rtype, "min_amount": lo, "max_amount": top, "required_level": level,
                "required_role_id": role["id"], "hard_limit": hard_limit,
                "sod_not_in_requester_line": line_flags[rtype], "required_fields": list(required[rtype]),
            }
            w.rules[rid] = band
            bands.append(band)
            lo = (top or 0) + 1
        w.rules_by_type[rtype] = bands


def _required_fields(rng: random.Random, plan: Plan) -> dict[str, list[str]]:
    """Each type's required fields: the target type's include an empty field of the request
    exactly when a field is planned missing; a ledger type always requires the account it pays
    out to."""
    out: dict[str, list[str]] = {}
    for rtype in REQUEST_TYPES:
        ledger = is_ledger_type(rtype)
        pool = [f for f in INFO_FIELDS if not (ledger and f == "beneficiary_account")]
        if rtype == plan.rtype:
            filled = [f for f in pool if f not in plan.empty]
            chosen = set(rng.sample(filled, rng.randint(0 if ledger or plan.missing else 1, len(filled))))
            if plan.missing:
                chosen.add(rng.choice(plan.empty))
        else:
            chosen = set(rng.sample(pool, rng.randint(0 if ledger else 1, 2)))
        if ledger:
            chosen.add("beneficiary_account")
        out[rtype] = [f for f in INFO_FIELDS if f in chosen]
    return out


def _fit_slots(rng: random.Random, entries: list[Entry]) -> list[Entry]:
    """The planted entries that fit the approver's slots (three of each kind, the first entries
    kept as planned; a later role or window near miss may move to the other kind)."""
    out: list[Entry] = []
    used = {True: 0, False: 0}
    limit = {True: N_DELEGATIONS, False: N_ASSIGNMENTS}
    for i, e in enumerate(entries):
        if used[e.delegation] < limit[e.delegation]:
            out.append(e)
        elif i >= 2 and set(e.fails) <= set(ASSIGNMENT_CHECKS) and used[not e.delegation] < limit[not e.delegation]:
            e = Entry(not e.delegation, e.fails, e.window)
            out.append(e)
        else:
            continue
        used[e.delegation] += 1
    return out


# -- the approver's entries --------------------------------------------------------------------
def _role_matching(w: World, plan: Plan, fails: tuple[str, ...] | set[str]) -> list[dict[str, Any]]:
    """The roles whose three role rules (type, level, limit) fail exactly as in ``fails``."""
    return sorted((
        r for r in w.roles.values()
        if (plan.rtype not in r["request_types"]) == ("role_type" in fails)
        and (r["level"] < plan.level) == ("role_level" in fails)
        and (r["amount_limit"] < plan.amount) == ("role_limit" in fails)
    ), key=lambda r: r["id"])


def _make_roles_fit(w: World, plan: Plan) -> None:
    """Move role limits so that every planted role near miss has a role: a role of the required
    level (or more) below the amount, a junior role or one not covering the type above it. The
    executive role keeps its limit (it approves everything below the hard limits)."""
    rng = w.rng
    cfo = w.role_by_key["cfo"]
    for check in ("role_limit", "role_level", "role_type"):
        if not any(e.fails == (check,) for e in plan.entries) or _role_matching(w, plan, (check,)):
            continue
        if check == "role_limit":
            pool = [r for r in w.roles.values() if plan.rtype in r["request_types"] and r["level"] >= plan.level and r["id"] != cfo]
            amount = nice(plan.amount * rng.uniform(0.35, 0.8))
        elif check == "role_level":
            pool = [r for r in w.roles.values() if plan.rtype in r["request_types"] and r["level"] < plan.level]
            amount = nice(plan.amount * rng.uniform(1.2, 2.2))
        else:
            pool = [r for r in w.roles.values() if plan.rtype not in r["request_types"] and r["level"] >= plan.level]
            amount = nice(plan.amount * rng.uniform(1.2, 2.2))
        if pool:
            rng.choice(sorted(pool, key=lambda r: r["id"]))["amount_limit"] = amount


@dataclass
class Cast:
    """The people of the task: the approver, their namesakes, the requester."""

    approver: str
    look_alikes: list[str]
    requester: str
    submitted_day: str


def _window(w: World, entry: Entry, fails: bool, submitted_day: str) -> tuple[str, str | None]:
    """``(valid_from, valid_to)`` of an entry: covering today, or failing as ``entry.window`` says."""
    rng = w.rng
    today = w.today
    span = (3, 30) if entry.delegation else (30, 400)
    if not fails:
        if entry.delegation:
            return w.past_day(0, 10), today if rng.random() < 0.2 else add_days(today, rng.randint(1, 20))
        start = today if rng.random() < 0.1 else w.past_day(30, 700)
        r = rng.random()
        return start, None if r < 0.7 else today if r < 0.8 else add_days(today, rng.randint(1, 90))
    if entry.window == "future":
        start = add_days(today, rng.randint(1, 14))
        return start, add_days(start, rng.randint(*span))
    if entry.window == "expired":  # in effect when the request came in, ended since
        days = max(1, (dt.date.fromisoformat(today) - dt.date.fromisoformat(submitted_day)).days - 1)
        end = add_days(today, -1 if rng.random() < 0.5 else -rng.randint(1, days))
        return add_days(submitted_day, -rng.randint(3, 20)), end
    end = add_days(today, -1) if entry.window == "yesterday" else w.past_day(2, 60)
    return add_days(end, -rng.randint(*span)), end


def _delegator(w: World, role_id: str, holds: bool, avoid: set[str]) -> str:
    """Who delegates ``role_id``: a current holder (one is appointed when there is none), or
    (``holds=False``) someone whose assignment of the role has ended."""
    rng = w.rng
    current = set(w.holders(role_id))
    if holds:
        options = sorted(current - avoid)
        if options:
            return rng.choice(options)
        person = rng.choice(sorted(set(w.people) - avoid))
        w.assign(person, role_id, w.past_day(30, 500), None)
        return person
    person = rng.choice(sorted(set(w.people) - avoid - current))
    end = w.past_day(1, 40)
    w.assign(person, role_id, add_days(end, -rng.randint(60, 500)), end)
    return person


def _plant(w: World, plan: Plan, cast: Cast, entry: Entry, avoid: set[str]) -> tuple[str, list[str]] | None:
    """Plant one entry of the approver failing exactly ``entry.fails``; returns its id and the
    rules it fails (``None`` when no role fits)."""
    rng = w.rng
    fails = set(entry.fails)
    roles = _role_matching(w, plan, fails)
    if not roles:
        return None
    role = rng.choice(roles)
    valid_from, valid_to = _window(w, entry, "window" in fails, cast.submitted_day)
    if not entry.delegation:
        row = w.assign(cast.approver, role["id"], valid_from, valid_to)
        return row["id"], failed_checks(row, role, {"type": plan.rtype, "amount": plan.amount},
                                        {"required_level": plan.level}, w.now, delegation=False)
    if valid_to is None:
        valid_to = add_days(w.today, rng.randint(1, 20))
    revoked = None
    if "revocation" in fails:
        if valid_from > w.today:
            return None
        earliest = max(dt.datetime.fromisoformat(valid_from + "T00:00:00"),
                       dt.datetime.fromisoformat(w.now) - dt.timedelta(days=9))
        latest = min(dt.datetime.fromisoformat(valid_to + "T23:59:00"), dt.datetime.fromisoformat(w.now))
        if latest <= earliest:
            return None
        revoked = (earliest + (latest - earliest) * rng.uniform(0.05, 1.0)).replace(second=0, microsecond=0).isoformat()
    cap: int | None = None
    if "delegation_cap" in fails:
        cap = nice(plan.amount * rng.uniform(0.3, 0.85))
    elif rng.random() < 0.5:
        cap = nice(plan.amount * rng.uniform(1.15, 3.0))
    holds = "delegator_holds" not in fails
    delegator = _delegator(w, role["id"], holds, avoid)
    row = w.delegate(delegator, cast.approver, role["id"], valid_from, valid_to, cap=cap, revoked_at=revoked,
                     reason=rng.choice(("annual leave", "parental leave", "cover during project", "business travel")))
    return row["id"], failed_checks(row, role, {"type": plan.rtype, "amount": plan.amount},
                                    {"required_level": plan.level}, w.now, delegation=True, delegator_holds=holds)


#: far misses: two authority rules failed at once (a revocation needs a window that began)
_FAR_ASSIGNMENT = tuple((a, b) for i, a in enumerate(ASSIGNMENT_CHECKS) for b in ASSIGNMENT_CHECKS[i + 1:])
_FAR_DELEGATION = tuple((a, b) for i, a in enumerate(DELEGATION_CHECKS) for b in DELEGATION_CHECKS[i + 1:])


def _plant_entries(w: World, plan: Plan, cast: Cast) -> dict[str, list[str]] | None:
    """Every assignment and delegation of the approver: the planned ones, then far misses up to
    three of each kind. Returns ``{id: rules failed}`` (``None`` when a planned one cannot be
    planted: the attempt is redrawn)."""
    rng = w.rng
    avoid = {cast.approver, cast.requester, *cast.look_alikes}
    planted: dict[str, list[str]] = {}
    for entry in plan.entries:
        got = _plant(w, plan, cast, entry, avoid)
        if got is None or sorted(got[1]) != sorted(entry.fails):
            return None
        planted[got[0]] = got[1]
    for delegation, n in ((False, N_ASSIGNMENTS), (True, N_DELEGATIONS)):
        have = sum(1 for e in plan.entries if e.delegation == delegation)
        for _ in range(n - have):
            for _try in range(12):
                fails = rng.choice(_FAR_DELEGATION if delegation else _FAR_ASSIGNMENT)
                got = _plant(w, plan, cast, Entry(delegation, fails, rng.choice(("past", "future"))), avoid)
                if got is not None and len(got[1]) >= 2:
                    planted[got[0]] = got[1]
                    break
            else:
                return None
    return planted


# -- the people ---------------------------------------------------------------------------------
def add_look_alike(w: World, person_id: str, avoid_depts: set[str]) -> str:
    """Someone with ``person_id``'s exact name in another department (sometimes an approver)."""
    rng = w.rng
    src = w.people[person_id]
    depts = sorted({p["department"] for p in w.people.values()} - avoid_depts)
    dept = rng.choice(depts)
    manager = next(p["id"] for p in sorted(w.people.values(), key=lambda p: p["id"]) if p["department"] == dept)
    pid = w.new_id("EMP", 4)
    first, last = src["name"].split(" ", 1)
    w.people[pid] = {
        "id": pid, "name": src["name"], "title": rng.choice(("Senior Specialist", "Analyst", "Coordinator")),
        "department": dept, "email": f"{first.lower()}.{last.lower()}.{pid[4:]}@example.com", "manager_id": manager,
    }
    if rng.random() < 0.5:
        w.assign(pid, rng.choice(sorted(w.roles)), w.past_day(30, 300), None)
    return pid


def _cast(w: World, plan: Plan, line_flags: dict[str, bool]) -> Cast:
    """The approver (any of :data:`APPROVER_KEYS`), one or two namesakes in other departments,
    and the requester (the approver, one of their managers, a namesake or a colleague)."""
    rng = w.rng
    approver = w.by_key[rng.choice(APPROVER_KEYS)]
    depts = {w.people[approver]["department"]}
    look_alikes = []
    for _ in range(rng.choice((1, 2))):
        pid = add_look_alike(w, approver, depts)
        depts.add(w.people[pid]["department"])
        look_alikes.append(pid)
    line = auth.reporting_line(w.tables(), approver)
    if plan.sod == "self":
        requester = approver
    elif plan.sod == "line" or (plan.line_decoy and not line_flags[plan.rtype]):
        requester = rng.choice(line)
    elif plan.self_decoy:
        requester = rng.choice(look_alikes)
    else:
        options = [w.by_key[k] for k in REQUESTERS[plan.rtype] if w.by_key[k] != approver and w.by_key[k] not in line]
        requester = rng.choice(options or sorted(p for p in w.people if p != approver and p not in line))
    return Cast(approver, look_alikes, requester, w.past_day(2, 12))


# -- the request ---------------------------------------------------------------------------------
def make_request(w: World, rtype: str, amount: int, requester: str, submitted_at: str, status: str = "pending",
                 empty: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A request with its order (order types); ``empty`` names the fields left empty (else one
    or two drawn alike for every request)."""
    rng = w.rng
    rid = w.new_id("REQ", 4)
    row = {
        "id": rid, "type": rtype, "amount": amount, "currency": "EUR", "requester_id": requester,
        "beneficiary_account": f"ACC-{rng.randrange(100000, 999999)}",
        "cost_center": f"CC-{rng.randrange(100, 999)}", "invoice_ref": f"INV-{rng.randrange(10000, 99999)}",
        "justification": rng.choice(JUSTIFICATIONS[rtype]), "order_id": None,
        "submitted_at": submitted_at, "status": status,
    }
    if empty is None:
        pool = [f for f in INFO_FIELDS if not (is_ledger_type(rtype) and f == "beneficiary_account")]
        empty = tuple(rng.sample(pool, rng.choice((1, 2))))
    for f in empty:
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
        rh = next(r for r in w.role_holders.values() if r["person_id"] == holder[0] and r["role_id"] == rule["required_role_id"]
                  and auth.assignment_active(r, w.now))
        decided_request(w, rtype, rule, holder[0], rh["id"], requester)


def decided_request(w: World, rtype: str, rule: dict[str, Any], approver: str, assignment_id: str,
                    requester: str) -> dict[str, Any]:
    """A request of the history, approved weeks ago by ``approver`` (citing the band and their
    assignment ``assignment_id``) and released downstream (ledger entry or order release)."""
    day = w.past_day(20, 80)
    req = make_request(w, rtype, w.amount_in(rule, 0.0), requester, w.instant(add_days(day, -2)), "approved", empty=())
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


#: the kinds of background delegation (see :func:`background_delegation`)
BACKGROUND_DELEGATIONS = ("capped", "expired", "active", "revoked", "future")


def background_delegation(w: World, kind: str, delegator: str, delegate: str, role: str) -> dict[str, Any]:
    """A distractor delegation of ``role``: ``capped`` (in effect, capped well below the role's
    limit), ``expired`` (ended yesterday), ``active``, ``revoked`` (a day or two ago) or
    ``future`` (starts in two days)."""
    rng = w.rng
    limit = w.roles[role]["amount_limit"]
    if kind == "capped":
        return w.delegate(delegator, delegate, role, w.past_day(0, 5), add_days(w.today, rng.randint(1, 15)), cap=nice(limit * rng.uniform(0.1, 0.5)))
    if kind == "expired":
        return w.delegate(delegator, delegate, role, w.past_day(20, 40), add_days(w.today, -1))
    if kind == "active":
        return w.delegate(delegator, delegate, role, w.past_day(0, 5), add_days(w.today, rng.randint(0, 15)))
    if kind == "revoked":
        return w.delegate(delegator, delegate, role, w.past_day(3, 9), add_days(w.today, 10), revoked_at=w.instant(w.past_day(1, 2)))
    return w.delegate(delegator, delegate, role, add_days(w.today, 2), add_days(w.today, 12))


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


# -- one task ------------------------------------------------------------------------------------
def _attempt(seed: int, tag: str, attempt: int, scale: int = 1) -> Generated | None:
    """One task whose trap is ``defect_tag`` (pure in its arguments), in a world about
    ``scale`` times the released size (:func:`scale_up`)."""
    rng = random.Random(derive_seed("approvals", seed, attempt))
    day = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
    w = World(rng, f"{day}T{rng.randint(8, 16):02d}:{rng.choice((0, 15, 30, 45)):02d}:00")
    _add_people(w)
    plan = draw_plan(rng, tag)
    plan.entries = _fit_slots(rng, plan.entries)
    tops = _structure(rng, plan)
    _roles(w, *tops)
    _make_roles_fit(w, plan)
    line_flags = {t: rng.random() < 0.5 for t in REQUEST_TYPES}
    if plan.sod == "line":
        line_flags[plan.rtype] = True
    elif plan.line_decoy:
        line_flags[plan.rtype] = False
    _bands(w, plan, tops, _required_fields(rng, plan), line_flags)
    cast = _cast(w, plan, line_flags)
    for role_key, _, _, _, natural in ROLE_TEMPLATES:
        for holder in natural:
            if w.by_key[holder] != cast.approver:
                w.assign(w.by_key[holder], w.role_by_key[role_key], w.past_day(120, 900), None)
    planted = _plant_entries(w, plan, cast)
    if planted is None:
        return None
    request = make_request(w, plan.rtype, plan.amount, cast.requester, w.instant(cast.submitted_day), empty=plan.empty)
    add_background(w, {cast.approver, cast.requester, *cast.look_alikes})
    add_queue_and_history(w, request)
    verdict = auth.assess(w.tables(), request, cast.approver, w.now)
    if not _consistent(w, plan, cast, verdict, planted):
        return None
    key = _key(plan, request, cast, verdict)
    task = _task(w, request, cast)
    if scale > 1:
        scale_up(w, scale, random.Random(derive_seed("approvals-scale", seed, attempt, scale)))
        _check_unchanged(w, request, cast, verdict)
    return Generated(task=task, snapshot=_snapshot(w), key=key)


def _consistent(w: World, plan: Plan, cast: Cast, verdict: auth.Assessment, planted: dict[str, list[str]]) -> bool:
    """The world says what the plan says: the entries fail what was planted (one authority at
    most; exactly one near miss when nothing else blocks an approver without authority), the
    separation-of-duties problems, the band, the hard limit and the empty required fields as
    planned, and one person with the approver's name in their department."""
    if verdict.failures != planted:
        return False
    rule = w.rules_by_type[plan.rtype][plan.band]
    if verdict.rule_id != rule["id"]:
        return False
    sod = {"self": [auth.SELF], "line": [auth.REPORTING_LINE], None: []}[plan.sod]
    expected = sod + ([auth.NO_AUTHORITY] if plan.blocked else [])
    if verdict.approver_problems != expected or len(verdict.authority_ids) > 1:
        return False
    if plan.blocked and plan.sod is None and len(verdict.blocking) != 1:
        return False
    if (auth.HARD_LIMIT in verdict.problems) != plan.over or (auth.MISSING_INFO in verdict.problems) != plan.missing:
        return False
    approver = w.people[cast.approver]
    same = [p for p in w.people.values() if p["name"] == approver["name"] and p["department"] == approver["department"]]
    return len(same) == 1


def _key(plan: Plan, request: dict[str, Any], cast: Cast, verdict: auth.Assessment) -> dict[str, Any]:
    """The answer key: tags, targets (the rows the task may write) and the expected decision."""
    rid = request["id"]
    ledger = is_ledger_type(plan.rtype)
    downstream: dict[str, Any] = {"kind": "ledger" if ledger else "order",
                                  "order_id": request["order_id"], "account": request["beneficiary_account"], "amount": request["amount"]}
    targets = [f"requests:{rid}", f"decisions:DEC-{rid}-*"]
    targets.append(f"ledger_entries:LE-{rid}-*" if ledger else f"orders:{request['order_id']}")
    tags = [plan.tag]
    tags += [t for t, on in (("over_limit", plan.over), ("missing_information", plan.missing)) if on and t != plan.tag]
    return {
        "defect_tags": tags, "decoy": plan.tag in AUTHORITY_TAGS and not plan.blocked, "targets": targets,
        "outcome_class": verdict.outcome, "needs_action": True,
        "expected": {
            "request_id": rid, "approver_id": cast.approver, "outcome": verdict.outcome, "rule_id": verdict.rule_id,
            "accepted_roles": verdict.accepted_roles, "required_role_id": verdict.required_role_id,
            "authority_ids": verdict.authority_ids, "blocking_ids": sorted(verdict.blocking_ids),
            "downstream": downstream,
        },
    }


def _task(w: World, request: dict[str, Any], cast: Cast) -> dict[str, Any]:
    """The brief: the colleague's instructions naming the request and the approver."""
    approver = w.people[cast.approver]
    text = w.rng.choice(INSTRUCTIONS).format(
        name=approver["name"], dept=approver["department"], req=request["id"],
        label=TYPE_LABELS[request["type"]], amount=money(request["amount"]),
    )
    return {
        "instructions": text + PROCEDURE_HINT,
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


def _check_unchanged(w: World, request: dict[str, Any], cast: Cast, verdict: auth.Assessment) -> None:
    """The grown world gives the task's verdict and still names one approver: a guard on
    :func:`scale_up`'s promise (a failure is a bug, never a redraw)."""
    grown = auth.assess(auth.TablesReader(w.tables()), request, cast.approver, w.now)
    approver = w.people[cast.approver]
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
