"""Registration catalog env: the feature policy passes every heldout task, wrong feature policies
fail with the grader's codes, the mask leaves every judgement to the agent (legality only), the
catalog's shape is fixed and every enabled action grounds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import CatalogEnv, make_catalog_env, spec_class, tier_specs
from backoffice.training.domains.registration.catalog.feature_policies import conclusions_policy as feature_policy
from conftest import play_catalog

RegistrationCatalog = spec_class("registration", tier_specs("registration")["conclusions"])

DOMAIN = "registration"
Policy = Callable[[np.ndarray, np.ndarray], int]


@cache
def catalog_env() -> CatalogEnv:
    return make_catalog_env(DOMAIN, split="heldout")


def heldout_ids() -> list[str]:
    return list(catalog_env().unwrapped.release.split_ids["heldout"])


def action(name: str) -> int:
    return next(i for i, a in enumerate(RegistrationCatalog.actions) if a.name == name)


def run(env: CatalogEnv, policy: Policy, task_id: str) -> dict:
    return play_catalog(env, policy, task_id)[0]


def outcomes(policy_of: Callable[[CatalogEnv], Policy]) -> tuple[int, Counter]:
    env = catalog_env()
    policy = policy_of(env)
    passed, codes = 0, Counter()
    for tid in heldout_ids():
        info = run(env, policy, tid)
        passed += bool(info["is_success"])
        if not info["is_success"]:
            codes[tuple(info["grade"]["failure_codes"])] += 1
    return passed, codes


def test_feature_policy_passes_every_heldout_task():
    env = catalog_env()
    policy = feature_policy(env.agent)
    failed = [tid for tid in heldout_ids() if not run(env, policy, tid)["is_success"]]
    assert not failed


# -- wrong feature policies: each overrides one decision of the feature policy -------------------
def always_create(env: CatalogEnv) -> Policy:
    """Registers every form as a new patient (never opens a match, never refers)."""
    good = feature_policy(env.agent)
    return lambda obs, mask: action("create_patient") if mask[action("create_patient")] else good(obs, mask)


def never_refers(env: CatalogEnv) -> Policy:
    """Submits where the rule file says to hand the form over."""
    good = feature_policy(env.agent)
    refer = {action("refer_to_human[ambiguous_match]"), action("refer_to_human[deceased_match]"),
             action("refer_to_human[identity_conflict]")}
    return lambda obs, mask: action("submit") if good(obs, mask) in refer else good(obs, mask)


def refers_every_match_as_ambiguous(env: CatalogEnv) -> Policy:
    """Names the wrong reason when the one match is deceased."""
    good = feature_policy(env.agent)
    deceased, ambiguous = action("refer_to_human[deceased_match]"), action("refer_to_human[ambiguous_match]")
    return lambda obs, mask: ambiguous if good(obs, mask) == deceased else good(obs, mask)


def trusts_the_card(env: CatalogEnv) -> Policy:
    """Adds the member id written on the card without checking it with the payer."""
    good = feature_policy(env.agent)
    verify, card = action("verify_member_id"), action("add_coverage[card]")
    return lambda obs, mask: card if good(obs, mask) == verify else good(obs, mask)


def overwrites_verified_address(env: CatalogEnv) -> Policy:
    """Updates every differing address, verified or not, evidence or not."""
    good = feature_policy(env.agent)
    idx = {d.name: i for i, d in enumerate(env.agent.feature_defs)}
    update = action("update_patient[address]")

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[idx["address_differs"]] > 0.5 and mask[update] and obs[idx["taken[update_patient[address]]"]] < 0.5:
            return update
        return good(obs, mask)

    return policy


def opens_the_first_result(env: CatalogEnv) -> Policy:
    """Takes the first search result as the patient (the search order is not a ranking)."""
    good = feature_policy(env.agent)
    idx = {d.name: i for i, d in enumerate(env.agent.feature_defs)}
    first = action("get_patient[0]")

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        choice = good(obs, mask)
        opening = RegistrationCatalog.actions[choice].tool == "get_patient" or choice == action("create_patient")
        if opening and obs[idx["slot[0].deceased"]] < 0.5 and mask[first]:
            return first
        return choice

    return policy


def skips_gp_link(env: CatalogEnv) -> Policy:
    """Never links the form's GP practice (submits instead when nothing else is due)."""
    good = feature_policy(env.agent)

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        masked = mask.copy()
        masked[action("link_gp")] = False
        return good(obs, masked)

    return policy


