"""Sufficiency catalog tiers ``facts`` and ``raw`` (issue 14): each spec is well formed and of a
size an MLP can take, carries none of the conclusions tier's assessment or "due" features, its
hand-written feature policy passes every heldout task through the common evaluation path
(``catalog-features@<tier>``), the mask alone (``catalog-mask-only@<tier>``, ``catalog-random@<tier>``)
stays far below, the choices of record and items stay valid (legality-only mask) and are the
agent's, observations carry no answer key, and random masked play never raises and keeps every
feature in [-1, 1]."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from test_catalog import _OtherKeys

from backoffice.envs import make_native
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import CatalogEnv, catalog_agent, check_spec, make_catalog_env, spec_class, tier_specs
from backoffice.training.catalog.sufficiency import SufficiencyCatalog
from backoffice.training.catalog.sufficiency_tiers import N_HELD, SUBSETS, SufficiencyFacts, SufficiencyRaw
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode
from conftest import play_catalog

DOMAIN = "sufficiency"
TIERS = {"facts": SufficiencyFacts, "raw": SufficiencyRaw}
each_tier = pytest.mark.parametrize("tier", list(TIERS))

#: the conclusions tier's features that carry the clerk's assessment of the case (which items are
#: satisfied, satisfiable from a held record or missing, whether the case is sufficient, which
#: conditions the uncovered items fail) or say that the reads are done: none of them may appear
#: in ``facts`` or ``raw``
CONCLUSION_FEATURES = frozenset({
    "assessed", "any_missing", "n_missing", "any_satisfiable", "n_satisfiable", "n_satisfied", "sufficient",
    "fail_presence", "fail_age", "fail_signature", "fail_name_match", "fail_legibility",
})
#: the conclusions tier's routing comparison and ratio: ``facts`` keeps the comparison under its
#: own name (``case.amount_ge_senior_threshold``, a plain comparison of two observed values),
#: ``raw`` has neither (the amount and the threshold are values)
ROUTING_FEATURES = frozenset({"amount_vs_threshold", "amount_ratio"})
#: words that name an assessment or a due item; no feature of the tiers' own may contain one
CONCLUSION_WORDS = ("missing", "satisf", "sufficient", "assess", "fail", "due", "need", "complete", "valid",
                    "cover", "gap", "pending", "expected")
#: raw: no comparison of two observed values (only values, one-hots and same-entity facts)
COMPARISON_WORDS = ("equal", "within", "_ge_", "by_review_date", "vs", "ratio", "older", "expired")

#: the conclusions tier's catalog hash: adding the tiers must not change it
CONCLUSIONS_HASH = "d1c0b5b7b42c2b760b8a5c829e946161"

READS = ("get_case", "get_requirements", "search_held_records", "list_documents")


@cache
def heldout_ids() -> tuple[str, ...]:
    return tuple(make_native(DOMAIN, split="heldout").unwrapped.release.split_ids["heldout"])


@cache
def catalog_env(tier: str) -> CatalogEnv:
    return make_catalog_env(DOMAIN, split="heldout", tier=tier)


def action(tier: str, name: str) -> int:
    return next(i for i, a in enumerate(TIERS[tier].actions) if a.name == name)


def pass_rate(tier: str, policy: str, ids: tuple[str, ...]) -> float:
    env = make_native(DOMAIN, split="heldout")
    pol = get_policy(DOMAIN, f"{policy}@{tier}")
    return sum(bool(run_episode(env, pol, tid).info["grade"]["pass"]) for tid in ids) / len(ids)


def read_everything(env: CatalogEnv, tier: str, tid: str) -> None:
    """Reset to ``tid`` and read the case, the requirements and every page of the held records
    and the documents."""
    env.reset(options={"task_id": tid})
    for name in READS:
        env.step(action(tier, name))
        while env.action_masks()[action(tier, name)] and name in ("search_held_records", "list_documents"):
            env.step(action(tier, name))


# -- the spec ---------------------------------------------------------------------------------------
@each_tier
def test_spec_is_well_formed_and_named_by_the_catalog(tier: str) -> None:
    cls = TIERS[tier]
    check_spec(cls)
    assert cls.tier == tier and cls.domain == DOMAIN
    assert spec_class(DOMAIN, tier_specs(DOMAIN)[tier]) is cls
    assert tier_specs(DOMAIN)["conclusions"].endswith(":SufficiencyCatalog")
    agent = catalog_agent(DOMAIN, tier=tier)
    assert agent.n_actions <= 64 and agent.n_features <= 300
    assert agent.n_features == 2 + agent.n_actions + len(cls.features)
    assert all(f["doc"] for f in agent.describe()["features"]) and all(a["doc"] for a in agent.describe()["actions"])
    # the feature policy is a staticmethod on the class (what catalog-features@<tier> finds first)
    assert isinstance(cls.__dict__["feature_policy"], staticmethod)


@each_tier
def test_gymnasium_env_check(tier: str) -> None:
    """Gymnasium's checker (SB3's needs torch: its import alone would double this file's time)."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(make_catalog_env(DOMAIN, tier=tier), skip_render_check=True)


