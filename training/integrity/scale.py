"""What a domain declares for the generic scale tests (``tests/integrity/test_scale.py``): its paginated
list tools and how to check them, and the wrong policies that must still fail at scale.

A domain's policies module defines ``SCALE = Scaled(...)``; the generic tests read it there, so
they name no domain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: what a page's ``next_cursor`` must be, from the page's rows
CursorOf = Callable[[list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class Paged:
    """One paginated list tool: it returns rows under ``key``; ``args(env)`` are its arguments
    and ``expect(env, args)`` the unpaged read from the store, as the ``field`` of each row it
    must return, in order.

    ``cursor`` says what a page's ``next_cursor`` is: the ``field`` of its ``"last"`` row, the
    ``"max"`` one (pages cut in id order, each page sorted by another key: ``resorted``), or
    ``"hidden"`` (the id of a row the tool does not show). ``by_id``: pages are cut in id order,
    so a cursor past every id is an empty last page (not so for a search in seeded order).
    ``min_rows``: the read is at least this long, so it spans several pages."""

    tool: str
    key: str
    expect: Callable[[Any, dict[str, Any]], list[Any]]
    args: Callable[[Any], dict[str, Any]] = lambda env: {}
    field: str = "id"
    cursor: Literal["last", "max", "hidden"] = "last"
    by_id: bool = True
    resorted: bool = False
    min_rows: int = 0

    @property
    def cursor_of(self) -> CursorOf | None:
        if self.cursor == "hidden":
            return None
        pick = max if self.cursor == "max" else (lambda fields: fields[-1])
        return lambda page: pick([r[self.field] for r in page])


@dataclass(frozen=True)
class Scaled:
    """A domain's scale declaration: its paginated tools (every one), read in the world ``reset(options=
    world)`` builds after ``prepare(env)`` made its writes; the wrong policies (failure codes)
    that must still fail at scale 10; the key and grade fields that name rows the episode
    creates (numbered after the world's rows, so they differ between scales)."""

    world: Mapping[str, Any]
    paged: tuple[Paged, ...]
    wrong: tuple[str, ...]
    prepare: Callable[[Any], None] = lambda env: None
    renumbered: tuple[str, ...] = ()


def rows_where_args(table: str) -> Callable[[Any, dict[str, Any]], list[Any]]:
    """``expect`` of a tool whose arguments are field filters of ``table``: the matching ids."""
    return lambda env, args: [r["id"] for r in env.state.rows(table, **args)]


def param(name: str) -> Callable[[Any], dict[str, Any]]:
    """``args`` of a tool called with the task parameter ``name``."""
    return lambda env: {name: env.task.params[name]}




__all__ = ["CursorOf", "Paged", "Scaled", "param", "rows_where_args"]
