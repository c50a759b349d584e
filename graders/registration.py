"""The registration grader: a pure function of the episode (task, key, snapshot, end state, diff, trace).

Grade fields (source 000): ``required_ok`` (every required record and link present),
``forbidden_hit`` (a write outside the answer key's targets, e.g. another patient's record),
``rule_violations`` (the rule ids breached, from the snapshot's ``rules`` table),
``referral_correct`` (whether stopping, or not stopping, was the right call), plus
``missing_records`` (the required items absent),
``forbidden_writes``, ``patient_id`` (the record the registration ended on) and ``action``
(``created`` / ``updated`` / ``referred`` / ``none``). The hand-over note is scored apart by
:mod:`backoffice.graders.registration_judge`, never here.

Checks are *work* (the task needs them done; the score is the share passed) or *gates*
(prohibitions; holding one earns nothing, failing one caps the score):

- work: ``required:<item>`` (patient, coverage, gp_link, contact:<role>, consent),
  ``patient_fields`` (normalised compare: phone digits, name case, spaces), ``minor_guardian``
  (minors only); on a referral task ``referral`` (the right reason) and ``referral_basis`` (the
  cited patient ids are exactly the blocking records: the ambiguous candidates, the deceased
  match, or the identifier's holder and the matching record).
- gates: ``search_before_create``, ``no_duplicate`` (patients), ``coverage_valid``,
  ``verified_fields``, ``right_patient``, ``no_duplicate_entries`` (the whole trail: a coverage,
  contact, consent or GP link entered twice, or re-entered when already on file),
  ``no_referral`` (non-referral tasks) and the generic guardrail.

Failure codes: duplicate_created, search_skipped, missing_required, field_mismatch,
invalid_coverage, guardian_missing, verified_overwritten, wrong_patient_updated, missed_referral,
unnecessary_referral, wrong_referral_reason, wrong_referral_basis, duplicate_entry, forbidden_hit.

Rule sharing: the grader reads the answer key and the episode; from the domain it may import
only the public rule helpers of :mod:`backoffice.envs.registration.tables` (normalisation:
``digits``, ``fold``, ``phone_key``) and the failure codes of :mod:`backoffice.envs.registration`.
It never imports the oracle's or the catalog's decision code
(:mod:`backoffice.training.domains.registration.policies`, :mod:`backoffice.training.domains.registration.catalog`),
and the oracle never imports the grader, so each checks the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from backoffice.envs.core.domain import Episode
from backoffice.envs.registration import FAILURE_CODES, GUARDRAIL_CODE
from backoffice.envs.registration.tables import ADDRESS_FIELDS, REFER_CLASSES, digits, fold, phone_key
from backoffice.graders.checks import result
from backoffice.graders.diff import NO_CHANGES
from backoffice.graders.grade import finalize, forbidden_writes

__all__ = ["FAILURE_CODES", "GUARDRAIL_CODE", "grade"]

#: check id -> rule id of the rule file whose breach the check detects
RULE_OF_CHECK = {
    "search_before_create": "R-SEARCH-FIRST",
    "no_duplicate": "R-NO-DUPLICATE",
    "minor_guardian": "R-MINOR-GUARDIAN",
    "coverage_valid": "R-COVERAGE-ID",
    "verified_fields": "R-VERIFIED-FIELD",
}
CHILD_TABLES = ("coverages", "contacts", "consents", "gp_links")


def _ok_calls_by_tool(ep: Episode) -> dict[str, list[Mapping[str, Any]]]:
    """The episode's successful calls per tool, in step order (one pass over the trace)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in ep.trace:
        if r["result_status"] == "ok":
            out.setdefault(r["tool"], []).append(r)
    return out


def _normalised(field: str, value: Any) -> str:
    """A demographic value as the grader compares it: identifier digits, phone digits in
    national form, postcode folded without spaces, other text folded."""
    if field == "identifier":
        return digits(value)
    if field == "phone":
        return phone_key(value)
    if field == "postcode":
        return fold(value).replace(" ", "")
    return fold(value)


_normalised_text = lru_cache(maxsize=1 << 14)(_normalised)


def _norm(field: str, value: Any) -> str:
    """:func:`_normalised`, cached for text values (the grader compares the same few values)."""
    if type(value) is str or value is None:
        return _normalised_text(field, value)
    return _normalised(field, value)


