"""Grade integrity, for every installed domain over its whole release (part of the contract).

An RL loop is an optimiser pointed at the grader. These tests attack every domain's grade with
policies that should not pass: blind ones (constant outcome, first or last hit, acting without
reading), the oracle plus one extra decision, request or repeated write, and the oracle
ignoring one documented rule; and they check that a careful agent (value-preserving update,
formatting-only difference) is not failed. A domain gets them by defining ``BLIND_POLICIES``,
``RULE_POLICIES`` and ``EXPLOITS`` in its policies module (see ``backoffice.training.integrity.exploits``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import cache
from statistics import mean

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.release import load_release
from backoffice.training.eval.rollout import run_episode
from backoffice.training.integrity import exploits as ex
from backoffice.training.integrity.audit import end_states, wrong_passes
from backoffice.training.policies import domain_module, get_policy
from conftest import domain_params

pytestmark = pytest.mark.parametrize("domain", domain_params())

#: no blind policy may pass more than this share of heldout tasks
BLIND_MAX_PASS = 0.10
#: nor score more than this on average
BLIND_MAX_SCORE = 0.4
#: nor pass in an end state other than the oracle's on more than this share of heldout tasks
BLIND_MAX_WRONG_PASS = 0.05
#: submitting at once scores at most this on average
NOOP_MAX_SCORE = 0.1
#: no outcome class may hold more than this share of a split
MAX_CLASS_SHARE = 0.35
#: a documented rule must change the right answer in at least this many tasks per split
MIN_RULE_BINDS = 20


def _ids(domain: str, split: str) -> tuple[str, ...]:
    return load_release(domain).split_ids[split]


@cache
def _runs(domain: str, policy: str, split: str = "heldout") -> tuple[tuple[dict, str], ...]:
    """``(grade, end-state content hash)`` of ``policy`` on every task of ``split``."""
    return tuple(end_states(domain, lambda: _policy(domain, policy), split))


def _grades(domain: str, policy: str, split: str = "heldout") -> tuple[dict, ...]:
    return tuple(g for g, _ in _runs(domain, policy, split))


def _policy(domain: str, name: str):
    module = domain_module(domain)
    if name.startswith("blind:"):
        return module.BLIND_POLICIES[name.split(":", 1)[1]]()
    if name.startswith("rule:"):
        return module.RULE_POLICIES[name.split(":", 1)[1]]()
    return get_policy(domain, name)


def test_noop_scores_near_zero(domain: str) -> None:
    grades = _grades(domain, "noop")
    assert mean(g["score"] for g in grades) <= NOOP_MAX_SCORE
    assert not any(g["pass"] for g in grades)


def test_blind_policies_do_not_pass(domain: str) -> None:
    blind = domain_module(domain).BLIND_POLICIES
    assert len(blind) >= 3, "name at least three blind policies (constant outcome, first/last hit, act without reading)"
    report = {}
    for name in sorted(blind):
        grades = _grades(domain, f"blind:{name}")
        report[name] = (mean(g["pass"] for g in grades), mean(g["score"] for g in grades))
    bad = {n: r for n, r in report.items() if r[0] > BLIND_MAX_PASS or r[1] > BLIND_MAX_SCORE}
    assert not bad, f"blind policies (pass rate, mean score) over the bounds: {bad}"


def test_blind_policies_never_pass_in_a_wrong_end_state(domain: str) -> None:
    """A blind pass in the oracle's end state is a lucky guess (bounded above); a pass in another
    end state is a grader that accepts what the text does not ask for."""
    oracle = _runs(domain, "oracle")
    report = {name: wrong_passes(_runs(domain, f"blind:{name}"), oracle) for name in sorted(domain_module(domain).BLIND_POLICIES)}
    bad = {n: r for n, r in report.items() if r > BLIND_MAX_WRONG_PASS}
    assert not bad, f"blind policies passing in an end state other than the oracle's: {bad}"


def test_score_is_one_exactly_when_pass(domain: str) -> None:
    names = ["oracle", "noop", "random", *(f"blind:{n}" for n in sorted(domain_module(domain).BLIND_POLICIES))]
    for name in names:
        for g in _grades(domain, name):
            assert (g["score"] == 1.0) == bool(g["pass"]), (name, g["score"], g["pass"], g["failure_codes"])
            assert 0.0 <= g["score"] <= 1.0
            gates = [c for c in g["checks"] if c["gate"]]
            assert any(c["id"] == "guardrail" for c in gates)
            assert any(not c["gate"] for c in g["checks"]), "a grade needs a work check"


def test_a_failed_gate_caps_the_score(domain: str) -> None:
    from backoffice.graders.grade import GATE_CAP

    env = make_native(domain, split="heldout")
    capped = 0
    for name in sorted(domain_module(domain).WRONG_POLICIES):
        for task_id in _ids(domain, "heldout")[:30]:
            g = run_episode(env, get_policy(domain, f"wrong:{name}"), task_id=task_id).grade
            if any(c["gate"] and not c["pass"] for c in g["checks"]):
                capped += 1
                assert g["score"] <= GATE_CAP, (name, task_id, g["score"])
    assert capped, "no wrong policy fails a gate: the domain's gates are never tested"


def test_no_outcome_class_dominates_a_split(domain: str) -> None:
    rel = load_release(domain)
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        counts = Counter(str(rel.answer_key(t).get("outcome_class")) for t in ids)
        top, n = counts.most_common(1)[0]
        assert n / len(ids) <= MAX_CLASS_SHARE, (split, top, n, len(ids), dict(counts))


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 6])
def test_task_ids_say_nothing_of_the_outcome(domain: str, depth: int) -> None:
    """The id attacker: a tree fitted on train over what a task id shows (its index, digits and
    the index mod 2 ... 24) predicts the heldout outcome class no better than the class prior
    plus 2 points. (On seeds v1.1, where task i got tag i mod #tags, depth 4 reached 57 % on
    approvals against a 33 % prior, 67 % on registration against 29 %.)"""
    from backoffice.training.integrity.probes import id_probe

    result = id_probe(domain, depth=depth)
    assert result.gain <= 0.02, result.to_json()


def test_the_tag_deal_is_balanced_and_not_a_residue(domain: str) -> None:
    """Every defect tag is dealt equally often in each released split, and no tag sits on a
    fixed residue of the index (the v1.1 rule, ``tag = tags[i % #tags]``)."""
    from backoffice.envs.core.build import task_tag

    dom = get_domain(domain)
    n = len(dom.defect_tags)
    for split in ("train", "heldout"):
        tags = [task_tag(dom, split, i) for i in range(dom.sizes[split])]
        counts = Counter(tags)
        assert max(counts.values()) - min(counts.values()) <= 1 and len(counts) == n, counts
        for r in range(n):  # v1.1 put one tag on every index of a residue class
            residue = Counter(t for i, t in enumerate(tags) if i % n == r)
            assert residue.most_common(1)[0][1] < 0.9 * sum(residue.values()), (split, r, residue)


def test_allowed_tools_do_not_predict_the_outcome(domain: str) -> None:
    """Guessing the outcome class from the allowed tool set must be no better than the prior."""
    rel = load_release(domain)
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        by_set: dict[tuple, Counter] = defaultdict(Counter)
        prior: Counter = Counter()
        for t in ids:
            cls = str(rel.answer_key(t).get("outcome_class"))
            by_set[tuple(sorted(rel.task(t).allowed_tools))][cls] += 1
            prior[cls] += 1
        guessed = sum(c.most_common(1)[0][1] for c in by_set.values()) / len(ids)
        baseline = prior.most_common(1)[0][1] / len(ids)
        assert guessed <= baseline + 0.02, (split, guessed, baseline, len(by_set))


def test_every_documented_rule_binds(domain: str) -> None:
    rules = get_domain(domain).rules
    policies = domain_module(domain).RULE_POLICIES
    assert rules, "declare the domain's documented rules in Domain.rules"
    assert set(policies) == set(rules)
    envs = {split: make_native(domain, split=split) for split in ("train", "heldout")}
    for rule in rules:
        for split in ("train", "heldout"):
            failed = 0
            for task_id in _ids(domain, split):  # stop once the rule is proven to bind
                failed += not run_episode(envs[split], _policy(domain, f"rule:{rule}"), task_id=task_id).grade["pass"]
                if failed >= MIN_RULE_BINDS:
                    break
            assert failed >= MIN_RULE_BINDS, f"ignoring rule {rule!r} fails only {failed} {split} tasks"


@cache
def _exploit_runs(domain: str, category: str) -> tuple[ex.ExploitRun, ...]:
    hook = domain_module(domain).EXPLOITS[category]
    env = make_native(domain, split="heldout", max_steps=200)
    return tuple(run_exploit_task(env, domain, hook, t) for t in _ids(domain, "heldout"))


def run_exploit_task(env, domain: str, hook, task_id: str) -> ex.ExploitRun:
    return ex.run_exploit(env, get_policy(domain, "oracle"), hook, task_id)


def test_exploit_table_names_every_category(domain: str) -> None:
    table = domain_module(domain).EXPLOITS
    assert set(table) == set(ex.CATEGORIES), sorted(set(ex.CATEGORIES) ^ set(table))
    assert all(table[c] is not None for c in ex.MUST_FAIL), "every must-fail exploit applies to every domain"


@pytest.mark.parametrize("category", ex.MUST_FAIL)
def test_oracle_plus_one_more_write_fails(domain: str, category: str) -> None:
    runs = _exploit_runs(domain, category)
    assert any(r.injected for r in runs), f"the {category} hook never injects a call on a heldout task"
    applied = [r for r in runs if r.applied]  # went through; a refused call changed nothing
    passed = [r.task_id for r in applied if r.grade["pass"]]
    assert not passed, f"the oracle plus {category} passes {len(passed)}/{len(applied)} tasks, e.g. {passed[:5]}"
    for r in runs:
        if not r.applied:  # a rejected injection changed nothing: the oracle's grade stands
            assert r.grade["pass"], (r.task_id, r.grade["failure_codes"])


@pytest.mark.parametrize("category", ex.MUST_PASS)
def test_careful_agents_still_pass(domain: str, category: str) -> None:
    if domain_module(domain).EXPLOITS[category] is None:
        pytest.skip(f"{domain} has no {category} to make")
    runs = _exploit_runs(domain, category)
    applied = [r for r in runs if r.applied]
    assert applied, f"{category} never went through on a heldout task"
    failed = [(r.task_id, r.grade["failure_codes"]) for r in runs if not r.grade["pass"]]
    assert not failed, f"the oracle plus {category} fails {len(failed)} tasks, e.g. {failed[:5]}"
