"""Registration domain: matching rules, tools, grader, wrong policies, reset and the note judge."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.release import load_release
from backoffice.envs.registration.generator import DEFECT_TAGS, MAX_HITS, OUTCOME_DRAWS, generate
from backoffice.envs.registration.tables import (
    MINOR_AGE,
    age_on,
    decide,
    given_equivalent,
    identifier_check_digit,
    identifier_valid,
    is_transposition,
    luhn_digit,
    match_candidates,
    member_id_valid,
    names_agree,
    phone_key,
    relationship_consistent,
)
from backoffice.envs.registration.tools import search_score
from backoffice.graders.judge import Judge
from backoffice.graders.registration_judge import ModelJudge, judge_episode, rubric_judge
from backoffice.training.domains.registration.policies import WRONG_POLICIES, Oracle
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import split_envs

DOMAIN = "registration"


@cache
def release():
    return load_release(DOMAIN)


def all_ids() -> tuple[str, ...]:
    rel = release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


env = split_envs(DOMAIN)  # env(task_id): a native env of the task's split


@cache
def run_all(policy_name: str) -> dict[str, dict[str, Any]]:
    """Grades of a policy over the whole release."""
    return {t: run_episode(env(t), get_policy(DOMAIN, policy_name), task_id=t).grade for t in all_ids()}


def key(task_id: str) -> dict[str, Any]:
    return release().answer_key(task_id)


# -- identity rules --------------------------------------------------------------------------
def test_identifier_check_digit_catches_every_single_digit_typo() -> None:
    ident = "9434765919"
    assert identifier_check_digit(ident[:9]) == 9 and identifier_valid(ident) and identifier_valid("943 476 5919")
    for i in range(10):
        for d in "0123456789":
            typo = ident[:i] + d + ident[i + 1:]
            assert identifier_valid(typo) == (typo == ident)
    assert not identifier_valid("") and not identifier_valid("943-476-5919")


def test_member_id_luhn() -> None:
    body = "1234567"
    mid = f"NW{body}{luhn_digit(body)}"
    assert member_id_valid(mid, "NW") and member_id_valid(mid.lower(), "NW")
    assert not member_id_valid(mid, "BC")
    assert not member_id_valid(mid[:-1] + str((int(mid[-1]) + 1) % 10), "NW")


def test_dates_and_phones() -> None:
    assert is_transposition("1985-03-12", "1985-03-21") and not is_transposition("1985-03-12", "1985-03-12")
    assert not is_transposition("1985-03-12", "1985-03-13")
    assert age_on("2010-03-03", "2026-03-02T09:00:00") == 15 and age_on("2010-03-02", "2026-03-02") == 16
    assert phone_key("+44 7700 900123") == phone_key("07700-900-123") == "07700900123"


def test_names_agree_with_variants_and_swaps_but_not_siblings() -> None:
    assert given_equivalent("Bill", "William") and given_equivalent("william", "BILL")
    assert not given_equivalent("Bill", "Robert")
    assert names_agree("Bill", "Smith", "William", "Smith")
    assert names_agree("Smith", "William", "William", "Smith")  # given and family swapped
    assert not names_agree("Mary", "Smith", "William", "Smith")


def _rec(pid: str, given: str, family: str, dob: str, ident: str = "") -> dict[str, Any]:
    return {"id": pid, "given_name": given, "family_name": family, "dob": dob, "identifier": ident, "status": "active"}


def test_match_candidates_rule() -> None:
    a = _rec("PAT-0001", "William", "Smith", "1985-03-12", "9434765919")
    twin = _rec("PAT-0002", "Edward", "Smith", "1985-03-12", "4010232137")
    namesake = _rec("PAT-0003", "William", "Smith", "1962-01-30", "4505577104")
    form = {"given_name": "Bill", "family_name": "Smith", "dob": "1985-03-12", "identifier": ""}
    assert match_candidates(form, [a, twin, namesake]) == [a]
    # transposed digits agree only when the valid identifier agrees too
    moved = {**form, "dob": "1985-03-21"}
    assert match_candidates(moved, [a, twin]) == []
    assert match_candidates({**moved, "identifier": "943 476 5919"}, [a, twin]) == [a]
    # two records with the same name and birth date: ambiguous unless the identifier settles it
    b = _rec("PAT-0004", "Will", "Smith", "1985-03-12", "4010232137")
    assert match_candidates(form, [a, b]) == [a, b]
    assert match_candidates({**form, "identifier": "9434765919"}, [a, b]) == [a]
    assert match_candidates({**form, "identifier": "9434765918"}, [a, b]) == [a, b]  # typo: no help


# -- generator -------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_generator_is_pure_and_outcome_follows_tag(tag: str) -> None:
    first, again = generate(1234, tag), generate(1234, tag)
    assert dumps(first.snapshot) == dumps(again.snapshot) and dumps(first.key) == dumps(again.key)
    assert first.key["outcome_class"] in {o for o, _ in OUTCOME_DRAWS[tag]}
    assert first.key["defect_tags"][0] == tag and "submit" in first.task["allowed_tools"]
    assert {"notifications", "task_timers", "rules", "clock"} <= set(first.snapshot)


def test_release_forms_carry_the_trap_of_their_tag() -> None:
    rel = release()
    for task_id in all_ids():
        k = key(task_id)
        snap = rel.snapshot(rel.task(task_id).snapshot_id)
        form = snap.table("intake_forms")[k["intake_form_id"]]
        tag = k["defect_tags"][0]
        if tag == "invalid_member_id":
            prefix = snap.table("payers")[form["payer_id"]]["member_prefix"]
            assert not member_id_valid(form["member_id"], prefix)
        if tag == "transposed_dob_digits" and k["patient_id"]:
            assert is_transposition(form["dob"], snap.table("patients")[k["patient_id"]]["dob"])
        if k["outcome_class"] == "refer_conflict":
            holders = [p for p in snap.table("patients").values() if p["identifier"] == form["identifier"].replace(" ", "")]
            assert len(holders) == 1 and holders[0]["id"] in k["basis"]
        if tag == "deceased_match":
            assert snap.table("patients")[k["candidates"][0]]["status"] == "deceased"
        if tag == "ambiguous_match":
            assert len(k["candidates"]) == 2
        if k["minor"]:
            assert form["guardian_name"]


# -- tools -----------------------------------------------------------------------------------
def _reset(task_id: str):
    e = make_native(DOMAIN)
    e.reset(options={"task_id": task_id})
    return e


def _first(pred) -> str:
    return next(t for t in all_ids() if pred(key(t)))


def _step(e, tool: str, **args: Any) -> dict[str, Any]:
    import json

    obs, _, _, _, info = e.step({"tool": tool, "args": args})
    return json.loads(obs)


def test_tool_errors_are_structured_and_leave_state_unchanged() -> None:
    deceased_task = _first(lambda k: k["defect_tags"][0] == "deceased_match")
    e = _reset(deceased_task)
    dead = key(deceased_task)["candidates"][0]
    living = next(r for r in e.state.rows("patients") if r["status"] == "active")
    before = e.state.content_hash()
    cases = [
        ("update_patient", {"patient_id": dead, "phone": "07000000000"}, "patient_not_active"),
        ("add_coverage", {"patient_id": dead, "payer_id": "PAY-NWH", "member_id": "NW12345678"}, "patient_not_active"),
        ("create_patient", {"given_name": "A", "family_name": "B", "dob": "1990-01-01", "sex": "F", "address_line": "1 X",
                            "city": "Y", "postcode": "Z", "identifier": "9434765918"}, "invalid_identifier"),
        ("create_patient", {"given_name": "A", "family_name": "B", "dob": "1990-01-01", "sex": "F", "address_line": "1 X",
                            "city": "Y", "postcode": "Z", "identifier": living["identifier"]}, "conflict"),
        ("create_patient", {"given_name": "A", "family_name": "B", "dob": "1990-02-30", "sex": "F", "address_line": "1 X",
                            "city": "Y", "postcode": "Z"}, "invalid_args"),
        ("record_consent", {"patient_id": living["id"], "given_by": "guardian"}, "precondition_failed"),
        ("update_patient", {"patient_id": living["id"], "phone": "0", "evidence_ids": ["EVD-9999"]}, "not_found"),
        ("get_patient", {"patient_id": "PAT-9999"}, "not_found"),
        ("search_patients", {}, "invalid_args"),
        ("link_gp", {"patient_id": living["id"], "practice_id": "GPP-999"}, "not_found"),
        ("verify_member_id", {"payer_id": "PAY-XXX", "member_id": "1"}, "not_found"),
    ]
    for tool, args, code in cases:
        out = _step(e, tool, **args)
        assert out["status"] == "error" and out["code"] == code, (tool, out)
        assert e.state.content_hash() == before


def test_link_gp_ends_the_previous_link() -> None:
    e = _reset(all_ids()[0])
    link = e.state.rows("gp_links", status="active")[0]
    other = next(p["id"] for p in e.state.rows("practices") if p["id"] != link["practice_id"])
    out = _step(e, "link_gp", patient_id=link["patient_id"], practice_id=other)
    assert out["status"] == "ok"
    assert e.state.get("gp_links", link["id"])["status"] == "ended"
    assert _step(e, "link_gp", patient_id=link["patient_id"], practice_id=other)["code"] == "conflict"


def test_search_order_is_seeded_not_ranked() -> None:
    """The same search gives the same order every time; over the release the true record is
    often not first, so an agent must judge matches itself."""
    not_first = 0
    for task_id in [t for t in all_ids() if key(t)["decision"] == "update"][:60]:
        e = _reset(task_id)
        form = _step(e, "get_intake_form", intake_form_id=key(task_id)["intake_form_id"])["result"]
        args = {"name": f"{form['given_name']} {form['family_name']}", "dob": form["dob"]}
        first = _step(e, "search_patients", **args)["result"]["results"]
        assert _step(e, "search_patients", **args)["result"]["results"] == first
        ids = [r["id"] for r in first]
        assert key(task_id)["patient_id"] in ids
        not_first += ids[0] != key(task_id)["patient_id"]
    assert not_first >= 5


def test_reset_clears_queued_notifications_and_timers() -> None:
    """An episode that queues a welcome letter (create) or a referral timer: reset restores the snapshot."""
    rel = release()
    for tag in ("new_patient", "ambiguous_match"):
        task_id = _first(lambda k, tag=tag: k["defect_tags"][0] == tag)
        e = make_native(DOMAIN)
        _, info = e.reset(options={"task_id": task_id})
        queued = e.state.count("notifications")
        timers = e.state.count("task_timers")
        run_episode(e, Oracle(), task_id=task_id)
        assert e.state.count("notifications") == queued + 1
        if tag == "ambiguous_match":
            assert e.state.count("task_timers") == timers + 1
        assert e.state.content_hash() != info["snapshot_hash"]
        _, again = e.reset(options={"task_id": task_id})
        assert e.state.content_hash() == again["snapshot_hash"] == rel.manifest["tasks"][all_ids().index(task_id)]["snapshot_hash"]
        assert e.state.count("notifications") == queued and e.state.count("task_timers") == timers
        assert e.state.diff() == {}


# -- grader and policies ---------------------------------------------------------------------
def test_oracle_passes_with_clean_fields() -> None:
    for task_id, g in run_all("oracle").items():
        assert g["pass"], (task_id, g["failure_codes"])
        assert g["required_ok"] and not g["forbidden_hit"] and g["rule_violations"] == [] and g["referral_correct"]
        assert g["action"] == {"create": "created", "update": "updated", "refer": "referred"}[key(task_id)["decision"]] \
            or (g["action"] == "none" and key(task_id)["decision"] == "update")


def test_noop_fails_every_task() -> None:
    for task_id, g in run_all("noop").items():
        assert not g["pass"], task_id
        assert g["required_ok"] == (key(task_id)["decision"] == "refer")
        assert g["score"] == 0.0, (task_id, g["score"])


def _all(k: dict[str, Any]) -> bool:
    return True


def _none(k: dict[str, Any]) -> bool:
    return False


def _update(k: dict[str, Any]) -> bool:
    return k["outcome_class"] == "update"


def _refer(k: dict[str, Any]) -> bool:
    return k["decision"] == "refer"


def _registers(k: dict[str, Any]) -> bool:
    return k["decision"] in ("create", "update")


#: failure code -> (tasks where the mistake is possible, tasks where it must show, the only codes
#: allowed where it is possible, or None when the mistake drags others along)
EXPECTED = {
    "duplicate_created": (lambda k: not k["decision"] == "create", lambda k: not k["decision"] == "create", None),
    "search_skipped": (_all, _all, None),
    "missing_required": (lambda k: any(t.startswith("gp_links:") for t in k["targets"]), lambda k: any(t.startswith("gp_links:") for t in k["targets"]), {"missing_required"}),
    "field_mismatch": (lambda k: _update(k) and f"patients:{k['patient_id']}" in k["targets"], lambda k: _update(k) and f"patients:{k['patient_id']}" in k["targets"], {"field_mismatch"}),
    "invalid_coverage": (lambda k: "invalid_member_id" in k["defect_tags"] and _registers(k),
                         lambda k: "invalid_member_id" in k["defect_tags"] and _registers(k), {"invalid_coverage", "missing_required"}),
    "guardian_missing": (lambda k: k["minor"], lambda k: k["minor"], {"guardian_missing", "missing_required"}),
    "verified_overwritten": (_update, lambda k: _update(k) and k["defect_tags"][0] in ("existing_patient_name_variant", "transposed_dob_digits"), None),
    "wrong_patient_updated": (_all, _none, None),
    "missed_referral": (_refer, _refer, {"missed_referral", "wrong_referral_basis"}),
    "unnecessary_referral": (lambda k: not _refer(k), _none, None),
    "wrong_referral_reason": (_refer, _refer, {"wrong_referral_reason"}),
    "wrong_referral_basis": (_refer, _refer, {"wrong_referral_basis"}),
    "duplicate_entry": (lambda k: not _refer(k) and not k["minor"], lambda k: not _refer(k) and not k["minor"], {"duplicate_entry", "forbidden_hit"}),
    "forbidden_hit": (lambda k: not _refer(k), lambda k: not _refer(k), {"forbidden_hit"}),
}


def test_every_failure_code_has_a_wrong_policy() -> None:
    assert set(WRONG_POLICIES) == set(get_domain(DOMAIN).failure_codes) == set(EXPECTED)


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_wrong_policy_commits_its_mistake(code: str) -> None:
    possible, must, only = EXPECTED[code]
    grades = run_all(f"wrong:{code}")
    oracle = run_all("oracle")
    hits = 0
    for task_id, g in grades.items():
        k = key(task_id)
        assert code not in oracle[task_id]["failure_codes"]
        if code in g["failure_codes"]:
            hits += 1
            assert possible(k), (task_id, code)
            assert not g["pass"]
        elif must(k):
            raise AssertionError((task_id, code, g["failure_codes"]))
        if only is not None and possible(k):
            assert set(g["failure_codes"]) <= only, (task_id, g["failure_codes"])
        if only is not None and not possible(k):
            assert g["pass"], (task_id, g["failure_codes"])
    assert hits >= 20


def test_rule_violations_name_rule_ids_of_the_rule_file() -> None:
    rel = release()
    seen = set()
    for code in ("search_skipped", "duplicate_created", "invalid_coverage", "guardian_missing", "verified_overwritten",
                 "missed_referral", "missing_required"):
        for task_id, g in run_all(f"wrong:{code}").items():
            rules = rel.snapshot(rel.task(task_id).snapshot_id).table("rules")
            assert all(r in rules for r in g["rule_violations"])
            seen.update(g["rule_violations"])
    assert seen == {"R-SEARCH-FIRST", "R-NO-DUPLICATE", "R-COVERAGE-ID", "R-MINOR-GUARDIAN", "R-VERIFIED-FIELD", "R-REFER-MATCH",
                    "R-IDENTITY-CONFLICT", "R-REGISTRATION-SET"}
    assert seen == set(get_domain(DOMAIN).rules) <= set(rel.snapshot(rel.task(all_ids()[0]).snapshot_id).table("rules"))


class DropsEvidence(Oracle):
    """Updates a verified address from the form but forgets to cite the evidence."""

    def patient_changes(self, form, rec):
        changes = super().patient_changes(form, rec)
        changes.pop("evidence_ids", None)
        return changes


def test_verified_address_needs_cited_evidence() -> None:
    rel = release()
    tried = 0
    for task_id in all_ids():
        k = key(task_id)
        if k["decision"] != "update":
            continue
        snap = rel.snapshot(rel.task(task_id).snapshot_id)
        rec = snap.table("patients")[k["patient_id"]]
        has_evidence = any(e["field"] == "address" and e["intake_form_id"] == k["intake_form_id"] for e in snap.table("evidence").values())
        if "address" in rec["verified"] and has_evidence and k["expected_fields"]["address_line"] != rec["address_line"]:
            g = run_episode(env(task_id), DropsEvidence(), task_id=task_id).grade
            assert "verified_overwritten" in g["failure_codes"] and "R-VERIFIED-FIELD" in g["rule_violations"]
            tried += 1
    assert tried >= 5


def test_writing_another_patients_record_is_a_forbidden_hit() -> None:
    task_id = _first(lambda k: k["decision"] == "update")
    e = _reset(task_id)
    other = next(p["id"] for p in e.state.rows("patients", status="active") if p["id"] != key(task_id)["patient_id"])
    _step(e, "update_patient", patient_id=other, phone="07111111111")
    _, _, term, _, info = e.step({"tool": "submit", "args": {}})
    g = info["grade"]
    assert term and not g["pass"] and g["forbidden_hit"] and f"patients:{other}" in g["forbidden_writes"]
    assert {"forbidden_hit", "wrong_patient_updated"} <= set(g["failure_codes"])


# -- the hand-over note judge ----------------------------------------------------------------
class TerseReferral(Oracle):
    """Refers correctly with a useless note."""

    def referral_note(self, form_id, reason, ids):
        return "see form"


def test_judge_scores_the_note_but_never_changes_pass() -> None:
    refer_ids = [t for t in all_ids() if key(t)["decision"] == "refer"][:20]
    for task_id in refer_ids:
        good = run_episode(env(task_id), Oracle(), task_id=task_id)
        bad = run_episode(env(task_id), TerseReferral(), task_id=task_id)
        assert good.grade["pass"] and bad.grade["pass"]
        assert dumps(good.grade) == dumps(bad.grade)  # the note is not part of the grade
        assert good.info["judge"]["score"] == 1.0
        assert bad.info["judge"]["score"] < 0.5
        assert "judge" not in good.grade
    create_id = _first(lambda k: k["decision"] == "create")
    assert run_episode(env(create_id), Oracle(), task_id=create_id).info.get("judge") is None  # no note, no judge


def test_rubric_criteria() -> None:
    judge = rubric_judge()
    assert isinstance(judge, Judge)
    ctx = {"intake_form_id": "INT-0003", "expected_reason": "deceased_match", "candidate_ids": ["PAT-0007"]}
    full = judge.judge("INT-0003: PAT-0007 is recorded as deceased. Nothing was changed.", ctx)
    assert full.score == 1.0 and all(full.criteria.values())
    partial = judge.judge("PAT-0007 looks odd", ctx)
    assert partial.criteria == {"names_reason": False, "names_candidates": True, "names_intake_form": False, "says_what_was_done": False}


def test_model_judge_is_optional_and_uses_its_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BACKOFFICE_JUDGE_ENDPOINT", "BACKOFFICE_JUDGE_MODEL", "BACKOFFICE_JUDGE_API_KEY"):
        monkeypatch.delenv(var, raising=False)

    def must_not_call(*a: Any) -> Any:
        raise AssertionError("no network without a key")

    unconfigured = ModelJudge(transport=must_not_call)
    assert isinstance(unconfigured, Judge) and unconfigured.judge("note", {}) is None

    sent: list[Any] = []

    def fake(url: str, headers: Any, payload: Any) -> Any:
        sent.append((url, headers, payload))
        return {"choices": [{"message": {"content": '{"criteria": {"names_reason": true, "names_candidates": false}, "score": 0.5, "rationale": "ok"}'}}]}

    monkeypatch.setenv("BACKOFFICE_JUDGE_ENDPOINT", "http://judge.invalid/v1/chat/completions")
    monkeypatch.setenv("BACKOFFICE_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("BACKOFFICE_JUDGE_API_KEY", "k")
    configured = ModelJudge(transport=fake)
    out = configured.judge("INT-0001 deceased", {"intake_form_id": "INT-0001"})
    assert out is not None and out.score == 0.5 and out.criteria == {"names_candidates": False, "names_reason": True}
    assert sent[0][0].endswith("/chat/completions") and sent[0][2]["model"] == "judge-model"
    assert sent[0][1]["Authorization"] == "Bearer k"

    broken = ModelJudge(transport=lambda *a: {"choices": []})
    assert broken.judge("x", {}) is None  # a failed call is "not run", never an error

    task_id = _first(lambda k: k["decision"] == "refer")
    res = run_episode(env(task_id), Oracle(), task_id=task_id)
    from backoffice.envs.core.domain import Episode

    rel = release()
    e = _reset(task_id)
    for rec in env(task_id).trace:
        e.step({"tool": rec["tool"], "args": rec["args"]})
    episode = Episode(e.task, rel.answer_key(task_id), e.state.snapshot, e.state, e.state.diff(), e.trace)
    judged = judge_episode(episode, configured)
    assert judged is not None and judged["judge"] == "model"
    assert judge_episode(episode, unconfigured) is None
    assert res.grade["pass"]


# -- generator invariants over the whole release (seeds v1) ------------------------------------
def _snap(task_id: str):
    rel = release()
    return rel.snapshot(rel.task(task_id).snapshot_id)


def test_relationship_terms_agree_with_the_people_they_describe() -> None:
    """A son is not called Leila (REG-H0144 in v0); a guardian parent is old enough to be one."""
    for task_id in all_ids():
        snap = _snap(task_id)
        k = key(task_id)
        form = snap.table("intake_forms")[k["intake_form_id"]]
        for role in ("guardian", "next_of_kin"):
            if form[f"{role}_name"]:
                assert relationship_consistent(form[f"{role}_relationship"], form[f"{role}_name"]), (task_id, role)
        if form["next_of_kin_relationship"] in ("son", "daughter") and "transposed_dob_digits" not in k["defect_tags"]:
            assert age_on(form["dob"], snap.table("clock")["clock"]["now"]) >= 36, task_id
        for c in snap.table("contacts").values():
            assert relationship_consistent(c["relationship"], c["name"]), (task_id, c)
        if form["guardian_relationship"] in ("mother", "father") and "transposed_dob_digits" not in k["defect_tags"]:
            parent = next((p for p in snap.table("patients").values()
                           if f"{p['given_name']} {p['family_name']}" == form["guardian_name"]), None)
            assert parent is None or age_on(parent["dob"], form["dob"]) >= 18, task_id


def test_dates_are_ordered() -> None:
    """Born before registered, registered before updated, death after birth and before today,
    evidence and forms dated no later than today."""
    for task_id in all_ids():
        snap = _snap(task_id)
        now = snap.table("clock")["clock"]["now"]
        for p in snap.table("patients").values():
            assert p["dob"] <= p["registered_at"][:10] <= p["updated_at"][:10] <= now[:10], (task_id, p["id"])
            if p["status"] == "deceased":
                assert p["dob"] < p["date_of_death"] <= now[:10], (task_id, p["id"])
            else:
                assert p["date_of_death"] == "", (task_id, p["id"])
        for f in snap.table("intake_forms").values():
            assert f["received_at"] <= now, (task_id, f["id"])
        for r in snap.table("referrals").values():
            assert r["created_at"] <= now


def test_outcome_follows_the_rule_file_and_the_search_shows_look_alikes() -> None:
    """The key's outcome and basis are the rule file's decision over the index and over the
    form's search hits; the search shows 3-6 hits, at least one beside the blocking records."""
    for task_id in all_ids():
        snap = _snap(task_id)
        k = key(task_id)
        form = snap.table("intake_forms")[k["intake_form_id"]]
        patients = list(snap.table("patients").values())
        assert decide(form, patients) == (k["outcome_class"], k["candidates"]), task_id
        query = {"name": f"{form['given_name']} {form['family_name']}", "dob": form["dob"],
                 "identifier": form["identifier"] or None, "postcode": form["postcode"] or None}
        hits = [p for p in patients if search_score(p, **query) >= 3]
        assert 3 <= len(hits) <= MAX_HITS and set(k["candidates"]) < {h["id"] for h in hits}, task_id
        if k["minor"]:
            assert form["guardian_name"] and age_on(form["dob"], snap.table("clock")["clock"]["now"]) < MINOR_AGE


