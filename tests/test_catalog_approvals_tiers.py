"""The ``facts`` and ``raw`` tiers of the approvals catalog (issue 14): each tier's feature
policy passes every heldout task through the common policy path, no feature of theirs is a
conclusion or "due" flag of the ``conclusions`` tier, the decisions are the agent's (the mask
keeps every well-formed decision and citation valid, the actions cite the slot they name),
mask-only and random policies stay far below, observations carry no answer key, and random
actions (masked or not) never crash and keep the features in [-1, 1]."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from backoffice.envs import make_native
from backoffice.training.catalog import TIERS, catalog_agent, check_spec, make_catalog_env, spec_class, tier_specs
from backoffice.training.catalog.approvals import FEATURES as CONCLUSION_TIER_FEATURES
from backoffice.training.catalog.approvals_tiers import N_ROWS, ApprovalsFactsCatalog, ApprovalsRawCatalog
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode

TIER_CLASSES = {"facts": ApprovalsFactsCatalog, "raw": ApprovalsRawCatalog}
pytestmark = pytest.mark.parametrize("tier", sorted(TIER_CLASSES))

#: the conclusions tier's conclusions and "due" flags: what the procedure establishes from the
#: facts (the named approver resolved, a breach, the authority found, the outcome), never a fact
CONCLUSIONS = frozenset({
    "approver_resolved", "approver_not_found",
    "over_hard_limit", "amount_over_hard_limit_ratio", "missing_required_field", "n_missing_fields",
    "line_breach", "sod_breach", "sod_checked", "sod_clear",
    "assignment_candidate_now", "blocking_fact_found",
    "n_candidate_roles", "candidates_checked", "candidates_unchecked", "all_candidates_checked",
    "holds_candidate_role", "delegation_candidate_role", "delegation_capped_below", "delegation_unconfirmed",
    "delegation_usable", "authority_found", "authority_search_complete", "no_usable_authority",
    "procedure_reject", "procedure_hold", "procedure_escalate", "procedure_proceed", "procedure_open",
    "downstream_due",
})
#: words no fact of these tiers carries in its name
CONCLUSION_WORDS = ("procedure", "due", "needed", "complete", "authority", "usable", "candidate", "breach", "blocking",
                    "resolved", "sod_clear", "sod_checked")


@pytest.fixture(scope="module")
def heldout_ids() -> list[str]:
    return make_native("approvals", split="heldout").unwrapped.release.split_ids["heldout"]


def test_registered_and_checked(tier: str) -> None:
    from gymnasium.utils.env_checker import check_env

    assert set(TIERS) <= set(tier_specs("approvals"))
    cls = spec_class("approvals", tier_specs("approvals")[tier])
    assert cls is TIER_CLASSES[tier] and cls.tier == tier and cls.domain == "approvals"
    check_spec(cls)
    assert isinstance(cls.__dict__["feature_policy"], staticmethod)
    agent = catalog_agent("approvals", tier=tier)
    assert agent.n_actions <= 64 and agent.n_features <= 300
    assert all(f["doc"] for f in agent.describe()["features"]) and all(a["doc"] for a in agent.describe()["actions"])
    env = make_catalog_env("approvals", tier=tier)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(env, skip_render_check=True)
    assert env.action_space.n == agent.n_actions and env.observation_space.shape == (agent.n_features,)


def test_no_conclusion_or_due_features(tier: str) -> None:
    assert CONCLUSIONS <= {f.name for f in CONCLUSION_TIER_FEATURES}
    names = [f.name for f in TIER_CLASSES[tier].features]
    assert not set(names) & CONCLUSIONS
    assert not [n for n in names if any(w in n for w in CONCLUSION_WORDS)]
    # the conclusions tier's judging actions are gone: every decision and escalation names its citation
    for a in TIER_CLASSES[tier].actions:
        if a.tool in ("record_decision", "escalate"):
            assert a.name.endswith("]") or a.name.startswith("escalate_cite_"), a.name


def test_feature_policy_passes_every_heldout_task(tier: str, heldout_ids: list[str]) -> None:
    """Through the common policy path (``catalog-features@<tier>`` on the native env)."""
    env = make_native("approvals", split="heldout")
    policy = get_policy("approvals", f"catalog-features@{tier}")
    assert policy.name == f"catalog-features@{tier}" and type(policy.agent.spec) is TIER_CLASSES[tier]
    failed = {}
    for tid in heldout_ids:
        grade = run_episode(env, policy, tid).grade
        if not grade["pass"]:
            failed[tid] = grade["failure_codes"]
    assert not failed


def test_decisions_are_the_agents(tier: str, heldout_ids: list[str]) -> None:
    """Along the feature policy's episodes: every action it takes is valid; at its decision
    point every outcome citing every row slot, and every groundable escalation, is valid too,
    and each cites what it names (the band holding the amount, then row slot s); the namesake's
    file can be opened as well as the approver's."""
    env = make_catalog_env("approvals", split="heldout", tier=tier)
    spec = env.agent.spec
    policy = TIER_CLASSES[tier].feature_policy(env.agent)
    act = {a.name: i for i, a in enumerate(spec.actions)}
    decisions = [n for n in act if n.startswith(("decide_", "escalate_cite"))]
    seen_outcomes: set[str] = set()
    namesakes = 0
    for tid in heldout_ids[:120]:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            mask = env.action_masks()
            a = policy(obs, mask)
            assert mask[a], (tid, spec.actions[a].name)
            name = spec.actions[a].name
            if name.startswith("get_person"):
                namesakes += sum(mask[act[f"get_person[{p}]"]] for p in range(3)) > 1
            if name in decisions:
                seen_outcomes.add(name.split("[")[0])
                rows = spec._rows()
                band = spec._band()
                f = spec._file()
                assert len(f["assignments"]) + len(f["received"] or []) <= N_ROWS, tid  # every row has a slot
                for n in decisions:
                    call = spec.to_call(act[n])
                    assert bool(mask[act[n]]) == (call is not None), (tid, n)
                    if n.startswith("decide_"):
                        s = int(n[n.index("[") + 1:-1])
                        assert mask[act[n]] == (s < len(rows)), (tid, n)
                        if s < len(rows):
                            assert call["args"]["basis_ids"] == [band["id"], rows[s][1]["id"]]
                            assert call["args"]["approver_id"] == spec.on_file
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
        assert info["is_success"], tid
    assert {"decide_reject", "decide_hold", "decide_proceed", "escalate_cite", "escalate_cite_request",
            "escalate_cite_requester"} <= seen_outcomes
    assert namesakes > 0


