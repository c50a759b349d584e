"""Who may approve what, when: the desk policy as pure functions over tables.

Used by the generator (to check that each task's trap is the only one) and by the grader (to
judge every recorded decision at the clock of its own trace line). Never by tools, never by
policies: the oracle works from tool results alone. The rules' arithmetic on single rows (band,
missing fields, windows, candidate roles, delegated limit) is :mod:`.rules`, shared with the
oracle and the catalog; the whole-snapshot verdict here is the grader's alone.

``tables`` is a :class:`SnapshotReader` (the grader: a snapshot's live rows, every look-up
through its primary key or its indexed ``rows(table, field=value)``, so a verdict costs O(the
approver's rows), not O(tables)), a :class:`~backoffice.envs.core.Store` (the same look-ups,
on copies) or any mapping ``table name -> {id: row}`` (plain dicts: the generator's world under
construction and small hand-made tables; large ones indexed on first use by
:class:`TablesReader`). Rows are only read, never changed. Times are ISO strings; dates compare
as strings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from backoffice.envs.approvals import rules
from backoffice.envs.approvals.rules import role_sufficient, window_covers
from backoffice.envs.core.store import Snapshot, Store

__all__ = [
    "Assessment", "Authority", "Reader", "SnapshotReader", "Source", "TablesReader", "accepted_roles", "applicable_rule", "applies_as_basis", "approver_rows", "assess",
    "assignment_active", "authority", "delegation_in_effect", "holds_directly", "reporting_line", "role_sufficient",
    "reader", "window_covers",
]

Row = Mapping[str, Any]
Tables = Mapping[str, Mapping[str, Row]]


class Reader(Protocol):
    """What the verdict reads: a row by primary key, and the rows whose fields equal given
    values (in id order). :class:`~backoffice.envs.core.Store` is one (indexed)."""

    def get(self, table: str, rid: str) -> Any: ...

    def rows(self, table: str, where: Callable[[Any], bool] | None = None, **equals: Any) -> list[Any]: ...


#: tables smaller than this are scanned (cheaper than building an index for one verdict)
_SCAN_BELOW = 256


class TablesReader:
    """A :class:`Reader` over plain ``name -> {id: row}`` mappings: each ``(table, field)``
    of a large table looked up by equality is indexed on first use, so a verdict over a large world built from
    dicts (a scaled generated world) costs one pass per index, not one per look-up. A view in
    time: do not change the tables while using one (build a new one instead)."""

    def __init__(self, tables: Tables):
        self._tables = tables
        self._indexes: dict[tuple[str, str], dict[Any, list[Row]]] = {}

    def get(self, table: str, rid: str) -> Row | None:
        return self._tables[table].get(rid)

    def _index(self, table: str, field: str) -> dict[Any, list[Row]]:
        index = self._indexes.get((table, field))
        if index is None:
            index = self._indexes[(table, field)] = {}
            for row in self._tables[table].values():
                value = row.get(field)
                if isinstance(value, Hashable):
                    index.setdefault(value, []).append(row)
        return index

    def rows(self, table: str, where: Callable[[Any], bool] | None = None, **equals: Any) -> list[Row]:
        first = next(iter(equals.items()), None)
        candidates: Iterable[Row]
        if first is not None and isinstance(first[1], Hashable) and len(self._tables[table]) > _SCAN_BELOW:
            candidates = self._index(table, first[0]).get(first[1], ())
        else:
            candidates = self._tables[table].values()
        found = [r for r in candidates
                 if all(r.get(k) == v for k, v in equals.items()) and (where is None or where(r))]
        return sorted(found, key=lambda r: r["id"])


class SnapshotReader:
    """A :class:`Reader` over a :class:`~backoffice.envs.core.Snapshot` alone (no episode
    writes): the snapshot's live rows (read-only, not copies) by primary key, and equality
    look-ups through the snapshot's shared secondary indexes, in id order. Answers like a
    :class:`~backoffice.envs.core.Store` of the snapshot with no writes, without copying rows:
    what the grader judges with (a verdict only reads)."""

    __slots__ = ("_snap",)

    def __init__(self, snapshot: Snapshot):
        self._snap = snapshot

    def get(self, table: str, rid: str) -> Row | None:
        return self._snap.table(table).get(rid)

    def rows(self, table: str, where: Callable[[Any], bool] | None = None, **equals: Any) -> list[Row]:
        snap = self._snap
        rows = snap.table(table)
        first = next(iter(equals.items()), None)
        candidates: Iterable[Row]
        if first is not None and isinstance(first[1], Hashable):
            candidates = [rows[rid] for rid in snap.index(table, first[0]).get(first[1], ())]
            rest = [(k, v) for k, v in equals.items() if k != first[0]]
        else:
            candidates, rest = rows.values(), list(equals.items())  # id order (a snapshot table's)
        if not rest and where is None:
            return candidates if isinstance(candidates, list) else list(candidates)
        return [r for r in candidates if all(r.get(k) == v for k, v in rest) and (where is None or where(r))]


Source = Tables | Reader

#: reader types :func:`reader` passes through without the (slower) ``Mapping`` check
_READERS = (SnapshotReader, TablesReader, Store)


def reader(tables: Source) -> Reader:
    """``tables`` as a :class:`Reader` (a store is one already; mappings are wrapped)."""
    if type(tables) in _READERS:
        return tables  # type: ignore[return-value]
    if isinstance(tables, Mapping):
        return TablesReader(tables)
    return tables

#: Problems an assessment can find (internal vocabulary; never shown to agents).
HARD_LIMIT = "hard_limit"
MISSING_INFO = "missing_info"
SELF = "self"
REPORTING_LINE = "reporting_line"
INACTIVE_DELEGATION = "inactive_delegation"
LIMIT = "limit"
NO_AUTHORITY = "no_authority"


def applicable_rule(tables: Source, request_type: str, amount: int) -> Row | None:
    """The rule whose band holds ``amount``; above every band, the top band (its hard limit
    then decides). ``None`` if the type has no rules."""
    return rules.applicable_rule(reader(tables).rows("rules", request_type=request_type), amount)


def assignment_active(rh: Row, at: str) -> bool:
    return rules.in_window(rh, at)


def holds_directly(tables: Source, person_id: str, role_id: str, at: str) -> list[Row]:
    """Role assignments of ``person_id`` to ``role_id`` valid at ``at`` (by id)."""
    return reader(tables).rows("role_holders", lambda rh: assignment_active(rh, at), person_id=person_id, role_id=role_id)


def delegation_in_effect(tables: Source, d: Row, at: str) -> bool:
    """Window covers the day, not revoked at or before ``at``, delegator still holds the role."""
    return rules.in_window(d, at) and bool(holds_directly(tables, d["delegator_id"], d["role_id"], at))


def reporting_line(tables: Source, person_id: str) -> list[str]:
    """Managers of ``person_id`` from the direct one upwards (cycle-safe)."""
    src = reader(tables)
    out: list[str] = []
    current = src.get("people", person_id)
    while current is not None and current.get("manager_id") and current["manager_id"] not in out:
        out.append(current["manager_id"])
        current = src.get("people", current["manager_id"])
    return out


@dataclass
class Authority:
    """What ``person`` holds at ``at`` for a request."""

    ids: list[str] = field(default_factory=list)  # assignment / delegation ids that authorise
    covering: list[str] = field(default_factory=list)  # ids held now covering the type, any level/limit
    inactive: list[str] = field(default_factory=list)  # delegations that would authorise if in effect
    delegators: dict[str, str] = field(default_factory=dict)  # authorising delegation id -> delegator


def authority(tables: Source, person_id: str, request_type: str, amount: int, level: int, at: str) -> Authority:
    """The person's authority for a request of ``request_type`` and ``amount`` at ``at``: reads
    only the person's own assignments and received delegations (and their delegators' roles)."""
    src = reader(tables)
    out = Authority()
    for rh in src.rows("role_holders", person_id=person_id):
        role = src.get("roles", rh["role_id"])
        if role is None or not assignment_active(rh, at):
            continue
        if request_type in role["request_types"]:
            out.covering.append(rh["id"])
            if role_sufficient(role, request_type, level) and role["amount_limit"] >= amount:
                out.ids.append(rh["id"])
    for d in src.rows("delegations", delegate_id=person_id):
        role = src.get("roles", d["role_id"])
        if role is None or request_type not in role["request_types"]:
            continue
        sufficient = role_sufficient(role, request_type, level) and rules.delegated_limit(role, d) >= amount
        if delegation_in_effect(src, d, at):
            out.covering.append(d["id"])
            if sufficient:
                out.ids.append(d["id"])
                out.delegators[d["id"]] = d["delegator_id"]
        elif sufficient:
            out.inactive.append(d["id"])
    return out


@dataclass
class Assessment:
    """The policy's verdict on one request with one named approver at one instant."""

    rule_id: str | None
    outcome: str  # proceed / hold / reject / escalate
    problems: list[str]  # every problem found, in policy order
    approver_problems: list[str]  # the subset that keeps the approver from deciding at all
    authority_ids: list[str]
    accepted_roles: list[str]
    required_role_id: str | None
    delegators: dict[str, str]
    #: ids that show why the approver may not decide (what an escalation cites), per problem
    blocking: dict[str, list[str]] = field(default_factory=dict)

    @property
    def blocking_ids(self) -> set[str]:
        return {i for ids in self.blocking.values() for i in ids}


