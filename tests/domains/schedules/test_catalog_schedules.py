"""Schedules catalog env: the feature policy passes every heldout task; wrong feature policies fail
with the expected failure codes; the mask leaves every judgement to the agent (legality only);
the catalog and features are fixed; every grounded call is one the native env answers (ok or a
structured error)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from backoffice.training.catalog import make_catalog_env
from backoffice.training.catalog.base import CatalogAgent
from backoffice.training.domains.schedules.catalog import CONCLUSIONS
from backoffice.training.domains.schedules.catalog.desk import TRIGGERS
from backoffice.training.domains.schedules.catalog.feature_policies import conclusions_policy as feature_policy
from conftest import play_catalog

D = "schedules"
Policy = Callable[[np.ndarray, np.ndarray], int]


@cache
def env_of(split: str):
    return make_catalog_env(D, split=split)


def heldout_ids() -> tuple[str, ...]:
    return tuple(env_of("heldout").unwrapped.release.split_ids["heldout"])


def indices(agent: CatalogAgent) -> tuple[dict[str, int], dict[str, int]]:
    return ({d.name: i for i, d in enumerate(agent.feature_defs)},
            {a.name: i for i, a in enumerate(agent.spec.actions)})


def run(env, policy: Policy, task_id: str) -> tuple[dict, list[np.ndarray]]:
    return play_catalog(env, policy, task_id)


@cache
def run_all(make_policy: Callable[[CatalogAgent], Policy]) -> dict[str, tuple[dict, list[np.ndarray]]]:
    env = env_of("heldout")
    policy = make_policy(env.agent)
    return {t: run(env, policy, t) for t in heldout_ids()}


def ever(seen: list[np.ndarray], index: int) -> bool:
    return any(o[index] > 0.5 for o in seen)


# -- wrong feature policies: each changes one judgement of the right decision list ----------------
def eager_commit(agent: CatalogAgent) -> Policy:
    """Commits as soon as the draft is complete, approval or not (then does the rest right)."""
    right = feature_policy(agent)
    f, a = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[f["draft_complete"]] > 0.5 and mask[a["commit_draft"]]:
            return a["commit_draft"]
        return right(obs, mask)

    return act


def commit_first_row(agent: CatalogAgent) -> Policy:
    """Commits the draft as soon as it holds one instalment (when no approval is outstanding)."""
    right = feature_policy(agent)
    f, a = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[f["draft_rows"]] > 0 and obs[f["approval_outstanding"]] < 0.5 and mask[a["commit_draft"]]:
            return a["commit_draft"]
        return right(obs, mask)

    return act


def always_remind(agent: CatalogAgent) -> Policy:
    """Creates the new reminder even when the rules say skip."""
    right = feature_policy(agent)
    f, a = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[f["committed"]] > 0.5 and mask[a["create_reminder"]]:
            return a["create_reminder"]
        return right(obs, mask)

    return act


def ask_every_role(agent: CatalogAgent) -> Policy:
    """Always asks the deferral trigger's role, whichever trigger applies first (submits once
    that role has answered and the commit is still refused)."""
    right = feature_policy(agent)
    _, a = indices(agent)
    asks = {a[f"request_approval[{t}]"] for t in TRIGGERS}

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        choice = right(obs, mask)
        if choice in asks:
            return a["request_approval[deferral]"] if mask[a["request_approval[deferral]"]] else agent.finish
        return choice

    return act


def stop_after_commit(agent: CatalogAgent) -> Policy:
    """Follows the right policy until the commit has landed, then submits at once."""
    right = feature_policy(agent)
    f, _ = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        return agent.finish if obs[f["committed"]] > 0.5 else right(obs, mask)

    return act


def skip_reminder_read(agent: CatalogAgent) -> Policy:
    """Never lists the policy's scheduled reminders, so it cannot cancel the replaced ones."""
    right = feature_policy(agent)
    _, a = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        mask = mask.copy()
        mask[a["list_reminders"]] = False
        return right(obs, mask)

    return act


# -- tests ------------------------------------------------------------------------------------------
def test_feature_policy_passes_every_heldout_task():
    results = run_all(feature_policy)
    failed = {t: info["grade"]["failure_codes"] for t, (info, _) in results.items() if not info["is_success"]}
    assert not failed
    assert max(len(seen) - 1 for _, seen in results.values()) <= CONCLUSIONS.max_steps


def test_eager_commit_fails_exactly_the_approval_tasks_with_commit_before_approval():
    f, _ = indices(env_of("heldout").agent)
    results = run_all(eager_commit)
    needing = {t for t, (_, seen) in results.items() if ever(seen, f["approval_needed"])}
    assert needing, "the heldout split has approval tasks"
    for t, (info, _) in results.items():
        if t in needing:
            assert info["grade"]["failure_codes"] == ["commit_before_approval"], t
        else:
            assert info["is_success"], (t, info["grade"]["failure_codes"])


