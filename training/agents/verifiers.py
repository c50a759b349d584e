"""verifiers (0.4, ``verifiers.v1``): a Taskset/Toolset environment for every domain.

::

    pip install 'backoffice-gym[verifiers]'      # its own environment: verifiers pins mcp==2.0.0 and
                                                 # openai<3, the llm extra mcp 2.3 and openai 3

    # in Python: the Taskset object, or a run through verifiers' eval runner
    from backoffice.training.agents.verifiers import load_taskset, register_plugin
    taskset = load_taskset("approvals", split="train")       # a verifiers.v1.Taskset
    taskset_id = register_plugin()                           # "backoffice_gym_verifiers"
    # EvalConfig(env={"taskset": {"id": taskset_id, "domain": "approvals", "split": "train"}, ...})

verifiers resolves a taskset id by importing it as a top-level module (``owner/name`` ->
``name``; a dotted path is not accepted), so :func:`register_plugin` makes this module importable
as ``backoffice_gym_verifiers`` in the current process. For the ``vf-eval`` CLI, put a one-line
module of that name on the path (``from backoffice.training.agents.verifiers import *``) and
pass ``--env.taskset.id backoffice_gym_verifiers --env.taskset.domain approvals``.

What it is, in verifiers' terms (the module is a taskset plugin: its ``__all__`` exports one
``Taskset`` subclass, and ``python -m`` on it serves the tools):

- :class:`BackofficeTaskset` (config :class:`BackofficeTasksetConfig`: ``domain``, ``split``,
  ``task_ids``, ``max_steps``) yields one :class:`BackofficeTask` per task id of the split, in the
  release's order. Its data (:class:`BackofficeTaskData`) is public material only: ``id`` (the task
  id), ``prompt`` (the brief, the canonical JSON the native ``reset`` returns), ``system_prompt``
  (the one every adapter uses, from the brief and the tool specs), ``domain``, ``split``, ``seed``.
- :class:`BackofficeToolset` is the task's tool server (``Task.toolsets``, one per rollout, a
  subprocess by default). At setup it opens a :class:`~backoffice.training.agents.session.Session` on the
  rollout's task; it advertises every tool of the domain under its own name (``TOOL_PREFIX =
  None``) with the native JSON schema (the pydantic model's: lengths, ranges, enums, defaults),
  and each call is one :meth:`Session.call` (one ``env.step``; the pydantic model validates the
  arguments there, so an invalid call is a structured ``invalid_args`` error, traced, state
  untouched). The result text is the observation, exactly as natively.
- The reward (``BackofficeTask.score_final``, weight 1) is the pure score of the final grade:
  the tool server writes the score into the rollout's :class:`BackofficeState` only when the
  episode ends (``submit``, a terminal tool, or the step limit) and the grade itself never leaves
  the server; an episode the model left unfinished earns 0.0. ``finished`` and ``steps`` are
  recorded as metrics; a ``@stop`` ends the rollout at the episode's end (before the next model
  call), so a model that keeps calling tools after ``submit`` does not run on to ``max_turns``.

verifiers is imported only when a class is first used (module ``__getattr__``), so importing this
module without verifiers installed works; it never imports mcp or openai itself.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["BackofficeTaskset"]  # noqa: F822 - built on first access (module __getattr__); verifiers reads it

#: the top-level module name :func:`register_plugin` gives this module (a verifiers taskset id)
PLUGIN_ID = "backoffice_gym_verifiers"

_NAMES = ("BackofficeTaskset", "BackofficeTasksetConfig", "BackofficeTask", "BackofficeTaskConfig",
          "BackofficeTaskData", "BackofficeToolset", "BackofficeToolsetConfig", "BackofficeState")
_BUILT: dict[str, Any] = {}


def task_ids(domain: str, split: str = "heldout") -> list[str]:
    """The task ids of ``domain``'s ``split``, in the release's order."""
    from backoffice.envs import make_native

    env = make_native(domain, split=split)
    try:
        return list(env.unwrapped.release.split_ids[split])
    finally:
        env.close()


def _tool_function(spec: dict[str, Any], call: Any) -> Any:
    """A function with one keyword per argument of ``spec`` (for the MCP server's registration;
    the advertised schema is then replaced by the native one). It forwards exactly the
    arguments given."""
    from backoffice.training.agents.trl import python_type

    params = spec["parameters"]
    required = set(params.get("required", ()))
    sig = []
    for name, schema in params.get("properties", {}).items():
        hint = python_type(schema)
        default = inspect.Parameter.empty if name in required else None
        sig.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=hint if name in required else (hint | None)))

    def tool(**kwargs: Any) -> str:
        return call(spec["name"], kwargs)

    tool.__name__ = tool.__qualname__ = spec["name"]
    tool.__doc__ = spec["description"]
    tool.__signature__ = inspect.Signature(sig, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in sig} | {"return": str}
    return tool


def _build() -> dict[str, Any]:
    """Define the verifiers classes (first use only)."""
    if _BUILT:
        return _BUILT
    import verifiers.v1 as vf  # type: ignore[import-not-found]  # optional extra, not installed in the dev venv
    from pydantic import Field

    class BackofficeState(vf.State):
        """The rollout's state shared by the tool server and the scoring: nothing of the grade
        but the final score, written once the episode ended."""

        task_id: str = ""
        steps: int = 0
        finished: bool = False
        score: float | None = None

    class BackofficeTaskData(vf.TaskData):
        domain: str = ""
        split: str = "heldout"
        seed: str = ""
        max_steps: int | None = None

    class BackofficeToolsetConfig(vf.ToolsetConfig):
        domain: str = ""

    class BackofficeToolset(vf.Toolset[BackofficeToolsetConfig, BackofficeState]):
        """One episode's tools (see the module docstring)."""

        TOOL_PREFIX = None

        def __init__(self, config: BackofficeToolsetConfig) -> None:
            super().__init__(config)
            self.session: Any = None

        async def setup_task(self, task: Any) -> None:
            from backoffice.training.agents.session import Session

            data = task if isinstance(task, BackofficeTaskData) else BackofficeTaskData.model_validate(task)
            self.session = Session(data.domain, task_id=data.id, split=data.split, max_steps=data.max_steps)

        def _call(self, name: str, args: dict[str, Any]) -> str:
            session = self.session
            result = session.call(name, args)
            state = self.state
            state.task_id = session.task_id
            state.steps = session.steps
            if session.done:
                state.finished = True
                state.score = session.reward  # the pure score; the grade stays here
            return result.observation

        def register(self, mcp: Any) -> None:
            from backoffice.envs import get_domain

            specs = get_domain(self.config.domain).toolkit.specs(format="function")
            for spec in specs:
                fn = _tool_function(spec, self._call)
                mcp.add_tool(self._with_state(fn), name=spec["name"], description=spec["description"])
                _set_input_schema(mcp, spec["name"], spec["parameters"])

    class BackofficeTaskConfig(vf.TaskConfig):
        tools: BackofficeToolsetConfig = BackofficeToolsetConfig()

    class BackofficeTask(vf.Task[BackofficeTaskData, BackofficeState, BackofficeTaskConfig]):
        @property
        def key(self) -> str:
            return f"{self.data.domain}:{self.data.id}"

        @classmethod
        def toolsets(cls, config: BackofficeTaskConfig) -> list[Any]:
            return [BackofficeToolset(config.tools)]

        @vf.reward(weight=1.0)
        async def score_final(self, trace: Any) -> float:
            """The final grade's pure score; 0.0 if the episode did not end."""
            state = trace.state
            return float(state.score) if state.finished and state.score is not None else 0.0

        @vf.stop
        async def episode_over(self, trace: Any) -> bool:
            """End the rollout once the episode ended (checked before each model call)."""
            return bool(trace.state.finished)

        episode_over.__annotations__ = {"trace": vf.Trace, "return": bool}  # verifiers picks a stop's boundary by type

        @vf.metric
        async def finished(self, trace: Any) -> float:
            return float(trace.state.finished)

        @vf.metric
        async def steps(self, trace: Any) -> float:
            return float(trace.state.steps)

    class BackofficeTasksetConfig(vf.TasksetConfig):
        domain: str = "approvals"
        split: str = "heldout"
        task_ids: list[str] = Field(default_factory=list)
        """Only these tasks (default: every task of the split)."""
        max_steps: int | None = None
        task: BackofficeTaskConfig = BackofficeTaskConfig()

    class BackofficeTaskset(vf.Taskset[BackofficeTask, BackofficeTasksetConfig]):
        def load(self) -> Any:
            from backoffice.envs import make_native
            from backoffice.training.agents.session import Session

            cfg = self.config
            task_config = cfg.task.model_copy(update={"tools": cfg.task.tools.model_copy(update={"domain": cfg.domain})})
            env = make_native(cfg.domain, split=cfg.split, max_steps=cfg.max_steps)
            try:
                ids = cfg.task_ids or list(env.unwrapped.release.split_ids[cfg.split])
                session = None
                for task_id in ids:
                    if session is None:
                        session = Session(env, task_id=task_id, split=cfg.split)
                    else:
                        session.reset(task_id=task_id)
                    start = session.start
                    yield BackofficeTask(BackofficeTaskData(
                        id=task_id, name=f"{cfg.domain}/{task_id}", prompt=session.observation,
                        system_prompt=start["system_prompt"], domain=cfg.domain, split=cfg.split,
                        seed=start["seed_str"], max_steps=cfg.max_steps), task_config)
            finally:
                env.close()

    built = dict(locals())
    for name in _NAMES:
        cls = built[name]
        cls.__module__ = __name__
        cls.__qualname__ = name
        _BUILT[name] = cls
    return _BUILT


