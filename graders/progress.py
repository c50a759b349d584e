"""The end-state distance of a grade: how far the state is from the answer key's accepted end
state, counted in rows, for the training-only ``reward_mode="progress"``.

Each failing check contributes the number of rows it finds wrong, read from its ``detail``:
``row_equals`` the rows missing or extra (a multiset difference of the projected rows),
``field_equals``/``status_is`` the selected rows with a wrong value, ``count_is`` the count's
gap, ``no_change`` and the guardrail the rows changed that must not be; any other failing check
counts the items its detail lists (a list, or the lists among a mapping's values: a remittance
check's lines still unallocated, a registration check's wrong fields), and one when it lists
none. A passing check counts zero, so the distance is 0 exactly when the grade passes. It is
computed from the grade alone and never changes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

from backoffice.envs.core.canonical import dumps

#: the version of :func:`distance`, recorded with every model trained on the progress reward
#: (``summary.json``'s ``progress_distance``): 1 counted one per failing domain check, 2 counts
#: the items such a check lists (a remittance allocation pays per line, not for the last line)
DISTANCE_VERSION = 2


def check_distance(check: Mapping[str, Any], memo: dict[Any, Any] | None = None) -> int:
    """Rows (or listed items) a failing check finds wrong, at least 1; 0 for a passing check.
    ``memo`` keeps a ``row_equals`` detail's expected rows counted by the list's identity (one
    episode's results share the list: see :func:`~backoffice.graders.checks.run_checks`)."""
    if check.get("pass"):
        return 0
    detail = check.get("detail")
    kind = check.get("kind")
    n = 1
    if isinstance(detail, Mapping):
        if kind == "row_equals" and isinstance(detail.get("expected"), list) and isinstance(detail.get("got"), list):
            n = _rows_apart(detail["expected"], detail["got"], memo)
        elif kind in ("field_equals", "status_is") and isinstance(detail.get("got"), list):
            n = sum(1 for v in detail["got"] if v != detail.get("expected"))
        elif kind == "count_is" and isinstance(detail.get("got"), int) and isinstance(detail.get("expected"), int):
            n = abs(detail["got"] - detail["expected"])
        elif kind == "guardrail" and isinstance(detail.get("forbidden_writes"), list):
            n = len(detail["forbidden_writes"])
        else:  # a domain check that lists what is wrong: count the listed items
            n = sum(len(v) for v in detail.values() if isinstance(v, list))
    elif isinstance(detail, list):  # ``no_change``'s changed rows, a check's list of wrong fields
        n = len(detail)
    return max(1, n)


def _rows_apart(expected: list[Any], got: list[Any], memo: dict[Any, Any] | None) -> int:
    """The size of the multiset difference both ways of two row lists (rows compared as canonical
    JSON): the rows missing plus the rows extra."""
    want: Counter[bytes] | None = None
    if memo is not None:
        kept = memo.get(("expected", id(expected)))
        if kept is not None and kept[0] is expected:
            want = kept[1]
    if want is None:
        want = Counter(dumps(r) for r in expected)
        if memo is not None:
            memo[("expected", id(expected))] = (expected, want)
    have = Counter(dumps(r) for r in got)
    n = sum(c - have[k] if c > have[k] else have[k] - c for k, c in want.items())
    return n + sum(c for k, c in have.items() if k not in want)


def distance(grade: Mapping[str, Any], exclude: Collection[str] = (), memo: dict[Any, Any] | None = None) -> int:
    """The end-state distance of a grade: the sum of its checks' :func:`check_distance`,
    without the checks whose id is in ``exclude`` (a domain's ``progress_exclude``). ``memo``
    keeps each failing check's distance by the identity of its ``detail`` (and its kind, all
    :func:`check_distance` reads of a failing check): one episode's grades share the results
    :func:`~backoffice.graders.checks.run_checks` kept, and the env's plain copy of a grade is
    never what it measures (it reads the grade as graded), so a detail kept is the same object,
    never mutated."""
    if memo is None:
        return sum(check_distance(c) for c in grade.get("checks", ()) if c.get("id") not in exclude)
    total = 0
    for c in grade.get("checks", ()):
        if c.get("pass") or c.get("id") in exclude:
            continue
        detail = c.get("detail")
        if detail is None:
            total += 1  # a failing check that lists nothing counts one
            continue
        key = (id(detail), c.get("kind"))
        kept = memo.get(key)
        if kept is None or kept[0] is not detail:
            kept = memo[key] = (detail, check_distance(c, memo))  # the detail kept: its id stays its own
        total += kept[1]
    return total
