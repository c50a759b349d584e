"""Assembling a grade: checks + the guardrail + domain fields + process metrics.

Every domain grader ends with :func:`finalize`, which adds the guardrail check (no write
outside the answer key's ``targets``) so no grader can forget it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from backoffice.graders.checks import result
from backoffice.graders.diff import changed_keys

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode


def target_matches(key: str, pattern: str) -> bool:
    """fnmatch semantics, with the common shapes (``table:id``, ``table:PREFIX-*``) matched
    without compiling a pattern: generated tasks bring new patterns every episode."""
    if "[" not in pattern and "?" not in pattern:
        star = pattern.find("*")
        if star < 0:
            return key == pattern
        if star == len(pattern) - 1:
            return key.startswith(pattern[:-1])
    return fnmatchcase(key, pattern)


def forbidden_writes(episode: Episode, targets: Sequence[str]) -> list[str]:
    """``table:id`` keys changed by the episode that no target pattern (fnmatch) allows, sorted.
    With ``episode.memo``, a table's part is kept while its diff is the same object (the
    progress reward's shared diff keeps a table's diff until the table is written)."""
    memo = getattr(episode, "memo", None)  # (a duck-typed episode without one: no memo)
    allowed = _allowed(targets, memo)
    out: list[str] = []
    for table, d in episode.diff.items():
        kept = memo.get(("forbidden", table, id(targets))) if memo is not None else None
        if kept is not None and kept[0] is d and kept[1] is targets:
            out.extend(kept[2])
            continue
        bad = [k for k in changed_keys({table: d}) if not allowed(k)]
        if memo is not None:
            memo[("forbidden", table, id(targets))] = (d, targets, bad)
        out.extend(bad)
    out.sort()
    return out


def _allowed(targets: Sequence[str], memo: dict[Any, Any] | None) -> Callable[[str], bool]:
    """Whether a ``table:id`` key matches one of ``targets`` (fnmatch), the common shapes a set
    lookup and one ``startswith``; built once an episode with ``memo``."""
    if memo is not None:
        kept = memo.get(("allowed", id(targets)))
        if kept is not None and kept[0] is targets:
            return kept[1]
    exact, prefixes, patterns = set(), [], []
    for t in targets:
        if "[" in t or "?" in t:
            patterns.append(t)
        elif "*" not in t:
            exact.add(t)
        elif t.find("*") == len(t) - 1:
            prefixes.append(t[:-1])
        else:
            patterns.append(t)
    starts = tuple(prefixes)

    def allowed(k: str) -> bool:
        return k in exact or bool(starts and k.startswith(starts)) or any(fnmatchcase(k, p) for p in patterns)

    if memo is not None:
        memo[("allowed", id(targets))] = (targets, allowed)
    return allowed


def guardrail(episode: Episode, code: str) -> dict[str, Any]:
    """The collateral-damage gate: no write outside the answer key's ``targets``."""
    bad = forbidden_writes(episode, episode.key.get("targets", ()))
    return result("guardrail", "guardrail", not bad, code, {"forbidden_writes": bad} if bad else None, gate=True)


#: the most a grade with a failed gate (guardrail) can score, whatever work was done
GATE_CAP = 0.25


def work_share(results: Sequence[Mapping[str, Any]]) -> float:
    """The share of *work* checks (``gate=False``) passed, whatever the gates say. Raises
    ``ValueError`` when no work check is given."""
    work = [c for c in results if not c.get("gate")]
    if not work:
        raise ValueError("a grade needs at least one work check (gate=False)")
    return sum(bool(c["pass"]) for c in work) / len(work)


def score_of(results: Sequence[Mapping[str, Any]]) -> float:
    """The score of a list of check results: the share of *work* checks passed
    (:func:`work_share`), capped at :data:`GATE_CAP` when any *gate* fails.

    ``score == 1.0`` exactly when every check passes (``pass``); a gate that holds earns
    nothing (doing nothing holds every gate), so submitting at once scores only the work the
    task needed none of. Raises ``ValueError`` when no work check is given.
    """
    share = work_share(results)
    if not all(c["pass"] for c in results if c.get("gate")):
        share = min(share, GATE_CAP)
    return share


def outcome(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A grade's ``pass`` (every check passes, gates included) and ``score``
    (:func:`score_of`) from its check results."""
    return {"pass": all(c["pass"] for c in results), "score": score_of(results)}


def process_metrics(trace: Sequence[Mapping[str, Any]], **extra: Any) -> dict[str, Any]:
    """Steps, rejected calls, calls per tool and error codes seen (plus domain extras)."""
    tools = Counter([r["tool"] or "<invalid>" for r in trace])
    errors = Counter([code for r in trace if (code := r["error_code"])])
    return {
        "steps": len(trace),
        "rejected_calls": sum(errors.values()),
        "tool_calls": dict(sorted(tools.items())),
        "error_codes": dict(sorted(errors.items())),
        **extra,
    }


def finalize(
    episode: Episode,
    checks: Sequence[Mapping[str, Any]],
    fields: Mapping[str, Any],
    *,
    guardrail_code: str = "forbidden_write",
    metrics: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The grade dict: ``pass``, ``score``, ``checks``, ``failure_codes``, domain ``fields``,
    ``process_metrics``. ``pass`` needs every check (guardrail included); ``score`` is
    :func:`score_of` the checks (work done, gated by the guardrails). With
    ``episode.checks_only`` the dict holds ``checks`` alone.

    The check results are the grader's own objects, not copies: with ``episode.memo`` they are
    shared with the episode's other grades, so read such a grade, never change it (the env
    hands out plain copies)."""
    results = [*checks, guardrail(episode, guardrail_code)]
    if episode.checks_only:  # the progress reward's distance reads the checks alone
        return {"checks": results}
    codes = sorted({c["failure_code"] for c in results if not c["pass"] and c["failure_code"]})
    grade: dict[str, Any] = {**outcome(results), "checks": results, "failure_codes": codes}
    clash = set(fields) & set(grade)
    if clash:
        raise ValueError(f"domain fields shadow grade fields: {sorted(clash)}")
    grade.update(fields)
    grade["process_metrics"] = process_metrics(episode.trace, **(metrics or {}))
    return grade
