"""The sufficiency catalog env: its feature policy passes every heldout task, policies blind to
one feature fail with that feature's failure codes, the spaces are fixed, and every action the
mask allows grounds to a call the native env answers (ok or a structured error)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import make_catalog_env, spec_class, tier_specs
from backoffice.training.domains.sufficiency.catalog.feature_policies import conclusions_policy as feature_policy
from conftest import play_catalog

Policy = Callable[[np.ndarray, np.ndarray], int]
SufficiencyCatalog = spec_class("sufficiency", tier_specs("sufficiency")["conclusions"])


@pytest.fixture(scope="module")
def env():
    return make_catalog_env("sufficiency", split="heldout")


def run(env, policy: Policy, task_id: str) -> dict:
    return play_catalog(env, policy, task_id)[0]


def heldout(env) -> tuple[str, ...]:
    return tuple(env.unwrapped.release.split_ids["heldout"])


def blind(env, feature: str, value: float) -> Policy:
    """The feature policy with one feature forced to ``value``."""
    base = feature_policy(env.agent)
    i = [f.name for f in env.agent.feature_defs].index(feature)

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        obs = obs.copy()
        obs[i] = value
        return base(obs, mask)

    return policy


def test_feature_policy_passes_every_heldout_task(env):
    policy = feature_policy(env.agent)
    failed = {}
    for tid in heldout(env):
        info = run(env, policy, tid)
        if not info["is_success"]:
            failed[tid] = info["grade"]["failure_codes"]
    assert not failed


def test_feature_policy_only_picks_allowed_actions(env):
    policy = feature_policy(env.agent)
    for tid in heldout(env)[:40]:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            mask = env.action_masks()
            action = policy(obs, mask)
            assert mask[action]
            obs, _, terminated, truncated, info = env.step(action)
            assert info["action_mask"][env.agent.finish] == 1
            if terminated or truncated:
                break


@pytest.mark.parametrize("feature,value,allowed,required", [
    # releases whatever is missing
    ("any_missing", 0.0, {"premature_release", "end_status_wrong", "clock_state_wrong", "wrong_queue",
                          "event_not_processed"}, "premature_release"),
    # always routes to the standard queue
    ("amount_vs_threshold", -1.0, {"wrong_queue"}, "wrong_queue"),
    # never restarts the clock after a reply
    ("clock_paused", 0.0, {"clock_state_wrong"}, "clock_state_wrong"),
    # never attaches held records
    ("any_satisfiable", 0.0, {"premature_release", "under_request"}, None),
])
def test_wrong_policies_fail_with_their_codes(env, feature, value, allowed, required):
    policy = blind(env, feature, value)
    failures = []
    for tid in heldout(env):
        info = run(env, policy, tid)
        if not info["is_success"]:
            failures.append(set(info["grade"]["failure_codes"]))
    assert failures, f"blind to {feature}: no task failed"
    for codes in failures:
        assert codes and codes <= allowed, codes
        if required:
            assert required in codes
    if feature == "any_satisfiable":
        assert any("under_request" in c for c in failures)


def test_spaces_are_fixed_across_tasks(env):
    k = len(SufficiencyCatalog.actions)
    n = env.agent.n_features
    assert k <= 40 and len(SufficiencyCatalog.features) <= 80
    assert n == 2 + k + len(SufficiencyCatalog.features)
    for split in ("train", "heldout"):
        other = make_catalog_env("sufficiency", split=split)
        for tid in other.unwrapped.release.split_ids[split][:5]:
            obs, info = other.reset(options={"task_id": tid})
            assert other.action_space.n == k
            assert obs.shape == (n,) and obs.dtype == np.float32
            assert info["action_mask"].shape == (k,)


def _structured(obs: str) -> None:
    out = loads(obs)
    assert out["status"] in ("ok", "error")
    if out["status"] == "error":
        assert out.get("code") and out.get("message")


def _varied(env) -> list[str]:
    """A few heldout tasks of different shapes: one round, held records, no further reply."""
    policy = feature_policy(env.agent)
    picked: dict[tuple, str] = {}
    for tid in heldout(env)[:60]:
        run(env, policy, tid)
        taken = env.agent.observation()[2:2 + env.agent.n_actions]
        shape = tuple(bool(t) for t in taken)
        picked.setdefault(shape, tid)
    return [picked[s] for s in sorted(picked)][:6]


def test_allowed_actions_ground_to_answered_calls(env):
    """At reset and at every state of a few feature-policy episodes, each allowed action's call is
    answered (ok or a structured error), never an exception."""
    policy = feature_policy(env.agent)
    for tid in _varied(env):
        obs, _ = env.reset(options={"task_id": tid})
        prefix: list[int] = []
        while True:
            mask = env.action_masks()
            for action in np.flatnonzero(mask):
                env.reset(options={"task_id": tid})
                for a in prefix:
                    env.step(a)
                call = env.agent.native_action(int(action))
                assert isinstance(call, dict) and call["tool"] == env.agent.spec.actions[action].tool
                obs_native, *_ = env.env.step(call)
                env.agent.update(obs_native)
                _structured(obs_native)
                name = env.agent.spec.actions[action].name
                if name == "wait":  # the one call whose answer the agent cannot foresee
                    assert loads(obs_native).get("code") in (None, "precondition_failed")
                elif env.agent.spec.desk.case is not None:  # once the case state is known, no rejection
                    assert loads(obs_native)["status"] == "ok", (tid, name, obs_native)
            env.reset(options={"task_id": tid})
            for a in prefix:
                obs, *_ = env.step(a)
            action = policy(obs, env.action_masks())
            prefix.append(action)
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break


def test_empty_slots_become_invalid_args(env):
    obs, _ = env.reset(options={"task_id": heldout(env)[0]})
    mask = env.action_masks()
    names = [a.name for a in SufficiencyCatalog.actions]
    # nothing read yet: every call formable from the brief's case id is allowed (reading first is
    # the agent's judgement), the ones needing an observed argument are not
    assert {names[i] for i in np.flatnonzero(mask)} == {
        "get_case", "search_held_records", "list_documents", "wait", "resume_clock", "release_case", "submit"}
    for name in ("attach_held_record", "request_missing", "get_requirements", "route_senior"):
        assert env.agent.spec.to_call(names.index(name)) is None
    obs, _, terminated, _, info = env.step(names.index("request_missing"))
    assert not terminated and obs[1] == 1.0  # last_call_error
    assert info["action_mask"].tolist() == mask.astype(np.int8).tolist()


def _names(mask: np.ndarray) -> set[str]:
    return {SufficiencyCatalog.actions[i].name for i in np.flatnonzero(mask)}


def _step(env, name: str):
    names = [a.name for a in SufficiencyCatalog.actions]
    return env.step(names.index(name))


def test_mask_leaves_the_judgements_to_the_agent(env):
    """At every decision point the mask allows each well-formed write, right or wrong: attach,
    request, release and both routes after the reads (a case with a held record and a gap);
    wait, attach and both routes while a reply is awaited; resume, release and both routes
    after the reply; both routes after the release."""
    desk = env.agent.spec.desk
    seen = set()
    for tid in heldout(env):
        env.reset(options={"task_id": tid})
        for name in ("get_case", "get_requirements", "search_held_records", "list_documents"):
            _step(env, name)
        a = desk.assessment()
        if not (a.missing_items and a.satisfiable_from_records):
            continue
        assert {"attach_held_record", "request_missing", "release_case", "route_standard", "route_senior"} <= _names(env.action_masks())
        _step(env, "request_missing")
        assert desk.status == "awaiting_info"
        assert {"wait", "attach_held_record", "route_standard", "route_senior"} <= _names(env.action_masks())
        assert "request_missing" in _names(env.action_masks())  # legal: repeating it is the agent's mistake
        _, _, _, _, info = _step(env, "wait")
        if desk.status != "in_review":
            continue
        assert {"resume_clock", "release_case", "route_standard", "route_senior"} <= _names(env.action_masks())
        _step(env, "release_case")
        assert {"route_standard", "route_senior", "resume_clock"} <= _names(env.action_masks())
        _step(env, "route_senior")
        assert _names(env.action_masks()) == {"submit"}  # (d) released and routed: the work is done
        seen.add(tid)
    assert seen


def _route_when_no_reply(env) -> Policy:
    """The feature policy, except that it routes a case whose reply will never come (wrong)."""
    base = feature_policy(env.agent)
    idx = {f.name: i for i, f in enumerate(env.agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(SufficiencyCatalog.actions)}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[idx["no_reply_expected"]] > 0.5 and mask[act["route_standard"]]:
            return act["route_standard"]
        return base(obs, mask)

    return policy


def _release_unread(env) -> Policy:
    """Releases and routes to the standard queue without reading anything (wrong)."""
    act = {a.name: i for i, a in enumerate(SufficiencyCatalog.actions)}
    idx = {f.name: i for i, f in enumerate(env.agent.feature_defs)}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        for name in ("release_case", "get_case", "get_requirements", "route_standard"):
            if mask[act[name]] and obs[idx[f"taken[{name}]"]] < 0.5:
                return act[name]
        return env.agent.finish

    return policy


@pytest.mark.parametrize("make,allowed,required", [
    (_route_when_no_reply, {"wrong_queue"}, "wrong_queue"),
    (_release_unread, {"premature_release", "wrong_queue", "end_status_wrong", "clock_state_wrong",
                       "event_not_processed"}, None),
])
def test_unmasked_wrong_choices_fail(env, make, allowed, required):
    """Wrong choices the mask does not prevent are caught by the grader."""
    policy = make(env)
    failures = []
    for tid in heldout(env):
        info = run(env, policy, tid)
        if not info["is_success"]:
            failures.append(set(info["grade"]["failure_codes"]))
    assert failures
    for codes in failures:
        assert codes and codes <= allowed, codes
        if required:
            assert required in codes
    if make is _release_unread:
        assert any("premature_release" in c for c in failures)


def _request_twice(env) -> Policy:
    """The feature policy, except that it repeats its first request before waiting (wrong)."""
    base = feature_policy(env.agent)
    act = {a.name: i for i, a in enumerate(SufficiencyCatalog.actions)}
    state = {"repeated": False}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        choice = base(obs, mask)
        if choice == act["wait"] and not state["repeated"] and mask[act["request_missing"]]:
            state["repeated"] = True
            return act["request_missing"]
        return choice

    return policy


def test_repeated_request_fails_as_duplicate(env):
    """The mask allows a second request while the first is open; the grade fails it."""
    hit = 0
    for tid in heldout(env)[:60]:
        policy = _request_twice(env)
        info = run(env, policy, tid)
        codes = set(info["grade"]["failure_codes"])
        if "duplicate_request" in codes:
            hit += 1
            assert not info["is_success"] and codes == {"duplicate_request"}, codes
        else:
            assert info["is_success"], codes
    assert hit >= 20
