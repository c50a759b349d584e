"""Remittance domain: wrong policies, accepted alternatives, reversals, whole-trail grading (work
checks and gates), seeded search order (uniform position of the right claim) and payer replies,
tool preconditions, reset, generator invariants and helper rules."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import loads
from backoffice.envs.core.release import load_release
from backoffice.envs.remittance.generator import DEFECT_TAGS, generate
from backoffice.envs.remittance.tables import item_status, norm, osa_distance, search_items, search_order_key
from backoffice.training.domains.remittance.policies import (
    EXPLOITS,
    WRONG_POLICIES,
    ChurningPolicy,
    Oracle,
    QueryShortPaymentsOracle,
    ReversingPolicy,
)
from backoffice.training.eval.rollout import EpisodeResult, run_episode
from backoffice.training.policies import get_policy
from conftest import split_envs

DOMAIN = "remittance"


@cache
def _release():
    return load_release(DOMAIN)


def _ids() -> tuple[str, ...]:
    rel = _release()
    return rel.split_ids["train"] + rel.split_ids["heldout"]


_env = split_envs(DOMAIN)  # _env(task_id): a native env of the task's split


@cache
def _runs(name: str) -> dict[str, EpisodeResult]:
    return {t: run_episode(_env(t), get_policy(DOMAIN, name), task_id=t) for t in _ids()}


def _key(task_id: str) -> dict[str, Any]:
    return _release().answer_key(task_id)


def _names(key: dict[str, Any]) -> str:
    return " ".join(o["name"] for o in key["reference_outcomes"])


def _credits(key: dict[str, Any]) -> bool:
    """The answer leaves a claim in credit (the desk applies an overpayment whole)."""
    return any(b < 0 for b, _ in key["reference_outcomes"][0]["items"].values())


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
    # an overpaid line, at a desk that does not apply it whole (a claim in credit is then right)
    "over_allocation": lambda k: "overpayment" in k["defect_tags"] and not _credits(k),
    "unapplied_balance_wrong": lambda k: "underpayment" in _names(k),
    "duplicate_applied": lambda k: bool(k["duplicate_of"]),
    "missed_case": _needs_non_query_case,
    # a small difference, and no underpayment case the payment needs already (at a desk that opens
    # cases per payment, a case for the small difference would be that one)
    "unneeded_case": lambda k: "small-balance" in _names(k) and not any(c[0] == "underpayment" and not c[2]
                                                                         for c in k["reference_outcomes"][0]["cases"]),
    "wrong_write_off": lambda k: "underpayment" in _names(k),
    "wrong_transfer": lambda k: any(w[1] == "contractual" for w in k["reference_outcomes"][0]["write_offs"]),
    "patient_responsibility_missed": lambda k: any(a["transfers"] for a in k["reference_outcomes"]),
    "payment_status_wrong": lambda k: True,
    "duplicate_allocation": lambda k: any(a[2] >= 2 for a in k["reference_outcomes"][0]["allocations"]),
    "allocation_churn": lambda k: bool(k["reference_outcomes"][0]["allocations"]),
    "payer_reply_unprocessed": lambda k: "payer_reply_needed" in k["defect_tags"],
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
def test_the_payer_query_alternative_passes_as_the_policy_text_says() -> None:
    """Issue 32: "A payer query about the line (query_payer) is accepted instead, provided you wait
    for the payer's reply, read it with get_case and act on what it says": done exactly so, it
    passes as the other alternative; without waiting for the reply it fails."""
    both = [t for t in _ids() if "underpayment-case" in _names(_key(t)) and "underpayment-query" in _names(_key(t))]
    assert len(both) >= 20
    for t in both[:40]:
        a = run_episode(_env(t), Oracle(), task_id=t).grade
        b = run_episode(_env(t), QueryShortPaymentsOracle(), task_id=t).grade
        assert a["pass"] and b["pass"], (t, b["failure_codes"])
        assert "underpayment-case" in a["matched_alternative"] and "underpayment-query" in b["matched_alternative"]

    class QueryAndForget(QueryShortPaymentsOracle):
        def waits_for_replies(self):
            return False

    for t in both[:10]:
        assert "payer_reply_unprocessed" in run_episode(_env(t), QueryAndForget(), task_id=t).grade["failure_codes"]


def test_strict_tolerance_policies_reject_the_other_choice() -> None:
    strict_leave = [t for t in _ids() if "small-balance-left-open" in _names(_key(t)) and "written-off" not in _names(_key(t))]
    assert strict_leave
    for t in strict_leave[:20]:
        grade = run_episode(_env(t), get_policy(DOMAIN, "wrong:wrong_write_off"), task_id=t).grade
        assert "wrong_write_off" in grade["failure_codes"] and grade["matched_alternative"] is None


def test_short_payment_accepts_a_case_or_a_payer_query() -> None:
    keys = [_key(t) for t in _ids() if "underpayment-case" in _names(_key(t))]
    assert keys and all("underpayment-query" in _names(k) for k in keys)


# -- reversals: may pass, never change the pure grade, cost shaped reward ---------------------------
def test_reversing_policy_passes_with_reversals_and_lower_shaped_reward() -> None:
    shaped = split_envs(DOMAIN, reward_mode="shaped")
    checked = 0
    for t in _ids()[::7]:
        if not _key(t)["first_hit_trap"]:
            continue
        fixed = run_episode(shaped(t), ReversingPolicy(), task_id=t)
        clean = run_episode(shaped(t), Oracle(), task_id=t)
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
    env_for = split_envs(DOMAIN)
    kinds = set()
    for t in _payer_reply_tasks():
        env = env_for(t)
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

    for t in _payer_reply_tasks():
        grade = run_episode(_env(t), Guesser(), task_id=t).grade
        assert not grade["pass"] and "missed_case" in grade["failure_codes"]


# -- tools: errors are structured and leave the state unchanged --------------------------------------
def _first_task_with(tag: str) -> str:
    return next(t for t in _ids() if _key(t)["defect_tags"][0] == tag)


def _plain(line: dict[str, Any]) -> bool:
    return not line["adj_codes"] and line["paid_amount"] == line["billed_amount"] and line["claim_ref"].startswith("CLM-")


def _first_task_with_plain_line() -> str:
    """An exact-match task with a line paid in full, without adjustments."""
    rel = _release()
    for t in _ids():
        if _key(t)["defect_tags"][0] != "exact_match":
            continue
        snap = rel.snapshot(rel.task(t).snapshot_id)
        if any(_plain(ln) for ln in snap.table("remittance_lines").values() if ln["payment_id"] == _key(t)["payment_id"]):
            return t
    raise AssertionError("no exact-match task with a plain line")


def test_tool_errors_are_structured_and_change_nothing() -> None:
    env = make_native(DOMAIN)
    env.reset(options={"task_id": _first_task_with_plain_line()})
    pid = env.task.params["payment_id"]
    pay = _step(env, "get_payment", payment_id=pid)["result"]
    line = next(ln for ln in pay["lines"] if _plain(ln))
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


# -- score: work checks and gates ---------------------------------------------------------------------
def test_every_grade_has_work_and_doing_nothing_earns_nothing() -> None:
    for name in ("oracle", "noop"):
        for t, r in _runs(name).items():
            work = [c for c in r.grade["checks"] if not c["gate"]]
            assert work and any(c["id"] == "payment_status" for c in work), t
            assert (r.grade["score"] == 1.0) == r.grade["pass"], t
            if name == "noop":
                assert not any(c["pass"] for c in work), (t, [c["id"] for c in work if c["pass"]])
                assert r.grade["score"] == 0.0


def test_trail_split_allocation_and_churn_fail_but_fixing_a_wrong_one_passes() -> None:
    tasks = [t for t in _release().split_ids["heldout"] if _key(t)["reference_outcomes"][0]["allocations"]][:15]
    for t in tasks:
        churn = run_episode(_env(t), ChurningPolicy(), task_id=t).grade
        assert not churn["pass"] and churn["failure_codes"] == ["allocation_churn"], (t, churn["failure_codes"])
        assert churn["score"] <= 0.25


def test_payer_replies_must_be_waited_for_and_read() -> None:
    class NoRead(Oracle):
        """Waits for the payer's reply but decides without reading it (recoup assumed)."""

        def plan(self, brief, info):
            gen = super().plan(brief, info)
            obs = None
            while True:
                try:
                    action = gen.send(obs) if obs is not None else next(gen)
                except StopIteration:
                    return
                if action["tool"] == "get_case":
                    return  # stops before reading: submits with the reply unread
                obs = yield action

    for t in _payer_reply_tasks()[:10]:
        grade = run_episode(_env(t), NoRead(), task_id=t).grade
        assert not grade["pass"] and "payer_reply_unprocessed" in grade["failure_codes"]


