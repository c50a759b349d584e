"""Remittance catalog tiers ``facts`` and ``raw`` (issue 14): each spec is well formed and of a
size an MLP can take, carries none of the conclusions tier's conclusion or "due" features, its
hand-written feature policy passes every heldout task through the common evaluation path
(``catalog-features@<tier>``), the mask alone (``catalog-mask-only@<tier>``, ``catalog-random@<tier>``)
stays far below, judgements stay valid (legality-only mask: the claim to open, the amount to
allocate, the case to open, the disposition), observations carry no answer key, and random
masked play never raises, only makes calls the tools accept and keeps every feature in [-1, 1]."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from test_catalog import _OtherKeys

from backoffice.envs import make_native
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import CatalogEnv, catalog_agent, check_spec, make_catalog_env, spec_class, tier_specs
from backoffice.training.catalog.remittance import N_ADJ, RemittanceCatalog
from backoffice.training.catalog.remittance_tiers import N_HITS, N_LINES, RemittanceFacts, RemittanceRaw
from backoffice.training.policies import get_policy
from backoffice.training.rollout import run_episode
from conftest import play_catalog

DOMAIN = "remittance"
TIERS = {"facts": RemittanceFacts, "raw": RemittanceRaw}
each_tier = pytest.mark.parametrize("tier", list(TIERS))

#: the conclusions tier's features that carry the procedure's conclusions (the match rule's and
#: the duplicate rule's verdicts, the projection of a line once applied) or say that something is
#: due / done / left: none of them may appear in ``facts`` or ``raw``
CONCLUSION_FEATURES = frozenset({
    "facts_read", "dup_found", "no_dup", "dup_hold_case_due", "dup_hold_post_due", "dup_return_due",
    "lines_unsearched", "cur_needs_name_search", "cur_matched", "cur_ambiguous", "cur_no_claim", "cur_recoup",
    *(f"adj{j}_pending" for j in range(N_ADJ)), *(f"wo_adj{j}_due" for j in range(N_ADJ)),
    *(f"tr_adj{j}_due" for j in range(N_ADJ)), "cur_alloc_due", "cur_excess", "cur_rest_zero", "cur_rest_within_tol",
    "cur_rest_beyond_tol", "unidentified_case_due", "query_due", "refund_case_due", "underpayment_case_due",
    "small_write_off_due", "cur_line_handled", "next_line_due", "post_apply_due", "lines_handled_fraction",
})
#: words that name a conclusion, a due item or a projection; no feature of the tiers' own may contain one
CONCLUSION_WORDS = ("due", "need", "match", "ambiguous", "handled", "complete", "pending", "dup_", "excess", "rest_",
                    "no_claim", "unsearched", "found", "left")

#: the conclusions tier's catalog hash: adding the tiers must not change it
CONCLUSIONS_HASH = "130ff1e07f775f9450a8ff39de7e14e3"
READS = ("get_policies", "get_payment", "list_payments")


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


def first_search(tier: str) -> str:
    return "search_next_line" if tier == "facts" else "search_line[0]"


# -- the spec ---------------------------------------------------------------------------------------
@each_tier
def test_spec_is_well_formed_and_named_by_the_catalog(tier: str) -> None:
    cls = TIERS[tier]
    check_spec(cls)
    assert cls.tier == tier and cls.domain == DOMAIN
    assert spec_class(DOMAIN, tier_specs(DOMAIN)[tier]) is cls
    assert tier_specs(DOMAIN)["conclusions"].endswith(":RemittanceCatalog")
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
    # ``amount_due`` is the receivable's field (what the claim was billed at), not a due flag
    own = [f.name.replace("amount_due", "amount") for f in TIERS[tier].features]
    assert not [n for n in own if any(w in n for w in CONCLUSION_WORDS)]
    # the conclusions tier does have them (the list above is not stale)
    assert CONCLUSION_FEATURES <= {f.name for f in RemittanceCatalog.features}


def test_raw_has_no_comparison_of_values() -> None:
    """raw: values, one-hot categories and same-entity flags only; no comparison of two observed
    values (equal, near, greater, within tolerance) and no count of the agent's progress."""
    own = [f.name for f in RemittanceRaw.features]
    assert not [n for n in own if any(w in n for w in ("equal", "near", "_gt_", "_le_", "tolerance]", "fraction",
                                                        "lines.searched", "positive"))]


