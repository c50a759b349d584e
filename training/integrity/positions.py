"""The position channel: where, in the lists an agent chooses from, the right entry stands.

A *choice* is an id the oracle writes with (a decision's basis, the item it allocates to, the
record it updates, the candidates it refers) that the agent first saw as an entry of a list
(search hits, a person's assignments, delegations, open items, held records, rule bands ...),
not in the brief or as a single record. If the right entry tends to be the first (or last)
listed, a policy that picks by position passes without judging; :func:`position_report` measures
it over a release and :class:`PositionAttacker` exploits it: the oracle, except that every id it
chose from a list becomes that list's first (or last) entry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import mean
from typing import Any

from backoffice.envs.core.canonical import loads
from backoffice.training.integrity.observed import Observed, oracle_episodes
from backoffice.training.policies.base import Policy, call


@dataclass(frozen=True)
class Choice:
    """One id chosen from a list: the list (tool and path in its result), the entry's position
    (0-based) and the list's length."""

    task_id: str
    list_name: str
    position: int
    length: int


def _entries(result: Any, path: str = "") -> Iterable[tuple[str, list[Any]]]:
    """``(path, list)`` of every list of records (dicts with an ``id``) inside a result."""
    if isinstance(result, Mapping):
        for k, v in result.items():
            yield from _entries(v, f"{path}.{k}" if path else str(k))
    elif isinstance(result, list):
        if result and all(isinstance(r, Mapping) and isinstance(r.get("id"), str) for r in result):
            yield path, result
        for v in result:
            yield from _entries(v, f"{path}[]")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


class ListMemory:
    """Where each id was first seen: in which list, at which position (or outside any list)."""

    def __init__(self, brief: Mapping[str, Any]):
        self.outside: set[str] = set(_strings(brief))
        self.first: dict[str, tuple[str, int, list[str]]] = {}

    def observe(self, tool: str, result: Any) -> None:
        in_lists: set[str] = set()
        for path, rows in _entries(result):
            ids = [r["id"] for r in rows]
            for i, rid in enumerate(ids):
                in_lists.add(rid)
                if rid not in self.outside and rid not in self.first:
                    self.first[rid] = (f"{tool}:{path}", i, ids)
        for s in _strings(result):
            if s not in in_lists and s not in self.first:
                self.outside.add(s)

    def chosen(self, args: Any) -> list[tuple[str, str, int, list[str]]]:
        """``(id, list name, position, list ids)`` of each id in ``args`` first seen in a list."""
        out = []
        for s in _strings(args):
            if s in self.first:
                name, pos, ids = self.first[s]
                out.append((s, name, pos, ids))
        return out


def choices(episode: Observed, writing_tools: frozenset[str]) -> list[Choice]:
    """The choices of one observed episode: ids first seen in a list that a writing call uses."""
    memory = ListMemory(episode.brief)
    out: list[Choice] = []
    for action, obs in episode.steps:
        tool = str(action.get("tool"))
        if tool in writing_tools:
            out.extend(Choice(episode.task_id, name, pos, len(ids)) for _, name, pos, ids in memory.chosen(action.get("args")))
        if obs.get("status") == "ok":
            memory.observe(tool, obs.get("result"))
    return out


def writing_tools(domain: str) -> frozenset[str]:
    """The domain's tools that may change the store or end the episode (where a choice is made)."""
    from backoffice.envs import get_domain

    tools = get_domain(domain).toolkit.tools
    return frozenset(n for n, t in tools.items() if (t.writes or t.terminal) and n != "submit")


@dataclass(frozen=True)
class ListPositions:
    """Where the right entry stands in one list over a split.

    ``first``/``last``: the share of choices at the first/last position; ``chance_first``: the
    share uniform positions would give (the mean of 1/length); ``singletons``: the share of
    choices from a list of one entry (no decoy)."""

    list_name: str
    choices: int
    first: float
    last: float
    chance: float
    singletons: float
    mean_length: float

    def to_json(self) -> dict[str, Any]:
        return {"list": self.list_name, "choices": self.choices, "first": self.first, "last": self.last,
                "chance": self.chance, "singletons": self.singletons, "mean_length": self.mean_length}


