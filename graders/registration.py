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
(:mod:`backoffice.training.policies.registration`, :mod:`backoffice.training.catalog.registration`),
and the oracle never imports the grader, so each checks the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.envs.core.store import Store
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


def _ok_calls(ep: Episode, tool: str) -> list[Mapping[str, Any]]:
    return [r for r in ep.trace if r["tool"] == tool and r["result_status"] == "ok"]


def _same(field: str, a: Any, b: Any) -> bool:
    if field == "identifier":
        return digits(a) == digits(b)
    if field == "phone":
        return phone_key(a) == phone_key(b)
    if field == "postcode":
        return fold(a).replace(" ", "") == fold(b).replace(" ", "")
    return fold(a) == fold(b)


def _touched(ep: Episode) -> dict[str, list[str]]:
    """Existing patient id -> the ``table:id`` writes that concern that patient."""
    snap_patients = ep.snapshot.table("patients")
    out: dict[str, list[str]] = {}
    pdiff = ep.diff.get("patients")
    if pdiff:
        for rid in [*pdiff["updated"], *pdiff["deleted"]]:
            out.setdefault(rid, []).append(f"patients:{rid}")
    for table in CHILD_TABLES:
        d = ep.diff.get(table)
        if not d:
            continue
        for rid in [*d["created"], *d["updated"], *d["deleted"]]:
            row = ep.state.get(table, rid) or ep.snapshot.table(table).get(rid) or {}
            pid = row.get("patient_id")
            if pid is not None and pid in snap_patients:  # ids are strings: None is never one
                out.setdefault(pid, []).append(f"{table}:{rid}")
    return out


def _duplicates(ep: Episode, pids: set[str]) -> list[str]:
    """Entries the episode left twice on a patient it wrote to: the same coverage (payer and
    member id), the same contact (role and name), two treatment consents for this form, two GP
    links created. Rows on file before the episode count: re-adding one is a duplicate."""
    state, form_id = ep.state, ep.key["intake_form_id"]
    created = {t: set(ep.diff.get(t, NO_CHANGES).get("created", ())) for t in CHILD_TABLES}
    out: list[str] = []
    for pid in sorted(pids):
        groups: dict[tuple, list[str]] = {}
        for r in state.rows("coverages", patient_id=pid, status="active"):
            groups.setdefault(("coverage", r["payer_id"], str(r["member_id"]).strip().upper()), []).append(r["id"])
        for r in state.rows("contacts", patient_id=pid):
            groups.setdefault(("contact", r["role"], fold(r["name"])), []).append(r["id"])
        for r in state.rows("consents", patient_id=pid, intake_form_id=form_id):
            groups.setdefault(("consent",), []).append(r["id"])
        for r in state.rows("gp_links", patient_id=pid):
            if r["id"] in created["gp_links"]:
                groups.setdefault(("gp_link",), []).append(r["id"])
        for ids in groups.values():
            if len(ids) > 1:
                out += [f"{pid}:{i}" for i in sorted(ids)]
    return out


@dataclass(frozen=True)
class _Task:
    """What every check of one episode reads: the key's decision and the record it concerns,
    and the start state as a store (indexed reads of the snapshot)."""

    ep: Episode
    decision: str
    form_id: str
    created: list[str]
    pid: str | None
    patient: dict[str, Any] | None
    start: Store


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
    patient = ep.state.get("patients", pid) if pid else None
    return _Task(ep, decision, key["intake_form_id"], created, pid, patient, Store(ep.snapshot))


def _search_first(ep: Episode) -> dict[str, Any]:
    """R-SEARCH-FIRST (gate): a search happened before the first create."""
    first_create = next((r["step"] for r in _ok_calls(ep, "create_patient")), None)
    first_search = next((r["step"] for r in _ok_calls(ep, "search_patients")), None)
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
    view = t.start if start else t.ep.state
    if item == "patient":
        return view.exists("patients", pid)
    if item == "coverage":
        cov = key["coverage"]
        return any(str(r["member_id"]).strip().upper() == cov["member_id"]
                   for r in view.rows("coverages", patient_id=pid, payer_id=cov["payer_id"], status="active"))
    if item == "gp_link":
        return view.count("gp_links", patient_id=pid, practice_id=key["practice_id"], status="active") > 0
    if item.startswith("contact:"):
        c = next(c for c in key["contacts"] if f"contact:{c['role']}" == item)
        return any(fold(r["name"]) == fold(c["name"]) for r in view.rows("contacts", patient_id=pid, role=c["role"]))
    guardians = {r["id"] for r in view.rows("contacts", patient_id=pid, role="guardian")}
    return any(r["given_by"] != "guardian" or r["contact_id"] in guardians
               for r in view.rows("consents", patient_id=pid, intake_form_id=t.form_id, given_by=key["consent_by"]))


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

    def mismatched(row: Mapping[str, Any] | None) -> list[str]:
        if row is None:
            return ["record"]
        return [f for f, v in sorted(expected.items()) if not _same(f, row.get(f), v)]

    bad = mismatched(t.patient)
    was_right = t.decision == "update" and not mismatched(t.ep.snapshot.table("patients").get(t.pid) if t.pid is not None else None)
    return result("patient_fields", "fields", not bad, "field_mismatch", bad or None, gate=was_right)