def test_referral_must_cite_existing_records() -> None:
    task_id = _first(lambda k: k["decision"] == "refer")
    e = _reset(task_id)
    before = e.state.content_hash()
    out = _step(e, "refer_to_human", reason="ambiguous_match", basis=["PAT-9999"], note="x")
    assert out["status"] == "error" and out["code"] == "not_found" and e.state.content_hash() == before


def test_formatting_only_and_value_preserving_updates_write_nothing() -> None:
    task_id = _first(lambda k: k["decision"] == "update" and f"patients:{k['patient_id']}" not in k["targets"])
    e = _reset(task_id)
    pid = key(task_id)["patient_id"]
    rec = e.state.get("patients", pid)
    before = e.state.content_hash()
    d = rec["phone"]
    out = _step(e, "update_patient", patient_id=pid, phone=f"+44 {d[1:5]} {d[5:]}", given_name=rec["given_name"].upper(),
                family_name=f" {rec['family_name'].lower()} ", postcode=rec["postcode"].replace(" ", ""),
                address_line=rec["address_line"])
    assert out["status"] == "ok" and out["result"]["changed"] == [] and e.state.content_hash() == before
    out = _step(e, "update_patient", patient_id=pid, phone="07000000000")
    assert out["result"]["changed"] == ["phone"] and e.state.get("patients", pid)["phone"] == "07000000000"


