"""The feature tiers a catalog adds to ``conclusions`` (``facts`` and ``raw``, issue 14), the tests
every domain's tiers share: each spec is well formed, registered and of a size an MLP can take;
gymnasium's checker passes; adding the tiers leaves the conclusions tier's catalog hash alone; the
tier carries none of the conclusions tier's conclusion or "due" features (``raw``: no comparison of
two observed values either); its hand-written feature policy passes every heldout task through the
common evaluation path (``catalog-features@<tier>``) with valid actions only, while the mask alone
(``catalog-mask-only@<tier>``, ``catalog-random@<tier>``) stays far below; observations carry no
answer key; random actions (masked ones too) never crash, each is one native call and the features
stay in [-1, 1]; random valid actions ground to the tools' own calls and the policy-side agent sees
what the wrapper sees.

Each test runs once per installed domain x tier of its catalog other than ``conclusions`` (from
``tier_specs``; the conclusions tier is tests/catalog/test_catalog.py's), so a new domain's tiers get them
without an edit here, except the values only a domain's author can give, pinned in its
tests/domains/<domain>/tier_pins.py (the test says which is missing). What is specific to one
domain (its decision points, which choices are the agent's) stays in
tests/domains/<domain>/test_catalog_<domain>_tiers.py; both use the helpers of tests/tiers.py.
This file names no domain."""

from __future__ import annotations

import importlib.util
import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from test_catalog import _OtherKeys, assert_keys_unseen
from tiers import heldout_env, heldout_ids, tier_class

from backoffice.envs import make_native
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import (
    TIERS,
    catalog_agent,
    catalog_target,
    check_spec,
    make_catalog_env,
    resolve_spec,
    spec_class,
    tier_specs,
)
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import DOMAINS, TESTS, play_catalog


def added_tiers(domain: str) -> list[str]:
    """The tiers of ``domain``'s catalog besides ``conclusions`` (none without a catalog)."""
    return [t for t in tier_specs(domain) if t != "conclusions"] if catalog_target(domain) else []


#: (domain, tier) for every installed domain and every tier its catalog adds, ids ``<domain>-<tier>``
DOMAIN_TIERS = [(d, t) for d in DOMAINS for t in added_tiers(d)]
each_tier = pytest.mark.parametrize(("domain", "tier"), [pytest.param(d, t, id=f"{d}-{t}") for d, t in DOMAIN_TIERS])


# -- per-domain values: tests/domains/<domain>/tier_pins.py ------------------------------------------
#: what a domain pins (required ones: every domain with tiers gives them; the others have defaults)
PINS = {
    "CONCLUSIONS_HASH": "required: the conclusions tier's catalog_hash; adding tiers must not change it",
    "CONCLUSION_FEATURES": "required: the conclusions tier's features that carry the procedure's conclusions or say "
                           "that something is due / done / left; none may be a feature of another tier, and each "
                           "must be one of the conclusions tier's (the list cannot go stale)",
    "CONCLUSION_WORDS": "required: words that name a conclusion or a due item; no feature of another tier's own "
                        "may contain one",
    "FACT_NAMES": "parts of feature names that hold a conclusion word but name an observed field, replaced before "
                  "the words are looked for (default: none)",
    "RAW_COMPARISON_WORDS": "words of a comparison of two observed values that no raw feature's name may contain "
                            "(default: the test is not run)",
    "MAX_ACTIONS": "at most this many actions in a tier (default 64)",
    "REFUSED_BY": "tools that may refuse a valid action in random play (frozenset(): none, the mask is the tools' "
                  "preconditions; default: any tool, with a structured error)",
    "MASK_ALONE": "(heldout slice, the baselines' seed, whether the native env gets the tier's own step limit) of "
                  "the mask-alone test (default: every task, seed 0, the task's limit)",
    "VALID_PLAY_IDS": "heldout tasks of the feature-policy episodes through the catalog env (default every 8th)",
    "RANDOM_PLAY_IDS": "heldout tasks of random valid play (default every 20th)",
    "FUZZ_EPISODES": "episodes of the random-actions fuzz (default 16)",
}