def _coverage_valid(ep: Episode) -> dict[str, Any]:
    """R-COVERAGE-ID (gate): every coverage written belongs, on the payer's roster, to its patient."""
    state = ep.state
    bad_cov = []
    cdiff = ep.diff.get("coverages")
    for rid in ([*cdiff["created"], *cdiff["updated"]] if cdiff else []):
        row = state.get("coverages", rid)
        owner = state.get("patients", row["patient_id"]) if row else None
        member = str(row["member_id"]).strip().upper() if row else ""
        on_roster = row is not None and owner is not None and any(
            fold(m["family_name"]) == fold(owner["family_name"]) and m["dob"] == owner["dob"] and m["status"] == "active"
            for m in state.rows("member_roster", payer_id=row["payer_id"], member_id=member)
        )
        if not on_roster:
            bad_cov.append(rid)
    return result("coverage_valid", "rule", not bad_cov, "invalid_coverage", bad_cov or None, gate=True)


def _minor_guardian(t: _Task) -> dict[str, Any]:
    """R-MINOR-GUARDIAN (work, minors only): a guardian contact gives the consent."""
    ok = t.patient is not None
    if ok:
        guardians = {r["id"] for r in t.ep.state.rows("contacts", patient_id=t.pid, role="guardian")}
        consents = t.ep.state.rows("consents", patient_id=t.pid, intake_form_id=t.form_id)
        ok = bool(guardians) and bool(consents) and all(r["given_by"] == "guardian" and r["contact_id"] in guardians for r in consents)
    return result("minor_guardian", "rule", ok, "guardian_missing", None if ok else {"patient_id": t.pid})


def _verified_fields(t: _Task) -> dict[str, Any]:
    """R-VERIFIED-FIELD (gate): a verified field changed only with evidence cited for it."""
    ep = t.ep
    overwritten = []
    pdiff = ep.diff.get("patients")
    evidence = {r["id"]: r["field"] for r in t.start.rows("evidence", intake_form_id=t.form_id)}
    for rid, fields in sorted((pdiff or NO_CHANGES).get("updated", {}).items()):
        before = ep.snapshot.table("patients")[rid]
        verified = set(before.get("verified") or ())
        for f in sorted(fields):
            group = "address" if f in ADDRESS_FIELDS else f
            if group not in verified:
                continue
            backed = group == "address" and any(
                r["args"].get("patient_id") == rid and r["args"].get(f) is not None
                and any(evidence.get(e) == group for e in r["args"].get("evidence_ids") or ())
                for r in _ok_calls(ep, "update_patient")
            )
            if not backed:
                overwritten.append(f"{rid}.{f}")
    return result("verified_fields", "rule", not overwritten, "verified_overwritten", overwritten or None, gate=True)


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
    referral_calls = _ok_calls(ep, "refer_to_human")
    referred = referral_calls[0]["args"]["reason"] if referral_calls else None
    cited = sorted({str(b).strip() for b in referral_calls[0]["args"].get("basis") or ()}) if referral_calls else []

    checks = [_search_first(ep), _no_duplicate(t)]
    missing = _registration_set(t, checks) if t.decision != "refer" else []
    checks.append(_coverage_valid(ep))
    if key.get("minor") and t.decision != "refer":
        checks.append(_minor_guardian(t))
    checks.append(_verified_fields(t))
    # gate: no write on an existing record other than the form's person
    touched = _touched(ep)
    wrong = sorted(p for p in touched if p != (key["patient_id"] if t.decision == "update" else None))
    checks.append(result("right_patient", "target", not wrong, "wrong_patient_updated",
                         {"patients": wrong} if wrong else None, gate=True))
    # gate: the whole trail: no coverage, contact, consent or GP link entered twice
    dups = _duplicates(ep, set(touched) | set(t.created))
    checks.append(result("no_duplicate_entries", "trail", not dups, "duplicate_entry", dups or None, gate=True))
    checks += _referral_checks(ep, referred, cited)

    failed = {c["id"] for c in checks if not c["pass"]}
    bad_writes = forbidden_writes(ep, key.get("targets", ()))
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
        "searches": len(_ok_calls(ep, "search_patients")),
        "patients_created": len(t.created),
        "records_written": sum(len(d["created"]) + len(d["updated"]) + len(d["deleted"]) for d in ep.diff.values()),
    }
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
