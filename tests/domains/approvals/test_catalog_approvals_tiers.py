"""The ``facts`` and ``raw`` tiers of the approvals catalog (issue 14), what is particular to
approvals: every decision and escalation names what it cites, the decisions are the agent's (the
mask keeps every well-formed decision and citation valid, the actions cite the slot they name) and
the choices left to the agent matter. The tests every domain's tiers share (spec, conclusions
features, feature policy, mask alone, answer key, random actions) are tests/catalog/test_catalog_tiers.py's."""

from __future__ import annotations

import pytest
from tiers import heldout_ids

from backoffice.training.catalog import make_catalog_env
from backoffice.training.catalog.tier import tier_spec
from backoffice.training.domains.approvals.catalog import CATALOG
from backoffice.training.domains.approvals.catalog.desk import N_ROWS

TIER_CLASSES = {t: tier_spec(CATALOG, CATALOG.tiers[t]) for t in ("facts", "raw")}
pytestmark = pytest.mark.parametrize("tier", sorted(TIER_CLASSES))


def test_decisions_and_escalations_name_their_citation(tier: str) -> None:
    """The conclusions tier's judging actions are gone: every decision and escalation names its citation."""
    for a in TIER_CLASSES[tier].actions:
        if a.tool in ("record_decision", "escalate"):
            assert a.name.endswith("]") or a.name.startswith("escalate_cite_"), a.name


def test_decisions_are_the_agents(tier: str) -> None:
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
    for tid in heldout_ids("approvals")[:120]:
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
                rows = spec.desk.rows()
                band = spec.desk.band()
                f = spec.desk.file()
                assert len(f["assignments"]) + len(spec.desk.on_file_delegations() or []) <= N_ROWS, tid  # every row has a slot
                for n in decisions:
                    call = spec.to_call(act[n])
                    assert bool(mask[act[n]]) == (call is not None), (tid, n)
                    if n.startswith("decide_"):
                        s = int(n[n.index("[") + 1:-1])
                        assert mask[act[n]] == (s < len(rows)), (tid, n)
                        if s < len(rows):
                            assert call["args"]["basis_ids"] == [band["id"], rows[s][1]["id"]]
                            assert call["args"]["approver_id"] == spec.desk.on_file
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
        assert info["is_success"], tid
    assert {"decide_reject", "decide_hold", "decide_proceed", "escalate_cite", "escalate_cite_request",
            "escalate_cite_requester"} <= seen_outcomes
    assert namesakes > 0


def _sweep(env, make, ids: tuple[str, ...]) -> tuple[int, set[str]]:
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


def test_the_choices_left_to_the_agent_matter(tier: str) -> None:
    """The catalog does not pick for the agent: opening the first namesake's file, or citing
    the first row instead of the authorising one, fails tasks the feature policy passes."""
    env = make_catalog_env("approvals", split="heldout", tier=tier)
    act = {a.name: i for i, a in enumerate(env.agent.spec.actions)}
    ids = heldout_ids("approvals")[:80]

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
