"""TRL: a tool environment per domain for ``GRPOTrainer(environment_factory=...)``.

::

    from trl import GRPOConfig, GRPOTrainer
    from backoffice.training.agents.trl import tool_env_class

    ApprovalsToolEnv = tool_env_class("approvals", split="train")   # or: from ...trl import ApprovalsToolEnv
    trainer = GRPOTrainer(model=..., args=GRPOConfig(max_steps=...), environment_factory=ApprovalsToolEnv)

How TRL uses the class (``trl/trainer/grpo_trainer.py``): it calls the factory with no argument,
keeps the instances in a pool, and per rollout calls ``reset(**row)`` (``row``: the dataset
columns, or nothing without a dataset); the returned string is appended to the prompt. Every
public method except ``reset`` and ``get_reward`` (found by ``inspect.getmembers(instance,
inspect.ismethod)``) is a tool: its schema comes from ``transformers.utils.get_json_schema``
(type hints + Google docstring) and the model's call runs ``method(**arguments)``; the returned
string is the tool message. ``get_reward()`` is the environment-owned reward, read once per
finished rollout.

**The methods.** One per tool of the domain (every tool; a call to a tool the episode does not
allow is answered ``tool_not_allowed`` by the env, as natively), generated from the tool's
pydantic argument model through its JSON schema:

- the name and description are the tool's; each argument is a keyword with a type hint
  (``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``Literal[...]`` for enums,
  ``X | None`` for nullable ones) and its field description in the ``Args:`` section; required
  arguments have no default, optional ones show the model's default;
- the call forwards exactly the arguments the model gave (omitted ones are not filled in, so the
  trace is the one the native env writes) to :meth:`Session.call`, i.e. one ``env.step``:
  the pydantic model validates them there, so every constraint binds as natively (a too-long id
  is an ``invalid_args`` error, traced, state untouched); the result is the observation text.

**What ``get_json_schema`` cannot carry** (its output is built from type hints and the docstring
only; ``Annotated`` metadata is dropped by ``get_type_hints``): the keywords
:data:`UNEXPRESSIBLE` (``minLength``, ``maxLength``, ``minimum``, ``maximum``, ``minItems``,
``maxItems``, ``default``, ``additionalProperties`` ...) and the argument model's own
``description`` (``"No arguments."``). A nullable argument comes out as ``{"type": X,
"nullable": true}`` instead of pydantic's ``{"anyOf": [X, {"type": "null"}]}`` (same meaning).
``get_json_schema`` also requires a description for every argument: an argument whose field has
none gets :func:`fallback_description` (``"Given name."``). Everything else (names, types,
enums, required, descriptions) equals the native spec; ``tests/agents/test_trl.py`` proves it for
every tool of every installed domain. The constraints still bind at call time (above); with
``constraints_in_descriptions=True`` they are also written into each argument's description
(``"Request id. [1-64 characters]"``) so that a model trained under TRL sees them.

**The reward.** ``get_reward()`` is 0.0 until the episode ended (the model called ``submit``
or a terminal tool, or reached the step limit), then the pure score of the final grade; an
episode the model left unfinished earns 0.0. Nothing of the grade is readable before the end:
``final_grade`` is ``None`` until then. :func:`final_score_reward` is the same as a
``reward_funcs`` entry; use one or the other, not both (TRL sums reward sources): for
``reward_funcs=[final_score_reward]`` build the class with ``tool_env_class(...,
env_reward=False)``, which has no ``get_reward``.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Literal, Union

from backoffice.envs.core.canonical import dumps

#: JSON-schema keywords of the native specs that transformers' ``get_json_schema`` cannot emit.
UNEXPRESSIBLE = ("minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                 "minItems", "maxItems", "uniqueItems", "pattern", "format", "default", "additionalProperties")

RESERVED = ("reset", "get_reward")

RETURNS = ('The result as canonical JSON text: {"status": "ok", "result": ...}, or a structured error '
           '{"status": "error", "code": ..., "message": ...} that leaves the state untouched.')

_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None), "object": dict}


def python_type(schema: dict[str, Any]) -> Any:
    """The type hint ``get_json_schema`` turns back into ``schema``'s type (no constraints)."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "anyOf" in schema:
        branches = [python_type(s) for s in schema["anyOf"]]
        return branches[0] if len(branches) == 1 else Union[tuple(branches)]  # noqa: UP007 - built from a tuple
    kind = schema.get("type")
    if kind == "array":
        # a type built at run time: not a static type expression mypy can evaluate
        return list[python_type(schema["items"])] if "items" in schema else list  # type: ignore[misc]
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    raise TypeError(f"cannot express the schema {schema!r} as a type hint")