def pins(domain: str) -> ModuleType | None:
    """The values a domain pins for these tests (its ``tier_pins.py``), or ``None``."""
    path = TESTS / "domains" / domain / "tier_pins.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"tier_pins_{domain}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    unknown = sorted(n for n in vars(module) if n.isupper() and n not in PINS)
    if unknown:
        pytest.fail(f"{path}: {unknown} are not pins of these tests ({', '.join(PINS)})")
    return module


def pinned(name: str, domain: str) -> Any:
    """A value the domain must pin (required of every domain with tiers)."""
    value = getattr(pins(domain), name, None)
    if value is None:
        pytest.fail(f"{domain} has catalog tiers: give {name} in tests/domains/{domain}/tier_pins.py")
    return value


def pin(name: str, domain: str, default: Any) -> Any:
    """A value the domain may pin (``default`` otherwise)."""
    return getattr(pins(domain), name, default)


# -- the spec ---------------------------------------------------------------------------------------
@each_tier
def test_spec_is_well_formed_and_named_by_the_catalog(domain: str, tier: str) -> None:
    specs = tier_specs(domain)
    assert set(TIERS) <= set(specs) and spec_class(domain, specs["conclusions"]) is spec_class(domain)
    cls = tier_class(domain, tier)
    check_spec(cls)
    assert cls.tier == tier and cls.domain == domain and spec_class(domain).tier == "conclusions"
    assert spec_class(domain, resolve_spec(domain, tier=tier)) is cls
    agent = catalog_agent(domain, tier=tier)
    assert agent.n_actions == len(cls.actions) <= pin("MAX_ACTIONS", domain, 64) and agent.n_features <= 300
    assert agent.n_features == 2 + agent.n_actions + len(cls.features)
    assert all(f["doc"] for f in agent.describe()["features"]) and all(a["doc"] for a in agent.describe()["actions"])
    assert all(a.doc for a in cls.actions) and all(f.doc for f in cls.features)
    # the feature policy is a staticmethod on the class (what catalog-features@<tier> finds first)
    assert isinstance(cls.__dict__["feature_policy"], staticmethod)
    env = make_catalog_env(domain, tier=tier)
    obs, info = env.reset(seed=0)
    assert env.action_space.n == agent.n_actions and env.observation_space.shape == obs.shape == (agent.n_features,)
    assert info["action_mask"][env.agent.finish] == 1


@each_tier
def test_gymnasium_env_check(domain: str, tier: str) -> None:
    """Gymnasium's checker (SB3's needs torch: its import alone would double this file's time)."""
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(make_catalog_env(domain, tier=tier), skip_render_check=True)


@each_tier
def test_conclusions_tier_is_unchanged(domain: str, tier: str) -> None:
    from backoffice.training.rl.sb3_policy import catalog_signature

    signature = catalog_signature(domain)
    assert signature["tier"] == "conclusions" and signature["catalog_hash"] == pinned("CONCLUSIONS_HASH", domain)
    assert catalog_signature(domain, tier_specs(domain)[tier])["tier"] == tier


@each_tier
def test_no_conclusion_or_due_features(domain: str, tier: str) -> None:
    conclusions = pinned("CONCLUSION_FEATURES", domain)
    words = pinned("CONCLUSION_WORDS", domain)
    # the conclusions tier does have them (the list is not stale)
    assert conclusions <= {f.name for f in spec_class(domain).features}
    assert not {f.name for f in catalog_agent(domain, tier=tier).feature_defs} & conclusions
    own = [f.name for f in tier_class(domain, tier).features]
    for fact, plain in pin("FACT_NAMES", domain, {}).items():
        own = [n.replace(fact, plain) for n in own]
    assert not [n for n in own if any(w in n for w in words)]


@pytest.mark.parametrize("domain", [pytest.param(d, id=f"{d}-raw") for d in DOMAINS
                                    if "raw" in added_tiers(d) and pin("RAW_COMPARISON_WORDS", d, None)])
