"""What defines a training run: :class:`TrainConfig`, and the task ids a run trains, validates
and demonstrates on.

Every field carries its own help, type and bounds (:func:`setting`): ``backoffice train``'s
options are generated from them (:mod:`backoffice.training.cli.options`), and
:meth:`TrainConfig.__post_init__` checks the same bounds and choices, so a field is described
and validated in one place.

Nothing here imports the trainer, torch or stable-baselines3: a catalog's ``hyperparams`` can
use :func:`rollout_on` and the command line can build its options without them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

ALGOS = ("maskable-ppo", "ppo")
VEC_ENVS = ("subproc", "dummy")
#: the actor-critic networks (``TrainConfig.policy``)
POLICIES = ("mlp", "slots")
#: how a learner's env picks its next train task (:mod:`backoffice.training.rl.curriculum`)
TASK_SAMPLINGS = ("uniform", "greedy-failures")
TRAIN_SPLITS = ("train", "generated")
REWARD_MODES = ("shaped", "progress")
WARM_STARTS = ("demos",)
#: behaviour-cloning passes over the demonstrations: enough for the 64x64 MLP to reproduce
#: nearly every demonstrated action (fewer passes leave a clone that passes far fewer heldout
#: tasks; docs/EXPERIMENTS.md)
BC_EPOCHS = 200
#: generated tasks demonstrated for behaviour cloning when a run trains on generated tasks (the
#: released train split minus validation is a few hundred tasks, too few to clone a tier that
#: trains on generated tasks; docs/EXPERIMENTS.md)
DEMO_GENERATED = 2000


def setting(default: Any = MISSING, help: str = "", *, factory: Any = MISSING, flag: str | None = None,
            choices: Sequence[str] = (), min: float | None = None, max: float | None = None,
            tuned: bool = True, shown: str | None = None, cli: bool = True) -> Any:
    """A :class:`TrainConfig` field and its documentation, in one place.

    Args:
        default: the value when neither the catalog's ``hyperparams`` nor the caller sets one.
        help: what the field is, in one or two sentences (the ``--help`` line and the doc).
        factory: a default factory instead of ``default`` (mutable defaults).
        flag: the command-line option name without ``--`` when it is not the field's name with
            dashes (``heldout`` for ``heldout_eval``).
        choices: the accepted values (checked by the config, listed by the help).
        min: the smallest accepted value (checked by the config and the option).
        max: the largest accepted value.
        tuned: whether a catalog's ``hyperparams`` typically set it (the help then says
            "tuned, else <default>") or it is a setting of the run itself ("default <default>").
        shown: how the help states the default, when the value itself would not say it.
        cli: ``False`` for fields the command line sets through options of its own
            (``--env``, ``--out``, ``--tensorboard``) or not at all.
    """
    metadata = {"help": help, "flag": flag, "choices": tuple(choices), "min": min, "max": max,
                "tuned": tuned, "shown": shown, "cli": cli}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class TrainConfig:
    """Everything that defines a training run (written to ``summary.json``)."""

    domain: str = setting(help="Domain to train on", cli=False)
    out: Path = setting(help="Model folder", cli=False)
    algo: str = setting("maskable-ppo", "maskable-ppo (sb3-contrib, uses action masks) or ppo", choices=ALGOS)
    timesteps: int = setting(200_000, "Training budget in environment steps", min=1)
    n_envs: int = setting(8, "Environments stepped together: each rollout step is one forward pass of the policy for all of them",
                          min=1)
    # the catalog envs step in the learner's process by default: in the catalogs PPO costs more
    # than the env, so worker processes cost more CPU in IPC than they save in wall time
    vec_env: str = setting("dummy", "dummy (every env in the learner's process) or subproc (one worker process per env): "
                           "the same envs, seeds and order, so the same model; only the CPU cost differs",
                           choices=VEC_ENVS, tuned=False)
    seed: int = setting(0, "Seed of the model and the environments", tuned=False)
    train_split: str = setting("train", "train (the released train tasks minus the validation set; reset is O(1)) or "
                               "generated (a fresh generated task every episode: unlimited variety, but generating one "
                               "costs milliseconds); never heldout", choices=TRAIN_SPLITS)
    task_sampling: str = setting("uniform", "How each env picks its next released train task: uniform, or greedy-failures: "
                                 "half the draws from the train tasks the deterministic policy failed at its latest replay",
                                 choices=TASK_SAMPLINGS)
    focus_freq: int = setting(50_000, "With task sampling greedy-failures: timesteps between replays of the greedy policy "
                              "on the train tasks", min=1)
    validation_size: int = setting(100, "Train tasks held out for model selection", min=1, tuned=False)
    eval_freq: int = setting(10_000, "Validate every N timesteps", min=1, tuned=False)
    patience: int = setting(30, "Stop after N validations without improvement", min=1, tuned=False)
    n_steps: int = setting(64, "Rollout steps per env; a rollout is n_envs x n_steps steps", min=1)
    batch_size: int = setting(256, "PPO minibatch size", min=1)
    n_epochs: int = setting(10, "PPO passes over each rollout", min=1)
    learning_rate: float = setting(3e-4, "Adam learning rate", min=0.0)
    gamma: float = setting(0.99, "Discount")
    gae_lambda: float = setting(0.95, "GAE lambda: how much of an advantage is the episode's own later rewards "
                                "(1: Monte Carlo) rather than the value head's estimate; a decision whose consequence "
                                "the observation stops showing (a finished remittance line) is credited only through the former",
                                min=0.0, max=1.0)
    clip_range: float = setting(0.2, "PPO's clip of the probability ratio per update, > 0", min=0.0)
    ent_coef: float = setting(0.01, "Entropy coefficient")
    net_arch: Sequence[int] = setting(factory=lambda: (64, 64), help="Repeatable. The width of each hidden layer "
                                      "of the actor and the critic", flag="net-arch", min=1)
    policy: str = setting("mlp", "Actor-critic: mlp (SB3's MLP) or slots (one scorer shared by the slots of an entity "
                          "list, which the catalog names in slot_actions)", choices=POLICIES)
    torch_threads: int = setting(1, "Torch threads of the learner", min=1, tuned=False)
    finish_bias: float = setting(-3.0, "Added to the initial logits of the actions that end the episode (submit, always "
                                 "valid, and terminal tools such as a referral): a uniform initial policy ends most episodes "
                                 "before any work scores; learning moves it like any other weight")
    finish_tools: Sequence[str] = setting((), "Repeatable. A native tool whose actions get the finishing prior too, "
                                          "beside the terminal ones: a tool after which only finishing is left "
                                          "(remittance's post_payment)", flag="finish-tool")
    heldout_eval: bool = setting(True, "Evaluate the best model on heldout at the end", flag="heldout", tuned=False)
    spec: str | None = setting(None, "A replacement catalog spec 'package.module:Class' (default: the domain's own)",
                               cli=False)
    tier: str | None = setting(None, "Feature tier of the catalog: conclusions, facts or raw",
                               tuned=False, shown="conclusions")
    reward_mode: str = setting("shaped", "Training reward: shaped, or progress (pays first-time progress towards the "
                               "answer key's end state; training only)", choices=REWARD_MODES)
    call_cost: float | None = setting(None, "Training reward's cost of a successful call; 0 with the progress reward, "
                                      "which already pays for getting closer", min=0.0, max=1.0, shown="the domain's CALL_COST, 0.01")
    gate_cap: bool = setting(True, "Training reward's terminal shaping: the score capped by a failed gate, or "
                             "(--no-gate-cap) the share of work checks passed; the grade is the same either way",
                             flag="gate-cap")
    warm_start: str | None = setting(None, "demos: behaviour-clone the tier's feature policy on the train tasks, then PPO "
                                     "(reported apart from pure RL)", choices=WARM_STARTS, tuned=False, shown="none")
    # unset for pure PPO, so it is no part of a pure run's settings
    bc_epochs: int | None = setting(None, "Behaviour-cloning passes over the demonstrations with --warm-start demos",
                                    min=1, tuned=False, shown=f"{BC_EPOCHS} with --warm-start demos")
    # logging only: the same model with or without it, so no part of a run's settings
    tensorboard_log: str | None = setting(None, "SB3's tensorboard_log folder (needs the tensorboard package)", cli=False)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.finish_tools = tuple(self.finish_tools)
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name), f.metadata)
        if self.task_sampling != "uniform" and self.train_split != "train":
            raise ValueError(f"task_sampling={self.task_sampling!r} weights the released train tasks: it needs train_split='train'")
        if self.warm_start is None and self.bc_epochs is not None:
            raise ValueError("bc_epochs is for warm_start='demos' only")
        if self.warm_start == "demos" and self.bc_epochs is None:
            self.bc_epochs = BC_EPOCHS
        if self.policy == "slots" and self.algo != "maskable-ppo":
            raise ValueError("policy='slots' is a MaskablePPO policy")
        if not self.clip_range > 0.0:
            raise ValueError(f"clip_range must be > 0, got {self.clip_range}")

    def record(self) -> dict[str, Any]:
        """The configuration as ``summary.json`` records it (plain JSON values)."""
        return {**asdict(self), "out": str(self.out), "net_arch": list(self.net_arch), "finish_tools": list(self.finish_tools)}

    @classmethod
    def for_domain(cls, domain: str, out: str | Path, **overrides: Any) -> TrainConfig:
        """Defaults, then the catalog's own ``hyperparams`` (tuned per domain, like an RL-Zoo
        entry), then ``overrides`` (``None`` values ignored)."""
        from backoffice.training.catalog import resolve_spec, spec_class

        spec = resolve_spec(domain, overrides.get("spec"), overrides.get("tier"))
        cls_ = spec_class(domain, spec)
        tuned = dict(cls_.hyperparams)
        given = {k: v for k, v in overrides.items() if v is not None}
        given.update(spec=spec, tier=cls_.tier)
        config = cls(domain=domain, out=Path(out), **{**tuned, **given})
        if config.policy == "slots" and not cls_.slot_actions:
            raise ValueError(f"the {domain} catalog's {cls_.tier} tier names no slot_actions for policy='slots'")
        return config


def check_setting(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of the field's ``choices`` and within its
    ``min`` and ``max`` (each item of a sequence; ``None`` passes: unset)."""
    if value is None:
        return
    if meta.get("choices") and value not in meta["choices"]:
        raise ValueError(f"{name} must be one of {meta['choices']}, got {value!r}")
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if meta.get("min") is not None and item < meta["min"]:
            raise ValueError(f"{name} must be >= {meta['min']}, got {value!r}")
        if meta.get("max") is not None and item > meta["max"]:
            raise ValueError(f"{name} must be <= {meta['max']}, got {value!r}")