def position_report(domain: str, split: str = "heldout") -> list[ListPositions]:
    """Per list an agent chooses from, where the oracle's choice stood over ``split``."""
    tools = writing_tools(domain)
    by_list: dict[str, list[Choice]] = defaultdict(list)
    for ep in oracle_episodes(domain, split):
        for c in choices(ep, tools):
            by_list[c.list_name].append(c)
    out = []
    for name in sorted(by_list):
        cs = by_list[name]
        out.append(ListPositions(
            name, len(cs), mean(c.position == 0 for c in cs), mean(c.position == c.length - 1 for c in cs),
            mean(1 / c.length for c in cs), mean(c.length == 1 for c in cs), mean(c.length for c in cs)))
    return out


class PositionAttacker(Policy):
    """The oracle, except that every id it chooses from a list (see :func:`choices`) is replaced
    by that list's first (``pick="first"``) or last entry: as good as the oracle when the right
    entry stands where the attacker looks, whatever the entries say."""

    def __init__(self, inner: Policy, writing: frozenset[str], pick: str = "first"):
        if pick not in ("first", "last"):
            raise ValueError("pick is 'first' or 'last'")
        self.inner, self.writing, self.pick = inner, writing, pick
        self.name = f"position:{pick}"

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        self.inner.reset(obs, info)
        self.memory = ListMemory(loads(obs))
        self._last_tool: str | None = None

    def _swap(self, value: Any, swaps: Mapping[str, str]) -> Any:
        if isinstance(value, str):
            return swaps.get(value, value)
        if isinstance(value, list):
            return [self._swap(v, swaps) for v in value]
        if isinstance(value, Mapping):
            return {k: self._swap(v, swaps) for k, v in value.items()}
        return value

    def act(self, obs: str) -> dict[str, Any] | str:
        if self._last_tool is not None:
            parsed = loads(obs)
            if parsed.get("status") == "ok":
                self.memory.observe(self._last_tool, parsed.get("result"))
        try:
            action = self.inner.act(obs)
        except Exception:  # the oracle's plan met a world it did not expect: give up
            action = call("submit")
        if isinstance(action, str):
            action = loads(action)
        if action.get("tool") in self.writing:
            swaps = {s: (ids[0] if self.pick == "first" else ids[-1]) for s, _, _, ids in self.memory.chosen(action.get("args"))}
            action = {"tool": action["tool"], "args": self._swap(action.get("args"), swaps)}
        self._last_tool = str(action.get("tool"))
        return action


@dataclass(frozen=True)
class Attack:
    """The position attacker over the tasks of a split where the oracle picks from a list:
    its pass rate, the rate picking at random would give (the mean over tasks of the product of
    1/length over the task's choices) and how many tasks."""

    pick: str
    pass_rate: float
    chance: float
    tasks: int

    def to_json(self) -> dict[str, Any]:
        return {"pick": self.pick, "pass_rate": self.pass_rate, "chance": self.chance, "tasks": self.tasks}


def position_attack(domain: str, pick: str, split: str = "heldout") -> Attack:
    """Run :class:`PositionAttacker` (``pick``: first or last) on every task of ``split`` whose
    oracle episode picks from a list."""
    from backoffice.envs import make_native
    from backoffice.training.eval.rollout import run_episode
    from backoffice.training.policies import get_policy

    env = make_native(domain, split=split)
    tools = writing_tools(domain)
    passed, chance = [], []
    for ep in oracle_episodes(domain, split):
        cs = choices(ep, tools)
        if not cs:
            continue
        grade = run_episode(env, PositionAttacker(get_policy(domain, "oracle"), tools, pick), task_id=ep.task_id).grade
        passed.append(bool(grade["pass"]))
        p = 1.0
        for c in cs:
            p /= c.length
        chance.append(p)
    return Attack(pick, mean(passed) if passed else 0.0, mean(chance) if chance else 0.0, len(passed))


__all__ = ["Attack", "Choice", "ListMemory", "ListPositions", "PositionAttacker", "choices", "position_attack", "position_report", "writing_tools"]