def test_always_create_fails_with_duplicate_created():
    passed, codes = outcomes(always_create)
    assert passed < len(heldout_ids()) and codes
    assert all("duplicate_created" in c for c in codes)
    assert any("missed_referral" in c for c in codes)


def test_never_refers_fails_with_missed_referral_only():
    passed, codes = outcomes(never_refers)
    assert passed < len(heldout_ids())
    assert set(codes) == {("missed_referral", "wrong_referral_basis")}


def cites_no_conflict_holder(env: CatalogEnv) -> Policy:
    """Refers an identity conflict as an ambiguous match (its basis leaves out the holder)."""
    good = feature_policy(env.agent)
    conflict, ambiguous = action("refer_to_human[identity_conflict]"), action("refer_to_human[ambiguous_match]")
    return lambda obs, mask: ambiguous if good(obs, mask) == conflict else good(obs, mask)


def test_referring_a_conflict_as_ambiguous_fails_reason_and_basis():
    passed, codes = outcomes(cites_no_conflict_holder)
    assert passed < len(heldout_ids())
    assert set(codes) == {("wrong_referral_basis", "wrong_referral_reason")}


def test_wrong_referral_reason_is_caught():
    passed, codes = outcomes(refers_every_match_as_ambiguous)
    assert passed < len(heldout_ids())
    assert set(codes) == {("wrong_referral_reason",)}


def test_skipping_the_gp_link_fails_with_missing_required():
    passed, codes = outcomes(skips_gp_link)
    assert passed < len(heldout_ids())
    assert set(codes) == {("missing_required",)}


def test_trusting_the_card_fails_with_invalid_coverage():
    passed, codes = outcomes(trusts_the_card)
    assert passed < len(heldout_ids()) and codes
    assert all("invalid_coverage" in c and set(c) <= {"invalid_coverage", "missing_required"} for c in codes)


def test_overwriting_a_verified_address_fails_with_verified_overwritten():
    passed, codes = outcomes(overwrites_verified_address)
    assert passed < len(heldout_ids()) and codes
    # the key keeps the verified address, so the overwrite is also a field mismatch (and an
    # unexpected write when the phone needed no update)
    assert all("verified_overwritten" in c and set(c) <= {"verified_overwritten", "field_mismatch", "forbidden_hit"}
               for c in codes)


def test_opening_the_first_result_fails_with_the_wrong_patient():
    passed, codes = outcomes(opens_the_first_result)
    assert passed < len(heldout_ids())
    assert all(set(c) & {"wrong_patient_updated", "duplicate_created", "missing_required"} for c in codes)
    assert any("wrong_patient_updated" in c for c in codes)


# -- the mask decides legality only ---------------------------------------------------------------
def names(mask: np.ndarray) -> set[str]:
    return {RegistrationCatalog.actions[a].name for a in np.flatnonzero(mask)}


def test_mask_leaves_judgements_to_the_agent():
    """At the decision point (form, variants and search read) every decision is valid, whatever
    the right one: open any search result, create, refer for either reason. On an opened active
    record every write the form can ground is valid, including the wrong ones (updating a verified
    address without evidence, adding the card's member id unchecked, consenting by the patient for
    a minor, repeating a write already made)."""
    env = catalog_env()
    decisions = {"create_patient", "refer_to_human[ambiguous_match]", "refer_to_human[deceased_match]",
                 "refer_to_human[identity_conflict]"}
    reads = ("get_intake_form", "get_name_variants[given]", "get_name_variants[family]", "search_patients")
    seen_writes: Counter = Counter()
    for tid in heldout_ids()[:60]:
        env.reset(options={"task_id": tid})
        for read in reads:
            env.step(action(read))
        spec = env.agent.spec.desk
        mask = env.action_masks()
        opens = {f"get_patient[{i}]" for i in range(len(spec.results))}
        assert decisions | opens <= names(mask), tid
        # open every active result in turn: each time the record's writes are all valid
        for i, r in enumerate(spec.results):
            if r["status"] != "active":
                continue
            env.step(action(f"get_patient[{i}]"))
            form, rec = spec.form, spec.rec
            writes = {"update_patient[phone]", "update_patient[address]", "record_consent[self]", "create_patient",
                      "refer_to_human[ambiguous_match]", "refer_to_human[deceased_match]",
                      "refer_to_human[identity_conflict]"}
            if form["payer_id"]:
                writes |= {"add_coverage[card]", "lookup_member"}
            if form["gp_practice_id"] and not any(g["practice_id"] == form["gp_practice_id"] and g["status"] == "active"
                                                  for g in rec["gp_links"]):
                writes.add("link_gp")
            if form["guardian_name"]:
                writes.add("add_contact[guardian]")
            if form["next_of_kin_name"]:
                writes.add("add_contact[next_of_kin]")
            if any(c["role"] == "guardian" and c["name"].casefold() == form["guardian_name"].casefold()
                   for c in rec["contacts"] if form["guardian_name"]):
                writes.add("record_consent[guardian]")
            valid = names(env.action_masks())
            assert writes <= valid, (tid, writes - valid)
            seen_writes.update(writes)
            # a write made once stays valid (the features, not the mask, say it is on file)
            env.step(action("record_consent[self]"))
            assert "record_consent[self]" in names(env.action_masks())
    assert seen_writes["add_coverage[card]"] and seen_writes["record_consent[guardian]"]