def test_duplicate_entries_fail_the_whole_trail() -> None:
    from backoffice.training.domains.registration.policies import RecordsConsentTwice

    task_id = _first(lambda k: k["decision"] == "update" and not k["minor"])
    g = run_episode(env(task_id), RecordsConsentTwice(), task_id=task_id).grade
    assert not g["pass"] and "duplicate_entry" in g["failure_codes"] and g["score"] <= 0.25


# -- conventions (issue 17) ------------------------------------------------------------------
def test_generator_plants_one_trap_per_defect_tag_and_outcome_class() -> None:
    from backoffice.envs.registration.generator import FORM_OUTCOME_PLANTERS, PLANTERS

    assert set(PLANTERS) == set(DEFECT_TAGS)
    outcomes = {o for draws in OUTCOME_DRAWS.values() for o, _ in draws}
    assert set(FORM_OUTCOME_PLANTERS) <= outcomes
    with pytest.raises(ValueError):
        generate(0, "no_such_tag")


def test_declaration_names_everything_lazily() -> None:
    from backoffice.envs.core import lazy
    from backoffice.envs.registration import DOMAIN, FAILURE_CODES
    from backoffice.envs.registration.tools import toolkit

    assert isinstance(DOMAIN.grade, lazy) and isinstance(DOMAIN.judge, lazy)
    assert DOMAIN.failure_codes == FAILURE_CODES and "clock" not in DOMAIN.tables
    assert set(generate(0, "new_patient").snapshot) == {*DOMAIN.tables, "clock"}
    assert DOMAIN.policies == "backoffice.training.domains.registration.policies"
    assert all(t.writes is not None for t in toolkit.tools.values())
    assert {n for n, t in toolkit.tools.items() if t.writes} == {
        "create_patient", "update_patient", "add_coverage", "add_contact", "record_consent", "link_gp", "refer_to_human"}


def test_the_brief_names_refer_to_human_as_the_tool_takes_it() -> None:
    """The brief and the tool agree: refer_to_human takes reason, basis and note, and the brief
    names all three and the identity-conflict case (which decides a sixth of the tasks)."""
    import re

    from backoffice.envs.registration.tools import ReferArgs

    rel = load_release("registration")
    fields = set(ReferArgs.model_fields)
    for task_id in rel.split_ids["heldout"][:20]:
        text = rel.task(task_id).brief()["instructions"]
        named = re.search(r"refer_to_human\(([^)]*)\)", text)
        assert named and {a.strip() for a in named.group(1).split(",")} == fields, text
        assert "identifier belongs to another" in text