def _sweep(env, make, ids: list[str]) -> tuple[int, set[str]]:
    policy = make(env.agent)
    passed, codes = 0, set()
    for tid in ids:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            obs, _, term, trunc, info = env.step(policy(obs, env.action_masks()))
            if term or trunc:
                break
        passed += bool(info["is_success"])
        codes.update(info["grade"]["failure_codes"])
    return passed, codes


def test_the_choices_left_to_the_agent_matter(tier: str, heldout_ids: list[str]) -> None:
    """The catalog does not pick for the agent: opening the first namesake's file, or citing
    the first row instead of the authorising one, fails tasks the feature policy passes."""
    env = make_catalog_env("approvals", split="heldout", tier=tier)
    act = {a.name: i for i, a in enumerate(env.agent.spec.actions)}
    ids = heldout_ids[:80]

    def first_person(agent):
        good = TIER_CLASSES[tier].feature_policy(agent)
        dept = [i for i, f in enumerate(agent.feature_defs) if f.name.endswith(".department_equal")]

        def policy(obs, mask):  # takes the first person called so for the approver, whatever the department
            seen = obs.copy()
            seen[dept] = 0.0
            seen[dept[0]] = 1.0
            return good(seen, mask)

        return policy

    def first_row(agent):
        good = TIER_CLASSES[tier].feature_policy(agent)

        def policy(obs, mask):
            name = agent.spec.actions[good(obs, mask)].name
            return act[name.split("[")[0] + "[0]"] if name.startswith(("decide_", "escalate_cite[")) else act[name]

        return policy

    passed, codes = _sweep(env, first_person, ids)
    assert passed < len(ids) and "invalid_approver" in codes
    passed, codes = _sweep(env, first_row, ids)
    assert passed < len(ids) and "basis_missing_or_wrong" in codes


