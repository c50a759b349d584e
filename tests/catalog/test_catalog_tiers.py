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
without an edit here, except the pinned values below that only a domain's author can give (the
test says which is missing). What is specific to one domain (its decision points, which choices
are the agent's) stays in tests/domains/<domain>/test_catalog_<domain>_tiers.py; both use the helpers of tests/tiers.py."""

from __future__ import annotations

import warnings
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
from backoffice.training.catalog.registration import N_SLOTS
from backoffice.training.catalog.remittance import N_ADJ
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from conftest import DOMAINS, play_catalog


def added_tiers(domain: str) -> list[str]:
    """The tiers of ``domain``'s catalog besides ``conclusions`` (none without a catalog)."""
    return [t for t in tier_specs(domain) if t != "conclusions"] if catalog_target(domain) else []


#: (domain, tier) for every installed domain and every tier its catalog adds, ids ``approvals-facts``
DOMAIN_TIERS = [(d, t) for d in DOMAINS for t in added_tiers(d)]
each_tier = pytest.mark.parametrize(("domain", "tier"), [pytest.param(d, t, id=f"{d}-{t}") for d, t in DOMAIN_TIERS])


def pinned(table: dict[str, Any], name: str, domain: str) -> Any:
    if domain not in table:
        pytest.fail(f"{domain} has catalog tiers: give its entry in {name} (tests/catalog/test_catalog_tiers.py)")
    return table[domain]


# -- per-domain values ---------------------------------------------------------------------------------
#: the conclusions tier's catalog hash: adding the tiers must not change it (required of every
#: domain with tiers; approvals' is the hash its shipped results/approvals/conclusions.json was made with)
CONCLUSIONS_HASH = {
    "approvals": "f1dfe2398538e49492d593160617f454",
    "registration": "ee8a37d113652ba2e1a58e77cc3c2216",
    "remittance": "b65fa04dcc95ad4398c98f9af640119d",
    "schedules": "45e70bb6af80f08ecd286b301e4f0feb",
    "sufficiency": "d1c0b5b7b42c2b760b8a5c829e946161",
}

#: the conclusions tier's features that carry the procedure's conclusions or say that something is
#: due / done / left: none of them may be a feature of another tier (required of every domain with
#: tiers; each list must name features the conclusions tier does have, so it cannot go stale)
CONCLUSION_FEATURES = {
    # the named approver resolved, a breach, the authority found, the outcome
    "approvals": frozenset({
        "approver_resolved", "approver_not_found",
        "over_hard_limit", "amount_over_hard_limit_ratio", "missing_required_field", "n_missing_fields",
        "line_breach", "sod_breach", "sod_checked", "sod_clear",
        "assignment_candidate_now", "blocking_fact_found",
        "n_candidate_roles", "candidates_checked", "candidates_unchecked", "all_candidates_checked",
        "holds_candidate_role", "delegation_candidate_role", "delegation_capped_below", "delegation_unconfirmed",
        "delegation_usable", "authority_found", "authority_search_complete", "no_usable_authority",
        "procedure_reject", "procedure_hold", "procedure_escalate", "procedure_proceed", "procedure_open",
        "downstream_due",
    }),
    # the matching rule's verdicts, R-VERIFIED-FIELD, the card's and the roster's acceptance, the minor's age limit
    "registration": frozenset({
        "variants_pending", *(f"slot[{i}].match" for i in range(N_SLOTS)), "match_none", "match_one", "match_many",
        "match_deceased", "identifier_conflict", "current_is_match", "minor", "phone_differs", "address_differs",
        "address_update_allowed", "card_ok", "roster_ok", "coverage_missing", "gp_missing", "guardian_missing",
        "guardian_contact_known", "kin_missing", "items_open", "registration_complete",
    }),
    # the match rule's and the duplicate rule's verdicts, the projection of a line once applied
    "remittance": frozenset({
        "facts_read", "dup_found", "no_dup", "dup_case_due", "dup_refund_case_due", "dup_hold_due", "dup_return_due",
        "dup_apply_due", "credit_alloc_due",
        "lines_unsearched", "cur_needs_name_search", "cur_matched", "cur_ambiguous", "cur_no_claim", "cur_recoup",
        *(f"adj{j}_pending" for j in range(N_ADJ)), *(f"wo_adj{j}_due" for j in range(N_ADJ)),
        *(f"tr_adj{j}_due" for j in range(N_ADJ)), "cur_alloc_due", "cur_excess", "cur_rest_zero", "cur_rest_within_tol",
        "cur_rest_beyond_tol", "unidentified_case_due", "query_due", "refund_case_due", "underpayment_case_due",
        "small_write_off_due", "cur_line_handled", "next_line_due", "post_apply_due", "lines_handled_fraction",
    }),
    # the computed plan, the approval trigger that applies first, what is needed, due or complete
    "schedules": frozenset({
        "plan_facts_read", "plan_count", "rows_remaining", "draft_complete",
        "approval_needed", "first_trigger_deferral", "first_trigger_instalment_count", "first_trigger_short_notice",
        "applies_deferral", "applies_instalment_count", "applies_short_notice",
        "needed_approval_requested", "needed_approval_granted", "approval_outstanding",
        "new_reminder_late", "new_reminder_needed", "mandate_change_needed", "work_complete",
        "notice_days", "uneven_split", "month_end_hit", "outstanding",
    }),
    # the clerk's assessment (items satisfied, satisfiable from a held record or missing, the case
    # sufficient, the conditions uncovered items fail), the reads done; and the routing comparison
    # and ratio (``facts`` keeps the comparison under its own name, case.amount_ge_senior_threshold)
    "sufficiency": frozenset({
        "assessed", "any_missing", "n_missing", "any_satisfiable", "n_satisfiable", "n_satisfied", "sufficient",
        "fail_presence", "fail_age", "fail_signature", "fail_name_match", "fail_legibility",
        "amount_vs_threshold", "amount_ratio",
    }),
}
#: words that name a conclusion or a due item: no feature of the tier's own may contain one
CONCLUSION_WORDS = {
    "approvals": ("procedure", "due", "needed", "complete", "authority", "usable", "candidate", "breach", "blocking",
                  "resolved", "sod_clear", "sod_checked"),
    "registration": ("match", "conflict", "due", "need", "missing", "complete", "pending", "allowed", "_ok", "minor", "open_"),
    "remittance": ("due", "need", "match", "ambiguous", "handled", "complete", "pending", "dup_", "excess", "rest_",
                   "no_claim", "unsearched", "found", "left"),
    "schedules": ("needed", "complete", "remaining", "plan_", "applies", "first_trigger", "outstanding"),
    "sufficiency": ("missing", "satisf", "sufficient", "assess", "fail", "due", "need", "complete", "valid",
                    "cover", "gap", "pending", "expected"),
}
#: parts of feature names that hold a conclusion word but name an observed field, read as the
#: replacement before the words are looked for (remittance: ``amount_due`` is what the claim was billed at)
FACT_NAMES = {"remittance": {"amount_due": "amount"}}
#: raw: values, one-hot categories and same-entity flags only, none of these words of a comparison
#: of two observed values (a check-digit verdict, a count of the agent's progress); only the
#: domains listed have the test
RAW_COMPARISON_WORDS = {
    "registration": ("equal", "agree", "equivalent", "differ", "swapped", "identifier_valid", "age_years"),
    "remittance": ("equal", "near", "_gt_", "_le_", "tolerance]", "fraction", "lines.searched", "positive"),
    "sufficiency": ("equal", "within", "_ge_", "by_review_date", "vs", "ratio", "older", "expired"),
}

#: the spec each tier resolves to, as the five domains' own tests pinned it (optional)
TIER_SPECS = {
    domain: {"conclusions": f"{domain}:{title}Catalog", "facts": f"{domain}_tiers:{facts}", "raw": f"{domain}_tiers:{raw}"}
    for domain, title, facts, raw in (
        ("registration", "Registration", "RegistrationFacts", "RegistrationRaw"),
        ("remittance", "Remittance", "RemittanceFacts", "RemittanceRaw"),
        ("schedules", "Schedules", "SchedulesFactsCatalog", "SchedulesRawCatalog"),
        ("sufficiency", "Sufficiency", "SufficiencyFacts", "SufficiencyRaw"),
    )
}
#: at most this many actions (default 64; schedules' raw tier has 68)
MAX_ACTIONS = {"schedules": 70}

#: tools that may refuse a valid action (a structured error) in random play; ``frozenset()``: the
#: mask is the tools' preconditions, every valid action is accepted; a domain not listed: any
#: tool, with a structured error (schedules: only the commit's checks, approval, due dates, minimum)
REFUSED_BY: dict[str, frozenset[str]] = {"remittance": frozenset(), "schedules": frozenset({"commit_schedule"})}

#: the heldout tasks (a slice), the baselines' seed and whether the native env gets the tier's own
#: step limit (else the task's) for the mask-alone test, as each domain's tests had them; default: all
#: heldout tasks, seed 0, the task's limit
MASK_ALONE = {
    "approvals": (slice(120), 0, False),
    "sufficiency": (slice(None, None, 2), 0, False),  # every other task (120: every defect tag; the time budget)
    "schedules": (slice(None, None, 42), 3, True),  # 10 tasks
}
#: heldout tasks for the catalog env's feature-policy episodes and random valid play (default: every 8th / 20th)
VALID_PLAY_IDS = {"registration": slice(None, None, 6), "remittance": slice(None, None, 10), "sufficiency": slice(None, None, 8)}
RANDOM_PLAY_IDS = {"registration": slice(60), "remittance": slice(1, None, 5), "sufficiency": slice(None, None, 6)}
#: episodes (train split, reset by seed) of the random-actions fuzz (default 16)
FUZZ_EPISODES = {"approvals": 40}


# -- the spec ---------------------------------------------------------------------------------------
@each_tier
def test_spec_is_well_formed_and_named_by_the_catalog(domain: str, tier: str) -> None:
    specs = tier_specs(domain)
    assert set(TIERS) <= set(specs) and spec_class(domain, specs["conclusions"]) is spec_class(domain)
    if domain in TIER_SPECS:
        assert specs == {t: f"backoffice.training.catalog.{s}" for t, s in TIER_SPECS[domain].items()}
    cls = tier_class(domain, tier)
    check_spec(cls)
    assert cls.tier == tier and cls.domain == domain and spec_class(domain).tier == "conclusions"
    assert spec_class(domain, resolve_spec(domain, tier=tier)) is cls
    agent = catalog_agent(domain, tier=tier)
    assert agent.n_actions == len(cls.actions) <= MAX_ACTIONS.get(domain, 64) and agent.n_features <= 300
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
    assert signature["tier"] == "conclusions" and signature["catalog_hash"] == pinned(CONCLUSIONS_HASH, "CONCLUSIONS_HASH", domain)
    assert catalog_signature(domain, tier_specs(domain)[tier])["tier"] == tier


@each_tier
def test_no_conclusion_or_due_features(domain: str, tier: str) -> None:
    conclusions = pinned(CONCLUSION_FEATURES, "CONCLUSION_FEATURES", domain)
    words = pinned(CONCLUSION_WORDS, "CONCLUSION_WORDS", domain)
    # the conclusions tier does have them (the list is not stale)
    assert conclusions <= {f.name for f in spec_class(domain).features}
    assert not {f.name for f in catalog_agent(domain, tier=tier).feature_defs} & conclusions
    own = [f.name for f in tier_class(domain, tier).features]
    for fact, plain in FACT_NAMES.get(domain, {}).items():
        own = [n.replace(fact, plain) for n in own]
    assert not [n for n in own if any(w in n for w in words)]


@pytest.mark.parametrize("domain", [pytest.param(d, id=f"{d}-raw") for d in RAW_COMPARISON_WORDS if "raw" in added_tiers(d)])
def test_raw_has_no_comparison_of_values(domain: str) -> None:
    own = [f.name for f in tier_class(domain, "raw").features]
    assert not [n for n in own if any(w in n for w in RAW_COMPARISON_WORDS[domain])]


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
    for tid in heldout_ids(domain)[VALID_PLAY_IDS.get(domain, slice(None, None, 8))]:
        info, seen = play_catalog(env, policy, tid)  # asserts every chosen action is valid, every observation in the space
        assert info["is_success"] and len(seen) - 1 <= env.agent.spec.max_steps, tid


@each_tier
@pytest.mark.parametrize("baseline", ["catalog-mask-only", "catalog-random"])
def test_mask_alone_stays_far_below(domain: str, tier: str, baseline: str) -> None:
    """The mask alone solves almost nothing: the judgement is the agent's."""
    ids, seed, tier_limit = MASK_ALONE.get(domain, (slice(None), 0, False))
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
    for episode in range(FUZZ_EPISODES.get(domain, 16)):
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
    if domain in REFUSED_BY:
        assert {tool for tool, _ in refused} <= REFUSED_BY[domain], refused


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
    allowed = REFUSED_BY.get(domain)
    rng = np.random.default_rng(0)
    for tid in heldout_ids(domain)[RANDOM_PLAY_IDS.get(domain, slice(None, None, 20))]:
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

    result = CliRunner().invoke(app, ["catalog", "--env", "approvals", "--tier", "facts", "--json"])
    assert result.exit_code == 0, result.output
    listed = [f["name"] for f in loads(result.output.encode())["features"]]
    assert listed == [f.name for f in catalog_agent("approvals", tier="facts").feature_defs]
    assert listed != [f.name for f in catalog_agent("approvals").feature_defs]
    result = CliRunner().invoke(app, ["catalog", "--env", "approvals", "--tier", "nope"])
    assert result.exit_code != 0 and "conclusions, facts, raw" in result.output