# -- exploit hooks: the oracle plus one thing ----------------------------------------------------------
@pytest.mark.parametrize("category", sorted(EXPLOITS))
def test_exploit_hooks_fail_or_are_refused_and_careful_variants_pass(category: str) -> None:
    from backoffice.training.integrity.exploits import MUST_FAIL, run_exploit

    hook = EXPLOITS[category]
    if hook is None:
        pytest.skip(f"{category}: not applicable to remittance")
    injected = 0
    for t in _release().split_ids["heldout"][::4]:
        run = run_exploit(_env(t), Oracle(), hook, t)
        injected += bool(run.injected)
        if category in MUST_FAIL:
            assert not run.grade["pass"] or not run.applied, (t, run.injected)
        else:
            assert run.grade["pass"], (t, run.grade["failure_codes"])
    assert injected >= 10


# -- search order: the right claim's position among the hits is uniform ---------------------------------
def _chi2_critical(df: int, z: float = 3.09) -> float:
    """The chi-square quantile at p = 0.001 (z = 3.09), Wilson-Hilferty approximation."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_the_right_claims_position_among_search_hits_is_uniform() -> None:
    """Over the release, every search by a line's ref that finds its claim among k >= 2 hits puts
    it at position 0..k-1 with probability 1/k. Bounds: per k with >= 5 expected per position, a
    chi-square test at p = 0.001; over all searches, the counts of "first" and of "last" each
    within 4 standard deviations of their expectation sum(1/k) (the issue measured 212 last and
    119 first of 470, i.e. > 5 and < -2.5 sigma)."""
    rel = _release()
    by_k: dict[int, Counter] = defaultdict(Counter)
    first = last = 0
    expect = var = 0.0
    for t in _ids():
        task, key = rel.task(t), _key(t)
        snap = rel.snapshot(task.snapshot_id)
        items = list(snap.table("open_items").values())
        claim = {a[0]: a[1] for a in key["reference_outcomes"][0]["allocations"]}
        for line in snap.table("remittance_lines").values():
            if line["payment_id"] != key["payment_id"] or line["id"] not in claim:
                continue
            hits = [h["id"] for h in search_items(items, line["claim_ref"], task.seed)]
            if len(hits) < 2 or claim[line["id"]] not in hits:
                continue
            k, pos = len(hits), hits.index(claim[line["id"]])
            by_k[k][pos] += 1
            first += pos == 0
            last += pos == k - 1
            expect += 1 / k
            var += (1 / k) * (1 - 1 / k)
    n = sum(sum(c.values()) for c in by_k.values())
    assert n >= 1000
    sd = math.sqrt(var)
    assert abs(first - expect) <= 4 * sd, (first, expect, sd)
    assert abs(last - expect) <= 4 * sd, (last, expect, sd)
    tested = 0
    for k, counts in by_k.items():
        total = sum(counts.values())
        if total / k < 5:
            continue
        chi2 = sum((counts[p] - total / k) ** 2 / (total / k) for p in range(k))
        assert chi2 <= _chi2_critical(k - 1), (k, dict(counts), chi2)
        tested += 1
    assert tested >= 3


# -- generator invariants over the release ---------------------------------------------------------------
def test_generator_invariants_over_the_release() -> None:
    rel = _release()
    for t in _ids():
        task, key = rel.task(t), _key(t)
        snap = rel.snapshot(task.snapshot_id)
        tables = {n: snap.table(n) for n in snap.table_names}
        now = tables["clock"]["clock"]["now"]
        today = now[:10]
        items, accounts = tables["open_items"], tables["accounts"]
        pay = tables["payments"][key["payment_id"]]
        lines = [ln for ln in tables["remittance_lines"].values() if ln["payment_id"] == pay["id"]]
        # dates ordered: services before payments, payments received by today, history in the past
        assert pay["received_on"] == today and pay["status"] == "unposted" and pay["unapplied"] == pay["amount"]
        for it in items.values():
            assert it["service_date"] < today, (t, it["id"])
            assert it["status"] == item_status(it["balance"], it["amount_due"]) and 0 <= it["balance"] <= it["amount_due"]
            assert accounts[it["account_id"]]["name"] == it["patient_name"] and accounts[it["account_id"]]["kind"] == "patient"
            assert accounts[it["payer_id"]]["kind"] == "payer"
        for p in tables["payments"].values():
            assert p["received_on"] <= today
            plines = [ln for ln in tables["remittance_lines"].values() if ln["payment_id"] == p["id"]]
            assert p["amount"] == sum(ln["paid_amount"] for ln in plines) and p["line_count"] == len(plines)
            for ln in plines:
                assert ln["service_date"] < p["received_on"], (t, ln["id"])
                assert len(ln["adj_codes"]) == len(ln["adj_amounts"]) <= 2
                assert all(a > 0 for a in ln["adj_amounts"]) and ln["paid_amount"] > 0
        for a in tables["allocations"].values():
            assert a["created_at"] < now and a["item_id"] in items
            assert a["created_at"][:10] == tables["payments"][a["payment_id"]]["received_on"]
        # a line and the claim it pays describe the same patient, visit and charge
        lines_by_id = {ln["id"]: ln for ln in lines}
        for alt in key["reference_outcomes"]:
            for lid, iid, amt in alt["allocations"]:
                ln, it = lines_by_id[lid], items[iid]
                assert (ln["patient_name"], ln["service_date"], ln["billed_amount"], it["payer_id"]) == (
                    it["patient_name"], it["service_date"], it["amount_due"], pay["payer_id"]), (t, lid, iid)
                assert 0 < amt <= ln["paid_amount"]
        # refs and invoices unique, ids unique by construction of the tables
        refs = [norm(it["claim_ref"]) for it in items.values()]
        assert len(set(refs)) == len(refs), t
        assert len({it["invoice"] for it in items.values()}) == len(items)
        assert task.allowed_tools == rel.task(_ids()[0]).allowed_tools


def test_a_policy_that_never_reads_the_desk_policies_passes_at_most_5_percent() -> None:
    """Issue 32: the desk's policies vary so that the oracle's whole procedure under one assumed
    set of policies (every CO code contractual, every PR code the patient's, the first action of
    each choice) passes at most 5 % of either split; read, the same procedure passes every task."""
    from backoffice.training.domains.remittance.policies import NeverReadPolicies

    rel = _release()
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        passed = [t for t in ids if run_episode(_env(t), NeverReadPolicies(), task_id=t).grade["pass"]]
        assert len(passed) <= 0.05 * len(ids), (split, len(passed), passed[:5])
