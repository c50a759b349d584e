"""The approvals grader: a pure function of the episode.

Every decision the episode recorded on the target request is judged, each against the rule
document (``tables.PROCEDURE``) **at its own decision time** (the clock of its trace line), using
the snapshot's reference tables (people, roles, role_holders, delegations, the bands), which no
tool can change. The whole trail counts: exactly one decision (or one escalation) is allowed.
The grade accepts exactly what the text names, nothing it does not.

Grade fields and checks (work checks earn the score; gates only cap it when they fail):
    approver_valid   (gate) every decision recorded in an approver's name (proceed, hold,
                     reject) names the approver the task names, who may decide at decision time
                     (authority, limits, separation of duties); a proceed also needs the amount
                     within the hard limit
    single_decision  (gate) at most one decision or escalation on the request
    outcome_match    (work) the decision's outcome is the expected one; an escalation counts when
                     it goes to the band's required_role_id, the role rule escalation names
    downstream       (work, proceed tasks) exactly the request's ledger entry / order release
    side_effects     (gate) downstream rows (``ledger_entries:*``, ``orders:*``) written before a
                     valid proceed decision (all of them when there is none)
    basis_cited      (work) every decision cites the band and, in the approver's name, an
                     assignment or delegation that gives the authority (rule cite_authority); an
                     escalation cites the band and the blocking fact of rule blocking_fact (the
                     request, else the requester, else a near miss failing exactly one authority
                     rule, else the approver: ``authority.applies_as_basis``); nothing else
    outcome          the last decision's outcome (``None`` when nothing was decided)

Failure codes: invalid_approver, self_approval, expired_delegation_used, over_limit (a decision
by someone who may not decide, by reason: the requester, the reporting line, no authority by
what its near miss lacks (a delegation not in effect; a level, limit or cap that falls short;
else invalid_approver), or a proceed above the hard limit;
expired_delegation_used also when a decision cites a delegation not in effect at decision time
as authority), wrong_outcome (wrong outcome, or a proceed whose ledger entry / order release is
missing or wrong), side_effect_before_decision, basis_missing_or_wrong, extra_decision (more
than one decision or escalation on the request), and the guardrail's forbidden_write.

Every look-up is by primary key or by an indexed equality on the snapshot
(:class:`~backoffice.envs.approvals.authority.SnapshotReader`: live rows, no copies): grading
costs O(the episode's trace and the approver's rows), not O(tables). The verdicts and basis
judgements, pure functions of the snapshot, are remembered per snapshot (``Snapshot.memo``), so
an episode replayed on the same task pays only for its trace.

Rule-sharing policy: the grader judges with :mod:`backoffice.envs.approvals.authority` (the
whole-snapshot verdict, built on the public rule helpers of :mod:`backoffice.envs.approvals.rules`)
and never imports the oracle's or the catalog's decision code (``training.domains.approvals.policies``,
``training.domains.approvals.catalog``); the oracle never imports the grader, so the oracle passing checks
the grader independently.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from backoffice.envs.approvals import authority as auth
from backoffice.graders.checks import result
from backoffice.graders.diff import NO_CHANGES
from backoffice.graders.grade import finalize

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode
    from backoffice.envs.core.store import Snapshot

#: the authority rules whose near miss makes a decision by an approver without authority an
#: expired delegation used (the delegation is not in effect) or an over limit (it falls short)
_INACTIVE = ("window", "revocation", "delegator_holds")
_SHORT = ("role_level", "role_limit", "delegation_cap")


def _problem_code(verdict: auth.Assessment | None, problems: set[str], tables: auth.Reader) -> str:
    """The failure code of a decision by someone who may not decide (first problem wins: the
    requester, a proceed above the hard limit, no authority by what its near misses lack (a
    delegation not in effect, or a role, limit or cap that falls short), the reporting line)."""
    if auth.SELF in problems:
        return "self_approval"
    if auth.HARD_LIMIT in problems:
        return "over_limit"
    if auth.NO_AUTHORITY in problems and verdict is not None:
        near = [(i, f[0]) for i, f in verdict.failures.items() if len(f) == 1]
        if any(c in _INACTIVE and tables.get("delegations", i) is not None for i, c in near):
            return "expired_delegation_used"
        if any(c in _SHORT for _, c in near):
            return "over_limit"
    return "invalid_approver"


_DOWNSTREAM = ("ledger_entries", "orders")

#: the verdicts and basis judgements a snapshot remembers (a bound on memory, not on results)
MEMO_SIZE = 1024


class _Judgements:
    """The grader's pure judgements on one snapshot, remembered (:meth:`Snapshot.memo`).

    A verdict (:func:`auth.assess`) and a basis judgement (:func:`auth.applies_as_basis`) read
    only the snapshot's reference tables, never the episode's writes, so each is a function of
    the snapshot and its arguments: an episode replayed on the same task (training revisits
    every task) reads them back instead of recomputing them. At most :data:`MEMO_SIZE` of them
    are kept per snapshot (all are dropped when full); what is returned is shared, read-only.
    ``tables`` reads the snapshot alone (:class:`auth.SnapshotReader`: primary keys and the
    snapshot's shared secondary indexes, so a verdict costs O(the approver's rows)).
    """

    __slots__ = ("memo",)

    def __init__(self, snapshot: Snapshot | None = None):
        self.memo: dict[Hashable, Any] = {}

    def _remember(self, key: Hashable, value: Any) -> Any:
        if len(self.memo) >= MEMO_SIZE:
            self.memo.clear()
        self.memo[key] = value
        return value

    def verdict(self, tables: auth.Reader, request: Mapping[str, Any], approver_id: str, at: str) -> auth.Assessment:
        """:func:`auth.assess` of the snapshot's ``request`` with ``approver_id`` at ``at``."""
        key = ("assess", request["id"], approver_id, at)
        hit = self.memo.get(key)
        if hit is None:
            hit = self._remember(key, auth.assess(tables, request, approver_id, at))
        return hit

    def basis(self, tables: auth.Reader, request: Mapping[str, Any], named: str,
              d: Mapping[str, Any]) -> tuple[list[str], bool]:
        """The basis judgement of decision ``d`` on ``request`` (named approver ``named``), at
        its own clock: the issues found, and whether it cites a delegation not in effect then
        in the approver's name."""
        basis_ids = tuple(d["basis_ids"])
        at = d["_clock"]
        key = ("basis", request["id"], named, basis_ids, d["outcome"], d["approver_id"], at)
        hit = self.memo.get(key)
        if hit is None:
            verdict = self.verdict(tables, request, named, at)
            _, found = auth.applies_as_basis(tables, basis_ids, verdict, d["outcome"], d["approver_id"], at)
            expired = d["outcome"] != "escalate" and any(
                (dl := tables.get("delegations", i)) is not None and not auth.delegation_in_effect(tables, dl, at)
                for i in basis_ids
            )
            hit = self._remember(key, (found, expired))
        return hit