def accepted_roles(tables: Source, request_type: str, amount: int, level: int) -> list[str]:
    """Roles that could approve the request (escalation targets that count). Reads the whole
    ``roles`` table: the desk's role catalogue, which does not grow with the organisation."""
    return [r["id"] for r in rules.candidate_roles(reader(tables).rows("roles"), request_type, amount, level)]


def approver_rows(tables: Source, person_id: str) -> list[str]:
    """Every role assignment of ``person_id`` and every delegation they received (any window)."""
    src = reader(tables)
    return sorted(
        [rh["id"] for rh in src.rows("role_holders", person_id=person_id)]
        + [d["id"] for d in src.rows("delegations", delegate_id=person_id)]
    )


def _blocking(tables: Reader, rule: Row, request: Row, approver_id: str, auth: Authority) -> dict[str, list[str]]:
    """The problems that keep the approver from deciding (procedure steps 2-3), in policy
    order, each with the ids that show it (what an escalation cites)."""
    blocking: dict[str, list[str]] = {}
    if rule["sod_not_requester"] and approver_id == request["requester_id"]:
        blocking[SELF] = [request["id"]]
    if rules.line_breach(rule, request, reporting_line(tables, approver_id)):
        blocking[REPORTING_LINE] = [request["requester_id"]]
    if not auth.ids:
        if auth.inactive:
            blocking[INACTIVE_DELEGATION] = list(auth.inactive)
        elif auth.covering:
            blocking[LIMIT] = list(auth.covering)
        else:
            blocking[NO_AUTHORITY] = approver_rows(tables, approver_id) or [approver_id]
    return blocking