def fallback_description(name: str) -> str:
    """The description given to an argument whose field has none (get_json_schema needs one)."""
    return name.replace("_", " ").capitalize() + "."


def constraint_note(schema: dict[str, Any]) -> str:
    """The constraints of one argument in words, e.g. ``"1-64 characters; default: null"``."""
    parts: list[str] = []
    branches = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    for s in branches:
        lo, hi = s.get("minLength"), s.get("maxLength")
        if lo is not None or hi is not None:
            parts.append(f"{lo or 0}-{hi} characters" if hi is not None else f"at least {lo} characters")
        lo, hi = s.get("minimum"), s.get("maximum")
        if lo is not None or hi is not None:
            parts.append(f"{lo} to {hi}" if lo is not None and hi is not None else
                         f"at least {lo}" if lo is not None else f"at most {hi}")
        lo, hi = s.get("minItems"), s.get("maxItems")
        if lo is not None or hi is not None:
            parts.append(f"{lo or 0}-{hi} items" if hi is not None else f"at least {lo} items")
        item = s.get("items")
        if isinstance(item, dict) and (note := constraint_note(item)):
            parts.append(f"each item {note}")
    if "default" in schema:
        parts.append(f"default: {dumps(schema['default']).decode()}")
    return "; ".join(parts)


def _method(tool: str, doc: str, signature: inspect.Signature, annotations: dict[str, Any]) -> Any:
    names = [p for p in signature.parameters if p != "self"]

    def method(self: BackofficeToolEnv, *args: Any, **kwargs: Any) -> str:
        if len(args) > len(names):
            raise TypeError(f"{tool}() takes at most {len(names)} arguments ({len(args)} given)")
        given = dict(zip(names, args))
        given.update(kwargs)  # only what the model gave: pydantic fills the defaults, as natively
        return self._call(tool, given)

    method.__name__ = method.__qualname__ = tool
    method.__doc__ = doc
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


def tool_method(spec: dict[str, Any], constraints_in_descriptions: bool = False, model: Any = None) -> Any:
    """The method for one tool spec (function shape), as ``get_json_schema`` reads it.

    ``model`` (the pydantic argument model) supplies defaults made by a factory (``[]``), which
    the JSON schema does not show; they only label the signature (the call never fills them in).
    """
    params = spec["parameters"]
    fields = getattr(model, "model_fields", {})
    props: dict[str, Any] = params.get("properties", {})
    required = set(params.get("required", ()))
    sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_lines = []
    for name, schema in props.items():
        hint = python_type(schema)
        if name in required:
            default = inspect.Parameter.empty
        elif name in fields:
            default = fields[name].get_default(call_default_factory=True)
        else:
            default = schema.get("default")
        sig.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        annotations[name] = hint
        desc = schema.get("description") or fallback_description(name)
        if constraints_in_descriptions and (note := constraint_note(schema)):
            desc = f"{desc} [{note}]"
        arg_lines.append(f"    {name}: {desc}")
    annotations["return"] = str
    doc = spec["description"].strip()
    if arg_lines:
        doc += "\n\nArgs:\n" + "\n".join(arg_lines)
    doc += "\n\nReturns:\n    " + RETURNS
    return _method(spec["name"], doc, inspect.Signature(sig, return_annotation=str), annotations)


