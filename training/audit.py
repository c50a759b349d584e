"""Grade-integrity audit of a domain's release: what a blind or rule-ignoring policy achieves.

``backoffice audit --env all`` prints, per domain and split, the no-op's mean score, every blind
policy's pass rate and mean score, the largest outcome class, how many tasks each documented
rule decides (the tasks the policy ignoring it fails) and what a tree fitted on train over the
task ids predicts of the heldout outcome class, beside the class prior. ``tests/test_integrity.py`` asserts the
bounds; this module measures them for people.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.release import load_release
from backoffice.training.policies import domain_module, get_policy
from backoffice.training.rollout import run_episode
from backoffice.training.tree_probe import id_probe

#: the tree depths of the id attacker the audit reports
ID_TREE_DEPTHS = (1, 2, 4, 6)


@dataclass
class Audit:
    """One domain's audit on one split."""

    domain: str
    split: str
    tasks: int
    noop_score: float
    blind: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (pass rate, mean score)
    rule_binds: dict[str, int] = field(default_factory=dict)  # rule -> tasks the rule-ignoring policy fails
    top_class: tuple[str, float] = ("", 0.0)
    #: the id attacker (:func:`~backoffice.training.tree_probe.id_probe`) per tree depth: heldout
    #: accuracy and the class prior
    id_tree: dict[int, tuple[float, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"domain": self.domain, "split": self.split, "tasks": self.tasks, "noop_score": self.noop_score,
                "blind": {k: {"pass_rate": v[0], "mean_score": v[1]} for k, v in self.blind.items()},
                "rule_binds": dict(self.rule_binds), "top_class": {"name": self.top_class[0], "share": self.top_class[1]},
                "id_tree": {str(d): {"accuracy": a, "prior": p} for d, (a, p) in self.id_tree.items()}}


def audit(domain: str, split: str = "heldout", rules: bool = True,
          progress: Callable[[int], None] | None = None) -> Audit:
    """Run the no-op, every blind policy and (with ``rules``) every rule-ignoring policy over
    ``split`` of ``domain``'s release."""
    rel, env, module = load_release(domain), make_native(domain, split=split), domain_module(domain)
    ids = rel.split_ids[split]

    def grades(make: Callable[[], Any]) -> list[dict[str, Any]]:
        out = [run_episode(env, make(), task_id=t).grade for t in ids]
        if progress is not None:
            progress(len(ids))
        return out

    noop = grades(lambda: get_policy(domain, "noop"))
    result = Audit(domain, split, len(ids), mean(g["score"] for g in noop))
    for name, cls in sorted(module.BLIND_POLICIES.items()):
        g = grades(cls)
        result.blind[name] = (mean(x["pass"] for x in g), mean(x["score"] for x in g))
    if rules:
        for rule in get_domain(domain).rules:
            result.rule_binds[rule] = sum(not x["pass"] for x in grades(module.RULE_POLICIES[rule]))
    counts = Counter(str(rel.answer_key(t).get("outcome_class")) for t in ids)
    top, n = counts.most_common(1)[0]
    result.top_class = (top, n / len(ids))
    for depth in ID_TREE_DEPTHS:
        probe = id_probe(domain, depth=depth)
        result.id_tree[depth] = (probe.accuracy, probe.prior)
    return result


def policies_run(domain: str, rules: bool = True) -> int:
    """How many policies :func:`audit` runs (for a progress bar)."""
    module = domain_module(domain)
    return 1 + len(module.BLIND_POLICIES) + (len(get_domain(domain).rules) if rules else 0)