def test_committing_a_partial_draft_drifts_the_amounts():
    f, _ = indices(env_of("heldout").agent)
    results = run_all(commit_first_row)
    # approval tasks pass: the approval is obtained after the draft is complete
    multi = {t for t, (_, seen) in results.items()
             if max(o[f["plan_count"]] for o in seen) > 1 / 12 + 1e-6 and not ever(seen, f["approval_needed"])}
    assert multi
    for t, (info, _) in results.items():
        if t in multi:
            assert not info["is_success"] and "outstanding_wrong" in info["grade"]["failure_codes"], t
        else:
            assert info["is_success"], t


def test_reminding_when_the_rules_say_skip_is_a_reminder_mismatch():
    f, _ = indices(env_of("heldout").agent)
    results = run_all(always_remind)
    skip = {t for t, (_, seen) in results.items() if ever(seen, f["committed"]) and not ever(seen, f["new_reminder_needed"])}
    assert skip, "the heldout split has late reminders under the skip rule"
    for t, (info, _) in results.items():
        assert info["grade"]["failure_codes"] == (["reminder_mismatch"] if t in skip else []), t


def test_asking_the_wrong_role_misses_the_approval():
    f, _ = indices(env_of("heldout").agent)
    results = run_all(ask_every_role)
    wrong = {t for t, (_, seen) in results.items() if ever(seen, f["approval_needed"]) and not ever(seen, f["first_trigger_deferral"])}
    assert wrong
    for t, (info, _) in results.items():
        if t in wrong:
            # the deferral role was asked for nothing and the needed one never: both fail
            assert {"approval_missing", "unneeded_approval"} <= set(info["grade"]["failure_codes"]), t
        else:
            assert info["is_success"], t


def asks_when_not_needed(agent: CatalogAgent) -> Policy:
    """Asks the deferral trigger's role (and waits) before committing a change that needs no approval."""
    right = feature_policy(agent)
    f, a = indices(agent)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        if (obs[f["draft_complete"]] > 0.5 and obs[f["approval_needed"]] < 0.5 and obs[f["committed"]] < 0.5):
            if obs[f["approval_requested"]] < 0.5 and mask[a["request_approval[deferral]"]]:
                return a["request_approval[deferral]"]
            if obs[f["approval_pending"]] > 0.5 and mask[a["wait"]]:
                return a["wait"]
        return right(obs, mask)

    return act


def test_an_unneeded_approval_request_fails_as_a_gate():
    f, _ = indices(env_of("heldout").agent)
    results = run_all(asks_when_not_needed)
    unneeded = {t for t, (_, seen) in results.items() if ever(seen, f["plan_facts_read"]) and not ever(seen, f["approval_needed"])}
    assert len(unneeded) >= 20
    for t, (info, _) in results.items():
        if t in unneeded:
            assert info["grade"]["failure_codes"] == ["unneeded_approval"], t
            assert info["grade"]["score"] <= 0.25
        else:
            assert info["is_success"], t


def test_stop_after_commit_leaves_the_prior_version_active():
    results = run_all(stop_after_commit)
    for t, (info, _) in results.items():
        assert not info["is_success"]
        assert "prior_not_superseded" in info["grade"]["failure_codes"], t
        assert "approval_missing" not in info["grade"]["failure_codes"]


def test_skipping_the_reminder_read_leaves_old_reminders_scheduled():
    results = run_all(skip_reminder_read)
    codes = {t: info["grade"]["failure_codes"] for t, (info, _) in results.items()}
    assert any(codes.values())
    # the old reminders stay scheduled on cancelled instalments: a mismatch and a stale reminder
    assert all(c in ([], ["reminder_mismatch", "reminder_on_cancelled"]) for c in codes.values()), codes