class BackofficeToolEnv:
    """One backoffice episode at a time, for TRL's ``environment_factory`` (see the module
    docstring). Build the per-domain class with :func:`tool_env_class`; instances take no
    required argument."""

    #: set on each generated class
    domain: str = ""
    split: str = "train"
    max_steps: int | None = None
    #: the native tool specs (function shape) the methods were generated from
    native_tools: tuple[dict[str, Any], ...] = ()

    def __init__(self, env: Any = None, *, seed: int = 0):
        from backoffice.envs import make_native

        self._env = env if env is not None else make_native(self.domain, split=self.split, max_steps=self.max_steps)
        self._seed = seed
        self._resets = 0
        self._lock = threading.Lock()
        self.session: Any = None
        #: the final grade once the episode ended, else None (never readable before the end)
        self.final_grade: dict[str, Any] | None = None

    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Start an episode and return its prompt (system prompt and brief).

        ``task_id`` or ``seed`` (e.g. dataset columns) choose the task; without either, the n-th
        reset of an instance draws the task of seed ``seed + n`` from the split, so instances
        reset equally often (one GRPO group) share a task. Other dataset columns (``prompt`` ...)
        are TRL's and are ignored.
        """
        from backoffice.training.agents.session import Session

        if isinstance(seed, str):
            seed = int(seed)  # a dataset column may hold seeds as text (they exceed 2^53)
        with self._lock:
            if task_id is None and seed is None:
                seed = self._seed + self._resets
            self._resets += 1
            if self.session is None:
                # the trainer resets, never the model (reset is no tool here): nothing to rehearse
                self.session = Session(self._env, task_id=task_id, seed=seed, split=self.split, attempts=None)
            else:
                self.session.reset(task_id=task_id, seed=seed)
            self.final_grade = None
        return f"{self.session.system_prompt}\n\nTask brief (JSON):\n{self.session.observation}"

    def get_reward(self) -> float:
        """The pure score of the final grade; 0.0 while (or if) the episode has not ended."""
        return self._final_score()

    def _final_score(self) -> float:
        return self.session.reward if self.session is not None and self.session.done else 0.0

    def _call(self, tool: str, args: dict[str, Any]) -> str:
        if self.session is None:
            raise RuntimeError("call reset() before the tools")
        result = self.session.call(tool, args)
        if self.session.done and self.final_grade is None:
            self.final_grade = self.session.grade()
        return result.observation


class _NoEnvReward:
    """``get_reward`` of a class built with ``env_reward=False``: absent (``hasattr`` is false),
    so TRL takes the reward from ``reward_funcs`` alone."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        raise AttributeError("get_reward: this class was built with env_reward=False; pass "
                             "reward_funcs=[final_score_reward] to GRPOTrainer")


_CLASSES: dict[tuple[Any, ...], type[BackofficeToolEnv]] = {}


def tool_env_class(domain: str, *, split: str = "train", max_steps: int | None = None,
                   constraints_in_descriptions: bool = False, env_reward: bool = True) -> type[BackofficeToolEnv]:
    """The tool-environment class of ``domain`` (cached): one method per tool of the domain.

    ``env_reward``: the class has ``get_reward()`` (the environment-owned reward TRL reads);
    with ``False`` it has none, for ``GRPOTrainer(reward_funcs=[final_score_reward], ...)``:
    TRL adds an environment's ``get_reward`` to its reward functions, so both would count the
    score twice."""
    key = (domain, split, max_steps, constraints_in_descriptions, env_reward)
    if key in _CLASSES:
        return _CLASSES[key]
    from backoffice.envs import DOMAINS, get_domain

    toolkit = get_domain(domain).toolkit
    specs = tuple(toolkit.specs(format="function"))
    models = {n: t.args_model for n, t in toolkit.tools.items()}
    taken = {n for n in dir(BackofficeToolEnv) if not n.startswith("_")} | set(RESERVED)
    ns: dict[str, Any] = {"domain": domain, "split": split, "max_steps": max_steps, "native_tools": specs,
                          "__module__": __name__}
    for spec in specs:
        if spec["name"] in taken or spec["name"].startswith("_"):
            raise ValueError(f"tool {spec['name']!r} of {domain} clashes with a BackofficeToolEnv name")
        ns[spec["name"]] = tool_method(spec, constraints_in_descriptions, models[spec["name"]])
    if not env_reward:
        ns["get_reward"] = _NoEnvReward()
    name = f"{DOMAINS[domain]}ToolEnv"
    default = (split, max_steps, constraints_in_descriptions, env_reward) == ("train", None, False, True)
    ns["__qualname__"] = name if default else f"tool_env_class.<locals>.{name}"
    ns["__doc__"] = (f"The {domain} tools for TRL's environment_factory ({split} split): "
                     f"one method per tool, {', '.join(s['name'] for s in specs)}.")
    cls = type(name, (BackofficeToolEnv,), ns)
    _CLASSES[key] = cls
    return cls


def tool_methods(env: BackofficeToolEnv) -> list[Any]:
    """The methods TRL exposes as tools, found as TRL finds them."""
    return [m for n, m in inspect.getmembers(env, predicate=inspect.ismethod) if n not in RESERVED and not n.startswith("_")]


def final_score_reward(completions: Any = None, environments: Any = None, **kwargs: Any) -> list[float]:
    """A TRL ``reward_funcs`` entry: each rollout's final score (``get_reward``), 0.0 if unfinished."""
    if environments is None:
        raise ValueError("final_score_reward needs GRPOTrainer(environment_factory=...): it reads the environments")
    return [env._final_score() for env in environments]


def __getattr__(name: str) -> Any:
    """``ApprovalsToolEnv`` ... : the default class of each domain (train split)."""
    from backoffice.envs import DOMAINS

    for domain, title in DOMAINS.items():
        if name == f"{title}ToolEnv":
            return tool_env_class(domain)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