@each_tier
def test_conclusions_tier_is_unchanged(tier: str) -> None:
    from backoffice.training.sb3_policy import catalog_signature

    signature = catalog_signature(DOMAIN)
    assert signature["tier"] == "conclusions" and signature["catalog_hash"] == CONCLUSIONS_HASH
    assert catalog_signature(DOMAIN, tier_specs(DOMAIN)[tier])["tier"] == tier


@each_tier
def test_no_conclusion_or_due_features(tier: str) -> None:
    agent = catalog_agent(DOMAIN, tier=tier)
    names = {f.name for f in agent.feature_defs}
    assert not names & (CONCLUSION_FEATURES | ROUTING_FEATURES)
    own = [f.name for f in TIERS[tier].features]
    assert not [n for n in own if any(w in n for w in CONCLUSION_WORDS)]
    # the conclusions tier does have them (the lists above are not stale)
    assert CONCLUSION_FEATURES | ROUTING_FEATURES <= {f.name for f in SufficiencyCatalog.features}
    # and no action decides for the agent which record to attach or which items to request
    assert not {a.name for a in TIERS[tier].actions} & {"attach_held_record", "request_missing"}


def test_raw_has_no_comparison_of_values() -> None:
    """raw: values, one-hot categories and same-entity flags only; no comparison of two observed
    values (names, dates against the review date or the age limit, the amount against the threshold)."""
    own = [f.name for f in SufficiencyRaw.features]
    assert not [n for n in own if any(w in n for w in COMPARISON_WORDS)]


# -- the tier suffices, the mask alone does not --------------------------------------------------------
@each_tier
def test_feature_policy_passes_every_heldout_task(tier: str) -> None:
    """Through the common evaluation path: ``catalog-features@<tier>`` on the native env."""
    assert pass_rate(tier, "catalog-features", heldout_ids()) == 1.0


@each_tier
def test_feature_policy_picks_valid_actions(tier: str) -> None:
    env = catalog_env(tier)
    policy = TIERS[tier].feature_policy(env.agent)
    for tid in heldout_ids()[::8]:
        info, _ = play_catalog(env, policy, tid)  # asserts every chosen action is valid
        assert info["is_success"], tid


@each_tier
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_alone_stays_far_below(tier: str, baseline: str) -> None:
    """On every other heldout task (120: every defect tag, the file's time budget)."""
    assert pass_rate(tier, baseline, heldout_ids()[::2]) <= 0.10


# -- legality only; the choices are the agent's ----------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_point(tier: str) -> None:
    """Once everything is read, every judgement is valid, whatever the right one: attach any held
    record not on the case, request any subset of the required items, release, route either way."""
    env = catalog_env(tier)
    names = [a.name for a in TIERS[tier].actions]
    for tid in heldout_ids()[:40]:
        read_everything(env, tier, tid)
        spec = env.agent.spec
        valid = {names[a] for a in np.flatnonzero(env.action_masks())}
        expected = {"release_case", "route_standard", "route_senior", "submit",
                    *(f"request_items[{','.join(map(str, s))}]" for s in SUBSETS),
                    *(f"attach_held_record[{h}]" for h, r in enumerate(spec.held[:N_HELD]) if r["id"] not in spec.attached)}
        assert expected <= valid, (tid, expected - valid)


