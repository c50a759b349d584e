"""Every domain at scale (issue 15): the generator's scale option (scale 1 is the default, the
option is pure and checked, a scaled world holds the scale-1 world and the same task), the
paginated list tools (every row exactly once at any page size, bad limits and cursors as tool
errors, a cursor past the end as an empty last page), no full read of a table that grows with
the world on the tools' or the grader's path, and the oracle, the wrong policies and the
catalog's feature policy in worlds ten times the released size or with every result spread over
one-row pages.

Run for every discovered domain. Each domain's policies module declares ``SCALE``: each paginated
list tool with its arguments and the unpaged read it must equal, and the wrong policies checked
at scale; a domain without one fails the paging tests until it has one. What holds for one domain only stays
in its ``test_<domain>_scale.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, partial
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.tools import MAX_PAGE_SIZE, PAGE_SIZE
from backoffice.training.catalog import catalog_target, make_catalog_env
from backoffice.training.integrity.scale import Scaled
from backoffice.training.policies import domain_module, get_policy
from conftest import domain_params
from paging import all_pages, generated, is_paged, no_scans, oracle_on_one_row_pages, play, play_features, step

pytestmark = pytest.mark.parametrize("domain", domain_params())

#: the scale of the "ten times the released size" worlds
SCALE = 10
#: page sizes every list tool is read at (``None``: the default page)
LIMITS = (1, 2, 7, None, MAX_PAGE_SIZE)
#: limits and cursors a list tool refuses as ``invalid_args`` (a page is a limit and a cursor)
BAD_PAGES: tuple[dict[str, Any], ...] = (
    {"limit": 0}, {"limit": MAX_PAGE_SIZE + 1}, {"limit": -5}, {"limit": 2.5}, {"limit": "many"}, {"limit": None},
    {"cursor": 12}, {"cursor": ["X-1"]}, {"cursor": "x" * 201}, {"cursor": "x" * 500}, {"page": 2}, {"offset": 3},
)
BAD_SCALES: tuple[Any, ...] = (0, -1, -2, -3, 1.5, True, "2")


def _entry(domain: str) -> Scaled:
    declared = getattr(domain_module(domain), "SCALE", None)
    if declared is None:
        pytest.fail(f"declare SCALE = Scaled(...) in {domain}'s policies module: its paginated tools and the wrong "
                    "policies to check at scale (backoffice.training.integrity.scale)")
    return declared


def _indices(domain: str, extra: int = 0) -> list[int]:
    """One generated task per defect tag (the first index drawing it), then the ``extra`` next."""
    from backoffice.envs.core.build import task_tag

    dom, first, i = get_domain(domain), {}, 0
    while len(first) < len(dom.defect_tags):
        first.setdefault(task_tag(dom, "generated", i), i)
        i += 1
    picked = sorted(first.values())
    return picked + [j for j in range(i + extra) if j not in picked][:extra]


def _without(record: Mapping[str, Any], fields: tuple[str, ...]) -> bytes:
    return dumps({k: v for k, v in record.items() if k not in fields})


def _paged_env(domain: str) -> Any:
    env = make_native(domain, split="generated", max_steps=100_000)
    env.reset(seed=0, options=dict(_entry(domain).world))
    return env


# -- the scale option of the generator -------------------------------------------------------------
def test_scale_1_is_the_default_and_scaling_is_pure_and_checked(domain: str) -> None:
    for i in _indices(domain):
        assert dumps(generated(domain, i, 1)) == dumps(generated(domain, i)), i
        assert dumps(generated.__wrapped__(domain, i, 3)) == dumps(generated(domain, i, 3)), i  # pure
    for bad in BAD_SCALES:
        with pytest.raises(ValueError):
            generated.__wrapped__(domain, 0, bad)


def test_a_scaled_world_holds_the_scale_1_world_and_the_same_task(domain: str) -> None:
    """At scale 10 the task and its answer are the scale-1 ones and every scale-1 row is there,
    unchanged; no id repeats. (How much each table grows: the domain's own file.)"""
    renumbered = _entry(domain).renumbered
    for i in _indices(domain):
        base, big = generated(domain, i), generated(domain, i, SCALE)
        assert dumps(big.task) == dumps(base.task), i
        assert _without(big.key, renumbered) == _without(base.key, renumbered), i
        for table, rows in base.snapshot.items():
            by_id = {r["id"]: r for r in big.snapshot[table]}
            assert len(by_id) == len(big.snapshot[table]), f"duplicate id in {table}"
            assert all(dumps(by_id.get(r["id"])) == dumps(r) for r in rows), (i, table)


# -- pagination ------------------------------------------------------------------------------------
def test_every_paginated_tool_is_in_the_table(domain: str) -> None:
    toolkit = get_domain(domain).toolkit
    assert {p.tool for p in _entry(domain).paged} == {t for t in toolkit.tools if is_paged(toolkit, t)}


def test_list_tools_return_every_row_exactly_once_across_pages(domain: str) -> None:
    """Read page after page at every page size, each list tool returns exactly the rows of the
    unpaged read (episode writes included), each once, in its order; its first page is the
    first rows, with ``count`` / ``total`` (where given) counting them all."""
    entry = _entry(domain)
    env = _paged_env(domain)
    entry.prepare(env)
    call = partial(step, env)
    for paged in entry.paged:
        args = paged.args(env)
        want = paged.expect(env, args)
        assert len(want) >= paged.min_rows, (paged.tool, args, len(want))
        for limit in LIMITS:
            got = [r[paged.field] for r in all_pages(call, paged.tool, paged.key, limit=limit, cursor_of=paged.cursor_of, **args)]
            assert (sorted(got) if paged.resorted and limit != 1 else got) == want, (paged.tool, args, limit)
        first = call(paged.tool, **args)["result"]
        shown = [r[paged.field] for r in first[paged.key]]
        assert (sorted(shown) if paged.resorted else shown) == want[:PAGE_SIZE], (paged.tool, args)
        assert (first["next_cursor"] is None) == (len(want) <= PAGE_SIZE), (paged.tool, args)
        for count in ("count", "total"):
            assert first.get(count, len(want)) == len(want), (paged.tool, args, count)


def test_bad_limits_and_cursors_are_tool_errors(domain: str) -> None:
    """A bad limit or cursor is an ``invalid_args`` error that changes nothing and ends nothing,
    a cursor that is no id of the list's table (e.g. past every id) included: never an empty
    last page that reads as "no more rows" (issue 35)."""
    entry = _entry(domain)
    env = _paged_env(domain)
    for paged in entry.paged:
        args = paged.args(env)
        for bad in BAD_PAGES:
            before = env.state.content_hash()
            obs, _, terminated, _, info = env.step({"tool": paged.tool, "args": {**args, **bad}})
            got = loads(obs)
            assert got["status"] == "error" and got["code"] == info["error_code"] == "invalid_args" and not terminated, (paged.tool, bad, got)
            assert env.state.content_hash() == before, (paged.tool, bad)
        got = step(env, paged.tool, **args, cursor="~")
        assert got["status"] == "error" and got["code"] == "invalid_args", (paged.tool, got)


# -- no full read of a growing table ---------------------------------------------------------------
@cache
def growing(domain: str) -> frozenset[str]:
    """The tables that grow with the world: more rows at scale 10 than at scale 1 for some task."""
    return frozenset(t for i in _indices(domain) for t, rows in generated(domain, i).snapshot.items()
                     if len(generated(domain, i, SCALE).snapshot[t]) > len(rows))


def test_tools_and_grader_never_scan_a_growing_table(domain: str) -> None:
    """The oracle's and every wrong policy's episodes on every defect tag at scale 3, and their
    grades, read the tables that grow with the world through an id or an index only."""
    tables = growing(domain)
    env = make_native(domain, split="generated")
    env.reset(seed=0, options={"generate": 0})
    table = min(tables)
    with no_scans(tables) as scans:  # the guard sees each kind of full read, and a read by index is none
        env.state.ids(table)
        list(env.state.iter_rows(table))
        env.state.rows(table)
        env.state.rows(table, id="none")
    assert scans == [f"ids({table})", f"iter_rows({table})", f"select_where({table})"]
    names = ("oracle", *(f"wrong:{code}" for code in sorted(domain_module(domain).WRONG_POLICIES)))
    for i in _indices(domain):
        env.reset(seed=0, options={"generate": i, "scale": 3})  # build the world first: building may read whole tables
        for name in names:
            with no_scans(tables) as scans:
                info = play(env, get_policy(domain, name), generate=i, scale=3)
            assert "grade" in info and scans == [], (i, name, scans)


# -- policies at scale -----------------------------------------------------------------------------
def test_the_oracle_passes_at_scale_10_with_the_grade_of_scale_1(domain: str) -> None:
    """The same verdict, check by check (the process metrics may count more pages read)."""
    renumbered = (*_entry(domain).renumbered, "process_metrics")
    env = make_native(domain, split="generated")
    for i in _indices(domain, extra=3):
        base = play(env, get_policy(domain, "oracle"), generate=i)["grade"]
        big = play(env, get_policy(domain, "oracle"), generate=i, scale=SCALE)["grade"]
        assert big["pass"], (i, big["failure_codes"])
        assert _without(big, renumbered) == _without(base, renumbered), i


def test_wrong_policies_still_fail_at_scale_10(domain: str) -> None:
    """Each checked wrong policy fails with its code at scale 10 on every task where it does at scale 1."""
    env = make_native(domain, split="generated")
    for code in _entry(domain).wrong:
        failed = {scale: {i for i in _indices(domain, extra=3)
                          if code in play(env, get_policy(domain, f"wrong:{code}"), generate=i, scale=scale)["grade"]["failure_codes"]}
                  for scale in (1, SCALE)}
        assert failed[1] and failed[1] <= failed[SCALE], (code, failed)


def test_the_catalog_feature_policy_passes_at_scale_10(domain: str) -> None:
    if catalog_target(domain) is None:
        pytest.skip(f"{domain} has no catalog env")
    env = make_catalog_env(domain, split="generated")
    for i in _indices(domain):
        info = play_features(env, generate=i, scale=SCALE)
        assert info["is_success"] and info["grade"]["pass"], (i, info["grade"]["failure_codes"])


def test_paged_reads_are_followed_when_every_page_holds_one_row(domain: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every list tool forced down to one row a page, the oracle and the catalog's feature
    policy read every page and still pass: they do not depend on a result fitting in one page."""
    followed = 0
    for env in oracle_on_one_row_pages(monkeypatch, domain, _indices(domain)):
        followed += sum(1 for rec in env.trace if "cursor" in rec["args"])
    assert followed, "no result spanned two pages"
    if catalog_target(domain) is None:
        return
    catalog = make_catalog_env(domain, split="generated", max_steps=400)
    for i in _indices(domain):
        info = play_features(catalog, generate=i)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])
