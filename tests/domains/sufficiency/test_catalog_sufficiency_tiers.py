"""Sufficiency catalog tiers ``facts`` and ``raw`` (issue 14), what is particular to
sufficiency: no action decides which record to attach or which items to request, the choices of
record and items stay valid (legality-only mask) and are the agent's. The tests every domain's
tiers share (spec, conclusions features, feature policy, mask alone, answer key, random actions)
are tests/catalog/test_catalog_tiers.py's."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import action_index, heldout_env, heldout_ids, tier_class

from backoffice.training.catalog import CatalogEnv
from backoffice.training.domains.sufficiency.catalog.desk import N_HELD, SUBSETS

DOMAIN = "sufficiency"
TIERS = {t: tier_class("sufficiency", t) for t in ("facts", "raw")}
each_tier = pytest.mark.parametrize("tier", list(TIERS))
READS = ("get_case", "get_requirements", "search_held_records", "list_documents")


def read_everything(env: CatalogEnv, tier: str, tid: str) -> None:
    """Reset to ``tid`` and read the case, the requirements and every page of the held records
    and the documents."""
    env.reset(options={"task_id": tid})
    for name in READS:
        env.step(action_index(DOMAIN, tier, name))
        while env.action_masks()[action_index(DOMAIN, tier, name)] and name in ("search_held_records", "list_documents"):
            env.step(action_index(DOMAIN, tier, name))


@each_tier
def test_no_action_decides_for_the_agent(tier: str) -> None:
    """No action decides for the agent which record to attach or which items to request."""
    assert not {a.name for a in TIERS[tier].actions} & {"attach_held_record", "request_missing"}


# -- legality only; the choices are the agent's ----------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_point(tier: str) -> None:
    """Once everything is read, every judgement is valid, whatever the right one: attach any held
    record not on the case, request any subset of the required items, release, route either way."""
    env = heldout_env(DOMAIN, tier)
    names = [a.name for a in TIERS[tier].actions]
    for tid in heldout_ids(DOMAIN)[:40]:
        read_everything(env, tier, tid)
        desk = env.agent.spec.desk
        valid = {names[a] for a in np.flatnonzero(env.action_masks())}
        expected = {"release_case", "route_standard", "route_senior", "submit",
                    *(f"request_items[{','.join(map(str, s))}]" for s in SUBSETS),
                    *(f"attach_held_record[{h}]" for h, r in enumerate(desk.held[:N_HELD]) if r["id"] not in desk.attached)}
        assert expected <= valid, (tid, expected - valid)


@each_tier
def test_actions_ground_the_agents_choice(tier: str) -> None:
    """``request_items[S]`` asks for exactly the items of slots ``S``, ``attach_held_record[h]``
    attaches the h-th record listed; requesting every item where some are covered fails the grade
    (over_request or ignored_held_record): the choice matters and the catalog does not make it."""
    env = heldout_env(DOMAIN, tier)
    everything = action_index(DOMAIN, tier, "request_items[0,1,2,3]")
    wrong = 0
    for tid in heldout_ids(DOMAIN)[:24]:
        read_everything(env, tier, tid)
        desk = env.agent.spec.desk
        call = env.agent.native_action(everything)
        assert call["args"]["items"] == [r["item_type"] for r in desk.requirements]
        for h, record in enumerate(desk.held[:N_HELD]):
            assert env.agent.native_action(action_index(DOMAIN, tier, f"attach_held_record[{h}]"))["args"]["record_id"] == record["id"]
        env.step(everything)
        *_, info = env.step(env.agent.finish)
        wrong += bool({"over_request", "ignored_held_record"} & set(info["grade"]["failure_codes"]))
    assert wrong >= 12