def _judgements(snapshot: Snapshot) -> _Judgements:
    return snapshot.memo("approvals.grader.judgements", _Judgements)


def _decisions(ep: Episode, request_id: str) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Decisions recorded on ``request_id`` (with step and clock) and every downstream write."""
    decisions: list[dict[str, Any]] = []
    downstream: list[tuple[int, str]] = []
    for rec in ep.trace:
        if rec["result_status"] != "ok":
            continue
        for key in rec["changed_ids"]:
            table, _, rid = key.partition(":")
            if table in _DOWNSTREAM:
                downstream.append((rec["step"], key))
            elif table == "decisions":
                row = ep.state.peek("decisions", rid)
                if row is not None and row["request_id"] == request_id:
                    decisions.append({**row, "_step": rec["step"], "_clock": rec["clock"]})
    return decisions, downstream


def _approver_check(decisions: list[dict[str, Any]], verdicts: dict[str, auth.Assessment], judge: _Judgements,
                    tables: auth.Reader, request: Mapping[str, Any], named: str) -> tuple[dict[str, Any], bool, int | None]:
    """approver_valid: every decision in an approver's name, at its own decision time. Returns
    the check, whether it passed and the step of the first valid proceed (``None``: none)."""
    invalid_codes: list[str] = []
    first_valid_step: int | None = None
    for d in decisions:
        if d["outcome"] == "escalate":
            continue
        who = d["approver_id"]
        verdict = verdicts[d["id"]] if who == named else judge.verdict(tables, request, who, d["_clock"]) if who else None
        problems = set(verdict.approver_problems) if verdict is not None else {auth.NO_AUTHORITY}
        if who != named:
            problems.add(auth.NO_AUTHORITY)
        if d["outcome"] == "proceed" and verdict is not None and auth.HARD_LIMIT in verdict.problems:
            problems.add(auth.HARD_LIMIT)
        if problems:
            invalid_codes.append(_problem_code(verdict, problems, tables))
        elif d["outcome"] == "proceed" and verdict is not None and verdict.outcome == "proceed" and first_valid_step is None:
            first_valid_step = d["_step"]
    ok = not invalid_codes
    check = result("approver_valid", "approver_valid", ok, invalid_codes[0] if invalid_codes else None,
                   None if ok else {"codes": invalid_codes}, gate=True)
    return check, ok, first_valid_step


def _outcome_check(decisions: list[dict[str, Any]], exp: Mapping[str, Any]) -> tuple[dict[str, Any], bool, str | None]:
    """outcome_match: the (last) decision; an escalation also goes to the rule's
    ``required_role_id``, the role the procedure names (another role that could approve is not
    what the text asks for)."""
    final = decisions[-1] if decisions else None
    outcome = final["outcome"] if final else None
    ok = outcome == exp["outcome"]
    if ok and outcome == "escalate":
        ok = final["escalated_to"] == exp["required_role_id"]  # type: ignore[index]
    check = result("outcome_match", "outcome_match", ok, "wrong_outcome",
                   None if ok else {"expected": exp["outcome"], "got": outcome})
    return check, ok, outcome


def _downstream_check(ep: Episode, rid: str, ds: Mapping[str, Any]) -> dict[str, Any]:
    """downstream_released (proceed tasks): exactly the request's ledger entry / order release."""
    if ds["kind"] == "ledger":
        created = ep.diff.get("ledger_entries", NO_CHANGES).get("created", [])
        rows = [ep.state.peek("ledger_entries", i) for i in created]
        mine = [r for r in rows if r is not None and r["request_id"] == rid]
        ok = len(mine) == 1 and mine[0]["account"] == ds["account"] and mine[0]["amount"] == ds["amount"]
        detail: dict[str, Any] | None = None if ok else {"ledger_entries": [{"account": r["account"], "amount": r["amount"]} for r in mine]}
    else:
        order = ep.state.peek("orders", ds["order_id"])
        ok = order is not None and order["status"] == "released"
        detail = None if ok else {"order_status": order["status"] if order else None}
    return result("downstream_released", "downstream", ok, "wrong_outcome", detail)


