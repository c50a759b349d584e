"""Grade-integrity audit of a domain's release: what a blind, shallow or rule-ignoring policy
achieves, and what an attacker can read before the judgement.

``backoffice audit --env all`` prints, per domain and split: the no-op's mean score; every blind
policy's pass rate, mean score and share of passes in an end state other than the oracle's; the
largest outcome and decision classes; how many tasks each documented rule decides (the tasks the
policy ignoring it fails); what a tree fitted on train predicts of the heldout class from the task
ids, from the first read, and from everything visible before the judgement, beside the prior;
where the right entry stands in each list the oracle picks from, and what the position attacker
passes beside chance. ``tests/integrity/test_integrity.py`` and ``tests/integrity/test_leakage.py`` assert the
bounds; this module measures them for people.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.release import load_release
from backoffice.training.eval.rollout import run_episode
from backoffice.training.integrity.positions import Attack, ListPositions, position_attack, position_report
from backoffice.training.integrity.probes import id_probe, visible_probe
from backoffice.training.policies import domain_module, get_policy
from backoffice.training.policies.base import Policy

#: the tree depths of the id and reader attackers the audit reports
TREE_DEPTHS = (1, 2, 4, 6)
#: what the reader attacker sees: the first read alone, and everything before the judgement
READER_PARTS = {"first_read": ("read",), "everything_before": ("brief", "tools", "read")}


def end_states(domain: str, make: Callable[[], Policy], split: str = "heldout") -> list[tuple[dict[str, Any], str]]:
    """``(grade, end-state content hash)`` of a fresh ``make()`` policy on every task of ``split``."""
    env = make_native(domain, split=split)
    out = []
    for task_id in load_release(domain).split_ids[split]:
        grade = run_episode(env, make(), task_id=task_id).grade
        out.append((grade, env.unwrapped.state.content_hash()))
    return out


def wrong_passes(runs: Sequence[tuple[dict[str, Any], str]], oracle: Sequence[tuple[dict[str, Any], str]]) -> float:
    """The share of tasks a policy passes in an end state other than the oracle's: a grader
    accepting what the task does not ask for (a pass in the oracle's end state is a right guess)."""
    return sum(bool(g["pass"]) and h != o for (g, h), (_, o) in zip(runs, oracle)) / len(runs)


@dataclass
class Blind:
    """One blind policy on a split."""

    pass_rate: float
    mean_score: float
    wrong_pass: float


@dataclass
class Audit:
    """One domain's audit on one split."""

    domain: str
    split: str
    tasks: int
    noop_score: float
    blind: dict[str, Blind] = field(default_factory=dict)
    rule_binds: dict[str, int] = field(default_factory=dict)  # rule -> tasks the rule-ignoring policy fails
    top_class: tuple[str, float] = ("", 0.0)
    top_decision: tuple[str, float] = ("", 0.0)
    #: the id attacker (:func:`~backoffice.training.integrity.probes.id_probe`) per tree depth: heldout
    #: accuracy and the class prior
    id_tree: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: the reader attacker (:func:`~backoffice.training.integrity.probes.visible_probe`, decision class)
    #: per view (first_read, everything_before) and depth: heldout accuracy and the prior
    reader_tree: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    positions: list[ListPositions] = field(default_factory=list)
    position_attacks: list[Attack] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"domain": self.domain, "split": self.split, "tasks": self.tasks, "noop_score": self.noop_score,
                "blind": {k: {"pass_rate": v.pass_rate, "mean_score": v.mean_score, "wrong_pass": v.wrong_pass}
                          for k, v in self.blind.items()},
                "rule_binds": dict(self.rule_binds),
                "top_class": {"name": self.top_class[0], "share": self.top_class[1]},
                "top_decision": {"name": self.top_decision[0], "share": self.top_decision[1]},
                "id_tree": {str(d): {"accuracy": a, "prior": p} for d, (a, p) in self.id_tree.items()},
                "reader_tree": {view: {str(d): {"accuracy": a, "prior": p} for d, (a, p) in by_depth.items()}
                                for view, by_depth in self.reader_tree.items()},
                "positions": [p.to_json() for p in self.positions],
                "position_attacks": [a.to_json() for a in self.position_attacks]}


def _top(labels: Sequence[str]) -> tuple[str, float]:
    name, n = Counter(labels).most_common(1)[0]
    return name, n / len(labels)


def audit(domain: str, split: str = "heldout", rules: bool = True,
          progress: Callable[[int], None] | None = None) -> Audit:
    """Run the no-op, every blind policy, the position attackers and (with ``rules``) every
    rule-ignoring policy over ``split`` of ``domain``'s release; fit the id and reader trees."""
    rel, module, dom = load_release(domain), domain_module(domain), get_domain(domain)
    ids = rel.split_ids[split]

    def runs(make: Callable[[], Policy]) -> list[tuple[dict[str, Any], str]]:
        out = end_states(domain, make, split)
        if progress is not None:
            progress(len(ids))
        return out

    noop = runs(lambda: get_policy(domain, "noop"))
    oracle = runs(lambda: get_policy(domain, "oracle"))
    result = Audit(domain, split, len(ids), mean(g["score"] for g, _ in noop))
    for name, cls in sorted(module.BLIND_POLICIES.items()):
        got = runs(cls)
        result.blind[name] = Blind(mean(g["pass"] for g, _ in got), mean(g["score"] for g, _ in got), wrong_passes(got, oracle))
    if rules:
        for rule in dom.rules:
            result.rule_binds[rule] = sum(not g["pass"] for g, _ in runs(module.RULE_POLICIES[rule]))
    keys = [rel.answer_key(t) for t in ids]
    result.top_class = _top([str(k.get("outcome_class")) for k in keys])
    result.top_decision = _top([dom.decision(k) for k in keys])
    for depth in TREE_DEPTHS:
        probe = id_probe(domain, depth=depth)
        result.id_tree[depth] = (probe.accuracy, probe.prior)
    if split == "heldout":  # the trees are fitted on train and scored on heldout
        for view, parts in READER_PARTS.items():
            result.reader_tree[view] = {}
            for depth in TREE_DEPTHS:
                probe = visible_probe(domain, depth=depth, parts=parts, label="decision")
                result.reader_tree[view][depth] = (probe.accuracy, probe.prior)
    result.positions = position_report(domain, split)
    for pick in ("first", "last"):
        result.position_attacks.append(position_attack(domain, pick, split))
        if progress is not None:
            progress(len(ids))
    return result


def policies_run(domain: str, rules: bool = True) -> int:
    """How many passes over the split :func:`audit` makes (for a progress bar)."""
    module = domain_module(domain)
    return 2 + len(module.BLIND_POLICIES) + (len(get_domain(domain).rules) if rules else 0) + 2
