"""Schedules catalog tiers ``facts`` and ``raw`` (issue 14): each is registered and well formed,
carries none of the conclusions tier's conclusion features, and its hand-written feature policy
(features and mask only) passes every heldout task, while the mask-only and random catalog
policies stay far below; random masked (and unmasked) actions never crash and keep the features
in [-1, 1]; the conclusions catalog is unchanged."""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

import numpy as np
import pytest

from backoffice.envs import make_native
from backoffice.training.catalog import make_catalog_env, resolve_spec, spec_class, tier_specs
from backoffice.training.catalog.base import check_spec
from backoffice.training.catalog.schedules import SchedulesCatalog
from backoffice.training.catalog.schedules_tiers import SchedulesFactsCatalog, SchedulesRawCatalog
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode

D = "schedules"
TIERS = {"facts": SchedulesFactsCatalog, "raw": SchedulesRawCatalog}

#: the conclusions tier's features that carry the procedure's conclusions (the computed plan, the
#: approval trigger that applies first, what is needed, due or complete): no other tier has them
CONCLUSION_FEATURES = frozenset({
    "plan_facts_read", "plan_count", "rows_remaining", "draft_complete",
    "approval_needed", "first_trigger_deferral", "first_trigger_instalment_count", "first_trigger_short_notice",
    "applies_deferral", "applies_instalment_count", "applies_short_notice",
    "needed_approval_requested", "needed_approval_granted", "approval_outstanding",
    "new_reminder_late", "new_reminder_needed", "mandate_change_needed", "work_complete",
    "notice_days", "uneven_split", "month_end_hit", "outstanding",
})
#: the conclusions catalog as shipped (its hash must not move when tiers are added)
CONCLUSIONS_HASH = "45e70bb6af80f08ecd286b301e4f0feb"


@cache
def env_of(tier: str, split: str) -> Any:
    return make_catalog_env(D, split=split, tier=tier)


def split_ids(split: str) -> tuple[str, ...]:
    return tuple(env_of("facts", split).unwrapped.release.split_ids[split])


@cache
def heldout_run(tier: str) -> dict[str, tuple[bool, list[str], int]]:
    """The tier's feature policy on every heldout task: task -> (pass, failure codes, steps)."""
    env = env_of(tier, "heldout")
    policy = TIERS[tier].feature_policy(env.agent)
    out = {}
    for tid in split_ids("heldout"):
        obs, _ = env.reset(options={"task_id": tid})
        steps = 0
        while True:
            mask = env.action_masks()
            action = policy(obs, mask)
            assert mask[action], (tier, tid, env.agent.spec.actions[action].name)
            obs, _, term, trunc, info = env.step(action)
            steps += 1
            if term or trunc:
                break
        out[tid] = (bool(info["is_success"]), list(info["grade"]["failure_codes"]), steps)
    return out


@pytest.mark.parametrize("tier", TIERS)
def test_tier_is_registered_and_well_formed(tier: str) -> None:
    cls = TIERS[tier]
    assert tier_specs(D)[tier] == f"backoffice.training.catalog.schedules_tiers:{cls.__name__}"
    assert tier_specs(D)["conclusions"] == "backoffice.training.catalog.schedules:SchedulesCatalog"
    assert spec_class(D, resolve_spec(D, tier=tier)) is cls
    check_spec(cls)
    assert cls.tier == tier and cls.domain == D
    assert isinstance(inspect.getattr_static(cls, "feature_policy"), staticmethod)
    env = env_of(tier, "train")
    obs, info = env.reset(options={"task_id": split_ids("train")[0]})
    assert env.action_space.n == len(cls.actions) <= 70
    assert obs.shape == (env.agent.n_features,) and env.agent.n_features <= 300
    assert all(a.doc for a in cls.actions) and all(f.doc for f in cls.features)
    assert info["action_mask"][env.agent.finish] == 1


def test_conclusions_catalog_is_unchanged() -> None:
    from backoffice.training.sb3_policy import catalog_signature

    assert catalog_signature(D)["catalog_hash"] == CONCLUSIONS_HASH
    assert SchedulesCatalog.tier == "conclusions"


@pytest.mark.parametrize("tier", TIERS)
def test_no_conclusion_features(tier: str) -> None:
    names = {f.name for f in TIERS[tier].features}
    conclusions = {f.name for f in SchedulesCatalog.features}
    assert CONCLUSION_FEATURES <= conclusions, "the list names conclusions-tier features"
    assert not names & CONCLUSION_FEATURES
    for word in ("needed", "complete", "remaining", "plan_", "applies", "first_trigger", "outstanding"):
        assert not [n for n in names if word in n], word


@pytest.mark.parametrize("tier", TIERS)
def test_feature_policy_passes_every_heldout_task(tier: str) -> None:
    results = heldout_run(tier)
    failed = {t: codes for t, (ok, codes, _) in results.items() if not ok}
    assert len(results) == len(split_ids("heldout")) and not failed
    assert max(steps for _, _, steps in results.values()) <= TIERS[tier].max_steps


@pytest.mark.parametrize("tier", TIERS)
def test_feature_policy_through_the_policy_registry(tier: str) -> None:
    """``catalog-features@<tier>`` drives the native env through the common evaluation path."""
    env = make_native(D, split="heldout")
    policy = get_policy(D, f"catalog-features@{tier}")
    assert policy.name == f"catalog-features@{tier}" and type(policy.agent.spec) is TIERS[tier]
    for tid in split_ids("heldout")[:4]:
        assert run_episode(env, policy, task_id=tid).grade["pass"], tid


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_only_and_random_stay_far_below(tier: str, baseline: str) -> None:
    """The mask alone solves almost nothing: the judgement is the agent's."""
    env = make_native(D, split="heldout", max_steps=TIERS[tier].max_steps)
    policy = get_policy(D, f"{baseline}@{tier}", seed=3)
    ids = split_ids("heldout")[::42]
    passed = sum(bool(run_episode(env, policy, task_id=tid).grade["pass"]) for tid in ids)
    assert len(ids) == 10 and passed <= 1


@pytest.mark.parametrize("tier", TIERS)
def test_random_actions_never_crash_and_features_stay_in_range(tier: str) -> None:
    """Fuzz: mostly valid random actions, some masked ones; every step is one native call, the
    observation stays finite in [-1, 1] with the finishing action valid, and a valid action is
    refused only by the commit's checks (approval, due dates, minimum)."""
    env = env_of(tier, "train")
    rng = np.random.default_rng(7)
    finish = env.agent.finish
    refused = set()
    for tid in split_ids("train")[:12]:
        obs, _ = env.reset(options={"task_id": tid})
        steps = 0
        while True:
            mask = env.action_masks()
            assert mask.dtype == bool and mask[finish]
            assert np.all(np.isfinite(obs)) and np.all(np.abs(obs) <= 1.0)
            valid = np.flatnonzero(mask)
            others = valid[valid != finish]
            if rng.random() < 0.15:
                action = int(rng.integers(env.action_space.n))
            else:
                action = int(rng.choice(others if len(others) and rng.random() < 0.97 else valid))
            obs, _, term, trunc, info = env.step(action)
            steps += 1
            assert len(env.unwrapped.trace) == steps
            if mask[action] and info["result_status"] == "error":
                refused.add((env.agent.spec.actions[action].tool, info["error_code"]))
            if term or trunc:
                assert np.all(np.abs(obs) <= 1.0)
                break
    assert {tool for tool, _ in refused} <= {"commit_schedule"}, refused
