"""Sufficiency domain: reset determinism, the sufficiency rule, tools, per-round scoring, the
answer key and one wrong policy per failure code (the generic contract is in test_contract.py)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import load_release
from backoffice.envs.sufficiency.generator import DEFECT_TAGS, generate
from backoffice.envs.sufficiency.rules import assess, failed_conditions, normalise_name
from backoffice.envs.sufficiency.tables import add_days
from backoffice.training.domains.sufficiency.policies import WRONG_POLICIES, Oracle
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import split_envs

DOMAIN = "sufficiency"


@cache
def _release():
    return load_release(DOMAIN)


def _ids() -> tuple[str, ...]:
    rel = _release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def _key(task_id: str) -> dict[str, Any]:
    return _release().answer_key(task_id)


def _first(pred) -> str:
    return next(t for t in _ids() if pred(_key(t)))


def _step(env, tool: str, **args: Any) -> dict[str, Any]:
    obs, *_ = env.step({"tool": tool, "args": args})
    return loads(obs)


# -- reset: identical seeds give identical state (the first test) -------------------------------
def test_a_case_id_names_a_task() -> None:
    """``case_id`` is a task alias (the contract tests check it looks in the env's split alone)."""
    assert "case_id" in get_domain("sufficiency").task_aliases


def test_reset_with_same_seed_restores_identical_state() -> None:
    env_a, env_b = make_native(DOMAIN), make_native(DOMAIN)
    task_id = _first(lambda k: k["outcome_class"] == "release_after_reply" and k["expected"]["satisfiable_from_records"])
    first = env_a.reset(seed=11, options={"task_id": task_id})
    state = dumps(env_a.state.to_json())
    # the case, its documents, held records and the reply schedule are all in the restored state
    for table in ("cases", "documents", "held_records", "_events", "_uploads"):
        assert env_a.state.count(table) > 0, table
    assert env_b.reset(seed=11, options={"task_id": task_id}) == first
    assert dumps(env_b.state.to_json()) == state
    # play the episode (delivers replies, writes rows), then reset again: same state as before
    run_episode(env_a, get_policy(DOMAIN, "oracle"), task_id=task_id, seed=11)
    assert env_a.state.diff() != {}
    assert env_a.reset(seed=11, options={"task_id": task_id}) == first
    assert dumps(env_a.state.to_json()) == state
    assert env_a.state.diff() == {}


def test_reset_by_seed_draws_the_same_task() -> None:
    env = make_native(DOMAIN)
    obs1, info1 = env.reset(seed=123)
    h1 = env.state.content_hash()
    obs2, info2 = env.reset(seed=123)
    assert (obs1, info1, h1) == (obs2, info2, env.state.content_hash())


@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_generator_is_pure(tag: str) -> None:
    for seed in (1, 2, 99):
        assert dumps(generate(seed, tag)) == dumps(generate(seed, tag))


# -- the sufficiency rule ------------------------------------------------------------------------
REQ = {"item_type": "proof_of_address", "max_age_days": 90, "signature_required": True,
       "name_must_match": True, "accept_held_record": False}


def _doc(**kw: Any) -> dict[str, Any]:
    base = {"id": "D1", "item_type": "proof_of_address", "issued_on": "2026-01-01", "signed": True,
            "name_on_document": "Ava Khan", "legible": True, "source": "applicant"}
    return {**base, **kw}


def test_age_limit_is_inclusive_and_future_dates_fail() -> None:
    assert failed_conditions(_doc(issued_on="2026-01-01"), REQ, "Ava Khan", "2026-04-01") == []  # 90 days
    assert failed_conditions(_doc(issued_on="2026-01-01"), REQ, "Ava Khan", "2026-04-02") == ["age"]  # 91 days
    assert failed_conditions(_doc(issued_on="2026-04-03"), REQ, "Ava Khan", "2026-04-02") == ["not_after_review_date"]


def test_each_condition_fails_alone() -> None:
    today = "2026-02-01"
    assert failed_conditions(_doc(signed=False), REQ, "Ava Khan", today) == ["signature"]
    assert failed_conditions(_doc(legible=False), REQ, "Ava Khan", today) == ["legibility"]
    assert failed_conditions(_doc(name_on_document="Eva Khan"), REQ, "Ava Khan", today) == ["name_match"]
    assert failed_conditions(_doc(source="held_record"), REQ, "Ava Khan", today) == ["held_record_not_accepted"]
    relaxed = {**REQ, "signature_required": False, "name_must_match": False}
    assert failed_conditions(_doc(signed=False, name_on_document="Landlord Ltd"), relaxed, "Ava Khan", today) == []


def test_names_compare_ignoring_case_and_spacing() -> None:
    assert normalise_name("  AVA   khan ") == normalise_name("Ava Khan")
    assert failed_conditions(_doc(name_on_document="AVA  KHAN"), REQ, "Ava Khan", "2026-02-01") == []


def test_assess_splits_items_three_ways() -> None:
    reqs = [REQ, {**REQ, "item_type": "bank_statement", "accept_held_record": True},
            {**REQ, "item_type": "identity_document", "max_age_days": None}]
    docs = [_doc(), _doc(id="D2", item_type="identity_document", legible=False)]
    held = [{"id": "HR-1", "item_type": "bank_statement", "issued_on": "2026-01-20", "signed": True,
             "name_on_document": "Ava Khan", "legible": True}]
    a = assess(reqs, docs, held, "Ava Khan", "2026-02-01")
    assert a.satisfied_items == ("proof_of_address",)
    assert a.satisfiable_from_records == {"bank_statement": ("HR-1",)}
    assert a.missing_items == ("identity_document",)
    assert a.failures["identity_document"] == ("legibility",)


# -- tools ---------------------------------------------------------------------------------------
def _fresh(pred=lambda k: k["outcome_class"] == "release_after_reply"):
    env = make_native(DOMAIN)
    task_id = _first(pred)
    env.reset(options={"task_id": task_id})
    return env, _key(task_id)


def test_request_pauses_clock_wait_delivers_and_resume_restarts() -> None:
    env, key = _fresh()
    cid = key["case_id"]
    items = key["expected"]["rounds"][0]["request_items"]
    before_docs = env.state.count("documents")
    res = _step(env, "request_items", case_id=cid, items=items)
    assert res["status"] == "ok"
    case = env.state.get("cases", cid)
    assert (case["status"], case["clock_state"]) == ("awaiting_info", "paused")
    # cannot release nor resume while the applicant has not replied
    for tool in ("release_case", "resume_clock"):
        h = env.state.content_hash()
        assert _step(env, tool, case_id=cid)["code"] == "conflict"
        assert env.state.content_hash() == h
    reply = _step(env, "wait", case_id=cid)
    assert reply["status"] == "ok" and reply["result"]["documents"]
    assert env.state.get("clock", "clock")["now"] == reply["result"]["now"] == key["expected"]["rounds"][1]["review_at"]
    assert env.state.count("documents") == before_docs + len(reply["result"]["documents"])
    case = env.state.get("cases", cid)
    assert (case["status"], case["clock_state"], case["review_round"]) == ("in_review", "paused", 1)
    assert _step(env, "resume_clock", case_id=cid)["status"] == "ok"
    case = env.state.get("cases", cid)
    assert case["clock_state"] == "running" and case["sla_due_on"] > env.state.snapshot.table("cases")[cid]["sla_due_on"]


def test_tool_errors_are_structured_and_leave_state_unchanged() -> None:
    rel = _release()

    def has_foreign_record(k):
        snap = rel.snapshot(k["task_id"])
        mine = snap.table("cases")[k["case_id"]]["applicant_id"]
        return k["outcome_class"] == "release_after_reply" and any(r["applicant_id"] != mine for r in snap.table("held_records").values())

    env, key = _fresh(has_foreign_record)
    cid = key["case_id"]
    other_applicant_record = next(
        r["id"] for r in env.state.iter_rows("held_records")
        if r["applicant_id"] != env.state.get("cases", cid)["applicant_id"]
    )
    calls = [
        ("wait", {"case_id": cid}, "precondition_failed"),  # nothing outstanding
        ("get_case", {"case_id": "CASE-00000"}, "not_found"),
        ("request_items", {"case_id": cid, "items": ["passport_photo"]}, "not_found"),
        ("request_items", {"case_id": cid, "items": []}, "invalid_args"),
        ("route_case", {"case_id": cid, "queue": "nowhere"}, "not_found"),
        ("route_case", {"case_id": cid, "queue": "intake"}, "conflict"),  # already there
        ("attach_held_record", {"case_id": cid, "record_id": other_applicant_record}, "not_found"),
        ("resume_clock", {"case_id": cid}, "conflict"),  # already running
        ("get_requirements", {"case_type": "pet_licence"}, "not_found"),
        ("release_case", {"case_id": cid, "extra": 1}, "invalid_args"),
    ]
    h = env.state.content_hash()
    for tool, args, code in calls:
        res = _step(env, tool, **args)
        assert (res["status"], res["code"]) == ("error", code), (tool, res)
        assert env.state.content_hash() == h


def test_wait_with_no_further_reply_is_a_precondition_error() -> None:
    env, key = _fresh(lambda k: k["outcome_class"] == "awaiting_applicant")
    cid = key["case_id"]
    for rd in key["expected"]["rounds"]:
        assert _step(env, "request_items", case_id=cid, items=rd["request_items"])["status"] == "ok"
        res = _step(env, "wait", case_id=cid)
        if rd["action"] == "await":
            assert res["code"] == "precondition_failed"
        else:
            assert res["status"] == "ok"


def test_attach_twice_conflicts_and_released_case_is_closed() -> None:
    env, key = _fresh(lambda k: k["expected"]["rounds"][0]["attach_records"] and k["outcome_class"] == "release_now")
    cid = key["case_id"]
    record = key["expected"]["rounds"][0]["attach_records"][0]
    assert _step(env, "attach_held_record", case_id=cid, record_id=record)["status"] == "ok"
    assert _step(env, "attach_held_record", case_id=cid, record_id=record)["code"] == "conflict"
    assert _step(env, "release_case", case_id=cid)["status"] == "ok"
    assert _step(env, "request_items", case_id=cid, items=key["expected"]["satisfied_items"][:1])["code"] == "conflict"


def test_list_results_never_expose_the_reply_script() -> None:
    env, key = _fresh()
    cid = key["case_id"]
    text = "".join(
        dumps(_step(env, tool, **args)).decode()
        for tool, args in (("get_case", {"case_id": cid}), ("list_documents", {"case_id": cid}),
                           ("search_held_records", {"case_id": cid}), ("list_cases", {"queue": "intake"}))
    )
    for row in env.state.iter_rows("_events"):
        assert row["id"] not in text and row["at"] not in text
    for row in env.state.iter_rows("_uploads"):
        assert row["id"] not in text


# -- the answer key and per-round scoring ---------------------------------------------------------
@cache
def _oracle_grades() -> dict[str, dict[str, Any]]:
    env_for = split_envs(DOMAIN)
    return {t: run_episode(env_for(t), get_policy(DOMAIN, "oracle"), task_id=t).grade for t in _ids()}


def test_oracle_rounds_match_the_answer_key() -> None:
    fields = ("review_at", "missing_items", "satisfied_items", "satisfiable_from_records")
    for task_id, grade in _oracle_grades().items():
        want = _key(task_id)["expected"]["rounds"]
        assert [{f: r[f] for f in fields} for r in grade["rounds"]] == [{f: r[f] for f in fields} for r in want], task_id
        assert [r["requested_items"] for r in grade["rounds"]] == [r["request_items"] for r in want]
        assert [r["attached_records"] for r in grade["rounds"]] == [sorted(r["attach_records"]) for r in want]
        assert grade["round_scores"] == [1.0] * len(want)


def test_tasks_need_two_or_three_review_rounds() -> None:
    counts = {len(_key(t)["expected"]["rounds"]) for t in _ids()}
    assert {1, 2, 3} <= counts


class _LateOverRequest(Oracle):
    """Correct at the first review, over-requests from the second one on."""

    def request(self, a, round_no):
        return sorted({*a.missing_items, *a.satisfied_items[:1]}) if round_no >= 1 else list(a.missing_items)


class _StaleReviewer(Oracle):
    """Treats an item satisfied at the first review as satisfied for good (ignores the new date)."""

    def plan(self, brief, info):
        self._ok_at_start: set[str] | None = None
        return super().plan(brief, info)

    def request(self, a, round_no):
        if self._ok_at_start is None:
            self._ok_at_start = set(a.satisfied_items)
        return [i for i in a.missing_items if i not in self._ok_at_start]


def test_second_review_is_scored_on_the_new_state() -> None:
    env = make_native(DOMAIN)
    task_id = _first(lambda k: len(k["expected"]["rounds"]) == 3)
    grade = run_episode(env, _LateOverRequest(), task_id=task_id).grade
    assert "over_request" in grade["failure_codes"]
    assert grade["round_scores"][0] == 1.0 and grade["round_scores"][1] < 1.0
    assert grade["rounds"][1]["failures"]["over_request"] and not grade["rounds"][0]["failures"]["over_request"]


def test_document_that_expires_while_waiting_must_be_requested_again() -> None:
    def expires_later(k):
        rds = k["expected"]["rounds"]
        return len(rds) > 1 and bool(set(rds[0]["satisfied_items"]) & set(rds[1]["missing_items"]))

    env_for = split_envs(DOMAIN)
    tasks = [t for t in _ids() if expires_later(_key(t))]
    assert len(tasks) >= 20
    for task_id in tasks[:10]:
        rds = _key(task_id)["expected"]["rounds"]
        item = sorted(set(rds[0]["satisfied_items"]) & set(rds[1]["missing_items"]))[0]
        assert item in _oracle_grades()[task_id]["rounds"][1]["requested_items"]
        grade = run_episode(env_for(task_id), _StaleReviewer(), task_id=task_id).grade
        assert "under_request" in grade["failure_codes"] and item in grade["under_request"]


# -- one wrong policy per failure code ------------------------------------------------------------
def _release_task(k):
    return k["expected"]["end_status"] == "released"


def _held_ids(k, s) -> set[str]:
    applicant = s.table("cases")[k["case_id"]]["applicant_id"]
    return {r["id"] for r in s.table("held_records").values() if r["applicant_id"] == applicant}


def _has_events(k, s) -> bool:
    return any(e["case_id"] == k["case_id"] for e in s.table("_events").values())


POSSIBLE = {
    "premature_release": lambda k, s: bool(k["expected"]["missing_items"]),
    "over_request": lambda k, s: any(r["action"] in ("request", "await") for r in k["expected"]["rounds"]),
    "under_request": lambda k, s: bool(k["expected"]["missing_items"]),
    "ignored_held_record": lambda k, s: any(r["satisfiable_from_records"] for r in k["expected"]["rounds"]),
    "duplicate_request": lambda k, s: any(r["action"] in ("request", "await") for r in k["expected"]["rounds"]),
    "irrelevant_attachment": lambda k, s: bool(_held_ids(k, s) - set(k["expected"]["rounds"][0]["attach_records"])),
    "wrong_queue": lambda k, s: _release_task(k),
    "clock_state_wrong": lambda k, s: k["expected"]["replies"] > 0,
    "end_status_wrong": lambda k, s: _release_task(k),
    "event_not_processed": _has_events,
    "duplicate_decision": lambda k, s: _release_task(k),
    "forbidden_write": lambda k, s: any(c["queue"] == "intake" and c["id"] != k["case_id"] for c in s.table("cases").values()),
}


def test_every_failure_code_has_a_wrong_policy() -> None:
    assert set(WRONG_POLICIES) == set(get_domain(DOMAIN).failure_codes) == set(POSSIBLE)


@pytest.mark.parametrize("code", sorted(WRONG_POLICIES))
def test_wrong_policy_triggers_its_code_wherever_possible(code: str) -> None:
    env_for, rel = split_envs(DOMAIN), _release()
    possible = 0
    for task_id in _ids():
        key, snap = _key(task_id), rel.snapshot(rel.task(task_id).snapshot_id)
        grade = run_episode(env_for(task_id), get_policy(DOMAIN, f"wrong:{code}"), task_id=task_id).grade
        assert code not in _oracle_grades()[task_id]["failure_codes"]
        if POSSIBLE[code](key, snap):
            possible += 1
            assert code in grade["failure_codes"] and not grade["pass"], (task_id, grade["failure_codes"])
        else:
            assert code not in grade["failure_codes"], task_id
    assert possible >= 20


def test_noop_under_requests_whenever_something_is_missing() -> None:
    env = make_native(DOMAIN)
    for task_id in _ids()[:120]:
        grade = run_episode(env, get_policy(DOMAIN, "noop"), task_id=task_id).grade
        assert not grade["pass"]
        assert ("under_request" in grade["failure_codes"]) == bool(
            _key(task_id)["expected"]["missing_items"] or _key(task_id)["expected"]["satisfiable_from_records"])


# -- rewards and evaluation lines ------------------------------------------------------------------
def test_shaped_reward_gives_partial_credit_for_covered_gaps() -> None:
    dom = get_domain(DOMAIN)
    env = make_native(DOMAIN, reward_mode="shaped")
    task_id = _first(lambda k: k["defect_tags"][0] == "reply_incomplete")
    under = run_episode(env, get_policy(DOMAIN, "wrong:under_request"), task_id=task_id)
    noop = run_episode(env, get_policy(DOMAIN, "noop"), task_id=task_id)
    oracle = run_episode(env, get_policy(DOMAIN, "oracle"), task_id=task_id)
    assert 0.0 < under.grade["gap_coverage"] < 1.0 and noop.grade["gap_coverage"] == 0.0
    assert dom.terminal_shaping(noop.grade) < dom.terminal_shaping(under.grade) < dom.terminal_shaping(oracle.grade)
    assert not under.grade["pass"]  # partial credit never turns into a pass


def test_evaluation_line_carries_case_seed_scores_tags_and_steps() -> None:
    from backoffice.training.eval.evaluate import Job, run_job

    task_id = _release().split_ids["heldout"][0]
    rec = run_job(Job(DOMAIN, "wrong:over_request", task_id, "heldout", "t"))
    for field in ("case_id", "seed", "scores", "failure_tags", "steps", "defect_tags", "outcome_class", "requirement_types"):
        assert field in rec, field
    assert rec["case_id"] == _key(task_id)["case_id"]
    assert rec["failure_tags"] == rec["failure_codes"]
    assert set(rec["scores"]) >= {"premature_release", "over_request", "under_request", "ignored_held_record",
                                  "wrong_queue", "clock_state_wrong"}


# -- generator invariants over the whole release ----------------------------------------------------
def _snapshots():
    rel = _release()
    for task_id in _ids():
        yield task_id, _key(task_id), rel.snapshot(rel.task(task_id).snapshot_id)


def test_documents_are_issued_before_they_arrive_unless_post_dated() -> None:
    """A document is issued on or before the day it reaches the case (SUF-H0023 was not), a held
    record on or before the review date, an uploaded reply on or before the reply's date, except
    a post-dated paper (rule ``not_after_review_date``): dated after the review it is read on, and
    after every later review, so it never turns valid while the case is open. At least 20 tasks
    per split have one."""
    post_dated: dict[str, set[str]] = {"train": set(), "heldout": set()}
    for task_id, _key, snap in _snapshots():
        split = "train" if "-T" in task_id else "heldout"
        today = snap.table("clock")["clock"]["now"][:10]
        horizon = add_days(today, 45)  # the last review a case can reach
        cases = snap.table("cases")
        for d in snap.table("documents").values():
            assert cases[d["case_id"]]["opened_on"] <= d["received_at"][:10] <= today, (task_id, d)
            if d["issued_on"] > d["received_at"][:10]:
                assert d["issued_on"] > horizon, (task_id, d)
                post_dated[split].add(task_id)
        for h in snap.table("held_records").values():
            assert h["issued_on"] <= today or h["issued_on"] > horizon, (task_id, h)
        events = snap.table("_events")
        for u in snap.table("_uploads").values():
            at = events[u["event_id"]]["at"][:10]
            assert u["issued_on"] <= at or u["issued_on"] > add_days(at, 45), (task_id, u)
    assert all(len(ids) >= 20 for ids in post_dated.values()), {k: len(v) for k, v in post_dated.items()}


def test_case_dates_and_states_are_consistent() -> None:
    """Cases open before the review date, SLA due dates follow their opening, a paused clock
    belongs to a case awaiting information and paused when its open request was sent, released
    cases sit in a decision queue, replies arrive in order after the review date."""
    for task_id, key, snap in _snapshots():
        today = snap.table("clock")["clock"]["now"]
        requests = list(snap.table("item_requests").values())
        for c in snap.table("cases").values():
            assert c["opened_on"] < today[:10] and c["sla_due_on"] > c["opened_on"], (task_id, c)
            assert (c["clock_state"] == "paused") == (c["status"] == "awaiting_info"), (task_id, c)
            if c["status"] == "awaiting_info":
                open_reqs = [r for r in requests if r["case_id"] == c["id"] and r["status"] == "open"]
                assert [r["requested_at"] for r in open_reqs] == [c["paused_at"]], (task_id, c)
            else:
                assert c["paused_at"] is None, (task_id, c)
            assert (c["status"] == "released") == (c["queue"] != "intake"), (task_id, c)
            if c["released_at"] is not None:
                assert c["opened_on"] <= c["released_at"][:10] <= today[:10], (task_id, c)
        ats = sorted(e["at"] for e in snap.table("_events").values() if e["case_id"] == key["case_id"])
        assert all(a > today for a in ats), task_id
        rounds = key["expected"]["rounds"]
        assert [r["review_at"] for r in rounds] == [today, *ats[: len(rounds) - 1]], task_id
        assert len(ats) == key["expected"]["replies"], task_id


def test_names_on_documents_are_the_applicants_or_a_known_third_party() -> None:
    """A name-match item carries the applicant's name (or a case/spacing variant of it) unless it
    is the name_mismatch flaw; an item without name match (a landlord's reference) a landlord's."""
    from backoffice.envs.sufficiency.generator import LANDLORDS
    from backoffice.envs.sufficiency.tables import requirement_rows

    no_match = {r["item_type"] for r in requirement_rows() if not r["name_must_match"]}
    for task_id, _key, snap in _snapshots():
        cases = snap.table("cases")
        for d in snap.table("documents").values():
            if d["item_type"] in no_match:
                assert d["name_on_document"] in LANDLORDS, (task_id, d)
            else:
                assert len(d["name_on_document"].split()) == 2, (task_id, d)
                assert cases[d["case_id"]]["applicant_name"], task_id


def test_expected_sla_due_date_adds_the_days_paused() -> None:
    from backoffice.envs.sufficiency.tables import add_days, days_between

    for task_id, key, snap in _snapshots():
        exp = key["expected"]
        case = snap.table("cases")[key["case_id"]]
        rounds = exp["rounds"]
        paused = sum(days_between(a["review_at"], b["review_at"]) for a, b in zip(rounds, rounds[1:]))
        assert exp["sla_paused_days"] == paused > 0 or exp["replies"] == 0, task_id
        grade = _oracle_grades()[task_id]
        assert grade["end_state"]["sla_due_on"] == add_days(case["sla_due_on"], paused), task_id
        assert (exp["paused_at"] is None) == (exp["end_status"] == "released"), task_id


def test_outcome_classes_are_balanced_and_single_round_releases_rare() -> None:
    from collections import Counter

    rel = _release()
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        counts = Counter(_key(t)["outcome_class"] for t in ids)
        assert max(counts.values()) / len(ids) <= 0.35, counts
        # a constant outcome (release at the first review; never release) passes at most 10 %
        assert counts["release_now"] / len(ids) <= 0.10 and counts["awaiting_applicant"] / len(ids) <= 0.10, counts


# -- the whole trail ---------------------------------------------------------------------------------
def test_issue_13_holes_are_closed() -> None:
    """A second request, an attachment that covers nothing, 'request once and never wait' on a
    case whose reply is incomplete, and a skipped resume_clock each fail, with their code."""
    env = make_native(DOMAIN)
    rel = _release()
    cases = {
        "duplicate_request": _first(lambda k: k["outcome_class"] == "release_after_reply"),
        "irrelevant_attachment": _first(lambda k: POSSIBLE["irrelevant_attachment"](k, rel.snapshot(k["task_id"]))),
        "event_not_processed": _first(lambda k: k["outcome_class"] == "awaiting_applicant"),
    }
    for code, task_id in cases.items():
        grade = run_episode(env, WRONG_POLICIES[code](), task_id=task_id).grade
        assert not grade["pass"] and code in grade["failure_codes"], (code, grade["failure_codes"])
        assert grade["score"] < 1.0
    # skipping resume_clock on a case left awaiting a reply: the clock is paused as it should
    # be, but the SLA due date never moved by the days of the answered request
    task_id = _first(lambda k: k["outcome_class"] == "awaiting_applicant")
    grade = run_episode(env, WRONG_POLICIES["clock_state_wrong"](), task_id=task_id).grade
    assert grade["failure_codes"] == ["clock_state_wrong"]
    assert not next(c for c in grade["checks"] if c["id"] == "sla_dates")["pass"]
    assert next(c for c in grade["checks"] if c["id"] == "clock_state")["pass"]


def test_checks_are_work_or_gates() -> None:
    """Prohibitions are gates; what the task needs done is work; doing nothing scores 0."""
    env = make_native(DOMAIN, split="heldout")
    always_gate = {"premature_release", "over_request", "ignored_held_record", "duplicate_request",
                   "irrelevant_attachment", "one_decision", "guardrail"}
    for task_id in _release().split_ids["heldout"][:60]:
        key = _key(task_id)
        grade = _oracle_grades()[task_id]
        kinds = {c["id"]: c["gate"] for c in grade["checks"]}
        assert all(kinds[c] for c in always_gate), task_id
        assert not kinds["end_status"] and "replies_processed" in kinds or key["expected"]["replies"] == 0
        assert kinds["queue"] == (key["expected"]["end_status"] != "released")
        noop = run_episode(env, get_policy(DOMAIN, "noop"), task_id=task_id).grade
        assert noop["score"] == 0.0, (task_id, [c["id"] for c in noop["checks"] if c["pass"] and not c["gate"]])