@lru_cache(maxsize=1 << 14)
def _norm_values(fields: tuple[str, ...], values: tuple[Any, ...]) -> tuple[str, ...]:
    """:func:`_norm` of each field's value (cached per record content)."""
    return tuple(_normalised(f, v) for f, v in zip(fields, values))


def _row_id(row: Mapping[str, Any]) -> str:
    return str(row["id"])


class _Rows:
    """A patient's rows in the child tables, read once per grade through the ``patient_id``
    index, at the end (``ep.state``) or at the start (``ep.snapshot``). Rows are the live ones:
    read-only. Filtering a patient's rows (id order) by more fields gives exactly what a
    ``select`` with those equalities returns."""

    __slots__ = ("_ep", "_start", "_cache")

    def __init__(self, ep: Episode, start: bool):
        self._ep, self._start = ep, start
        self._cache: dict[tuple[str, str], list[Mapping[str, Any]]] = {}

    def of(self, table: str, pid: str) -> list[Mapping[str, Any]]:
        """The patient's rows of ``table`` in id order (what ``select(table, patient_id=pid)``
        returns, without copies): the snapshot's index bucket, merged at the end with the
        rows the episode wrote."""
        key = (table, pid)
        rows = self._cache.get(key)
        if rows is None:
            snap = self._ep.snapshot
            base = snap.table(table)
            bucket = snap.index(table, "patient_id").get(pid, ())
            written = () if self._start else self._ep.state.written_ids(table)
            if not written:
                rows = [base[i] for i in bucket]
            else:
                current = self._ep.state.peek
                skip = set(written)
                rows = [base[i] for i in bucket if i not in skip]
                rows += [r for i in written if (r := current(table, i)) is not None and r.get("patient_id") == pid]
                rows.sort(key=_row_id)
            self._cache[key] = rows
        return rows


def _touched(ep: Episode) -> dict[str, list[str]]:
    """Existing patient id -> the ``table:id`` writes that concern that patient."""
    snap_patients = ep.snapshot.table("patients")
    out: dict[str, list[str]] = {}
    pdiff = ep.diff.get("patients")
    if pdiff:
        for rid in [*pdiff["updated"], *pdiff["deleted"]]:
            out.setdefault(rid, []).append(f"patients:{rid}")
    current = ep.state.peek
    for table in CHILD_TABLES:
        d = ep.diff.get(table)
        if not d:
            continue
        base = ep.snapshot.table(table)
        for rid in [*d["created"], *d["updated"], *d["deleted"]]:
            row = current(table, rid) or base.get(rid) or {}
            pid = row.get("patient_id")
            if pid is not None and pid in snap_patients:  # ids are strings: None is never one
                out.setdefault(pid, []).append(f"{table}:{rid}")
    return out


def _duplicates(ep: Episode, pids: set[str], end: _Rows) -> list[str]:
    """Entries the episode left twice on a patient it wrote to: the same coverage (payer and
    member id), the same contact (role and name), two treatment consents for this form, two GP
    links created. Rows on file before the episode count: re-adding one is a duplicate."""
    form_id = ep.key["intake_form_id"]
    d = ep.diff.get("gp_links")
    created_links = set(d["created"]) if d else set()
    out: list[str] = []
    for pid in sorted(pids):
        groups: dict[tuple, list[str]] = {}
        for r in end.of("coverages", pid):
            if r.get("status") == "active":
                groups.setdefault(("coverage", r["payer_id"], str(r["member_id"]).strip().upper()), []).append(r["id"])
        for r in end.of("contacts", pid):
            groups.setdefault(("contact", r["role"], fold(r["name"])), []).append(r["id"])
        for r in end.of("consents", pid):
            if r.get("intake_form_id") == form_id:
                groups.setdefault(("consent",), []).append(r["id"])
        if created_links:
            for r in end.of("gp_links", pid):
                if r["id"] in created_links:
                    groups.setdefault(("gp_link",), []).append(r["id"])
        for ids in groups.values():
            if len(ids) > 1:
                out += [f"{pid}:{i}" for i in sorted(ids)]
    return out


class _Task(NamedTuple):
    """What every check of one episode reads: the key's decision and the record it concerns,
    and the patient's child rows at the end and at the start (each read once, by index)."""

    ep: Episode
    decision: str
    form_id: str
    created: list[str]
    pid: str | None
    patient: Mapping[str, Any] | None
    end: _Rows
    start: _Rows