def test_raw_has_no_comparison_of_values(domain: str) -> None:
    own = [f.name for f in tier_class(domain, "raw").features]
    assert not [n for n in own if any(w in n for w in pinned("RAW_COMPARISON_WORDS", domain))]


# -- the tier suffices, the mask alone does not --------------------------------------------------------
@each_tier
def test_feature_policy_passes_every_heldout_task(domain: str, tier: str) -> None:
    """Through the common evaluation path (``catalog-features@<tier>`` on the native env): every
    heldout task passes, every action chosen is valid and the tier's step limit is enough."""
    cls = tier_class(domain, tier)
    env = make_native(domain, split="heldout")
    policy = get_policy(domain, f"catalog-features@{tier}")
    assert policy.name == f"catalog-features@{tier}" and type(policy.agent.spec) is cls
    choose = policy.choose

    def checked(features: np.ndarray, mask: np.ndarray) -> int:
        action = choose(features, mask)
        assert mask[action], cls.actions[action].name
        return action

    policy.choose = checked
    failed, steps = {}, 0
    for tid in heldout_ids(domain):
        result = run_episode(env, policy, tid)
        if not result.grade["pass"]:
            failed[tid] = result.grade["failure_codes"]
        steps = max(steps, result.steps)
    assert not failed
    assert steps <= cls.max_steps


@each_tier
def test_feature_policy_picks_valid_actions_on_the_catalog_env(domain: str, tier: str) -> None:
    env = heldout_env(domain, tier)
    policy = tier_class(domain, tier).feature_policy(env.agent)
    for tid in heldout_ids(domain)[pin("VALID_PLAY_IDS", domain, slice(None, None, 8))]:
        info, seen = play_catalog(env, policy, tid)  # asserts every chosen action is valid, every observation in the space
        assert info["is_success"] and len(seen) - 1 <= env.agent.spec.max_steps, tid


@each_tier
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_alone_stays_far_below(domain: str, tier: str, baseline: str) -> None:
    """The mask alone solves almost nothing: the judgement is the agent's."""
    ids, seed, tier_limit = pin("MASK_ALONE", domain, (slice(None), 0, False))
    env = make_native(domain, split="heldout", max_steps=tier_class(domain, tier).max_steps if tier_limit else None)
    policy = get_policy(domain, f"{baseline}@{tier}", seed=seed)
    tasks = heldout_ids(domain)[ids]
    passed = sum(bool(run_episode(env, policy, tid).grade["pass"]) for tid in tasks)
    assert len(tasks) >= 10 and passed <= 0.10 * len(tasks), passed


# -- no answer key --------------------------------------------------------------------------------------
@each_tier
def test_observations_carry_no_answer_key(domain: str, tier: str) -> None:
    """Two tasks that differ only in their answer key give identical observations, masks and
    native traces for the same actions (half the episodes follow the feature policy, half
    explore), while the key changes some grades."""
    env_a = make_catalog_env(domain, split="heldout", tier=tier)
    env_b = make_catalog_env(domain, split="heldout", tier=tier)
    env_b.unwrapped.release = _OtherKeys(env_a.unwrapped.release)
    assert_keys_unseen(env_a, env_b, tier_class(domain, tier).feature_policy(env_a.agent), heldout_ids(domain)[:16])


