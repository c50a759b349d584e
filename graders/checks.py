"""The declarative check engine every domain grader uses.

A check is a dict: ``{"id": ..., "kind": ..., "failure_code": ..., "gate": bool, <kind's fields>}``,
stored in the answer key or built by a grader. :func:`run_checks` evaluates a list of them against
the end state, the diff and the trace, and returns one result per check::

    {"id", "kind", "pass", "gate", "failure_code", "detail"}

``gate`` (default false) marks a guardrail rather than work; see :func:`result`.

Row selectors: ``row_id`` (one row) or ``where`` (field equality; a value ``{"$in": [...]}``
matches any of the list); ``created_only`` restricts to rows the episode created.

Kinds:
    row_equals       selected rows, projected on ``fields`` and sorted by ``order_by``, equal ``rows``
    field_equals     every selected row (at least one) has ``field == value``
    status_is        ``field_equals`` on ``status``
    count_is         the number of selected rows is ``count``
    no_change        ``table`` (or each of ``tables``) has no change outside ``except_ids`` / ``except_where``
    tool_called      a call of ``tool`` whose args contain ``args`` (and ``status``, default ok) exists
    tool_not_called  no call of ``tool`` matching ``args`` (any status unless given) happened
                     (before the first ok call matching ``before``, when given; a ``before``
                     with ``after`` counts only once an ok call matching ``after`` was made:
                     "not before the wait that follows the required approval request")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from backoffice.graders.diff import NO_CHANGES

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode

CheckFn = Callable[[Mapping[str, Any], "Episode"], tuple[bool, Any]]
CHECKS: dict[str, CheckFn] = {}


def register_check(kind: str) -> Callable[[CheckFn], CheckFn]:
    """Add a check kind (a domain may add one when no generic kind fits)."""

    def deco(fn: CheckFn) -> CheckFn:
        if kind in CHECKS:
            raise ValueError(f"check kind {kind!r} registered twice")
        CHECKS[kind] = fn
        return fn

    return deco


def result(
    check_id: str, kind: str, passed: bool, failure_code: str | None, detail: Any = None, *, gate: bool = False
) -> dict[str, Any]:
    """One check result in the shape every grade uses.

    ``gate`` marks a guardrail (a prohibition: no forbidden write, no duplicate decision, no
    unneeded request ...). A gate that holds earns nothing, since doing nothing holds it too;
    a gate that fails caps the score (see :func:`backoffice.graders.grade.score_of`). Every
    other check is *work*: something the task needs done, and the score is the share of it done.
    """
    return {
        "id": check_id, "kind": kind, "pass": bool(passed), "gate": bool(gate),
        "failure_code": None if passed else failure_code, "detail": detail,
    }


def run_checks(specs: Sequence[Mapping[str, Any]], episode: Episode) -> list[dict[str, Any]]:
    """One result per check spec, in order. With ``episode.memo`` (one episode's grades share
    it), a generic kind's result is kept until a table it reads is written or a call of a tool
    it reads is appended to the trace (:func:`reads`): later grades of the episode pay for the
    checks a step touched only. The results are shared between those grades: never mutate one."""
    memo = episode.memo
    state, trace = episode.state, episode.trace
    out = []
    for spec in specs:
        kind = spec["kind"]
        fn = CHECKS.get(kind)
        if fn is None:
            raise ValueError(f"unknown check kind {kind!r}")
        if memo is None:
            passed, detail = fn(spec, episode)
            out.append(result(spec.get("id", kind), kind, passed, spec.get("failure_code"), detail, gate=bool(spec.get("gate", False))))
            continue
        slot = memo.get(("check", id(spec)))
        if slot is None or slot[0] is not spec:  # the spec kept: its id stays its own
            slot = memo[("check", id(spec))] = [spec, reads(spec), None, 0, None]
        deps = slot[1]
        if deps is not None:
            tables, tools = deps
            versions = tuple([state.version(t) for t in tables])
            seen = slot[3]
            if (slot[4] is not None and slot[2] == versions and seen <= len(trace)
                    and not (tools and any(r["tool"] in tools for r in trace[seen:]))):
                out.append(slot[4])
                continue
        passed, detail = fn(spec, episode)
        res = result(spec.get("id", kind), kind, passed, spec.get("failure_code"), detail, gate=bool(spec.get("gate", False)))
        if deps is not None:
            slot[2], slot[3], slot[4] = versions, len(trace), res
        out.append(res)
    return out


def reads(spec: Mapping[str, Any]) -> tuple[tuple[str, ...], frozenset[Any]] | None:
    """What a generic check reads: the tables whose rows (and diff) it selects and the tools whose
    trace records it matches; ``None`` for a kind a domain registered (never kept)."""
    kind = spec["kind"]
    if kind in _TABLE_KINDS:
        return (spec["table"],), frozenset()
    if kind == "no_change":
        return tuple(spec.get("tables") or [spec["table"]]), frozenset()
    if kind == "tool_called":
        return (), frozenset((spec["tool"],))
    if kind == "tool_not_called":
        before = spec.get("before") or {}
        after = before.get("after") or {}
        return (), frozenset(t for t in (spec["tool"], before.get("tool"), after.get("tool")) if t is not None)
    return None


#: the kinds that read the rows of ``spec["table"]`` (and its diff) only
_TABLE_KINDS = frozenset(("row_equals", "field_equals", "status_is", "count_is"))


# -- selectors -----------------------------------------------------------------------------
_PLAIN = (str, int, float, bool, type(None))


def matches(row: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    if not where:
        return True
    for field, want in where.items():
        have = row.get(field)
        if isinstance(want, _PLAIN):  # fast path: plain values compare by equality
            if have != want:
                return False
        elif isinstance(want, Mapping) and "$in" in want:
            if have not in want["$in"]:
                return False
        elif have != want:
            return False
    return True


def select(spec: Mapping[str, Any], episode: Episode) -> list[dict[str, Any]]:
    table = spec["table"]
    state = episode.state
    if "row_id" in spec:
        row = state.get(table, spec["row_id"])
        rows = [row] if row is not None else []
    elif spec.get("created_only"):
        # only rows the episode created can match: O(rows changed), not O(table); same id order
        where = spec.get("where")
        # (live rows, not copies: checks only read them)
        got = (state.peek(table, rid) for rid in episode.diff.get(table, NO_CHANGES).get("created", ()))
        return [r for r in got if r is not None and matches(r, where)]
    elif (named := _id_list(spec.get("where"))) is not None:
        # ``where: {"id": {"$in": [...]}}`` names its rows: fetch them, in id order like state.rows
        got = (state.peek(table, rid) for rid in named)
        rows = [r for r in got if r is not None and matches(r, spec["where"])]
    else:
        # plain-valued fields of ``where`` go to the store's indexes; the rest filter the hits
        where = spec.get("where") or {}
        equals = {k: v for k, v in where.items() if isinstance(v, _PLAIN)}
        rest = {k: v for k, v in where.items() if k not in equals}
        rows = state.select_where(table, equals, (lambda r: matches(r, rest)) if rest else None)
    if spec.get("created_only"):
        created = set(episode.diff.get(table, NO_CHANGES).get("created", ()))
        rows = [r for r in rows if r["id"] in created]
    return rows


def _id_list(where: Any) -> list[str] | None:
    """The sorted ids of a ``where`` that selects by ``{"id": {"$in": [str, ...]}}``, else ``None``."""
    if not isinstance(where, Mapping):
        return None
    want = where.get("id")
    if not isinstance(want, Mapping) or not isinstance(want.get("$in"), (list, tuple)):
        return None
    ids = want["$in"]
    if not all(isinstance(i, str) for i in ids):
        return None
    return sorted(set(ids))


def _args_match(call_args: Any, want: Mapping[str, Any] | None) -> bool:
    if not want:
        return True
    if not isinstance(call_args, Mapping):
        return False
    return all(call_args.get(k) == v for k, v in want.items())


def call_matches(record: Mapping[str, Any], spec: Mapping[str, Any], default_status: str) -> bool:
    """Does a trace record match ``{"tool", "args", "status"}`` (status ``any`` matches all)?"""
    if record["tool"] != spec["tool"]:
        return False
    status = spec.get("status", default_status)
    if status != "any" and record["result_status"] != status:
        return False
    return _args_match(record["args"], spec.get("args"))


# -- kinds ---------------------------------------------------------------------------------
@register_check("row_equals")
def _row_equals(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    fields, order, want = _expected_rows(spec, ep)
    got = [{f: _plain(r.get(f)) for f in fields} for r in select(spec, ep)]
    got.sort(key=lambda r: _order_key(r.get(order)))
    if got == want:
        return True, None
    return False, {"expected": want, "got": got}


def _expected_rows(spec: Mapping[str, Any], ep: Episode) -> tuple[list[str], str, list[dict[str, Any]]]:
    """A ``row_equals`` spec's fields, order and expected rows (projected, sorted): computed once
    an episode with ``ep.memo`` (its results then share the expected list: read it, never change it)."""
    memo = ep.memo
    if memo is not None:
        kept = memo.get(("expected", id(spec)))
        if kept is not None and kept[0] is spec:  # the spec kept: its id stays its own
            return kept[1]
    expected = [dict(r) for r in spec["rows"]]
    fields = list(spec.get("fields") or (sorted(expected[0]) if expected else ["id"]))
    order = spec.get("order_by", fields[0])
    want = [{f: r.get(f) for f in fields} for r in expected]
    want.sort(key=lambda r: _order_key(r.get(order)))
    out = (fields, order, want)
    if memo is not None:
        memo[("expected", id(spec))] = (spec, out)
    return out


def _order_key(v: Any) -> tuple[str, Any]:
    """Sort key of mixed-type values: by type name (as ``str(type(v))`` orders them), then value."""
    return type(v).__name__, v


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


@register_check("field_equals")
def _field_equals(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    field = spec.get("field", "status")
    rows = select(spec, ep)
    got = [_plain(r.get(field)) for r in rows]
    ok = bool(rows) and all(v == spec["value"] for v in got)
    return ok, None if ok else {"field": field, "expected": spec["value"], "got": got}


@register_check("status_is")
def _status_is(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    return _field_equals({**spec, "field": "status"}, ep)


@register_check("count_is")
def _count_is(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    n = len(select(spec, ep))
    return n == spec["count"], None if n == spec["count"] else {"expected": spec["count"], "got": n}


@register_check("no_change")
def _no_change(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    tables = spec.get("tables") or [spec["table"]]
    offending: list[str] = []
    for table in tables:
        offending.extend(_changed_outside(spec, ep, table))
    offending.sort()
    return not offending, offending or None


def _changed_outside(spec: Mapping[str, Any], ep: Episode, table: str) -> list[str]:
    """``table:id`` of the rows of ``table`` a ``no_change`` spec finds changed; with ``ep.memo``
    kept until the table is written again (a write elsewhere leaves this table's part as it was)."""
    memo = ep.memo
    version = ep.state.version(table)
    if memo is not None:
        kept = memo.get(("no_change", id(spec), table))
        if kept is not None and kept[0] is spec and kept[1] == version:
            return kept[2]
    d = ep.diff.get(table)
    out = []
    if d:
        except_ids = spec.get("except_ids") or ()
        where = spec.get("except_where")
        for rid in [*d["created"], *d["updated"], *d["deleted"]]:
            if rid in except_ids:
                continue
            if where:
                after = ep.state.peek(table, rid)  # read in place: only matched
                before = ep.snapshot.table(table).get(rid)
                if (after and matches(after, where)) or (before and matches(before, where)):
                    continue
            out.append(f"{table}:{rid}")
    if memo is not None:
        memo[("no_change", id(spec), table)] = (spec, version, out)
    return out


@register_check("tool_called")
def _tool_called(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    n = sum(1 for r in ep.trace if call_matches(r, spec, "ok"))
    need = spec.get("min", 1)
    return n >= need, None if n >= need else {"calls": n, "min": need}


@register_check("tool_not_called")
def _tool_not_called(spec: Mapping[str, Any], ep: Episode) -> tuple[bool, Any]:
    before = spec.get("before")
    armed = before is not None and "after" not in before  # the anchor may count from the start
    for rec in ep.trace:
        if before is not None:
            if armed and call_matches(rec, before, "ok"):
                return True, None
            if not armed and call_matches(rec, before["after"], "ok"):
                armed = True
        if call_matches(rec, spec, "any"):
            return False, {"step": rec["step"]}
    return True, None
