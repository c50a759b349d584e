"""Nothing visible before the judgement gives the answer away (issue 32).

The attackers here read what an agent reads, then guess instead of judging:

- the **reader's tree**: a tree fitted on train over the brief (tokens, stated numbers, params),
  the allowed tools and the first read (the form, the request, the payment, the case), predicting
  the heldout class. It must gain at most 5 points over the class prior, on the outcome class and
  on the decision class (every way to end that is one decision: all referral reasons are "refer").
- the **position attacker**: the oracle, except that every id it picks from a list (search hits,
  assignments, delegations, open items, held records, rule bands ...) is that list's first, or
  last, entry. The right entry stands anywhere in its list, with at least one decoy beside it.
- **balance**: no decision class holds more than 35 % of a split.
"""

from __future__ import annotations

from collections import Counter

import pytest

from backoffice.envs import get_domain
from backoffice.envs.core.release import load_release
from backoffice.training.integrity.positions import position_attack, position_report
from backoffice.training.integrity.probes import visible_probe
from backoffice.training.policies import domain_module
from conftest import domain_params

pytestmark = pytest.mark.parametrize("domain", domain_params())

#: a tree over what is visible before the judgement may beat the class prior by at most this
MAX_GAIN = 0.05
#: no decision class may hold more than this share of a split
MAX_DECISION_SHARE = 0.35
#: the right entry of a list may stand first (or last) at most this much more often than chance
MAX_POSITION_EXCESS = 0.10
#: the position attacker may pass at most this much more often than picking at random would
MAX_ATTACKER_EXCESS = 0.05
#: lists with fewer choices over the split are too small to judge a position share
MIN_CHOICES = 20


def test_no_decision_class_dominates_a_split(domain: str) -> None:
    """No decision above 35 % of a split, at least three decisions. A domain whose decisions
    cannot meet this together with the blind bound names why in its policies module
    (``DECISION_BALANCE_EXCEPTION``): then the test proves the exception still holds (the bound
    is still exceeded; otherwise the exception is stale) and every constant-decision policy of its
    ``BLIND_POLICIES`` stays under the blind bound (``test_integrity.py``)."""
    rel, dom = load_release(domain), get_domain(domain)
    exception = getattr(domain_module(domain), "DECISION_BALANCE_EXCEPTION", None)
    over = []
    for split in ("train", "heldout"):
        ids = rel.split_ids[split]
        counts = Counter(dom.decision(rel.answer_key(t)) for t in ids)
        top, n = counts.most_common(1)[0]
        assert len(counts) >= 3, (split, dict(counts))
        if n / len(ids) > MAX_DECISION_SHARE:
            over.append((split, top, n, len(ids), dict(counts)))
    if exception is None:
        assert not over, over
    else:
        assert over, f"{domain}'s DECISION_BALANCE_EXCEPTION is stale: every decision is within {MAX_DECISION_SHARE:.0%}"
        pytest.xfail(f"{domain}: {over[0][1]} holds {over[0][2]}/{over[0][3]} ({exception})")


@pytest.mark.parametrize("label", ["decision", "outcome_class"])
@pytest.mark.parametrize("parts", [("read",), ("brief", "tools", "read")], ids=["first_read", "everything_before"])
def test_what_is_visible_before_the_judgement_does_not_predict_it(domain: str, parts: tuple[str, ...], label: str) -> None:
    gains = {}
    for depth in (1, 2, 3, 4, 6):
        probe = visible_probe(domain, depth=depth, parts=parts, label=label)
        gains[depth] = round(probe.gain, 3)
        assert probe.gain <= MAX_GAIN, (f"a depth-{depth} tree over {'+'.join(parts)} predicts the heldout {label} "
                                        f"{probe.accuracy:.1%} of the time against a prior of {probe.prior:.1%}")


def test_the_right_entry_stands_anywhere_in_its_list_beside_a_decoy(domain: str) -> None:
    report = position_report(domain, "heldout")
    assert report, "the oracle never picks an entry from a list: nothing to measure"
    for lp in report:
        assert lp.singletons == 0, f"{lp.list_name}: {lp.singletons:.0%} of its {lp.choices} choices have no decoy"
        if lp.choices >= MIN_CHOICES:
            assert lp.first <= lp.chance + MAX_POSITION_EXCESS, lp.to_json()
            assert lp.last <= lp.chance + MAX_POSITION_EXCESS, lp.to_json()


@pytest.mark.parametrize("pick", ["first", "last"])
def test_picking_by_position_passes_no_more_than_chance(domain: str, pick: str) -> None:
    a = position_attack(domain, pick)
    assert a.pass_rate <= a.chance + MAX_ATTACKER_EXCESS, (
        f"the oracle picking the {pick} entry passes {a.pass_rate:.1%} of {a.tasks} tasks (chance {a.chance:.1%})")