def test_writes_to_a_deceased_record_are_masked():
    """The tool rejects every write to a locked record (patient_not_active): those are masked."""
    env = catalog_env()
    checked = 0
    for tid in heldout_ids():
        env.reset(options={"task_id": tid})
        for read in ("get_intake_form", "search_patients"):
            env.step(action(read))
        spec = env.agent.spec.desk
        dead = [i for i, r in enumerate(spec.results) if r["status"] != "active"]
        if not dead:
            continue
        env.step(action(f"get_patient[{dead[0]}]"))
        valid = names(env.action_masks())
        assert not valid & {a.name for a in RegistrationCatalog.actions if a.tool in (
            "update_patient", "add_coverage", "link_gp", "add_contact", "record_consent")}, tid
        checked += 1
    assert checked


# -- the catalog's shape and grounding -----------------------------------------------------------
def test_shape_is_fixed_across_tasks():
    env = catalog_env()
    k = env.action_space.n
    assert k == len(RegistrationCatalog.actions) <= 40
    assert len(RegistrationCatalog.features) <= 80
    for tid in heldout_ids()[:8]:
        obs, info = env.reset(options={"task_id": tid})
        assert env.action_space.n == k
        assert obs.shape == (env.agent.n_features,) == env.observation_space.shape
        assert info["action_mask"].shape == (k,)


def assert_structured(obs_text: str) -> None:
    result = loads(obs_text)
    assert result["status"] == "ok" or isinstance(result.get("code"), str), result


@pytest.mark.parametrize("task_id", heldout_ids()[:6])
def test_enabled_actions_after_reset_ground_to_native_calls(task_id):
    env = make_catalog_env(DOMAIN, split="heldout")
    env.reset(options={"task_id": task_id})
    for a in np.flatnonzero(env.action_masks()):
        env.reset(options={"task_id": task_id})
        call = env.agent.native_action(int(a))
        assert isinstance(call, dict) and call["tool"] == RegistrationCatalog.actions[a].tool
        obs_text, *_ = env.env.step(call)
        assert_structured(obs_text)


def test_random_masked_rollouts_never_raise():
    """Every enabled action, in whatever state random play reaches, grounds to a call the native
    env accepts or rejects with a structured error (the wrapper's step, unrolled)."""
    env = make_catalog_env(DOMAIN, split="heldout")
    rng = np.random.default_rng(0)
    for tid in heldout_ids()[:40]:
        env.reset(options={"task_id": tid})
        while True:
            choices = np.flatnonzero(env.action_masks())
            if len(choices) > 1:  # submit only once nothing else is enabled
                choices = choices[choices != env.agent.finish]
            a = int(choices[rng.integers(len(choices))])
            call = env.agent.native_action(a)
            assert isinstance(call, dict) and call["tool"] == RegistrationCatalog.actions[a].tool
            obs_text, _, term, trunc, _ = env.env.step(call)
            assert_structured(obs_text)
            env.agent.update(obs_text)
            assert np.all(np.abs(env.agent.observation()) <= 1.0)
            if term or trunc:
                break
