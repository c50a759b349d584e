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
from backoffice.envs.approvals.rules import window_covers
from backoffice.envs.core.store import Snapshot, Store

__all__ = [
    "Assessment", "Reader", "SnapshotReader", "Source", "TablesReader", "accepted_roles", "applicable_rule",
    "applies_as_basis", "approver_rows", "assess", "assignment_active", "delegation_in_effect", "entry_failures",
    "holds_directly", "reader", "reporting_line", "window_covers",
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
        return self._tables.get(table, {}).get(rid)

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
NO_AUTHORITY = "no_authority"


def applicable_rule(tables: Source, request_type: str, amount: int) -> Row | None:
    """The band whose ``[min_amount, max_amount]`` holds ``amount`` (rule ``band``); above every
    band, the top band. ``None`` if the type has no bands."""
    return rules.applicable_rule(reader(tables).rows("rules", request_type=request_type), amount)


def assignment_active(rh: Row, at: str) -> bool:
    """A role assignment whose window covers the day of ``at`` (rule ``window``)."""
    return rules.in_window(rh, at)


def holds_directly(tables: Source, person_id: str, role_id: str, at: str) -> list[Row]:
    """Role assignments of ``person_id`` to ``role_id`` in their window at ``at`` (by id)."""
    return reader(tables).rows("role_holders", lambda rh: assignment_active(rh, at), person_id=person_id, role_id=role_id)


def delegation_in_effect(tables: Source, d: Row, at: str) -> bool:
    """Window covers the day, not revoked at or before ``at``, delegator still holds the role
    (rules window, revocation, delegator_holds)."""
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


def entry_failures(tables: Source, person_id: str, request: Row, band: Row, at: str) -> dict[str, list[str]]:
    """Every role assignment of ``person_id`` and every delegation they received (any window),
    each with the authority rules it fails for ``request`` under ``band`` at ``at``
    (:func:`rules.failed_checks`). Reads only the person's rows, their roles and their
    delegators' assignments."""
    src = reader(tables)
    out: dict[str, list[str]] = {}
    for rh in src.rows("role_holders", person_id=person_id):
        out[rh["id"]] = rules.failed_checks(rh, src.get("roles", rh["role_id"]), request, band, at, delegation=False)
    for d in src.rows("delegations", delegate_id=person_id):
        holds = bool(holds_directly(src, d["delegator_id"], d["role_id"], at))
        out[d["id"]] = rules.failed_checks(d, src.get("roles", d["role_id"]), request, band, at, delegation=True,
                                           delegator_holds=holds)
    return out


@dataclass
class Assessment:
    """The procedure's verdict on one request with one named approver at one instant."""

    rule_id: str | None
    outcome: str  # proceed / hold / reject / escalate
    problems: list[str]  # every problem found, in the procedure's order
    approver_problems: list[str]  # the subset that keeps the approver from deciding at all
    authority_ids: list[str]  # the approver's entries that give authority (rule cite_authority)
    accepted_roles: list[str]  # roles that could approve the request (cover, level, limit)
    required_role_id: str | None  # the band's: where an escalation goes (rule escalation)
    #: every assignment and delegation of the approver -> the authority rules it fails
    failures: dict[str, list[str]] = field(default_factory=dict)
    #: the ids an escalation may cite beside the band (rule blocking_fact): the request, the
    #: requester, the near misses or the approver, by the rule's precedence
    blocking: list[str] = field(default_factory=list)

    @property
    def blocking_ids(self) -> set[str]:
        return set(self.blocking)

    @property
    def near_checks(self) -> list[str]:
        """The authority rule each near miss fails (what keeps the approver without authority)."""
        return sorted({f[0] for f in self.failures.values() if len(f) == 1})


def accepted_roles(tables: Source, request_type: str, amount: int, level: int) -> list[str]:
    """Roles that could approve the request (cover the type, level and amount limit enough), by
    id. Reads the whole ``roles`` table: the desk's role catalogue, which does not grow with the
    organisation."""
    return sorted(
        r["id"] for r in reader(tables).rows("roles")
        if request_type in r["request_types"] and r["level"] >= level and r["amount_limit"] >= amount
    )


def approver_rows(tables: Source, person_id: str) -> list[str]:
    """Every role assignment of ``person_id`` and every delegation they received (any window)."""
    src = reader(tables)
    return sorted(
        [rh["id"] for rh in src.rows("role_holders", person_id=person_id)]
        + [d["id"] for d in src.rows("delegations", delegate_id=person_id)]
    )


def assess(tables: Source, request: Row, approver_id: str, at: str) -> Assessment:
    """Apply the desk procedure (``tables.PROCEDURE``) to ``request`` with ``approver_id`` at ``at``.

    The named approver is checked first (separation of duties, then an assignment or
    delegation passing every authority rule): when they may not decide, the request is
    escalated, citing the first blocking fact by the rule's precedence. Otherwise they reject
    it above the hard limit, hold it when a required field is empty, and approve it
    (``proceed``) when nothing blocks.
    """
    src = reader(tables)
    band = applicable_rule(src, request["type"], request["amount"])
    if band is None:
        return Assessment(None, "escalate", [NO_AUTHORITY], [NO_AUTHORITY], [], [], None, {}, [approver_id])
    amount = request["amount"]
    failures = entry_failures(src, approver_id, request, band, at)
    authority = rules.authorising(failures)
    approver: list[str] = []
    is_self = approver_id == request["requester_id"]
    in_line = rules.line_breach(band, request, reporting_line(src, approver_id))
    if is_self:
        approver.append(SELF)
    if in_line:
        approver.append(REPORTING_LINE)
    if not authority:
        approver.append(NO_AUTHORITY)
    blocking: list[str] = []
    if approver:
        choice_near = rules.near_misses(failures)
        if is_self:
            blocking = [request["id"]]
        elif in_line:
            blocking = [request["requester_id"]]
        else:
            blocking = choice_near or [approver_id]
    problems = list(approver)
    if amount > band["hard_limit"]:
        problems.append(HARD_LIMIT)
    if rules.missing_fields(request, band):
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
        band["id"], outcome, problems, approver, authority,
        accepted_roles(src, request["type"], amount, band["required_level"]),
        band["required_role_id"], failures, blocking,
    )