def _task(ep: Episode) -> _Task:
    key = ep.key
    outcome = key["outcome_class"]
    decision = key.get("decision") or ("refer" if outcome in REFER_CLASSES or outcome == "refer" else outcome)
    created = list(ep.diff.get("patients", NO_CHANGES).get("created", ()))
    if decision == "update":
        pid = key["patient_id"]
    elif decision == "create":
        pid = created[0] if created else None
    else:
        pid = None
    patient = ep.state.peek("patients", pid) if pid else None
    return _Task(ep, decision, key["intake_form_id"], created, pid, patient, _Rows(ep, False), _Rows(ep, True))


def _search_first(calls: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, Any]:
    """R-SEARCH-FIRST (gate): a search happened before the first create."""
    creates, searches = calls.get("create_patient"), calls.get("search_patients")
    first_create = creates[0]["step"] if creates else None
    first_search = searches[0]["step"] if searches else None
    ok = first_create is None or (first_search is not None and first_search < first_create)
    return result("search_before_create", "rule", ok, "search_skipped", None if ok else {"create_step": first_create}, gate=True)


def _no_duplicate(t: _Task) -> dict[str, Any]:
    """R-NO-DUPLICATE (gate): no patient created beyond the one a new registration needs."""
    allowed_new = 1 if t.decision == "create" else 0
    return result("no_duplicate", "rule", len(t.created) <= allowed_new, "duplicate_created",
                  None if len(t.created) <= allowed_new else {"created": t.created}, gate=True)


def _present(t: _Task, item: str, start: bool) -> bool:
    """Whether ``item`` of the registration set is in place (at the start, or at the end): read
    by the patient's id through the store's indexes, never by scanning a table."""
    key, pid = t.ep.key, t.pid
    if not pid:
        return False
    rows = (t.start if start else t.end).of
    if item == "patient":
        return (pid in t.ep.snapshot.table("patients")) if start else t.patient is not None
    if item == "coverage":
        cov = key["coverage"]
        payer = cov["payer_id"]
        return any(r.get("payer_id") == payer and r.get("status") == "active" and str(r["member_id"]).strip().upper() == cov["member_id"]
                   for r in rows("coverages", pid))
    if item == "gp_link":
        practice = key["practice_id"]
        return any(r.get("practice_id") == practice and r.get("status") == "active" for r in rows("gp_links", pid))
    if item.startswith("contact:"):
        c = next(c for c in key["contacts"] if f"contact:{c['role']}" == item)
        role, name = c["role"], fold(c["name"])
        return any(r.get("role") == role and fold(r["name"]) == name for r in rows("contacts", pid))
    guardians = {r["id"] for r in rows("contacts", pid) if r.get("role") == "guardian"}
    form_id, by = t.form_id, key["consent_by"]
    return any((r["given_by"] != "guardian" or r["contact_id"] in guardians)
               for r in rows("consents", pid) if r.get("intake_form_id") == form_id and r.get("given_by") == by)


def _registration_set(t: _Task, checks: list[dict[str, Any]]) -> list[str]:
    """Required records and links, one check per item (partial work, partial score), then the
    record's demographics; returns the items missing. An item already in place before the
    episode (an update's record, a coverage or contact on file) is a gate: it must still hold,
    but holding it is no work; every other item is work."""
    key = t.ep.key
    missing: list[str] = []
    items = ["patient", *(["coverage"] if key.get("coverage") else []), *(["gp_link"] if key.get("practice_id") else []),
             *(f"contact:{c['role']}" for c in key.get("contacts", ())), "consent"]
    for item in items:
        ok = _present(t, item, False)
        if not ok:
            missing.append(item)
        checks.append(result(f"required:{item}", "required", ok, "missing_required", None if ok else {"missing": item},
                             gate=t.decision == "update" and _present(t, item, True)))
    checks.append(_patient_fields(t))
    return missing


