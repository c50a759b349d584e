"""``reward_mode="progress"``: the end-state distance never grows along an oracle trajectory of
the release, progress is paid once, and the reward never changes the grade."""

from __future__ import annotations

import pytest

from backoffice.envs import available_domains, get_domain, make_native
from backoffice.envs.core.env import PROGRESS_WEIGHT
from backoffice.envs.core.release import load_release
from backoffice.graders.progress import check_distance, distance
from backoffice.training.eval.rollout import run_episode
from backoffice.training.integrity.progress import check_progress
from backoffice.training.policies import get_policy, policy_names
from conftest import domain_params, split_envs

DOMAINS = available_domains()


@pytest.mark.parametrize("domain", domain_params())
def test_distance_never_grows_along_an_oracle_trajectory(domain: str) -> None:
    exclude = get_domain(domain).progress_exclude
    env_for = split_envs(domain)
    oracle = get_policy(domain, "oracle")
    grown = []
    for task_id in load_release(domain).tasks:  # every task of both splits, on an env of its split
        env = env_for(task_id)
        obs, info = env.reset(**env.reset_args(task_id))
        oracle.reset(obs, info)
        last = distance(env.grade_now(), exclude)
        start = last
        while True:
            obs, _, terminated, truncated, step_info = env.step(oracle.act(obs))
            if terminated or truncated:
                break
            now = distance(env.grade_now(), exclude)
            if now > last:
                grown.append((task_id, last, now))
            last = now
        assert step_info["is_success"] and distance(step_info["grade"], exclude) == 0, task_id
        assert start > 0 or step_info["grade"]["pass"], task_id
    assert not grown, f"{len(grown)} oracle steps moved away from the accepted end state, e.g. {grown[:3]}"


@pytest.mark.parametrize("domain", domain_params())
def test_progress_is_paid_once(domain: str) -> None:
    """Random and wrong policies: every payment is a new best (the last step's too), the
    payments add up to at most ``PROGRESS_WEIGHT``, the episode's total is the shaped total plus
    those payments, and the grade is the sparse env's grade."""
    dom = get_domain(domain)
    env = make_native(domain, split="train", reward_mode="progress")
    sparse = make_native(domain, split="train")
    policies = [n for n in policy_names(domain) if n != "noop"]
    ids = env.release.split_ids["train"][:6]
    for name in policies:
        for task_id in ids:
            policy = get_policy(domain, name, seed=3) if name == "random" else get_policy(domain, name)
            obs, info = env.reset(**env.reset_args(task_id))
            policy.reset(obs, info)
            best = distance(env.grade_now(), dom.progress_exclude)
            start = max(1, best)
            paid, total = 0.0, 0.0
            while True:
                action = policy.act(obs)
                obs, reward, terminated, truncated, step_info = env.step(action)
                total += reward
                done = terminated or truncated
                now = distance(step_info["grade"] if done else env.grade_now(), dom.progress_exclude)
                shaping = step_info["shaped_reward"] - (total - reward - paid) if done else dom.step_shaping(env.trace[-1])
                payment = reward - shaping
                if now < best:
                    assert payment == pytest.approx(PROGRESS_WEIGHT * (best - now) / start)
                    best = now
                else:
                    assert payment == pytest.approx(0.0), (task_id, action)  # nothing twice, nothing for going back
                paid += payment
                if done:
                    break
            assert paid <= PROGRESS_WEIGHT + 1e-9
            assert total == pytest.approx(step_info["shaped_reward"] + paid)
            twin = run_episode(sparse, get_policy(domain, name, seed=3) if name == "random" else get_policy(domain, name), task_id=task_id)
            assert twin.info["grade"] == step_info["grade"]


def test_progress_is_refused_on_heldout() -> None:
    with pytest.raises(ValueError, match="heldout"):
        make_native(DOMAINS[0], split="heldout", reward_mode="progress")


def test_check_distance_counts_rows() -> None:
    row = {"kind": "row_equals", "pass": False, "detail": {"expected": [{"a": 1}, {"a": 2}], "got": [{"a": 1}, {"a": 3}, {"a": 3}]}}
    assert check_distance(row) == 3  # {"a": 2} missing, two {"a": 3} extra
    assert check_distance({"kind": "field_equals", "pass": False, "detail": {"field": "s", "expected": "x", "got": ["x", "y", "z"]}}) == 2
    assert check_distance({"kind": "count_is", "pass": False, "detail": {"expected": 1, "got": 4}}) == 3
    assert check_distance({"kind": "no_change", "pass": False, "detail": ["t:1", "t:2"]}) == 2
    assert check_distance({"kind": "anything", "pass": False, "detail": None}) == 1
    # a domain check that lists what is wrong counts the listed items (numbers are not items)
    lines = {"too_little": ["L1->A", "L2->B"], "too_much": ["L3->C"], "wrong_item": [], "unapplied": 5000}
    assert check_distance({"kind": "remittance", "pass": False, "detail": lines}) == 3
    assert check_distance({"kind": "fields", "pass": False, "detail": ["phone", "address"]}) == 2
    assert check_distance({"kind": "remittance", "pass": False, "detail": {"unapplied": 5000}}) == 1
    assert check_distance({"kind": "row_equals", "pass": True, "detail": None}) == 0
    assert distance({"checks": [row, {"id": "skip", "kind": "x", "pass": False}]}, exclude=("skip",)) == 3


@pytest.mark.parametrize("domain", domain_params())
def test_the_distance_is_graded_only_when_a_step_can_change_it(domain: str) -> None:
    """The progress reward grades again only after a step that changed rows or called one of the
    domain's ``grade_reads`` (or every step when the domain declares none), and then re-evaluates
    only the checks the step touched (the episode's memo): the distance it keeps equals a fresh
    grade's after every step of the oracle, every wrong policy, the random policy and the masked
    random catalog policy, on train tasks (every one for the oracle, one in five for the others;
    ``benchmarks/check_progress.py`` runs them all), and the terminal grade, memo and all, is
    byte for byte a fresh one."""
    checked = check_progress(domain, every=5)
    assert not checked.stale, f"{len(checked.stale)} steps kept a stale distance, e.g. {checked.stale[:5]}"
    assert not checked.grades_differ, f"terminal grades differ from fresh ones: {checked.grades_differ[:5]}"
    assert checked.writes >= 100  # the memo was exercised: steps that wrote
    assert {"oracle", "random"} <= set(checked.policies) and any(p.startswith("wrong:") for p in checked.policies)


def test_check_progress_reports_a_distance_apart_from_a_fresh_grade(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker compares: with the fresh side counted one row further, every step is reported."""
    import backoffice.training.integrity.progress as checker

    monkeypatch.setattr(checker, "distance", lambda grade, exclude=(): distance(grade, exclude) + 1)
    checked = checker.check_progress(DOMAINS[0], every=1, policies=["oracle"])
    assert not checked.ok and len(checked.stale) == checked.steps + checked.episodes