def assess(tables: Source, request: Row, approver_id: str, at: str) -> Assessment:
    """Apply the desk policy (``tables.POLICY``) to ``request`` with ``approver_id`` at ``at``.

    The named approver is checked first (separation of duties, authority now): when they may
    not decide, the request is escalated. Otherwise they reject it above the hard limit, hold
    it when a required field is empty, and approve it (``proceed``) when nothing blocks.
    """
    src = reader(tables)
    rule = applicable_rule(src, request["type"], request["amount"])
    if rule is None:
        return Assessment(None, "escalate", [NO_AUTHORITY], [NO_AUTHORITY], [], [], None, {},
                          {NO_AUTHORITY: approver_rows(src, approver_id) or [approver_id]})
    amount = request["amount"]
    auth = authority(src, approver_id, request["type"], amount, rule["required_level"], at)
    blocking = _blocking(src, rule, request, approver_id, auth)
    approver = list(blocking)
    problems = list(approver)
    if amount > rule["hard_limit"]:
        problems.append(HARD_LIMIT)
    if rules.missing_fields(request, rule):
        problems.append(MISSING_INFO)
    if approver:
        outcome = "escalate"
    elif HARD_LIMIT in problems:
        outcome = "reject"
    elif MISSING_INFO in problems:
        outcome = "hold"
    else:
        outcome = "proceed"
    return Assessment(
        rule["id"], outcome, problems, approver, auth.ids,
        accepted_roles(src, request["type"], amount, rule["required_level"]),
        rule["required_role_id"], auth.delegators, blocking,
    )


def applies_as_basis(tables: Source, basis_ids: Iterable[str], assessment: Assessment, outcome: str,
                     approver_id: str | None, at: str) -> tuple[bool, list[str]]:
    """Do the cited ids exist and apply to the recorded decision? Returns ``(ok, problems)``.

    Always required: the applicable rule. For a decision in the approver's name (``proceed``,
    ``hold``, ``reject``): at least one id that gives the approver authority (an assignment or
    delegation in :attr:`Assessment.authority_ids`); assignments of a cited delegation's
    delegator are accepted as supporting. For ``escalate``: at least one id that shows why the
    named approver may not decide (:attr:`Assessment.blocking_ids`: the request when they are
    its requester, the requester when they report to them, the delegation not in effect, the
    assignment or delegation whose role, level, limit or cap falls short, or any of their
    assignments and delegations when none covers the request), and nothing else.
    """
    src = reader(tables)
    ids = list(basis_ids)
    issues: list[str] = []
    if assessment.rule_id is None or assessment.rule_id not in ids:
        issues.append("rule not cited")
    if outcome == "escalate":
        blocking = assessment.blocking_ids
        if not any(i in blocking for i in ids):
            issues.append("blocking fact not cited")
        for cid in ids:
            if cid != assessment.rule_id and cid not in blocking:
                issues.append(f"{cid} does not apply")
        return not issues, issues
    supporting: set[str] = set()
    for did in ids:
        if did in assessment.delegators:
            d = src.get("delegations", did)
            supporting.update(rh["id"] for rh in holds_directly(src, d["delegator_id"], d["role_id"], at))
    if not any(i in assessment.authority_ids for i in ids):
        issues.append("no authority cited")
    for cid in ids:
        if cid == assessment.rule_id:
            continue
        if src.get("rules", cid) is not None:
            issues.append(f"{cid} does not apply")
            continue
        if src.get("role_holders", cid) is None and src.get("delegations", cid) is None:
            issues.append(f"{cid} does not exist")
            continue
        if cid not in assessment.authority_ids and cid not in supporting:
            issues.append(f"{cid} does not apply")
    return not issues, issues
