"""Command-line options generated from a config dataclass (``backoffice train``'s from
:class:`~backoffice.training.rl.config.TrainConfig`): one option per field, with the field's
type, bounds and help (its :func:`~backoffice.training.rl.config.setting` metadata), so a new
field is an option without another line here or in the command.

Every generated option defaults to ``None`` (not given): the command hands the values it got to
the config, whose own defaults, or a catalog's tuned ``hyperparams``, fill the rest. The help
says which: "(tuned, else 64)" or "(default 100)".
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, fields
from typing import Annotated, Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])


def shown_default(f: Field[Any]) -> str:
    """How the help states ``f``'s default value."""
    meta = f.metadata
    if meta.get("shown") is not None:
        return str(meta["shown"])
    value = f.default_factory() if f.default_factory is not MISSING else f.default
    if isinstance(value, bool):
        return f"--{'' if value else 'no-'}{meta.get('flag') or f.name.replace('_', '-')}"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) or "none"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    return "none" if value is None else str(value)


def option_type(hint: Any) -> Any:
    """The option's value type for a field's type: ``X | None`` and ``X`` give ``X``,
    ``Sequence[X]`` a repeatable ``list[X]``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        hint = args[0]
    if typing.get_origin(hint) in (Sequence, list, tuple):
        return list[typing.get_args(hint)[0]]  # type: ignore[misc]
    return hint


def option_parameter(f: Field[Any], hint: Any) -> inspect.Parameter:
    """The keyword parameter of a command that reads field ``f`` from the command line."""
    meta = f.metadata
    flag = meta.get("flag") or f.name.replace("_", "-")
    kind = option_type(hint)
    decl = f"--{flag}/--no-{flag}" if kind is bool else f"--{flag}"
    say = "tuned, else" if meta.get("tuned", True) else "default"
    bounds = {k: meta[k] for k in ("min", "max") if meta.get(k) is not None and kind in (int, float, list[int], list[float])}
    option = typer.Option(decl, help=f"{meta['help']} ({say} {shown_default(f)}).", **bounds)
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[kind | None, option])


def config_options(config: type) -> Callable[[F], F]:
    """Decorate a typer command so it also takes one option per field of the dataclass
    ``config`` whose metadata does not say ``cli=False``. The command receives them as one
    keyword argument, ``settings``: ``{field name: value or None}``."""
    hints = typing.get_type_hints(config)
    generated = [option_parameter(f, hints[f.name]) for f in fields(config) if f.metadata.get("cli", True)]
    names = [p.name for p in generated]

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "settings"]
        clash = {p.name for p in own} & set(names)
        if clash:
            raise TypeError(f"{command.__name__} declares {sorted(clash)} itself: mark the field cli=False")

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            settings = {name: kwargs.pop(name) for name in names}
            return command(**kwargs, settings=settings)

        run.__signature__ = signature.replace(parameters=[*own, *generated])  # type: ignore[attr-defined]
        return typing.cast(F, run)

    return decorate