def applies_as_basis(tables: Source, basis_ids: Iterable[str], assessment: Assessment, outcome: str,
                     approver_id: str | None, at: str) -> tuple[bool, list[str]]:
    """Do the cited ids exist and apply to the recorded decision? Returns ``(ok, problems)``.

    Exactly what the rules cite_authority and blocking_fact name: always the band. For a
    decision in the approver's name (``proceed``, ``hold``, ``reject``): at least one id that
    gives the approver authority (:attr:`Assessment.authority_ids`) and no other id. For
    ``escalate``: at least one of :attr:`Assessment.blocking` (the request when the approver is
    its requester, else the requester when the reporting line stops them, else an assignment or
    delegation of theirs failing exactly one authority rule, else the approver) and no other id.
    """
    src = reader(tables)
    ids = list(basis_ids)
    issues: list[str] = []
    if assessment.rule_id is None or assessment.rule_id not in ids:
        issues.append("band not cited")
    accepted = assessment.blocking_ids if outcome == "escalate" else set(assessment.authority_ids)
    if not any(i in accepted for i in ids):
        issues.append("blocking fact not cited" if outcome == "escalate" else "no authority cited")
    for cid in ids:
        if cid == assessment.rule_id or cid in accepted:
            continue
        known = any(src.get(t, cid) is not None for t in ("rules", "role_holders", "delegations", "requests", "people"))
        issues.append(f"{cid} does not apply" if known else f"{cid} does not exist")
    return not issues, issues