def rollout_on(hyperparams: Mapping[str, Any], n_envs: int) -> dict[str, Any]:
    """``hyperparams`` (``TrainConfig`` fields; defaults where absent) on ``n_envs`` envs with the
    same rollout size (``n_envs * n_steps``): what the raw tiers' runs and the worker benchmarks
    use (2 envs)."""
    defaults = {f.name: f.default for f in fields(TrainConfig) if f.name in ("n_envs", "n_steps")}
    rollout = hyperparams.get("n_envs", defaults["n_envs"]) * hyperparams.get("n_steps", defaults["n_steps"])
    if rollout % n_envs:
        raise ValueError(f"a rollout of {rollout} steps does not split over {n_envs} envs")
    return {**hyperparams, "n_envs": n_envs, "n_steps": rollout // n_envs}


def validation_ids(domain: str, n: int) -> list[str]:
    """``n`` released train task ids chosen by a seeded hash (stable across runs)."""
    from backoffice.envs.core.canonical import derive_seed
    from backoffice.envs.core.release import load_release

    ids = sorted(load_release(domain).split_ids["train"], key=lambda t: derive_seed("validation", domain, t))
    if not 0 < n < len(ids):
        raise ValueError(f"validation_size must be in 1..{len(ids) - 1}")
    return sorted(ids[:n])


def training_task_ids(config: TrainConfig) -> list[str] | None:
    """The released train tasks a run trains on (``train`` minus the validation set), or
    ``None`` when it trains on generated tasks."""
    if config.train_split != "train":
        return None
    from backoffice.envs.core.release import load_release

    held = set(validation_ids(config.domain, config.validation_size))
    return [t for t in load_release(config.domain).split_ids["train"] if t not in held]


def demo_task_ids(config: TrainConfig) -> list[str]:
    """The tasks behaviour cloning demonstrates on: the run's training tasks, or the first
    :data:`DEMO_GENERATED` generated tasks for a run on the ``generated`` split."""
    from backoffice.envs import get_domain
    from backoffice.envs.core.build import make_task_id

    ids = training_task_ids(config)
    if ids is not None:
        return ids
    domain = get_domain(config.domain)
    return [make_task_id(domain, "generated", i) for i in range(DEMO_GENERATED)]
