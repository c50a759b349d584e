"""The progress reward's kept distance against a fresh grade, step by step (issue 34).

``reward_mode="progress"`` grades again only after a step that changed rows or called one of the
domain's ``grade_reads`` (every step when it declares none), and then re-evaluates only the
checks the step touched (the episode's memo). :func:`check_progress` proves that shortcut
changes nothing: along every policy's trajectory (the oracle, every wrong policy, the random
policy and masked random catalog play) on the train tasks, the distance the env keeps equals the
distance of a grade made from scratch after every step and after the reset, and the terminal
grade, memo and all, is byte for byte a fresh one. ``tests/engine/test_progress.py`` runs it on
one train task in five (every one for the oracle); ``benchmarks/check_progress.py`` on all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.domain import Episode
from backoffice.graders.progress import distance

#: steps after which an episode is cut (every released policy finishes well before)
MAX_STEPS = 200


@dataclass
class ProgressCheck:
    """What :func:`check_progress` saw: counts, and the first mismatches in full."""

    domain: str
    policies: list[str]
    episodes: int = 0
    steps: int = 0
    #: steps that wrote rows (the memo was exercised there)
    writes: int = 0
    #: (policy, task id, step, tool, kept distance, fresh distance); step -1 is the reset
    stale: list[tuple[Any, ...]] = field(default_factory=list)
    #: (policy, task id) whose terminal grade differs from a fresh one
    grades_differ: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.stale and not self.grades_differ


def fresh_grade(env: Any) -> dict[str, Any]:
    """A grade of a native env's current state from scratch: no memo shared with its other grades."""
    key = env.release.answer_key(env._task.task_id)
    return dict(env.domain.grade(Episode(env._task, key, env._snapshot, env.state, env.state.diff(), env.trace)))


def policies_to_check(domain: str) -> list[str]:
    """The oracle, every wrong policy, the random policy and (when the domain has a catalog)
    masked random catalog play: every released policy that acts (the no-op writes nothing)."""
    from backoffice.training.catalog import catalog_target
    from backoffice.training.policies import policy_names

    return [n for n in policy_names(domain) if n != "noop"] + (["catalog-random"] if catalog_target(domain) else [])


def check_progress(domain: str, every: int = 1, policies: list[str] | None = None) -> ProgressCheck:
    """Every ``every``-th train task (every task for the oracle) under each of ``policies``
    (default :func:`policies_to_check`), compared step by step with fresh grades."""
    from backoffice.training.policies import get_policy

    exclude = get_domain(domain).progress_exclude
    env = make_native(domain, split="train", reward_mode="progress")
    out = ProgressCheck(domain, policies if policies is not None else policies_to_check(domain))
    for name in out.policies:
        for k, task_id in enumerate(env.release.split_ids["train"]):
            if name != "oracle" and k % every:
                continue
            policy = get_policy(domain, name, seed=k)
            obs, info = env.reset(**env.reset_args(task_id))
            policy.reset(obs, info)
            out.episodes += 1
            _compare(out, env, fresh_grade(env), exclude, (name, task_id, -1, None))
            for step in range(MAX_STEPS):
                obs, _, terminated, truncated, step_info = env.step(policy.act(obs))
                out.steps += 1
                out.writes += bool(env.trace[-1]["changed_ids"])
                grade = fresh_grade(env)
                _compare(out, env, grade, exclude, (name, task_id, step, env.trace[-1]["tool"]))
                if terminated or truncated:
                    if dumps(step_info["grade"]) != dumps(grade):
                        out.grades_differ.append((name, task_id))
                    break
    return out


def _compare(out: ProgressCheck, env: Any, grade: dict[str, Any], exclude: Any, where: tuple[Any, ...]) -> None:
    """Record ``where`` in ``out.stale`` when the env's kept distance is not ``grade``'s."""
    fresh = distance(grade, exclude)
    if env._distance_now != fresh:
        out.stale.append((*where, env._distance_now, fresh))


__all__ = ["MAX_STEPS", "ProgressCheck", "check_progress", "fresh_grade", "policies_to_check"]