# -- robustness --------------------------------------------------------------------------------------
@each_tier
def test_random_actions_never_crash(domain: str, tier: str) -> None:
    """Fuzz on the train split: mostly valid random actions, some masked ones, and every fourth
    episode any action at all. No exception; each step is one native call; the features stay
    finite in [-1, 1] with the finishing action valid; a valid action always grounds, an empty
    slot is a structured error charged a step; valid actions are refused only by the tools the
    domain allows (``REFUSED_BY``)."""
    env = make_catalog_env(domain, split="train", tier=tier)
    spec, finish = env.agent.spec, env.agent.finish
    rng = np.random.default_rng(7)
    refused = set()
    for episode in range(pin("FUZZ_EPISODES", domain, 16)):
        obs, info = env.reset(seed=episode)
        anything = episode % 4 == 3
        steps = 0
        while True:
            assert obs.dtype == np.float32 and np.all(np.isfinite(obs)) and np.all(np.abs(obs) <= 1.0)
            assert env.observation_space.contains(obs)
            mask = env.action_masks()
            assert mask.dtype == bool and mask[finish]
            valid = np.flatnonzero(mask)
            others = valid[valid != finish]
            if anything or rng.random() < 0.15:
                action = int(rng.integers(env.action_space.n))
            else:
                action = int(rng.choice(others if len(others) and rng.random() < 0.97 else valid))
            empty = spec.to_call(action) is None
            assert not (empty and mask[action])  # a valid action always grounds
            obs, _, term, trunc, info = env.step(action)
            steps += 1
            assert len(env.unwrapped.trace) == steps  # one catalog action, one native call
            if empty:
                assert info["result_status"] == "error" and info["error_code"] == "invalid_args"
            elif mask[action] and info["result_status"] == "error":
                refused.add((spec.actions[action].tool, info["error_code"]))
            if term or trunc:
                assert "grade" in info and np.all(np.abs(obs) <= 1.0)
                break
    refused_by = pin("REFUSED_BY", domain, None)
    if refused_by is not None:
        assert {tool for tool, _ in refused} <= refused_by, refused


@each_tier
def test_random_valid_actions_ground_to_their_tools(domain: str, tier: str) -> None:
    """Random valid actions (submit only when nothing else is valid) ground to calls of their own
    tool that the native env accepts or refuses with a structured error (``REFUSED_BY``); the
    features stay in [-1, 1]; the policy-side agent computes the wrapper's features and masks for
    the same history. Out-of-range actions and every empty slot are errors, not exceptions."""
    cls = tier_class(domain, tier)
    env = make_catalog_env(domain, split="heldout", tier=tier)
    native = make_native(domain, split="heldout", max_steps=cls.max_steps)
    agent = catalog_agent(domain, tier=tier)
    allowed = pin("REFUSED_BY", domain, None)
    rng = np.random.default_rng(0)
    for tid in heldout_ids(domain)[pin("RANDOM_PLAY_IDS", domain, slice(None, None, 20))]:
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
            assert isinstance(call, dict) and call["tool"] == cls.actions[a].tool
            nobs, _, nterm, ntrunc, _ = native.step(call)
            result = loads(nobs)
            if result["status"] != "ok":
                assert isinstance(result.get("code"), str) and (allowed is None or call["tool"] in allowed), (tid, cls.actions[a].name, result)
            agent.update(nobs)
            obs, _, term, trunc, info = env.step(a)
            assert (term, trunc) == (nterm, ntrunc)
            if term or trunc:
                break
    env.reset(options={"task_id": heldout_ids(domain)[0]})
    empty = [a for a in range(env.action_space.n) if env.agent.spec.to_call(a) is None]
    assert empty
    for bad in (env.action_space.n, -1, *empty):
        env.reset(options={"task_id": heldout_ids(domain)[0]})
        obs, _, _, _, info = env.step(bad)
        assert info["result_status"] == "error" and np.all(np.abs(obs) <= 1.0), bad


def test_catalog_command_lists_a_tier() -> None:
    """``backoffice catalog --tier facts`` documents that tier's actions and features; an
    unknown tier is refused with the tiers there are."""
    from typer.testing import CliRunner

    from backoffice.training.cli.main import app

    domain, tier = DOMAIN_TIERS[0]
    result = CliRunner().invoke(app, ["catalog", "--env", domain, "--tier", tier, "--json"])
    assert result.exit_code == 0, result.output
    listed = [f["name"] for f in loads(result.output.encode())["features"]]
    assert listed == [f.name for f in catalog_agent(domain, tier=tier).feature_defs]
    assert listed != [f.name for f in catalog_agent(domain).feature_defs]
    result = CliRunner().invoke(app, ["catalog", "--env", domain, "--tier", "nope"])
    assert result.exit_code != 0 and ", ".join(tier_specs(domain)) in result.output
