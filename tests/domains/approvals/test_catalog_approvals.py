"""The approvals catalog env: the feature policy solves every heldout task, deliberately wrong
feature policies fail with the expected failure codes (including mistakes only a legality mask
leaves possible: releasing before the decision, proceeding before the authority is read,
escalating before the blocking fact is known), the
mask leaves every decision to the agent, the spaces are fixed, and every action the mask allows
grounds to a call the native env answers without raising."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from backoffice.envs import make_native
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import make_catalog_env
from backoffice.training.domains.approvals.catalog import CONCLUSIONS
from backoffice.training.domains.approvals.catalog.feature_policies import conclusions_policy as feature_policy
from conftest import play_catalog

Policy = Callable[[np.ndarray, np.ndarray], int]


@pytest.fixture(scope="module")
def env():
    return make_catalog_env("approvals", split="heldout")


def _run(env, policy: Policy, tid: str) -> dict:
    return play_catalog(env, policy, tid)[0]


def _sweep(env, make: Callable[[object], Policy]) -> tuple[int, Counter]:
    policy = make(env.agent)
    ids = env.unwrapped.release.split_ids["heldout"]
    ok, codes = 0, Counter()
    for tid in ids:
        info = _run(env, policy, tid)
        ok += bool(info["is_success"])
        codes.update(info["grade"]["failure_codes"])
    return ok, codes


def _wrong(override: Callable[[dict, dict, np.ndarray, np.ndarray], int | None]) -> Callable[[object], Policy]:
    """A feature policy whose decision is replaced by ``override`` when it returns an action."""

    def make(agent) -> Policy:
        good = feature_policy(agent)
        idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
        act = {a.name: i for i, a in enumerate(agent.spec.actions)}

        def policy(obs, mask):
            a = override(idx, act, obs, mask)
            return good(obs, mask) if a is None else a

        return policy

    return make


def test_feature_policy_passes_every_heldout_task(env):
    ok, codes = _sweep(env, feature_policy)
    assert ok == len(env.unwrapped.release.split_ids["heldout"]), codes


def test_holding_instead_of_rejecting_fails_with_wrong_outcome(env):
    def make(agent):
        good = feature_policy(agent)
        act = {a.name: i for i, a in enumerate(agent.spec.actions)}

        def policy(obs, mask):
            a = good(obs, mask)
            return act["decide_hold"] if a == act["decide_reject"] else a

        return policy

    ok, codes = _sweep(env, make)
    n = len(env.unwrapped.release.split_ids["heldout"])
    assert 0 < ok < n
    assert set(codes) == {"wrong_outcome"}


def test_holding_instead_of_routing_is_an_invalid_decision(env):
    """A hold in the name of an approver who may not decide fails the approver gate too."""
    def make(agent):
        good = feature_policy(agent)
        act = {a.name: i for i, a in enumerate(agent.spec.actions)}

        def policy(obs, mask):
            a = good(obs, mask)
            return act["decide_hold"] if a == act["escalate"] and mask[act["decide_hold"]] else a

        return policy

    ok, codes = _sweep(env, make)
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    assert "wrong_outcome" in codes and {"invalid_approver", "self_approval"} <= set(codes)


def test_escalating_before_the_blocking_fact_is_known_fails(env):
    def override(idx, act, obs, mask):
        # escalate as soon as the rule is read: nothing but the rule to cite
        if obs[idx["rules_read"]] > 0.5 and obs[idx["decision_recorded"]] < 0.5 and obs[idx["procedure_escalate"]] > 0.5:
            return None
        if obs[idx["rules_read"]] > 0.5 and obs[idx["decision_recorded"]] < 0.5 and obs[idx["approver_resolved"]] < 0.5:
            return act["escalate"]
        return None

    ok, codes = _sweep(env, _wrong(override))
    assert ok == 0
    assert "basis_missing_or_wrong" in codes


def test_skipping_delegations_misses_delegated_authority(env):
    def override(idx, act, obs, mask):
        # escalate as soon as no direct authority is found among the candidate roles
        if (obs[idx["decision_recorded"]] < 0.5 and obs[idx["procedure_open"]] > 0.5 and obs[idx["sod_clear"]] > 0.5
                and obs[idx["person_read"]] > 0.5 and obs[idx["assignment_candidate_now"]] < 0.5
                and obs[idx["delegations_read"]] < 0.5):
            return act["escalate"]
        return None

    ok, codes = _sweep(env, _wrong(override))
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    # an escalation of a request the approver may decide: wrong outcome, and no blocking fact to cite
    assert set(codes) == {"wrong_outcome", "basis_missing_or_wrong"}


def _reads_then(act, mask, names) -> int | None:
    for name in names:
        if mask[act[name]]:
            return act[name]
    return None


HOLDER_SLOTS = tuple(f"lookup_role_holders[{i}]" for i in range(5))


def test_ignoring_separation_of_duties_approves_invalidly(env):
    def override(idx, act, obs, mask):
        on = lambda name: obs[idx[name]] > 0.5  # noqa: E731
        if on("decision_recorded") or not on("rules_read") or not on("approver_resolved"):
            return None
        if on("authority_found") and on("person_read"):  # never looks at the requester or the reporting line
            if on("over_hard_limit"):
                return act["decide_reject"]
            return act["decide_hold"] if on("missing_required_field") else act["decide_proceed"]
        return _reads_then(act, mask, ("list_roles", "get_person", "lookup_delegations", *HOLDER_SLOTS))

    ok, codes = _sweep(env, _wrong(override))
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    assert {"self_approval", "invalid_approver"} <= set(codes)
    # an invalid decision is also a wrong outcome, and its release a side effect before a valid decision
    assert set(codes) <= {"self_approval", "invalid_approver", "wrong_outcome", "side_effect_before_decision",
                          "basis_missing_or_wrong"}


def test_ignoring_the_hard_limit_is_over_limit(env):
    def override(idx, act, obs, mask):
        on = lambda name: obs[idx[name]] > 0.5  # noqa: E731
        if on("procedure_reject") and not on("decision_recorded"):
            return act["decide_proceed"]
        return None

    ok, codes = _sweep(env, _wrong(override))
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    assert "over_limit" in codes
    assert set(codes) <= {"over_limit", "wrong_outcome", "side_effect_before_decision"}


def test_releasing_before_the_decision_is_a_side_effect(env):
    def override(idx, act, obs, mask):
        # the mask allows the release before any decision: doing it is the agent's mistake
        if obs[idx["procedure_proceed"]] > 0.5 and obs[idx["decision_recorded"]] < 0.5:
            for name in ("post_ledger_entry", "release_order"):
                if mask[act[name]]:
                    return act[name]
        return None

    ok, codes = _sweep(env, _wrong(override))
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    assert set(codes) == {"side_effect_before_decision"}


def test_proceeding_before_the_authority_is_read_fails(env):
    def override(idx, act, obs, mask):
        # proceed as soon as the approver is known and nothing blocks: no authority to cite yet
        on = lambda name: obs[idx[name]] > 0.5  # noqa: E731
        if (mask[act["decide_proceed"]] and not on("over_hard_limit") and not on("missing_required_field")
                and not on("sod_breach") and not on("authority_found")):
            return act["decide_proceed"]
        return None

    ok, codes = _sweep(env, _wrong(override))
    assert ok < len(env.unwrapped.release.split_ids["heldout"])
    assert "basis_missing_or_wrong" in codes
    assert set(codes) <= {"basis_missing_or_wrong", "wrong_outcome", "invalid_approver", "over_limit",
                          "expired_delegation_used", "side_effect_before_decision"}


def test_mask_leaves_every_judgement_to_the_agent(env):
    """At every decision point of the feature policy (the facts read establish an outcome),
    all four decisions (decide_reject, decide_hold, escalate, decide_proceed) and the request's
    groundable downstream release (post_ledger_entry / release_order) are valid, whatever the
    right outcome is; escalate is valid as soon as the rule is read, the decisions in the
    approver's name (reject / hold / proceed) as soon as the approver is resolved too."""
    policy = feature_policy(env.agent)
    idx = {f.name: i for i, f in enumerate(env.agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(env.agent.spec.actions)}
    decisions = ("decide_reject", "decide_hold", "escalate")
    seen = Counter()
    for tid in env.unwrapped.release.split_ids["heldout"]:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            mask = env.action_masks()
            on = lambda name: obs[idx[name]] > 0.5  # noqa: B023 - called in the iteration that defines it
            if on("rules_read") and not on("decision_recorded"):
                assert mask[act["escalate"]], tid
                for n in ("decide_reject", "decide_hold", "decide_proceed"):
                    assert bool(mask[act[n]]) == on("approver_resolved"), (tid, n)
            if not on("procedure_open") and not on("decision_recorded"):
                outcome = next(o for o in ("reject", "hold", "escalate", "proceed") if on(f"procedure_{o}"))
                seen[outcome] += 1
                assert all(mask[act[n]] for n in decisions), (tid, outcome)
                assert mask[act["decide_proceed"]], (tid, outcome)
                release = env.agent.spec.to_call(act["post_ledger_entry" if on("is_ledger_type") else "release_order"])
                if release is not None:
                    assert mask[act[release["tool"]]], (tid, outcome)
                assert not mask[act["post_ledger_entry" if on("is_order_type") else "release_order"]]
            obs, _, term, trunc, info = env.step(policy(obs, mask))
            if term or trunc:
                break
    assert set(seen) == {"reject", "hold", "escalate", "proceed"}


def test_finished_work_leaves_only_submit(env):
    policy = feature_policy(env.agent)
    for tid in env.unwrapped.release.split_ids["heldout"][:40]:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            mask = env.action_masks()
            a = policy(obs, mask)
            if a == env.agent.finish:
                assert np.flatnonzero(mask).tolist() == [env.agent.finish], tid
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                break


def test_spaces_are_fixed_across_tasks():
    env = make_catalog_env("approvals", split="train")
    k, n = env.action_space.n, env.observation_space.shape
    assert k == len(CONCLUSIONS.actions) <= 40
    assert len(CONCLUSIONS.features) <= 80
    for tid in env.unwrapped.release.split_ids["train"][:6]:
        obs, info = env.reset(options={"task_id": tid})
        assert obs.shape == n and obs.dtype == np.float32
        assert env.action_masks().shape == (k,)
        assert np.all(np.abs(obs) <= 1.0)
        other = make_catalog_env("approvals", split="train")
        assert other.action_space.n == k and other.observation_space.shape == n


def _check_allowed_calls(tid: str, prefix: list[int]) -> None:
    """Replay ``prefix`` and then try every allowed action on a fresh native env."""
    cat = make_catalog_env("approvals", split="heldout")
    cat.reset(options={"task_id": tid})
    for a in prefix:
        cat.step(a)
    allowed = np.flatnonzero(cat.action_masks())
    for a in allowed:
        call = cat.agent.spec.to_call(int(a))
        assert call is not None, cat.agent.spec.actions[a].name
        native = make_native("approvals", split="heldout")
        native.reset(options={"task_id": tid})
        replay = make_catalog_env("approvals", split="heldout")
        replay.reset(options={"task_id": tid})
        for p in prefix:
            native.step(replay.agent.native_action(p))
            replay.step(p)
        obs, *_ = native.step(replay.agent.native_action(int(a)))
        result = loads(obs)
        assert result["status"] in ("ok", "error")
        if result["status"] == "error":
            assert result["code"] in ("not_found", "conflict", "precondition_failed", "invalid_args")


def test_allowed_actions_ground_to_accepted_calls(env):
    ids = env.unwrapped.release.split_ids["heldout"]
    for tid in ids[:3]:
        _check_allowed_calls(tid, [])
        # and mid-episode, after the feature policy's reads
        policy = feature_policy(env.agent)
        obs, _ = env.reset(options={"task_id": tid})
        prefix = []
        for _ in range(5):
            a = policy(obs, env.action_masks())
            prefix.append(a)
            obs, *_ = env.step(a)
        _check_allowed_calls(tid, prefix)


def test_empty_slot_is_a_structured_error(env):
    env.reset(options={"task_id": env.unwrapped.release.split_ids["heldout"][0]})
    act = {a.name: i for i, a in enumerate(env.agent.spec.actions)}
    assert not env.action_masks()[act["lookup_role_holders[4]"]]
    obs, _, term, trunc, info = env.step(act["decide_proceed"])  # nothing read yet: ungroundable
    assert info["result_status"] == "error" and info["error_code"] == "invalid_args"
    assert obs[1] == 1.0  # last_call_error
    assert not term