# -- the tier suffices, the mask alone does not --------------------------------------------------------
@each_tier
def test_feature_policy_passes_every_heldout_task(tier: str) -> None:
    """Through the common evaluation path: ``catalog-features@<tier>`` on the native env."""
    assert pass_rate(tier, "catalog-features", heldout_ids()) == 1.0


@each_tier
def test_feature_policy_picks_valid_actions(tier: str) -> None:
    env = catalog_env(tier)
    policy = TIERS[tier].feature_policy(env.agent)
    for tid in heldout_ids()[::10]:
        info, _ = play_catalog(env, policy, tid)  # asserts every chosen action is valid
        assert info["is_success"], tid


@each_tier
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_alone_stays_far_below(tier: str, baseline: str) -> None:
    assert pass_rate(tier, baseline, heldout_ids()) <= 0.10


# -- legality only ------------------------------------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_points(tier: str) -> None:
    """Once the three reads are back every disposition and the duplicate case are valid (and in
    raw every line can be searched first); once a line is searched every hit can be opened and
    every line case and a payer query are valid; on whichever hit is opened, right or wrong,
    the allocation of either amount, the small write-off and the adjustments are valid exactly
    when the tools would take them."""
    env = catalog_env(tier)
    valid = lambda name: bool(env.action_masks()[action(tier, name)])  # noqa: E731
    checked = 0
    for tid in heldout_ids()[:24]:
        env.reset(options={"task_id": tid})
        for read in READS:
            env.step(action(tier, read))
        spec = env.agent.spec
        for name in ("post_apply", "post_hold", "post_return", "case_duplicate"):
            assert valid(name), (tid, name)
        if tier == "raw":
            assert all(valid(f"search_line[{index}]") == (index < len(spec.lines)) for index in range(N_LINES))
        env.step(action(tier, first_search(tier)))
        line = spec.lines[0]
        for name in ("case_underpayment", "case_refund", "case_unidentified", "query_payer", "post_apply"):
            assert valid(name), (tid, name)
        assert valid("search_by_name") == bool(line.line["claim_ref"])
        assert [valid(f"open_hit[{i}]") for i in range(N_HITS)] == [i < len(line.hits) for i in range(N_HITS)]
        paid = line.line["paid_amount"]
        for i, hit in enumerate(list(line.hits)):
            env.step(action(tier, f"open_hit[{i}]"))
            bal, insurer = hit["balance"], hit["responsibility"] == "payer"
            assert valid("allocate[line_paid]") == insurer, (tid, i)
            assert valid("allocate[claim_balance]") == (insurer and 1 <= bal <= paid), (tid, i)
            assert valid("write_off_small") == (bal >= 1), (tid, i)
            for j, amt in enumerate(line.line["adj_amounts"]):
                assert valid(f"write_off_adj[{j}]") == (1 <= amt <= bal), (tid, i, j)
                assert valid(f"transfer_adj[{j}]") == (insurer and 1 <= amt <= bal), (tid, i, j)
            assert not valid(f"open_hit[{i}]")  # the current claim's answer is known
            checked += 1
    assert checked > 50


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
    """Random valid actions (submit only when nothing else is valid) ground to calls of their
    own tool that the native env accepts (the mask is the tools' preconditions); features stay
    in [-1, 1]; the policy-side agent computes the wrapper's features and masks for the same
    history."""
    env = make_catalog_env(DOMAIN, split="heldout", tier=tier)
    native = make_native(DOMAIN, split="heldout")
    agent = catalog_agent(DOMAIN, tier=tier)
    rng = np.random.default_rng(0)
    for tid in heldout_ids()[1::5]:
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
            assert loads(nobs)["status"] == "ok", (tid, TIERS[tier].actions[a].name, nobs)
            agent.update(nobs)
            obs, _, term, trunc, info = env.step(a)
            assert (term, trunc) == (nterm, ntrunc)
            if term or trunc:
                break
    # out-of-range and empty-slot actions are errors, not exceptions
    env.reset(options={"task_id": heldout_ids()[0]})
    for bad in (env.action_space.n, -1, action(tier, f"open_hit[{N_HITS - 1}]"), action(tier, "allocate[line_paid]")):
        obs, _, _, _, info = env.step(bad)
        assert info["result_status"] == "error" and np.all(np.abs(obs) <= 1.0)