def _patient_fields(t: _Task) -> dict[str, Any]:
    """The record's demographics (normalised: phone digits, name case, spaces); a gate when the
    record was already right."""
    expected = t.ep.key["expected_fields"]
    fields = tuple(sorted(expected))
    values = tuple(map(expected.__getitem__, fields))
    try:
        want = _norm_values(fields, values)
    except TypeError:  # a value that is not hashable: normalised one by one
        want = tuple(_norm(f, v) for f, v in zip(fields, values))

    def mismatched(row: Mapping[str, Any] | None) -> list[str]:
        if row is None:
            return ["record"]
        got = _norm_values(fields, tuple(map(row.get, fields)))  # row values are frozen: hashable
        return [f for f, a, b in zip(fields, got, want) if a != b]

    bad = mismatched(t.patient)
    was_right = t.decision == "update" and not mismatched(t.ep.snapshot.table("patients").get(t.pid) if t.pid is not None else None)
    return result("patient_fields", "fields", not bad, "field_mismatch", bad or None, gate=was_right)


def _coverage_valid(ep: Episode) -> dict[str, Any]:
    """R-COVERAGE-ID (gate): every coverage written belongs, on the payer's roster, to its patient."""
    state = ep.state
    current = state.peek
    bad_cov = []
    cdiff = ep.diff.get("coverages")
    for rid in ([*cdiff["created"], *cdiff["updated"]] if cdiff else []):
        row = current("coverages", rid)
        owner = current("patients", row["patient_id"]) if row else None
        member = str(row["member_id"]).strip().upper() if row else ""
        on_roster = row is not None and owner is not None and any(
            fold(m["family_name"]) == fold(owner["family_name"]) and m["dob"] == owner["dob"] and m["status"] == "active"
            for m in state.select("member_roster", payer_id=row["payer_id"], member_id=member)
        )
        if not on_roster:
            bad_cov.append(rid)
    return result("coverage_valid", "rule", not bad_cov, "invalid_coverage", bad_cov or None, gate=True)


def _minor_guardian(t: _Task) -> dict[str, Any]:
    """R-MINOR-GUARDIAN (work, minors only): a guardian contact gives the consent."""
    ok = t.patient is not None
    if ok:
        assert t.pid is not None
        guardians = {r["id"] for r in t.end.of("contacts", t.pid) if r.get("role") == "guardian"}
        consents = [r for r in t.end.of("consents", t.pid) if r.get("intake_form_id") == t.form_id]
        ok = bool(guardians) and bool(consents) and all(r["given_by"] == "guardian" and r["contact_id"] in guardians for r in consents)
    return result("minor_guardian", "rule", ok, "guardian_missing", None if ok else {"patient_id": t.pid})


def _verified_fields(t: _Task, updates: list[Mapping[str, Any]]) -> dict[str, Any]:
    """R-VERIFIED-FIELD (gate): a verified field changed only with evidence cited for it."""
    ep = t.ep
    overwritten = []
    pdiff = ep.diff.get("patients")
    evidence: dict[str, Any] | None = None  # evidence id -> field, read when first needed
    for rid, fields in sorted((pdiff or NO_CHANGES).get("updated", {}).items()):
        before = ep.snapshot.table("patients")[rid]
        verified = set(before.get("verified") or ())
        for f in sorted(fields):
            group = "address" if f in ADDRESS_FIELDS else f
            if group not in verified:
                continue
            backed = False
            if group == "address":
                if evidence is None:
                    snap = ep.snapshot
                    rows = snap.table("evidence")
                    evidence = {i: rows[i]["field"] for i in snap.index("evidence", "intake_form_id").get(t.form_id, ())}
                backed = any(
                    r["args"].get("patient_id") == rid and r["args"].get(f) is not None
                    and any(evidence.get(e) == group for e in r["args"].get("evidence_ids") or ())
                    for r in updates
                )
            if not backed:
                overwritten.append(f"{rid}.{f}")
    return result("verified_fields", "rule", not overwritten, "verified_overwritten", overwritten or None, gate=True)


def _writes(ep: Episode, targets: Sequence[str]) -> tuple[list[str], int]:
    """:func:`~backoffice.graders.grade.forbidden_writes` (the changed ``table:id`` keys no
    target allows, sorted) and the number of records the episode wrote.

    A key's targets are plain ``table:id`` names (no ``*``, ``?`` or ``[``), which match only
    themselves (fnmatch): each table's changed ids are compared with its targets' ids as sets,
    and only the forbidden keys are spelled out. Other patterns (or a table name holding a
    ``:``) go through the engine's matcher."""
    diff = ep.diff
    written = 0
    for d in diff.values():
        written += len(d["created"]) + len(d["updated"]) + len(d["deleted"])
    try:
        text = "\x00".join(targets)
    except TypeError:
        text = "*"
    if "*" in text or "?" in text or "[" in text or any(":" in table for table in diff):
        return forbidden_writes(ep, targets), written
    allowed: dict[str, set[str]] = {}
    for target in targets:
        table, sep, rid = target.partition(":")
        if sep:  # a name without ``:`` is no ``table:id`` key
            allowed.setdefault(table, set()).add(rid)
    bad: list[str] = []
    for table, d in diff.items():
        rest = set(d["created"]).union(d["updated"], d["deleted"]).difference(allowed.get(table, ()))
        if rest:
            bad += [f"{table}:{rid}" for rid in rest]
    bad.sort()
    return bad, written


