"""Policy interface and the generic baselines (no-op, random).

A policy sees only what an agent sees: the observation strings and the reset ``info``
(task id, allowed tools, tool schemas). It never reads the answer key or the store.

Scripted policies are easiest to write as generators: ``plan`` yields actions and receives each
parsed observation back; when the generator returns, the policy submits::

    class Oracle(ScriptedPolicy):
        def plan(self, brief, info):
            request = yield call("get_request", request_id=brief["params"]["request_id"])
            ...
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

import numpy as np

from backoffice.envs.core.canonical import loads

Action = dict[str, Any]
Plan = Generator[Action, dict[str, Any], None]


def call(tool: str, **args: Any) -> Action:
    """An action dict for ``tool`` with ``args`` (``None`` values dropped)."""
    return {"tool": tool, "args": {k: v for k, v in args.items() if v is not None}}


def pages(tool: str, **args: Any) -> Generator[Action, dict[str, Any], list[dict[str, Any]]]:
    """Every page a paginated list tool returns (each ``result``), page after page (``cursor`` =
    the previous page's ``next_cursor``) until the last: the one pager of scripted policies. An
    error page ends the listing with the pages read so far."""
    got_pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        got = yield call(tool, **args, cursor=cursor)
        if got.get("status") != "ok":
            return got_pages
        got_pages.append(got["result"])
        cursor = got["result"].get("next_cursor")
        if not cursor:
            return got_pages


def every_page(tool: str, key: str, **args: Any) -> Generator[Action, dict[str, Any], list[dict[str, Any]]]:
    """Every row a paginated list tool returns under ``key``, over all its :func:`pages`
    (``rows = yield from every_page("list_requests", "requests", customer=c)`` inside a plan)."""
    return [row for page in (yield from pages(tool, **args)) for row in page[key]]


class Policy:
    """Base policy: ``reset`` at the start of an episode, then ``act`` once per step."""

    name = "policy"
    version = "1"

    def reset(self, obs: str, info: dict[str, Any]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def act(self, obs: str) -> Action | str:  # pragma: no cover - interface
        raise NotImplementedError


class ScriptedPolicy(Policy):
    """A policy written as a generator over parsed observations (see module docstring)."""

    finish_tool = "submit"

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:  # pragma: no cover
        raise NotImplementedError
        yield {}

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        self._gen: Plan | None = self.plan(loads(obs), info)
        self._started = False

    def act(self, obs: str) -> Action | str:
        if self._gen is None:
            return call(self.finish_tool)
        try:
            if not self._started:
                self._started = True
                return next(self._gen)
            return self._gen.send(loads(obs))
        except StopIteration:
            self._gen = None
            return call(self.finish_tool)


class NoopPolicy(Policy):
    """Submits at once: every task whose outcome needs an action must fail."""

    name = "noop"

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        pass

    def act(self, obs: str) -> Action:
        return call("submit")


_ID = re.compile(r'"([A-Z]{1,5}-[A-Z0-9]{2,12}(?:-[0-9]{1,6})?)"')


class RandomPolicy(Policy):
    """A valid-tool random baseline: a random allowed tool with arguments drawn from its
    schema, string fields filled with ids the agent has seen so far. Submits with
    probability ``p_submit`` per step (so episodes end before truncation)."""

    name = "random"

    def __init__(self, seed: int = 0, p_submit: float = 0.1):
        self.seed = seed
        self.p_submit = p_submit

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        from backoffice.envs.core.canonical import derive_seed
        from backoffice.envs.core.spaces import ToolCallSpace

        self._rng = np.random.default_rng(derive_seed("random-policy", self.seed, info["task_id"], info["seed"]))
        self._seen: list[str] = []
        self._space = ToolCallSpace(info["tools"], vocabulary=["x"])
        self._space._np_random = self._rng
        self._observe(obs)

    def _observe(self, obs: str) -> None:
        for ident in _ID.findall(obs):
            if ident not in self._seen:
                self._seen.append(ident)
        self._space.vocabulary = self._seen or ["x"]

    def act(self, obs: str) -> Action:
        self._observe(obs)
        if self._rng.random() < self.p_submit:
            return call("submit")
        return self._space.sample()
