"""What a domain is: tables + tools + generator + grader, and nothing else.

A domain package builds one :class:`Domain` and subclasses :class:`~backoffice.envs.core.env.BackofficeEnv`
with it. The engine never imports a domain; domains never import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.core.release import Task
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import Toolkit
from backoffice.graders.diff import Diff


@dataclass(frozen=True)
class Generated:
    """One generated task.

    ``task`` holds the public fields (``instructions``, ``allowed_tools``, ``params``, optional
    ``max_steps``); ids, split and seed are filled in by the release builder. ``snapshot`` maps
    table names to rows. ``key`` is the answer key: at least ``defect_tags`` and ``targets``
    (``table:id`` or ``table:*`` patterns of rows the task may change), plus whatever the grader
    reads (``checks``, ``expected``, ``outcome_class`` ...).
    """

    task: dict[str, Any]
    snapshot: dict[str, list[dict[str, Any]]]
    key: dict[str, Any]


@dataclass(frozen=True)
class Episode:
    """Everything a pure grader may read: the grade is a function of this alone.

    Two fields change what a grade costs, never what it says: ``memo``, a cache one episode's
    grades share (:func:`~backoffice.graders.checks.run_checks` keeps a declarative check's
    result there until a table or trace record it reads changes), and ``checks_only``, set when
    only the checks are read (the progress reward's distance): the grade may then leave out its
    fields, score and process metrics."""

    task: Task
    key: Mapping[str, Any]
    snapshot: Snapshot
    state: Store
    diff: Diff
    trace: Sequence[Mapping[str, Any]]
    memo: dict[Any, Any] | None = None
    checks_only: bool = False


Grader = Callable[[Episode], dict[str, Any]]


class lazy:  # noqa: N801 - used like a function: grade=lazy("module:function")
    """A callable that imports ``"package.module:function"`` on its first call and forwards to
    it: how a ``Domain`` names its grader or judge without importing it at declaration time
    (a grader may import the domain's own modules). Picklable (it pickles as its target)."""

    def __init__(self, target: str):
        module_name, _, attr = target.partition(":")
        if not module_name or not attr:
            raise ValueError(f"lazy() takes 'package.module:function', got {target!r}")
        self.target = target
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            import importlib

            module_name, _, attr = self.target.partition(":")
            self._fn = getattr(importlib.import_module(module_name), attr)
        return self._fn(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (lazy, (self.target,))

    def __repr__(self) -> str:
        return f"lazy({self.target!r})"
#: ``generate(seed, tag)``, or ``generate(seed, tag, scale=k)`` for a world about k times larger
GeneratorFn = Callable[..., Generated]


def default_report_fields(key: Mapping[str, Any], grade: Mapping[str, Any]) -> dict[str, Any]:
    """Fields from the answer key that evaluation records carry for reports."""
    return {"defect_tags": list(key.get("defect_tags", ())), "outcome_class": key.get("outcome_class")}


def default_decision(key: Mapping[str, Any]) -> str:
    """The decision a task's right answer takes, for the balance bound (no decision above 35 % of
    a split): by default its ``outcome_class``."""
    return str(key.get("outcome_class"))


#: training-only cost of a successful call in :func:`default_step_shaping` (every domain's step
#: shaping starts from it; an env's ``call_cost`` replaces it)
CALL_COST = 0.01
#: training-only cost of a rejected call in :func:`default_step_shaping`
ERROR_COST = 0.05


def default_step_shaping(record: Mapping[str, Any]) -> float:
    """Training-only per-step shaping: a small cost per call, a larger one per rejected call."""
    return -CALL_COST if record["result_status"] == "ok" else -ERROR_COST


def default_terminal_shaping(grade: Mapping[str, Any]) -> float:
    """Training-only terminal shaping: partial credit (the grade's score) plus a pass bonus."""
    return 0.5 * float(grade["score"]) + 0.5 * float(bool(grade["pass"]))


@dataclass(frozen=True, eq=False)
class Domain:
    """The definition of one domain, consumed by the engine.

    Attributes:
        name: short lower-case name, also the seeds folder (``approvals``).
        title: the env name part (``Approvals`` -> ``backoffice/Approvals-v0``).
        prefix: task id prefix (``APR`` -> ``APR-T0001``, ``APR-H0001``).
        toolkit: the domain's tools; terminal ones end the episode.
        generate: ``generate(seed, defect_tag) -> Generated``, pure in its arguments.
        grade: the pure grader.
        defect_tags / failure_codes: the vocabulary of DOMAINS.md for this domain.
        generator_version: bumped whenever generated content changes.
        sizes: tasks per split in the release.
        default_max_steps: truncation limit when the env is not given one.
        guardrail_code: failure code of a write outside the answer key's ``targets``.
        report_fields: extra fields (from key and grade) for evaluation records and reports.
        judge: optional free-text judge ``judge(episode, spec)`` run at the end of an episode,
            ``spec`` being the env's ``judge`` argument (``"rubric"`` or ``"model:<name>"``); its
            result goes to ``info["judge"]`` and never into the grade.
        grade_reads: the tools whose calls the grade reads from the trace even when they change no
            row: reads a rule requires (a search before a create, the documents after a reply) and
            refused calls a check is anchored on. ``reward_mode="progress"`` grades again only
            after a step that changed rows or called one of these (the test proves the distance
            equal to a grade at every step); ``None``: after every step.
        shaping_fields: the grade's domain fields ``terminal_shaping`` reads beyond ``score``,
            ``pass`` and ``checks`` (sufficiency: ``gap_coverage``). An env with ``lean_info``
            grades a finished episode's checks alone when it reads none, its fields too otherwise.
        progress_exclude: ids of checks left out of the end-state distance that
            ``reward_mode="progress"`` pays on, because the right procedure passes through
            states that fail them (e.g. a clock paused while waiting for a reply); the test
            proves the distance never grows along an oracle trajectory of the release.
        rules: the documented rules of the domain that decide a task's right answer; the test
            suite proves each one binds (a policy ignoring it fails >= 20 tasks per split).
        task_aliases: task ``params`` that name a task uniquely within a split and may be
            given to ``reset(options=...)`` instead of ``task_id`` (sufficiency: ``case_id``).
        tables: the tables of the domain's world; every generated snapshot has exactly these
            (plus ``clock``), which the release builder checks.
        variants: tag -> n: the release deals the n variants of that tag evenly over the tag's
            tasks of each split (the k-th in index order is generated with ``variant=k % n``;
            its generator takes ``generate(seed, tag, scale=1, variant=None)``, a generated task
            draws its variant). For a choice a desk makes for the whole task (remittance: what
            to do with a duplicate) that a constant guess must not hit by the luck of a split.
        rule_tools: the tools that return the domain's rule documents (the one shape of
            :func:`~backoffice.envs.core.tools.rule_document`); the ids of the rules they show
            are exactly ``rules``, so every rule an agent is shown is proven to bind.
        decision: the decision class of a task from its answer key (default: its
            ``outcome_class``); every way to end the episode that is one decision for the agent
            (all referral reasons: "refer") is one class, and none may hold more than 35 % of a
            split.
        policies: import path of the module with the domain's ``Oracle``, ``WRONG_POLICIES``,
            ``BLIND_POLICIES``, ``RULE_POLICIES`` and ``EXPLOITS`` (``envs`` never imports
            ``training``: it is named, not imported).
        catalog: ``"module:Class"`` of the domain's catalog spec for stable-baselines3, or
            ``None`` when the domain has no catalog env.
    """

    name: str
    title: str
    prefix: str
    toolkit: Toolkit
    generate: GeneratorFn
    grade: Grader
    defect_tags: tuple[str, ...]
    failure_codes: tuple[str, ...]
    generator_version: str
    sizes: Mapping[str, int] = field(default_factory=lambda: {"train": 400, "heldout": 150})
    default_max_steps: int = 40
    guardrail_code: str = "forbidden_write"
    report_fields: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] = default_report_fields
    judge: Callable[[Episode, str], dict[str, Any] | None] | None = None
    step_shaping: Callable[[Mapping[str, Any]], float] = default_step_shaping
    terminal_shaping: Callable[[Mapping[str, Any]], float] = default_terminal_shaping
    rules: tuple[str, ...] = ()
    progress_exclude: tuple[str, ...] = ()
    shaping_fields: tuple[str, ...] = ()
    grade_reads: frozenset[str] | None = None
    task_aliases: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    rule_tools: tuple[str, ...] = ()
    decision: Callable[[Mapping[str, Any]], str] = default_decision
    variants: Mapping[str, int] = field(default_factory=dict)
    policies: str | None = None
    catalog: str | None = None

    @property
    def env_id(self) -> str:
        return f"backoffice/{self.title}-v0"

    @property
    def terminal_tools(self) -> frozenset[str]:
        return frozenset(n for n, t in self.toolkit.tools.items() if t.terminal)
