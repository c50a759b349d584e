"""Remittance catalog tiers ``facts`` and ``raw`` (issue 14), what is particular to remittance:
judgements stay valid at the decision points (legality-only mask: the claim to open, the amount
to allocate, the case to open, the disposition). The tests every domain's tiers share (spec,
conclusions features, feature policy, mask alone, answer key, random actions) are
tests/catalog/test_catalog_tiers.py's."""

from __future__ import annotations

import pytest
from tiers import action_index, heldout_env, heldout_ids, tier_class

from backoffice.training.domains.remittance.catalog.desk import N_HITS, N_LINES

DOMAIN = "remittance"
TIERS = {t: tier_class("remittance", t) for t in ("facts", "raw")}
each_tier = pytest.mark.parametrize("tier", list(TIERS))
READS = ("get_policies", "get_payment", "list_payments")


def first_search(tier: str) -> str:
    return "search_next_line" if tier == "facts" else "search_line[0]"


# -- legality only ------------------------------------------------------------------------------------
@each_tier
def test_judgements_stay_valid_at_the_decision_points(tier: str) -> None:
    """Once the three reads are back every disposition and the duplicate case are valid (and in
    raw every line can be searched first); once a line is searched every hit can be opened and
    every line case and a payer query are valid; on whichever hit is opened, right or wrong,
    the allocation of either amount, the small write-off and the adjustments are valid exactly
    when the tools would take them."""
    env = heldout_env(DOMAIN, tier)
    valid = lambda name: bool(env.action_masks()[action_index(DOMAIN, tier, name)])  # noqa: E731
    checked = 0
    for tid in heldout_ids(DOMAIN)[:24]:
        env.reset(options={"task_id": tid})
        for read in READS:
            env.step(action_index(DOMAIN, tier, read))
        spec = env.agent.spec.desk
        for name in ("post_apply", "post_hold", "post_return", "case_duplicate"):
            assert valid(name), (tid, name)
        if tier == "raw":
            assert all(valid(f"search_line[{index}]") == (index < len(spec.lines)) for index in range(N_LINES))
        env.step(action_index(DOMAIN, tier, first_search(tier)))
        line = spec.lines[0]
        for name in ("case_underpayment", "case_refund", "case_unidentified", "query_payer", "post_apply"):
            assert valid(name), (tid, name)
        assert valid("search_by_name") == bool(line.line["claim_ref"])
        assert [valid(f"open_hit[{i}]") for i in range(N_HITS)] == [i < len(line.hits) for i in range(N_HITS)]
        paid = line.line["paid_amount"]
        for i, hit in enumerate(list(line.hits)):
            env.step(action_index(DOMAIN, tier, f"open_hit[{i}]"))
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