def _basis_check(decisions: list[dict[str, Any]], judge: _Judgements, tables: auth.Reader,
                 request: Mapping[str, Any], named: str) -> tuple[dict[str, Any], bool]:
    """basis_cited: every decision, at its decision time; a decision in the approver's name
    resting on a delegation not in effect then is an expired delegation used."""
    code = "basis_missing_or_wrong"
    issues: list[str] = []
    if not decisions:
        issues = ["no decision recorded"]
    for d in decisions:
        found, expired = judge.basis(tables, request, named, d)
        issues.extend(f"{d['id']}: {i}" for i in found)
        if expired:
            code = "expired_delegation_used"
    ok = not issues
    return result("basis_cited", "basis_cited", ok, code, None if ok else {"issues": issues}), ok


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one approvals episode (see the module docstring)."""
    exp = ep.key["expected"]
    rid = exp["request_id"]
    # verdicts read the snapshot's reference tables (never the episode's writes): live rows by
    # primary key and through the snapshot's shared secondary indexes, so a verdict costs
    # O(the approver's rows); they are remembered per snapshot (once per task and approver)
    tables = auth.SnapshotReader(ep.snapshot)
    judge = _judgements(ep.snapshot)
    request = ep.snapshot.table("requests")[rid]
    decisions, downstream = _decisions(ep, rid)
    verdicts = {d["id"]: judge.verdict(tables, request, exp["approver_id"], d["_clock"]) for d in decisions}

    approver, approver_valid, first_valid_step = _approver_check(decisions, verdicts, judge, tables, request, exp["approver_id"])
    checks = [approver]
    # single_decision: the audit trail carries exactly the one decision the task needs
    single = len(decisions) <= 1
    checks.append(result("single_decision", "single_decision", single, "extra_decision",
                         None if single else {"decisions": [d["outcome"] for d in decisions]}, gate=True))
    outcome_check, outcome_match, outcome = _outcome_check(decisions, exp)
    checks.append(outcome_check)
    if exp["outcome"] == "proceed":
        checks.append(_downstream_check(ep, rid, exp["downstream"]))
    # side_effects: downstream writes before a valid proceed decision
    side_effects = sorted({key for step, key in downstream if first_valid_step is None or step < first_valid_step})
    checks.append(result("side_effects", "side_effects", not side_effects, "side_effect_before_decision",
                         {"rows": side_effects} if side_effects else None, gate=True))
    basis, basis_ok = _basis_check(decisions, judge, tables, request, exp["approver_id"])
    checks.append(basis)

    fields = {
        "approver_valid": approver_valid, "outcome_match": outcome_match, "side_effects": side_effects,
        "basis_cited": basis_ok, "outcome": outcome,
    }
    return finalize(ep, checks, fields, guardrail_code="forbidden_write",
                    metrics={"decisions": len(decisions), "downstream_writes": len(downstream)})
