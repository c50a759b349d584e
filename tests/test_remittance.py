"""Remittance domain: wrong policies, accepted alternatives, reversals, seeded search order and
payer replies, tool preconditions, reset, generator and helper rules."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import loads
from backoffice.envs.core.release import load_release
from backoffice.envs.remittance.generator import DEFECT_TAGS, generate
from backoffice.envs.remittance.tables import item_status, norm, osa_distance, search_order_key
from backoffice.training.policies import get_policy
from backoffice.training.policies.remittance import WRONG_POLICIES, LeaveOpenOracle, Oracle, ReversingPolicy
from backoffice.training.rollout import EpisodeResult, run_episode

DOMAIN = "remittance"


@lru_cache(maxsize=None)
def _release():
    return load_release(DOMAIN)


def _ids() -> tuple[str, ...]:
    rel = _release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


@lru_cache(maxsize=None)
def _env():
    return make_native(DOMAIN)


@lru_cache(maxsize=None)
def _runs(name: str) -> dict[str, EpisodeResult]:
    env = _env()
    return {t: run_episode(env, get_policy(DOMAIN, name), task_id=t) for t in _ids()}


def _key(task_id: str) -> dict[str, Any]:
    return _release().answer_key(task_id)


def _names(key: dict[str, Any]) -> str:
    return " ".join(o["name"] for o in key["reference_outcomes"])


def _needs_non_query_case(key: dict[str, Any]) -> bool:
    """Every alternative asks for a case that a policy opening no cases (but querying ambiguous
    lines) cannot produce."""
    alts = key["reference_outcomes"]
    common = set.intersection(*(set(map(tuple, a["cases"])) for a in alts))
    common_queries = {c for c in common if c[0] == "payer_query"}
    return all(any(tuple(c) not in common_queries for c in a["cases"]) for a in alts)


#: failure code -> which released tasks make that mistake possible (from the answer key)
WHERE_POSSIBLE: dict[str, Callable[[dict[str, Any]], bool]] = {
    "misallocation": lambda k: k["first_hit_trap"],
    "over_allocation": lambda k: "overpayment" in k["defect_tags"],
    "unapplied_balance_wrong": lambda k: "underpayment" in _names(k),
    "duplicate_applied": lambda k: bool(k["duplicate_of"]),
    "missed_case": _needs_non_query_case,
    "unneeded_case": lambda k: "small-balance" in _names(k),
    "wrong_write_off": lambda k: "underpayment" in _names(k),
    "patient_responsibility_missed": lambda k: any(a["transfers"] for a in k["reference_outcomes"]),
    "payment_status_wrong": lambda k: True,
    "forbidden_write": lambda k: not k["duplicate_of"],
}


def test_every_failure_code_has_a_wrong_policy_and_a_scope() -> None:
    codes = set(get_domain(DOMAIN).failure_codes)
    assert codes == set(WRONG_POLICIES) == set(WHERE_POSSIBLE)


@pytest.mark.parametrize("code", sorted(WRONG_POLICIES))
def test_wrong_policy_triggers_its_code_wherever_possible(code: str) -> None:
    runs = _runs(f"wrong:{code}")
    possible = [t for t in _ids() if WHERE_POSSIBLE[code](_key(t))]
    assert len(possible) >= 20, (code, len(possible))
    missed = [t for t in possible if code not in runs[t].grade["failure_codes"]]
    assert not missed, f"wrong:{code} does not trigger on {len(missed)} tasks, e.g. {missed[:5]}"
    for t in possible:
        assert not runs[t].grade["pass"]
    oracle = _runs("oracle")
    assert not any(code in r.grade["failure_codes"] for r in oracle.values())


def test_oracle_passes_and_noop_fails_everything() -> None:
    assert all(r.grade["pass"] and r.grade["matched_alternative"] for r in _runs("oracle").values())
    assert not any(r.grade["pass"] for r in _runs("noop").values())


def test_first_hit_policy_fails_every_task_with_near_duplicates() -> None:
    runs = _runs("wrong:misallocation")
    trap = [t for t in _ids() if _key(t)["first_hit_trap"]]
    assert len(trap) >= 500
    assert not [t for t in trap if runs[t].grade["pass"]]


def test_each_defect_tag_is_trapped_at_least_20_times_per_split() -> None:
    rel = _release()
    for split in ("train", "heldout"):
        for tag in DEFECT_TAGS:
            n = sum(1 for t in rel.split_ids[split] if _key(t)["defect_tags"][0] == tag)
            assert n >= 20, (split, tag, n)


# -- accepted alternatives -----------------------------------------------------------------------
def test_either_policy_accepts_both_write_off_and_leave_open() -> None:
    env = _env()
    either = [t for t in _ids() if "small-balance-written-off" in _names(_key(t)) and "small-balance-left-open" in _names(_key(t))]
    assert len(either) >= 10
    for t in either:
        a = run_episode(env, Oracle(), task_id=t).grade
        b = run_episode(env, LeaveOpenOracle(), task_id=t).grade
        assert a["pass"] and b["pass"]
        assert a["matched_alternative"] != b["matched_alternative"]
        assert "written-off" in a["matched_alternative"] and "left-open" in b["matched_alternative"]


def test_strict_tolerance_policies_reject_the_other_choice() -> None:
    env = _env()
    strict_leave = [t for t in _ids() if "small-balance-left-open" in _names(_key(t)) and "written-off" not in _names(_key(t))]
    assert strict_leave
    for t in strict_leave[:20]:
        grade = run_episode(env, get_policy(DOMAIN, "wrong:wrong_write_off"), task_id=t).grade
        assert "wrong_write_off" in grade["failure_codes"] and grade["matched_alternative"] is None


def test_short_payment_accepts_a_case_or_a_payer_query() -> None:
    keys = [_key(t) for t in _ids() if "underpayment-case" in _names(_key(t))]
    assert keys and all("underpayment-query" in _names(k) for k in keys)


# -- reversals: may pass, never change the pure grade, cost shaped reward ---------------------------
def test_reversing_policy_passes_with_reversals_and_lower_shaped_reward() -> None:
    shaped = make_native(DOMAIN, reward_mode="shaped")
    checked = 0
    for t in _ids()[::7]:
        if not _key(t)["first_hit_trap"]:
            continue
        fixed = run_episode(shaped, ReversingPolicy(), task_id=t)
        clean = run_episode(shaped, Oracle(), task_id=t)
        assert fixed.grade["pass"] and clean.grade["pass"]
        assert fixed.grade["score"] == clean.grade["score"]
        assert fixed.grade["process_metrics"]["reversals"] == 1
        assert clean.grade["process_metrics"]["reversals"] == 0
        assert fixed.info["shaped_reward"] < clean.info["shaped_reward"] - 0.2
        checked += 1
    assert checked >= 40


# -- seeded search order and the payer's scripted reply --------------------------------------------
def _step(env, tool: str, **args: Any) -> dict[str, Any]:
    obs, *_ = env.step({"tool": tool, "args": args})
    return loads(obs)


def test_search_order_is_fixed_by_the_seed_not_by_insertion_or_quality() -> None:
    env = make_native(DOMAIN)
    not_sorted = 0
    for t in _ids()[:60]:
        env.reset(options={"task_id": t})
        pay = _step(env, "get_payment", payment_id=env.task.params["payment_id"])["result"]
        for line in pay["lines"]:
            items = _step(env, "search_open_items", query=line["claim_ref"])["result"]["items"]
            ids = [i["id"] for i in items]
            assert ids == sorted(ids, key=lambda i: (search_order_key(env.task.seed, i), i))
            again = _step(env, "search_open_items", query=line["claim_ref"])["result"]["items"]
            assert [i["id"] for i in again] == ids
            if len(ids) > 1 and ids != sorted(ids):
                not_sorted += 1
    assert not_sorted > 20


def _payer_reply_tasks() -> list[str]:
    return [t for t in _ids() if _key(t)["defect_tags"][0] == "payer_reply_needed"]


def test_payer_reply_arrives_only_after_wait_and_decides_the_outcome() -> None:
    env = make_native(DOMAIN)
    kinds = set()
    for t in _payer_reply_tasks():
        env.reset(options={"task_id": t})
        pid = env.task.params["payment_id"]
        lines = _step(env, "get_payment", payment_id=pid)["result"]["lines"]
        line = next(ln for ln in lines if ln["claim_ref"].startswith("ICN-"))
        case = _step(env, "query_payer", payment_id=pid, line_id=line["id"], question="which claim?")["result"]["case"]
        assert case["status"] == "awaiting_reply" and case["reply_kind"] == ""
        assert _step(env, "get_case", case_id=case["id"])["result"]["case"]["status"] == "awaiting_reply"
        assert _step(env, "query_payer", payment_id=pid, line_id=line["id"])["code"] == "conflict"
        before = env.state.get("clock", "clock")["now"]
        waited = _step(env, "wait")["result"]
        assert waited["answered"] == [case["id"]] and waited["now"] > before
        answered = _step(env, "get_case", case_id=case["id"])["result"]["case"]
        kinds.add(answered["reply_kind"])
        outcome = _key(t)["reference_outcomes"][0]
        line_allocs = [a for a in outcome["allocations"] if a[0] == line["id"]]
        if answered["reply_kind"] == "recoup":
            assert not line_allocs
        else:
            assert answered["reply_kind"] == "applies_to"
            target = env.state.get("open_items", line_allocs[0][1])
            assert target["claim_ref"] == answered["reply_claim_ref"]
    assert kinds == {"applies_to", "recoup"}


def test_guessing_an_ambiguous_line_without_asking_fails() -> None:
    class Guesser(Oracle):
        def find(self, line, payer_id):
            item = yield from super().find(line, payer_id)
            if item == "ambiguous":
                hits = (yield {"tool": "search_open_items", "args": {"query": line["patient_name"]}})["result"]["items"]
                return [h for h in hits if self.same_claim(h, line, payer_id)][0]
            return item

    env = _env()
    for t in _payer_reply_tasks():
        grade = run_episode(env, Guesser(), task_id=t).grade
        assert not grade["pass"] and "missed_case" in grade["failure_codes"]


# -- tools: errors are structured and leave the state unchanged --------------------------------------
def _first_task_with(tag: str) -> str:
    return next(t for t in _ids() if _key(t)["defect_tags"][0] == tag)


def test_tool_errors_are_structured_and_change_nothing() -> None:
    env = make_native(DOMAIN)
    env.reset(options={"task_id": _first_task_with("exact_match")})
    pid = env.task.params["payment_id"]
    pay = _step(env, "get_payment", payment_id=pid)["result"]
    line = pay["lines"][0]
    hits = _step(env, "search_open_items", query=line["claim_ref"])["result"]["items"]
    item = next(h for h in hits if h["claim_ref"] == line["claim_ref"])

    def rejected(code: str, tool: str, **args: Any) -> None:
        before = env.state.content_hash()
        res = _step(env, tool, **args)
        assert res["status"] == "error" and res["code"] == code, res
        assert env.state.content_hash() == before

    rejected("not_found", "allocate", payment_id=pid, line_id=line["id"], item_id="OI-0000", amount=1)
    rejected("not_found", "allocate", payment_id="PMT-0", line_id=line["id"], item_id=item["id"], amount=1)
    rejected("conflict", "allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=line["paid_amount"] + 1)
    rejected("invalid_args", "allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=0)
    rejected("precondition_failed", "write_off", item_id=item["id"], amount=1, reason="contractual")
    rejected("conflict", "write_off", item_id=item["id"], amount=item["balance"] + 1, reason="small_balance")
    rejected("precondition_failed", "wait")
    ok = _step(env, "allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=line["paid_amount"])
    assert ok["status"] == "ok" and ok["result"]["item"]["status"] == "closed"
    rejected("conflict", "allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=1)
    rejected("precondition_failed", "post_payment", payment_id=pid, disposition="hold")
    alloc_id = ok["result"]["allocation"]["id"]
    assert _step(env, "reverse_allocation", allocation_id=alloc_id)["status"] == "ok"
    rejected("conflict", "reverse_allocation", allocation_id=alloc_id)
    assert env.state.get("open_items", item["id"])["balance"] == item["balance"]
    assert _step(env, "post_payment", payment_id=pid)["status"] == "ok"
    rejected("conflict", "allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=1)
    rejected("conflict", "post_payment", payment_id=pid)


def test_transfer_creates_a_patient_item_that_cannot_take_insurer_money() -> None:
    env = make_native(DOMAIN)
    env.reset(options={"task_id": _first_task_with("exact_match")})
    pid = env.task.params["payment_id"]
    line = _step(env, "get_payment", payment_id=pid)["result"]["lines"][0]
    item = next(h for h in _step(env, "search_open_items", query=line["claim_ref"])["result"]["items"] if h["claim_ref"] == line["claim_ref"])
    res = _step(env, "transfer_to_patient", item_id=item["id"], amount=1500, code="PR-3")["result"]
    patient = res["patient_item"]
    assert patient["id"].startswith("PI-") and patient["responsibility"] == "patient" and patient["balance"] == 1500
    assert res["item"]["balance"] == item["balance"] - 1500 and res["item"]["status"] == "partial"
    before = env.state.content_hash()
    assert _step(env, "allocate", payment_id=pid, line_id=line["id"], item_id=patient["id"], amount=1)["code"] == "precondition_failed"
    assert _step(env, "transfer_to_patient", item_id=patient["id"], amount=1, code="PR-3")["code"] == "precondition_failed"
    assert env.state.content_hash() == before


def test_reset_clears_writes_and_audit_rows() -> None:
    env, rel = make_native(DOMAIN), _release()
    t = _first_task_with("short_payment")
    entry = next(e for e in rel.manifest["tasks"] if e["task_id"] == t)
    run_episode(env, Oracle(), task_id=t)
    assert env.state.count("audit") > 0 and env.state.count("allocations") > entry["row_counts"]["allocations"]
    env.reset(options={"task_id": t})
    assert env.state.count("audit") == 0
    assert env.state.content_hash() == entry["snapshot_hash"]
    assert {n: env.state.count(n) for n in env.state.snapshot.table_names} == entry["row_counts"]


def test_hidden_script_is_never_listed_whole() -> None:
    env = make_native(DOMAIN)
    res = run_episode(env, Oracle(), task_id=_payer_reply_tasks()[0], keep_observations=True)
    for obs in res.observations:
        assert "delay_hours" not in obs


# -- generator and helpers -----------------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS)
def test_generator_is_pure_and_plants_its_trap(tag: str) -> None:
    a, b = generate(12345, tag), generate(12345, tag)
    assert a == b
    assert a.key["defect_tags"][0] == tag
    lines = [ln for ln in a.snapshot["remittance_lines"] if ln["payment_id"] == a.task["params"]["payment_id"]]
    refs = {norm(i["claim_ref"]) for i in a.snapshot["open_items"]}
    if tag == "fuzzy_reference":
        assert any(norm(ln["claim_ref"]) not in refs and min(osa_distance(norm(ln["claim_ref"]), r) for r in refs) == 1 for ln in lines)
    if tag == "duplicate_payment":
        orig = next(p for p in a.snapshot["payments"] if p["id"] == a.key["duplicate_of"])
        pay = next(p for p in a.snapshot["payments"] if p["id"] == a.task["params"]["payment_id"])
        assert (orig["reference"], orig["amount"], orig["status"]) == (pay["reference"], pay["amount"], "posted")
    if tag == "payer_reply_needed":
        assert any(ln["claim_ref"].startswith("ICN-") for ln in lines)
    for alt in a.key["reference_outcomes"]:
        assert alt["unapplied"] == (0 if alt["payment_status"] == "returned" else
                                    sum(ln["paid_amount"] for ln in lines) - sum(x[2] for x in alt["allocations"]))


def test_osa_distance_and_item_status() -> None:
    assert osa_distance("CLM204518", "CLM204581") == 1  # transposition
    assert osa_distance("CLM204518", "CLM204519") == 1
    assert osa_distance("CLM204518", "CLM294581") == 2
    assert osa_distance("CLM204518", "ICN12345678901") == 3  # capped
    assert norm("clm-20 4518") == "CLM204518"
    assert [item_status(b, 100) for b in (100, 40, 0, -5)] == ["open", "partial", "closed", "credit"]
