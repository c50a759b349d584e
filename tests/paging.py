"""Helpers of the scale tests (``test_scale.py`` and the per-domain ``test_<domain>_scale.py``):
a generated world at a scale, one tool call, one episode (native or catalog), every page of a
list tool, the full reads of growing tables, and list tools forced down to one row per page.

Imported as ``from paging import ...``: ``conftest.py`` puts this folder on ``sys.path``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.build import task_seed, task_tag
from backoffice.envs.core.canonical import loads
from backoffice.envs.core.domain import Generated
from backoffice.envs.core.store import Store
from backoffice.envs.core.tools import PAGE_SIZE, PageArgs, Toolkit
from backoffice.training.integrity.scale import CursorOf
from backoffice.training.policies import get_policy

#: ``call(tool, **args)``: one tool call's structured result (``{"status": "ok", "result": ...}``)
Call = Callable[..., dict[str, Any]]


@cache
def generated(domain: str, index: int, scale: int | None = None) -> Generated:
    """Generated task ``index`` of ``domain`` (its seed and defect tag, as ``reset(options=
    {"generate": index})`` builds it), at ``scale`` (``None``: without the scale argument).
    Shared: read it, never mutate it."""
    dom = get_domain(domain)
    seed, tag = task_seed(domain, "generated", index), task_tag(dom, "generated", index)
    return dom.generate(seed, tag) if scale is None else dom.generate(seed, tag, scale=scale)


def step(env: Any, tool: str, **args: Any) -> dict[str, Any]:
    """One tool call on a native env; its structured result."""
    obs, *_ = env.step({"tool": tool, "args": args})
    return loads(obs)


def play(env: Any, policy: Any, **options: Any) -> dict[str, Any]:
    """One episode of ``policy`` on a native env from ``reset(seed=0, options=options)``; the
    terminal info."""
    obs, info = env.reset(seed=0, options=options)
    policy.reset(obs, info)
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs))
        if terminated or truncated:
            return info


def play_features(env: Any, **options: Any) -> dict[str, Any]:
    """One episode of the domain's hand-written ``feature_policy`` on a catalog env from
    ``reset(options=options)``, every chosen action valid; the terminal info."""
    spec_cls = type(env.agent.spec)
    make = getattr(spec_cls, "feature_policy", None) or importlib.import_module(spec_cls.__module__).feature_policy
    policy = make(env.agent)
    obs, info = env.reset(options=options)
    while True:
        mask = env.action_masks()
        action = policy(obs, mask)
        assert mask[action], (options, action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


def last_id(page: list[dict[str, Any]]) -> Any:
    return page[-1]["id"]


def all_pages(call: Call, tool: str, key: str, *, limit: int | None = None, cursor_of: CursorOf | None = last_id,
              **args: Any) -> list[dict[str, Any]]:
    """Every row ``tool`` returns under ``key``, following ``next_cursor`` from the first page to
    the last (``limit`` rows a page; the default page without it). Each page is checked: the call
    succeeds; a page followed by another is full and its cursor is ``cursor_of(page)`` (not
    checked when ``None``: a cursor naming a row the page does not show); the last page holds
    at most ``limit`` rows and is empty only when it is the first (``ceil(rows / limit)`` pages)."""
    size = limit or PAGE_SIZE
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100_000):
        got = call(tool, **args, **({"limit": limit} if limit else {}), **({"cursor": cursor} if cursor else {}))
        assert got["status"] == "ok", (tool, args, got)
        page = got["result"][key]
        cursor = got["result"]["next_cursor"]
        if cursor is None:
            assert len(page) <= size and (page or not rows), (tool, limit, len(page))
            return rows + page
        assert len(page) == size, (tool, limit, len(page))
        assert cursor_of is None or cursor == cursor_of(page), (tool, cursor, page[-1])
        rows += page
    raise AssertionError(f"{tool}: pagination never ended")


@contextmanager
def no_scans(tables: Collection[str]) -> Iterator[list[str]]:
    """Record every full read (a scan) of one of ``tables`` while the body runs: ``ids``,
    ``iter_rows``, and ``select`` / ``rows`` without an equality field; the caller asserts the
    yielded list stayed empty."""
    scans: list[str] = []

    def guard(name: str) -> Any:
        original = getattr(Store, name)

        def guarded(self: Store, table: str, *args: Any, **kwargs: Any) -> Any:
            if table in tables and (name != "select_where" or not (args[0] if args else kwargs.get("equals"))):
                scans.append(f"{name}({table})")
            return original(self, table, *args, **kwargs)

        return guarded

    with pytest.MonkeyPatch.context() as patch:
        for name in ("iter_rows", "ids", "select_where"):  # ``select`` and ``rows`` call ``select_where``
            patch.setattr(Store, name, guard(name))
        yield scans


def is_paged(toolkit: Toolkit, tool: str) -> bool:
    """Is ``tool`` a paginated list tool (its arguments a :class:`PageArgs`)?"""
    return issubclass(toolkit.tools[tool].args_model, PageArgs)


def one_row_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force every paginated list tool down to one row per page (whatever ``limit`` is asked
    for) in the envs made after this call: a result then spans as many pages as it has rows."""
    real = Toolkit.call_encoded

    def call_encoded(self: Toolkit, ctx: Any, name: str, args: Any, allowed: frozenset[str]) -> Any:
        if name in self.tools and isinstance(args, dict) and is_paged(self, name):
            args = {**args, "limit": 1}
        return real(self, ctx, name, args, allowed)

    monkeypatch.setattr(Toolkit, "call_encoded", call_encoded)


def oracle_on_one_row_pages(monkeypatch: pytest.MonkeyPatch, domain: str, indices: Collection[int],
                            max_steps: int = 400) -> Iterator[Any]:
    """The oracle on generated tasks ``indices`` with :func:`one_row_pages`: after each episode,
    checked to pass, the env (its ``trace`` and ``state``) for the caller to inspect."""
    one_row_pages(monkeypatch)
    env = make_native(domain, split="generated", max_steps=max_steps)
    for index in indices:
        info = play(env, get_policy(domain, "oracle"), generate=index)
        assert info["grade"]["pass"], (domain, index, info["grade"]["failure_codes"])
        yield env
