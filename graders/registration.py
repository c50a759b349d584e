"""The registration grader: a pure function of the episode (task, key, snapshot, end state, diff, trace).

Grade fields (source 000): ``required_ok`` (every required record and link present),
``forbidden_hit`` (a write outside the answer key's targets, e.g. another patient's record),
``rule_violations`` (the rule ids breached, from the snapshot's ``rules`` table),
``referral_correct`` (whether stopping, or not stopping, was the right call), plus
``missing_records`` (the required items absent),
``forbidden_writes``, ``patient_id`` (the record the registration ended on) and ``action``
(``created`` / ``updated`` / ``referred`` / ``none``). The hand-over note is scored apart by
:mod:`backoffice.graders.registration_judge`, never here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.envs.registration.tables import ADDRESS_FIELDS, FAILURE_CODES, GUARDRAIL_CODE, digits, fold, phone_key
from backoffice.graders.checks import result
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
            if pid in snap_patients:
                out.setdefault(pid, []).append(f"{table}:{rid}")
    return out


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one registration episode (see the module docstring for the fields)."""
    key, state = ep.key, ep.state
    outcome = key["outcome_class"]
    form_id = key["intake_form_id"]
    created = list(ep.diff.get("patients", {}).get("created", ()))
    referral_calls = _ok_calls(ep, "refer_to_human")
    referred = referral_calls[0]["args"]["reason"] if referral_calls else None

    if outcome == "update":
        pid = key["patient_id"]
    elif outcome == "create":
        pid = created[0] if created else None
    else:
        pid = None
    patient = state.get("patients", pid) if pid else None
    checks = []

    # R-SEARCH-FIRST: a search happened before the first create
    first_create = next((r["step"] for r in _ok_calls(ep, "create_patient")), None)
    first_search = next((r["step"] for r in _ok_calls(ep, "search_patients")), None)
    ok = first_create is None or (first_search is not None and first_search < first_create)
    checks.append(result("search_before_create", "rule", ok, "search_skipped", None if ok else {"create_step": first_create}))

    # R-NO-DUPLICATE
    allowed_new = 1 if outcome == "create" else 0
    checks.append(result("no_duplicate", "rule", len(created) <= allowed_new, "duplicate_created",
                         None if len(created) <= allowed_new else {"created": created}))

    # required records and links: one check per required item, so partial work earns partial score
    required: list[tuple[str, bool]] = []
    if outcome != "refer":
        required.append(("patient", patient is not None))
        cov = key.get("coverage")
        if cov:
            required.append(("coverage", bool(pid) and bool(state.rows(
                "coverages", lambda r: str(r["member_id"]).strip().upper() == cov["member_id"],
                patient_id=pid, payer_id=cov["payer_id"], status="active"))))
        if key.get("practice_id"):
            required.append(("gp_link", bool(pid) and bool(state.rows("gp_links", patient_id=pid, practice_id=key["practice_id"], status="active"))))
        for c in key.get("contacts", ()):
            required.append((f"contact:{c['role']}", bool(pid) and bool(state.rows(
                "contacts", lambda r, c=c: fold(r["name"]) == fold(c["name"]), patient_id=pid, role=c["role"]))))
        guardians = {r["id"] for r in state.rows("contacts", patient_id=pid, role="guardian")} if pid else set()
        required.append(("consent", bool(pid) and any(
            r["given_by"] == key["consent_by"] and (r["given_by"] != "guardian" or r["contact_id"] in guardians)
            for r in state.rows("consents", patient_id=pid, intake_form_id=form_id))))
    for item, present in required or [("records", True)]:
        checks.append(result(f"required:{item}", "required", present, "missing_required", None if present else {"missing": item}))
    missing = [item for item, present in required if not present]

    # the record's demographics
    mismatched: list[str] = []
    if outcome != "refer" and patient is not None:
        mismatched = [f for f, v in sorted(key["expected_fields"].items()) if not _same(f, patient.get(f), v)]
    checks.append(result("patient_fields", "fields", not mismatched, "field_mismatch", mismatched or None))

    # R-COVERAGE-ID: every coverage written belongs, on the payer's roster, to its patient
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
    checks.append(result("coverage_valid", "rule", not bad_cov, "invalid_coverage", bad_cov or None))

    # R-MINOR-GUARDIAN
    ok = True
    if key.get("minor") and outcome != "refer" and patient is not None:
        guardians = {r["id"] for r in state.rows("contacts", patient_id=pid, role="guardian")}
        consents = state.rows("consents", patient_id=pid, intake_form_id=form_id)
        ok = bool(guardians) and bool(consents) and all(r["given_by"] == "guardian" and r["contact_id"] in guardians for r in consents)
    checks.append(result("minor_guardian", "rule", ok, "guardian_missing", None if ok else {"patient_id": pid}))

    # R-VERIFIED-FIELD: a verified field changed only with evidence cited for it
    overwritten = []
    pdiff = ep.diff.get("patients")
    evidence = {r["id"]: r["field"] for r in ep.snapshot.table("evidence").values() if r["intake_form_id"] == form_id}
    for rid, fields in sorted((pdiff or {}).get("updated", {}).items()):
        before = ep.snapshot.table("patients")[rid]
        verified = set(before.get("verified") or ())
        for f in sorted(fields):
            group = "address" if f in ADDRESS_FIELDS else f
            if group not in verified:
                continue
            backed = any(
                r["args"].get("patient_id") == rid and r["args"].get(f) is not None
                and any(evidence.get(e) == group for e in r["args"].get("evidence_ids") or ())
                for r in _ok_calls(ep, "update_patient")
            )
            if not backed:
                overwritten.append(f"{rid}.{f}")
    checks.append(result("verified_fields", "rule", not overwritten, "verified_overwritten", overwritten or None))

    # no write on an existing record other than the form's person
    touched = _touched(ep)
    wrong = sorted(p for p in touched if p != (key["patient_id"] if outcome == "update" else None))
    checks.append(result("right_patient", "target", not wrong, "wrong_patient_updated",
                         {"patients": wrong} if wrong else None))

    # referral: stopping was the right call (and for the right reason)
    expected_reason = key.get("referral_reason")
    if expected_reason and referred is None:
        code = "missed_referral"
    elif referred is not None and not expected_reason:
        code = "unnecessary_referral"
    elif referred is not None and referred != expected_reason:
        code = "wrong_referral_reason"
    else:
        code = None
    checks.append(result("referral", "referral", code is None, code,
                         None if code is None else {"expected": expected_reason, "referred": referred}))

    failed = {c["id"] for c in checks if not c["pass"]}
    violations = sorted(rule for check, rule in RULE_OF_CHECK.items() if check in failed)
    if code == "missed_referral":
        violations = sorted([*violations, "R-REFER-MATCH"])
    bad_writes = forbidden_writes(ep, key.get("targets", ()))
    action = "referred" if referred else ("created" if created else ("updated" if touched or ep.diff else "none"))
    fields = {
        "required_ok": not missing,
        "missing_records": missing,
        "forbidden_hit": bool(bad_writes),
        "forbidden_writes": bad_writes,
        "rule_violations": violations,
        "referral_correct": code is None,
        "patient_id": pid,
        "action": action,
    }
    metrics = {
        "searches": len(_ok_calls(ep, "search_patients")),
        "patients_created": len(created),
        "records_written": sum(len(d["created"]) + len(d["updated"]) + len(d["deleted"]) for d in ep.diff.values()),
    }
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