def _set_input_schema(mcp: Any, name: str, schema: dict[str, Any]) -> None:
    """Make the tool ``name`` registered on ``mcp`` (verifiers' ``MCPServer``) advertise
    ``schema`` (the native one) and hand the call exactly the arguments the model gave: the
    server's own argument model, derived from the function's type hints, would reject or fill
    in arguments before the env sees them; the env's pydantic model validates them instead, as
    natively."""
    from pydantic import ConfigDict

    tool = mcp._tool_manager.get_tool(name)
    base = tool.fn_metadata.arg_model.__base__  # the SDK's ArgModelBase

    class Given(base):  # type: ignore[misc, valid-type]
        model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

        def model_dump_one_level(self) -> dict[str, Any]:
            return dict(self.model_extra or {})

    Given.__name__ = f"{name}Arguments"
    tool.fn_metadata.arg_model = Given
    tool.parameters = schema


def load_taskset(domain: str, split: str = "heldout", task_ids: list[str] | None = None,
                 max_steps: int | None = None) -> Any:
    """The verifiers ``Taskset`` of ``domain``'s ``split`` (every task, or ``task_ids``)."""
    classes = _build()
    config = classes["BackofficeTasksetConfig"](domain=domain, split=split, task_ids=list(task_ids or ()), max_steps=max_steps)
    return classes["BackofficeTaskset"](config)


def register_plugin(name: str = PLUGIN_ID) -> str:
    """Make this module importable as the top-level module ``name`` (verifiers' taskset ids are
    top-level module names) and return ``name``, the taskset id to give verifiers."""
    import sys

    sys.modules.setdefault(name, sys.modules[__name__])
    return name


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return _build()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    # verifiers launches a rollout's tool server as `python -m <this module>` (config in VF_CONFIG)
    from backoffice.training.agents.verifiers import BackofficeToolset as _Toolset

    # mypy types a module's import of itself through its __getattr__ as an unresolved Any ("Any?")
    _Toolset.run()  # type: ignore[attr-defined]