@each_tier
def test_actions_ground_the_agents_choice(tier: str) -> None:
    """``request_items[S]`` asks for exactly the items of slots ``S``, ``attach_held_record[h]``
    attaches the h-th record listed; requesting every item where some are covered fails the grade
    (over_request or ignored_held_record): the choice matters and the catalog does not make it."""
    env = catalog_env(tier)
    everything = action(tier, "request_items[0,1,2,3]")
    wrong = 0
    for tid in heldout_ids()[:24]:
        read_everything(env, tier, tid)
        spec = env.agent.spec
        call = env.agent.native_action(everything)
        assert call["args"]["items"] == [r["item_type"] for r in spec.requirements]
        for h, record in enumerate(spec.held[:N_HELD]):
            assert env.agent.native_action(action(tier, f"attach_held_record[{h}]"))["args"]["record_id"] == record["id"]
        env.step(everything)
        *_, info = env.step(env.agent.finish)
        wrong += bool({"over_request", "ignored_held_record"} & set(info["grade"]["failure_codes"]))
    assert wrong >= 12


@each_tier
def test_observations_carry_no_answer_key(tier: str) -> None:
    """The same actions on two tasks that differ only in their answer key: identical features,
    masks and native traces."""
    env_a = make_catalog_env(DOMAIN, split="heldout", tier=tier)
    env_b = make_catalog_env(DOMAIN, split="heldout", tier=tier)
    env_b.unwrapped.release = _OtherKeys(env_a.unwrapped.release)
    policy = TIERS[tier].feature_policy(env_a.agent)
    rng = np.random.default_rng(1)
    grades_differ = 0
    for i, tid in enumerate(heldout_ids()[:16]):
        obs_a, info_a = env_a.reset(seed=i, options={"task_id": tid})
        obs_b, info_b = env_b.reset(seed=i, options={"task_id": tid})
        while True:
            assert np.array_equal(obs_a, obs_b) and np.array_equal(info_a["action_mask"], info_b["action_mask"])
            mask = env_a.action_masks()
            a = policy(obs_a, mask) if i % 2 == 0 else int(rng.choice(np.flatnonzero(mask)))
            obs_a, _, term, trunc, info_a = env_a.step(a)
            obs_b, *_, info_b = env_b.step(a)
            if term or trunc:
                break
        strip = lambda trace: [{k: v for k, v in r.items() if k != "grade"} for r in trace]  # noqa: E731
        assert strip(env_a.unwrapped.trace) == strip(env_b.unwrapped.trace)
        grades_differ += info_a["grade"] != info_b["grade"]
    assert grades_differ, "the perturbed keys never changed a grade: the test would prove nothing"


# -- robustness --------------------------------------------------------------------------------------
@each_tier
def test_random_masked_actions_never_raise(tier: str) -> None:
    """Random valid actions (submit only when nothing else is valid) ground to calls the native
    env accepts or rejects with a structured error; features stay in [-1, 1]; the policy-side
    agent computes the wrapper's features and masks for the same history."""
    env = make_catalog_env(DOMAIN, split="heldout", tier=tier)
    native = make_native(DOMAIN, split="heldout", max_steps=TIERS[tier].max_steps)
    agent = catalog_agent(DOMAIN, tier=tier)
    rng = np.random.default_rng(0)
    for tid in heldout_ids()[::6]:
        obs, info = env.reset(options={"task_id": tid})
        nobs, ninfo = native.reset(options={"task_id": tid})
        agent.reset(nobs, ninfo)
        while True:
            assert np.all(np.abs(obs) <= 1.0) and np.array_equal(obs, agent.observation())
            mask = env.action_masks()
            assert np.array_equal(mask, agent.mask()) and mask[env.agent.finish]
            choices = np.flatnonzero(mask)
            if len(choices) > 1:
                choices = choices[choices != env.agent.finish]
            a = int(choices[rng.integers(len(choices))])
            call = agent.native_action(a)
            assert isinstance(call, dict) and call["tool"] == TIERS[tier].actions[a].tool
            nobs, _, nterm, ntrunc, _ = native.step(call)
            result = loads(nobs)
            assert result["status"] == "ok" or isinstance(result.get("code"), str), result
            agent.update(nobs)
            obs, _, term, trunc, info = env.step(a)
            assert (term, trunc) == (nterm, ntrunc)
            if term or trunc:
                break
    # out-of-range and empty-slot actions are errors, not exceptions
    env.reset(options={"task_id": heldout_ids()[0]})
    for bad in (env.action_space.n, -1, action(tier, f"attach_held_record[{N_HELD - 1}]"), action(tier, "request_items[0]")):
        obs, _, _, _, info = env.step(bad)
        assert info["result_status"] == "error" and np.all(np.abs(obs) <= 1.0)