def test_mask_leaves_the_judgements_to_the_agent():
    """Legality only: along the right episodes, every well-formed decision/write is valid whatever
    the features say is right: commit_draft (partial draft, approval outstanding), every
    request_approval[t] (also when no trigger applies), create_draft again, cancel_prior_due
    before the commit, cancel_old_reminder, create_reminder (also when the rules say skip),
    update_mandate (whenever the request names a collection day), supersede_prior after commit."""
    env = env_of("heldout")
    f, a = indices(env.agent)
    spec = env.agent.spec
    desk = spec.desk  # type: ignore[attr-defined]
    policy = feature_policy(env.agent)
    seen_points = {"commit_partial": 0, "commit_unapproved": 0, "approval_unneeded": 0, "remind_skip": 0, "mandate": 0}
    for t in heldout_ids():
        obs, _ = env.reset(options={"task_id": t})
        while True:
            mask = env.action_masks()
            allowed = desk.allowed
            if obs[f["plan_facts_read"]] > 0.5 and obs[f["taken[list_reminders]"]] > 0.5:
                # after the reads: the draft can always be (re)created
                assert mask[a["create_draft"]]
                if obs[f["committed"]] < 0.5 and obs[f["prior_due_cancelled"]] < 0.5:
                    assert mask[a["cancel_prior_due"]]
                assert mask[a["cancel_old_reminder"]] == (obs[f["old_reminders_remaining"]] > 0)
                for tr in TRIGGERS:
                    role_asked = desk.approvals.get(desk.rules[f"approval_role_{tr}"]) in ("pending", "granted")
                    assert mask[a[f"request_approval[{tr}]"]] == ("request_approval" in allowed and not role_asked), tr
                if obs[f["approval_needed"]] < 0.5 and "request_approval" in allowed and not desk.approvals:
                    seen_points["approval_unneeded"] += 1
                if desk.request.get("new_collection_day") is not None and obs[f["mandate_updated"]] < 0.5:
                    assert mask[a["update_mandate"]]
                    seen_points["mandate"] += 1
            if obs[f["draft_open"]] > 0.5 and obs[f["draft_rows"]] > 0 and obs[f["commit_refused"]] < 0.5:
                assert mask[a["commit_draft"]]
                seen_points["commit_partial"] += obs[f["draft_complete"]] < 0.5
                seen_points["commit_unapproved"] += obs[f["approval_outstanding"]] > 0.5
            if obs[f["committed"]] > 0.5:
                assert mask[a["supersede_prior"]] == (obs[f["prior_superseded"]] < 0.5)
                assert mask[a["create_reminder"]] == (obs[f["new_reminder_created"]] < 0.5)
                seen_points["remind_skip"] += obs[f["new_reminder_needed"]] < 0.5
            assert not spec.mask()[env.agent.finish] and mask[env.agent.finish]
            obs, _, term, trunc, _ = env.step(policy(obs, mask))
            if term or trunc:
                break
    assert all(seen_points.values()), seen_points
    assert not hasattr(type(env.agent.spec), "finish_gated")


def test_catalog_and_features_are_fixed_and_in_range():
    env = env_of("train")
    ids = env.unwrapped.release.split_ids["train"][:8]
    shapes = set()
    for t in ids:
        obs, info = env.reset(options={"task_id": t})
        shapes.add((env.action_space.n, obs.shape, env.agent.n_features, len(info["action_mask"])))
        assert obs.dtype == np.float32 and np.all(np.abs(obs) <= 1.0)
    assert shapes == {(len(CONCLUSIONS.actions), (env.agent.n_features,), env.agent.n_features, len(CONCLUSIONS.actions))}
    assert len(CONCLUSIONS.actions) <= 40 and len(CONCLUSIONS.features) <= 80
    names = [d.name for d in env.agent.feature_defs]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("task_index", [0, 1, 2])
def test_every_action_after_reset_is_answered_structurally(task_index):
    env = env_of("train")
    tid = env.unwrapped.release.split_ids["train"][task_index]
    env.reset(options={"task_id": tid})
    on = set(np.flatnonzero(env.action_masks()).tolist())
    _, a = indices(env.agent)
    assert on - {env.agent.finish} == {a[n] for n in ("get_request", "get_policy", "get_rules", "list_instalments", "list_reminders")}
    for action in range(env.action_space.n):
        env.reset(options={"task_id": tid})
        _, _, _, _, info = env.step(action)
        assert info["result_status"] in ("ok", "error")
        if info["result_status"] == "error":
            assert isinstance(info["error_code"], str)
            # a grounded read offered at reset is accepted
            assert action not in on or action == env.agent.finish, (action, info["error_code"])


def test_to_call_never_raises_and_matches_the_action_tool():
    env = env_of("heldout")
    policy = feature_policy(env.agent)
    spec = env.agent.spec
    for t in heldout_ids()[:20]:
        obs, _ = env.reset(options={"task_id": t})
        while True:
            for i, a in enumerate(spec.actions):
                call = spec.to_call(i)
                assert call is None or call["tool"] == a.tool
            obs, _, term, trunc, _ = env.step(policy(obs, env.action_masks()))
            if term or trunc:
                break


def test_valid_actions_are_never_rejected_along_random_episodes():
    """(c) holds: a random walk over valid actions meets no precondition/conflict error."""
    env = env_of("train")
    rng = np.random.default_rng(1)
    for tid in env.unwrapped.release.split_ids["train"][:25]:
        env.reset(options={"task_id": tid})
        while True:
            m = env.action_masks().copy()
            if m.sum() > 1:
                m[env.agent.finish] = False
            _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(m))))
            if info["result_status"] == "error":
                assert info["error_code"] == "approval_required", (tid, info["error_code"])
            if term or trunc:
                break


def test_observations_are_deterministic():
    env = env_of("heldout")
    policy = feature_policy(env.agent)
    t = heldout_ids()[3]
    _, first = run(env, policy, t)
    _, second = run(env, policy, t)
    assert len(first) == len(second) and all(np.array_equal(x, y) for x, y in zip(first, second))
