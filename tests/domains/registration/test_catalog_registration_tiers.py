"""Registration catalog tiers ``facts`` and ``raw`` (issue 14), what is particular to
registration: judgements stay valid at the decision point (legality-only mask) and a referral's
basis is the agent's. The tests every domain's tiers share (spec, conclusions features, feature
policy, mask alone, answer key, random actions) are tests/catalog/test_catalog_tiers.py's."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import action_index, heldout_env, heldout_ids, tier_class

from backoffice.training.domains.registration.catalog.desk import N_SLOTS

DOMAIN = "registration"
TIERS = {t: tier_class("registration", t) for t in ("facts", "raw")}
each_tier = pytest.mark.parametrize("tier", list(TIERS))


# -- legality only ------------------------------------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_point(tier: str) -> None:
    """Once the form, the variants and the search are read, every decision is valid, whatever
    the right one: open any result, create with or without the identifier, refer for any reason
    (citing whatever was opened)."""
    env = heldout_env(DOMAIN, tier)
    names = [a.name for a in TIERS[tier].actions]
    reads = ("get_intake_form", "get_name_variants[given]", "get_name_variants[family]", "search_patients")
    for tid in heldout_ids(DOMAIN)[:40]:
        env.reset(options={"task_id": tid})
        for read in reads:
            env.step(action_index(DOMAIN, tier, read))
        spec = env.agent.spec.desk
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
    env = heldout_env(DOMAIN, tier)
    policy = TIERS[tier].feature_policy(env.agent)
    refers = {action_index(DOMAIN, tier, f"refer_to_human[{r}]") for r in ("ambiguous_match", "deceased_match", "identity_conflict")}
    opens = {action_index(DOMAIN, tier, f"get_patient[{i}]") for i in range(N_SLOTS)}
    checked = 0
    for tid in heldout_ids(DOMAIN)[:40]:
        obs, _ = env.reset(options={"task_id": tid})
        a = policy(obs, env.action_masks())
        while a not in opens | refers and a != env.agent.finish and not env.agent.spec.desk.created:
            obs, *_ = env.step(a)
            a = policy(obs, env.action_masks())
        while a in opens:  # the feature policy opens the records it will cite, then refers
            obs, *_ = env.step(a)
            a = policy(obs, env.action_masks())
        if a not in refers:
            continue
        env.reset(options={"task_id": tid})
        for read in ("get_intake_form", "get_name_variants[given]", "get_name_variants[family]", "search_patients"):
            env.step(action_index(DOMAIN, tier, read))
        *_, info = env.step(a)
        assert "wrong_referral_basis" in info["grade"]["failure_codes"], tid
        checked += 1
    assert checked > 5