def _referral_checks(ep: Episode, referred: str | None, cited: list[str]) -> list[dict[str, Any]]:
    """On a referral task the referral and its basis are the work; elsewhere not referring is a
    gate (it holds when nothing is done)."""
    expected_reason = ep.key.get("referral_reason")
    if expected_reason:
        code = "missed_referral" if referred is None else ("wrong_referral_reason" if referred != expected_reason else None)
        basis_ok = referred is not None and cited == sorted(ep.key.get("basis") or ())
        return [result("referral", "referral", code is None, code, None if code is None else {"referred": referred}),
                result("referral_basis", "referral", basis_ok, "wrong_referral_basis", None if basis_ok else {"cited": cited})]
    code = "unnecessary_referral" if referred is not None else None
    return [result("no_referral", "referral", code is None, code, None if code is None else {"referred": referred}, gate=True)]


def _violations(key: Mapping[str, Any], decision: str, failed: set[str], missing: list[str]) -> list[str]:
    """The rule ids breached, from the failed checks."""
    expected_reason = key.get("referral_reason")
    violations = sorted(rule for check, rule in RULE_OF_CHECK.items() if check in failed)
    if expected_reason and ("referral" in failed or "referral_basis" in failed):
        violations = sorted({*violations, "R-IDENTITY-CONFLICT" if expected_reason == "identity_conflict" else "R-REFER-MATCH"})
    if decision != "refer" and missing:
        violations = sorted({*violations, "R-REGISTRATION-SET"})
    return violations


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one registration episode (see the module docstring for the fields)."""
    key, t = ep.key, _task(ep)
    calls = _ok_calls_by_tool(ep)
    referral_calls = calls.get("refer_to_human", ())
    referred = referral_calls[0]["args"]["reason"] if referral_calls else None
    cited = sorted({str(b).strip() for b in referral_calls[0]["args"].get("basis") or ()}) if referral_calls else []

    checks = [_search_first(calls), _no_duplicate(t)]
    missing = _registration_set(t, checks) if t.decision != "refer" else []
    checks.append(_coverage_valid(ep))
    if key.get("minor") and t.decision != "refer":
        checks.append(_minor_guardian(t))
    checks.append(_verified_fields(t, calls.get("update_patient", [])))
    # gate: no write on an existing record other than the form's person
    touched = _touched(ep)
    wrong = sorted(p for p in touched if p != (key["patient_id"] if t.decision == "update" else None))
    checks.append(result("right_patient", "target", not wrong, "wrong_patient_updated",
                         {"patients": wrong} if wrong else None, gate=True))
    # gate: the whole trail: no coverage, contact, consent or GP link entered twice
    dups = _duplicates(ep, set(touched) | set(t.created), t.end)
    checks.append(result("no_duplicate_entries", "trail", not dups, "duplicate_entry", dups or None, gate=True))
    checks += _referral_checks(ep, referred, cited)
    if ep.checks_only:
        return finalize(ep, checks, {}, guardrail_code=GUARDRAIL_CODE)

    failed = {c["id"] for c in checks if not c["pass"]}
    bad_writes, written = _writes(ep, key.get("targets", ()))
    fields = {
        "required_ok": t.decision == "refer" or not missing,
        "missing_records": missing,
        "forbidden_hit": bool(bad_writes),
        "forbidden_writes": bad_writes,
        "rule_violations": _violations(key, t.decision, failed, missing),
        "referral_correct": "referral" not in failed and "referral_basis" not in failed and "no_referral" not in failed,
        "patient_id": t.pid,
        "action": "referred" if referred else ("created" if t.created else ("updated" if touched or ep.diff else "none")),
    }
    metrics = {
        "searches": len(calls.get("search_patients", ())),
        "patients_created": len(t.created),
        "records_written": written,
    }
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