@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_only_and_random_stay_far_below(tier: str, baseline: str, heldout_ids: list[str]) -> None:
    env = make_native("approvals", split="heldout")
    policy = get_policy("approvals", f"{baseline}@{tier}", seed=0)
    ids = heldout_ids[:120]
    passed = sum(bool(run_episode(env, policy, tid).grade["pass"]) for tid in ids)
    assert passed <= 0.10 * len(ids), passed


def test_random_actions_never_crash(tier: str) -> None:
    """Uniform over the valid actions, and over every action (masked ones become structured
    errors): no exception, features in [-1, 1], the mask's submit always on."""
    env = make_catalog_env("approvals", split="train", tier=tier)
    rng = np.random.default_rng(7)
    finish = env.agent.finish
    for episode in range(40):
        obs, info = env.reset(seed=episode)
        anything = episode % 4 == 3
        while True:
            assert obs.dtype == np.float32 and np.all(np.abs(obs) <= 1.0) and env.observation_space.contains(obs)
            mask = env.action_masks()
            assert mask[finish]
            action = int(rng.integers(env.action_space.n)) if anything else int(rng.choice(np.flatnonzero(mask)))
            empty = env.agent.spec.to_call(action) is None
            assert not (empty and mask[action])  # a valid action always grounds
            obs, _, term, trunc, info = env.step(action)
            if empty:  # an empty slot is a structured error, charged a step
                assert info["result_status"] == "error" and info["error_code"] == "invalid_args"
            if term or trunc:
                assert "grade" in info
                break


def test_observations_carry_no_answer_key(tier: str, heldout_ids: list[str]) -> None:
    """Two tasks that differ only in their answer key give identical observations, masks and
    traces for the same actions (half the episodes follow the feature policy, half explore),
    while the key changes some grades."""
    from test_catalog import _OtherKeys

    env_a = make_catalog_env("approvals", split="heldout", tier=tier)
    env_b = make_catalog_env("approvals", split="heldout", tier=tier)
    env_b.unwrapped.release = _OtherKeys(env_a.unwrapped.release)
    policy = TIER_CLASSES[tier].feature_policy(env_a.agent)
    rng = np.random.default_rng(1)
    differ = 0
    for i, tid in enumerate(heldout_ids[:16]):
        obs_a, info_a = env_a.reset(seed=i, options={"task_id": tid})
        obs_b, info_b = env_b.reset(seed=i, options={"task_id": tid})
        while True:
            assert np.array_equal(obs_a, obs_b) and np.array_equal(info_a["action_mask"], info_b["action_mask"])
            mask = env_a.action_masks()
            action = policy(obs_a, mask) if i % 2 == 0 else int(rng.choice(np.flatnonzero(mask)))
            obs_a, _, term_a, trunc_a, info_a = env_a.step(action)
            obs_b, _, term_b, trunc_b, info_b = env_b.step(action)
            assert (term_a, trunc_a) == (term_b, trunc_b)
            if term_a or trunc_a:
                assert np.array_equal(obs_a, obs_b)
                break
        strip = lambda trace: [{k: v for k, v in r.items() if k != "grade"} for r in trace]  # noqa: E731
        assert strip(env_a.unwrapped.trace) == strip(env_b.unwrapped.trace)
        differ += info_a["grade"] != info_b["grade"]
    assert differ > 0
