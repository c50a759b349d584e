"""Registration catalog tiers ``facts`` and ``raw`` (issue 14): each spec is well formed and of a
size an MLP can take, carries none of the conclusions tier's conclusion or "due" features, its
hand-written feature policy passes every heldout task through the common evaluation path
(``catalog-features@<tier>``), the mask alone (``catalog-mask-only@<tier>``, ``catalog-random@<tier>``)
stays far below, judgements stay valid (legality-only mask), observations carry no answer key,
and random masked play never raises and keeps every feature in [-1, 1]."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from test_catalog import _OtherKeys

from backoffice.envs import make_native
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import CatalogEnv, catalog_agent, check_spec, make_catalog_env, spec_class, tier_specs
from backoffice.training.catalog.registration import N_SLOTS, RegistrationCatalog
from backoffice.training.catalog.registration_tiers import RegistrationFacts, RegistrationRaw
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode
from conftest import play_catalog

DOMAIN = "registration"
TIERS = {"facts": RegistrationFacts, "raw": RegistrationRaw}
each_tier = pytest.mark.parametrize("tier", list(TIERS))

#: the conclusions tier's features that carry the procedure's conclusions (the matching rule's
#: verdicts, R-VERIFIED-FIELD, the card's and the roster's acceptance, the minor's age limit) or
#: say that something is due / done: none of them may appear in ``facts`` or ``raw``
CONCLUSION_FEATURES = frozenset({
    "variants_pending", *(f"slot[{i}].match" for i in range(N_SLOTS)), "match_none", "match_one", "match_many",
    "match_deceased", "identifier_conflict", "current_is_match", "minor", "phone_differs", "address_differs",
    "address_update_allowed", "card_ok", "roster_ok", "coverage_missing", "gp_missing", "guardian_missing",
    "guardian_contact_known", "kin_missing", "items_open", "registration_complete",
})
#: words that name a conclusion or a due item; no feature of the tiers' own may contain one
CONCLUSION_WORDS = ("match", "conflict", "due", "need", "missing", "complete", "pending", "allowed", "_ok", "minor", "open_")

#: the conclusions tier's catalog hash: adding the tiers must not change it
CONCLUSIONS_HASH = "ee8a37d113652ba2e1a58e77cc3c2216"


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


# -- the spec ---------------------------------------------------------------------------------------
@each_tier
def test_spec_is_well_formed_and_named_by_the_catalog(tier: str) -> None:
    cls = TIERS[tier]
    check_spec(cls)
    assert cls.tier == tier and cls.domain == DOMAIN
    assert spec_class(DOMAIN, tier_specs(DOMAIN)[tier]) is cls
    assert tier_specs(DOMAIN)["conclusions"].endswith(":RegistrationCatalog")
    agent = catalog_agent(DOMAIN, tier=tier)
    assert agent.n_actions <= 64 and agent.n_features <= 300
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
    assert not names & CONCLUSION_FEATURES
    own = [f.name for f in TIERS[tier].features]
    assert not [n for n in own if any(w in n for w in CONCLUSION_WORDS)]
    # the conclusions tier does have them (the list above is not stale)
    assert CONCLUSION_FEATURES <= {f.name for f in RegistrationCatalog.features}


def test_raw_has_no_comparison_of_values() -> None:
    """raw: values, one-hot categories and same-entity flags only; no "equal"/"agree" comparison
    of two observed values and no check-digit verdict."""
    own = [f.name for f in RegistrationRaw.features]
    assert not [n for n in own if any(w in n for w in ("equal", "agree", "equivalent", "differ", "swapped",
                                                        "identifier_valid", "age_years"))]


# -- the tier suffices, the mask alone does not --------------------------------------------------------
@each_tier
def test_feature_policy_passes_every_heldout_task(tier: str) -> None:
    """Through the common evaluation path: ``catalog-features@<tier>`` on the native env."""
    assert pass_rate(tier, "catalog-features", heldout_ids()) == 1.0


@each_tier
def test_feature_policy_picks_valid_actions(tier: str) -> None:
    env = catalog_env(tier)
    policy = TIERS[tier].feature_policy(env.agent)
    for tid in heldout_ids()[::6]:
        info, _ = play_catalog(env, policy, tid)  # asserts every chosen action is valid
        assert info["is_success"], tid


@each_tier
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_alone_stays_far_below(tier: str, baseline: str) -> None:
    assert pass_rate(tier, baseline, heldout_ids()) <= 0.10


# -- legality only ------------------------------------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_point(tier: str) -> None:
    """Once the form, the variants and the search are read, every decision is valid, whatever
    the right one: open any result, create with or without the identifier, refer for any reason
    (citing whatever was opened)."""
    env = catalog_env(tier)
    names = [a.name for a in TIERS[tier].actions]
    reads = ("get_intake_form", "get_name_variants[given]", "get_name_variants[family]", "search_patients")
    for tid in heldout_ids()[:40]:
        env.reset(options={"task_id": tid})
        for read in reads:
            env.step(action(tier, read))
        spec = env.agent.spec
        valid = {names[a] for a in np.flatnonzero(env.action_masks())}
        expected = {"create_patient[without_identifier]", *(f"refer_to_human[{r}]" for r in
                    ("ambiguous_match", "deceased_match", "identity_conflict")),
                    *(f"get_patient[{i}]" for i in range(len(spec.results)))}
        if spec.form["identifier"]:
            expected.add("create_patient[with_identifier]")
        assert expected <= valid, (tid, expected - valid)


@each_tier
def test_referral_basis_is_the_agents(tier: str) -> None:
    """A referral cites the results the agent opened: referring at once cites nothing and fails
    the basis on every referral task the feature policy refers."""
    env = catalog_env(tier)
    policy = TIERS[tier].feature_policy(env.agent)
    refers = {action(tier, f"refer_to_human[{r}]") for r in ("ambiguous_match", "deceased_match", "identity_conflict")}
    opens = {action(tier, f"get_patient[{i}]") for i in range(N_SLOTS)}
    checked = 0
    for tid in heldout_ids()[:40]:
        obs, _ = env.reset(options={"task_id": tid})
        a = policy(obs, env.action_masks())
        while a not in opens | refers and a != env.agent.finish and not env.agent.spec.created:
            obs, *_ = env.step(a)
            a = policy(obs, env.action_masks())
        while a in opens:  # the feature policy opens the records it will cite, then refers
            obs, *_ = env.step(a)
            a = policy(obs, env.action_masks())
        if a not in refers:
            continue
        env.reset(options={"task_id": tid})
        for read in ("get_intake_form", "get_name_variants[given]", "get_name_variants[family]", "search_patients"):
            env.step(action(tier, read))
        *_, info = env.step(a)
        assert "wrong_referral_basis" in info["grade"]["failure_codes"], tid
        checked += 1
    assert checked > 5


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
    native = make_native(DOMAIN, split="heldout")
    agent = catalog_agent(DOMAIN, tier=tier)
    rng = np.random.default_rng(0)
    for tid in heldout_ids()[:60]:
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
    for bad in (env.action_space.n, -1, action(tier, f"get_patient[{N_SLOTS - 1}]")):
        obs, _, _, _, info = env.step(bad)
        assert info["result_status"] == "error" and np.all(np.abs(obs) <= 1.0)
