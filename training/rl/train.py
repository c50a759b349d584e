"""Train a stable-baselines3 agent on a domain's catalog env (``backoffice train``).

The loop:

1. A **validation set** is carved from the released ``train`` split (a fixed, seeded choice of
   ``validation_size`` task ids). Training runs on the rest of ``train`` (default) or on fresh
   ``generated`` tasks; the ``heldout`` split is never seen until the end.
2. ``n_envs`` catalog envs (8 by default) in a ``DummyVecEnv`` (``vec_env="subproc"``: one
   worker process each, the same model) with the catalog's training reward (``shaped`` unless
   its ``hyperparams`` say ``progress``).
3. Every ``eval_freq`` timesteps the model plays the validation tasks (deterministic, masked,
   pure grade); the best one is saved to ``<out>/model.zip``. Training stops early once
   validation passes every task or has not improved for ``patience`` evaluations. A
   warm-started model (``warm_start="demos"``) is also validated at ``t=0``, right after
   cloning: the clone is a candidate, and one that passes every validation task is kept as is.
4. At the end: ``catalog.json`` (what ``sb3:`` policies check), ``curve.json`` and
   ``learning_curve.png`` (pure score and shaped reward against timesteps, with the validation
   pass rate), the held-out evaluation as evaluation JSONL (``heldout.jsonl``, through the same
   path as ``backoffice eval``) and ``summary.json``.

Wall time is measured here (for the report only); nothing the agent sees depends on it.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np

from backoffice.envs.core.canonical import derive_seed, dumps
from backoffice.graders.progress import DISTANCE_VERSION
from backoffice.training.rl.curriculum import TASK_SAMPLINGS, FailureWeighted, GreedyFailures, task_sampler
from backoffice.training.self_imitation import PassedEpisodes, imitate, merge

if TYPE_CHECKING:
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

ALGOS = ("maskable-ppo", "ppo")
VEC_ENVS = ("subproc", "dummy")
#: the actor-critic networks (``TrainConfig.policy``)
POLICIES = ("mlp", "slots")
#: behaviour-cloning passes over the demonstrations: enough for the 64x64 MLP to reproduce
#: >= 99.9 % of the demonstrated actions (30 passes left 81-99 % on the facts tier, and the
#: clone's heldout pass 15-53 points lower)
BC_EPOCHS = 200
#: generated tasks demonstrated for behaviour cloning when a run trains on generated tasks (the
#: released train split keeps 300-390 tasks outside validation; cloned from those, approvals'
#: facts tier passes 65 % of heldout, from 3,000 generated tasks 97 %)
DEMO_GENERATED = 2000


@dataclass
class TrainConfig:
    """Everything that defines a training run (written to ``summary.json``)."""

    domain: str
    out: Path
    algo: str = "maskable-ppo"
    timesteps: int = 200_000
    #: envs stepped together: each rollout step is one forward pass of the policy for all of them
    n_envs: int = 8
    #: ``dummy``: the envs step in the learner's process, one after another (``DummyVecEnv``);
    #: ``subproc``: in ``n_envs`` worker processes (``SubprocVecEnv``). The same envs, seeds and
    #: order, so the same model (tested); only the cost differs. In the catalogs PPO costs more
    #: than the env (the env is 10-20 % of a worker's time), so the workers' IPC costs more CPU
    #: than it saves wall time: 8 envs in one process took registration's conclusions tier from
    #: 10.2 to 2.8-3.0 CPU-minutes (200k steps) and remittance's from 11.7 to 6.0-6.4 (400k)
    vec_env: str = "dummy"
    seed: int = 0
    #: ``train``: the released train tasks minus the validation set (reset is O(1)); ``generated``:
    #: a fresh generated task every episode (unlimited variety, but generating costs 0.5-10 ms)
    train_split: str = "train"
    #: how a learner's env picks its next train task: ``uniform``, ``failures`` (weighted by
    #: ``1 - score`` towards the tasks it has been failing),
    #: ``unsolved`` (by the running failure rate to the 4th power: the tasks it fails every
    #: time) or ``greedy-failures`` (half the draws from the train tasks its deterministic
    #: policy failed at the latest replay), see :mod:`backoffice.training.rl.curriculum`; released
    #: train tasks only
    task_sampling: str = "uniform"
    #: ``greedy-failures``: timesteps between replays of the greedy policy on the train tasks
    focus_freq: int = 50_000
    #: cross-entropy minibatches per rollout towards the agent's own passed train episodes
    #: (:mod:`backoffice.training.self_imitation`; 0: pure PPO updates)
    self_imitation: int = 0
    validation_size: int = 100
    eval_freq: int = 10_000
    patience: int = 30
    #: rollout steps per env (the rollout is ``n_envs * n_steps``: 512 by default)
    n_steps: int = 64
    batch_size: int = 256
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.99
    #: GAE's lambda: how much of an advantage is the episode's own later rewards (1: Monte Carlo)
    #: rather than the value head's estimate; a decision whose consequence the observation stops
    #: showing (a finished remittance line) is credited only through the former
    gae_lambda: float = 0.95
    #: PPO's clipping of the probability ratio per update
    clip_range: float = 0.2
    ent_coef: float = 0.01
    net_arch: Sequence[int] = field(default_factory=lambda: (64, 64))
    #: ``mlp``: SB3's MLP actor-critic; ``slots``: one scorer shared by the slots of an entity
    #: list (:mod:`backoffice.training.rl.slot_policy`; the catalog names them in ``slot_actions``)
    policy: str = "mlp"
    torch_threads: int = 1
    #: added to the initial logits of the actions that end the episode (``submit``, always
    #: valid, and terminal tools such as a referral): a uniform initial policy ends most
    #: episodes before any work scores; this prior lets early exploration reach the end of
    #: long procedures; learning moves it like any other weight
    finish_bias: float = -3.0
    #: native tools whose actions get ``finish_bias`` too, beside the terminal ones: tools after
    #: which only finishing is left (remittance's ``post_payment``), which a uniform initial
    #: policy likewise calls before any work scores
    finish_tools: Sequence[str] = ()
    heldout_eval: bool = True
    #: a replacement catalog spec ``"package.module:Class"`` (default: the domain's own)
    spec: str | None = None
    #: the catalog's feature tier (``conclusions``, ``facts``, ``raw``); resolved into ``spec``
    tier: str | None = None
    #: the training envs' reward: ``shaped`` or ``progress`` (see ``BackofficeEnv``)
    reward_mode: str = "shaped"
    #: the training reward's cost of a successful call (``None``: the domain's ``CALL_COST``);
    #: 0 with the progress reward, which already pays for getting closer (see ``BackofficeEnv``)
    call_cost: float | None = None
    #: ``False``: the training reward's terminal shaping sees the share of work checks passed
    #: instead of the score capped by a failed gate (``BackofficeEnv``'s ``gate_cap``); the
    #: grade is the same either way
    gate_cap: bool = True
    #: ``"demos"``: behaviour-clone the tier's feature policy on the train tasks before PPO
    warm_start: str | None = None
    #: passes over the demonstrations when warm-starting (``None``: :data:`BC_EPOCHS`); unset
    #: for pure PPO, so it is no part of a pure run's settings
    bc_epochs: int | None = None
    #: SB3's ``tensorboard_log`` folder (needs the ``tensorboard`` package); logging only: the
    #: same model with or without it, so no part of a run's settings
    tensorboard_log: str | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.finish_tools = tuple(self.finish_tools)
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {self.algo!r}")
        if self.train_split not in ("generated", "train"):
            raise ValueError("train_split must be 'generated' or 'train' (never heldout)")
        if self.task_sampling not in TASK_SAMPLINGS:
            raise ValueError(f"task_sampling must be one of {TASK_SAMPLINGS}, got {self.task_sampling!r}")
        if self.task_sampling != "uniform" and self.train_split != "train":
            raise ValueError(f"task_sampling={self.task_sampling!r} weights the released train tasks: it needs train_split='train'")
        if self.self_imitation < 0:
            raise ValueError(f"self_imitation must be >= 0, got {self.self_imitation}")
        if self.self_imitation and self.algo != "maskable-ppo":
            raise ValueError("self_imitation imitates masked episodes: it needs algo='maskable-ppo'")
        if self.timesteps < 1 or self.n_envs < 1 or self.eval_freq < 1 or self.focus_freq < 1:
            raise ValueError("timesteps, n_envs, eval_freq and focus_freq must be >= 1")
        if self.warm_start not in (None, "demos"):
            raise ValueError(f"warm_start must be demos or None, got {self.warm_start!r}")
        if self.warm_start is None and self.bc_epochs is not None:
            raise ValueError("bc_epochs is for warm_start='demos' only")
        if self.warm_start == "demos" and self.bc_epochs is None:
            self.bc_epochs = BC_EPOCHS
        if self.bc_epochs is not None and self.bc_epochs < 1:
            raise ValueError(f"bc_epochs must be >= 1, got {self.bc_epochs}")
        if self.vec_env not in VEC_ENVS:
            raise ValueError(f"vec_env must be one of {VEC_ENVS}, got {self.vec_env!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.policy == "slots" and self.algo != "maskable-ppo":
            raise ValueError("policy='slots' is a MaskablePPO policy")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
        if not self.clip_range > 0.0:
            raise ValueError(f"clip_range must be > 0, got {self.clip_range}")
        if self.reward_mode not in ("shaped", "progress"):
            raise ValueError(f"reward_mode must be shaped or progress, got {self.reward_mode!r}")

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


#: what a finished episode's info carries that training never reads (see :class:`TrainingEnv`)
UNREAD_INFO = frozenset({"grade", "diff", "judge"})


class TrainingEnv(gym.Wrapper):
    """What the learner's env adds to a catalog env:

    - the step limit ends the episode (``terminated``), because the native env grades the
      episode there and the observation carries the step count (``step_fraction``): nothing
      follows, so SB3 must not bootstrap a value after it (it does on ``truncated``, which made
      harmless loops until the limit look valuable);
    - the seconds spent inside ``reset``, ``step`` and ``action_masks`` are added up (for the summary only;
      nothing the agent sees depends on them);
    - a finished episode's info drops its ``grade``, ``diff`` and ``judge`` (:data:`UNREAD_INFO`):
      SB3's ``DummyVecEnv`` deep-copies every step's infos, nothing in training reads them (the
      monitor reads ``score``, ``shaped_reward`` and ``is_success``), and copying the grade's
      checks cost 12 % of an early remittance run's CPU.
    """

    def __init__(self, env: gym.Env, tasks: FailureWeighted | GreedyFailures | None = None, keep_passes: bool = False):
        super().__init__(env)
        self.env_seconds = 0.0
        #: ``None``: the catalog env draws its train task uniformly
        self.tasks = tasks
        self.task_id: str | None = None
        #: the latest passed episode of each task (``keep_passes``, for self-imitation), else ``None``
        self.passes = PassedEpisodes() if keep_passes else None
        self._steps: list[tuple[np.ndarray, np.ndarray, int, float]] = []
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        t0 = time.perf_counter()
        if self.tasks is not None:
            if seed is not None:
                self.tasks.seed(seed)
            options = dict(options or {})
            options.setdefault("task_id", self.tasks.pick())
            self.task_id = options["task_id"]
        out = self.env.reset(seed=seed, options=options)
        if self.passes is not None:
            self.task_id = out[1]["task_id"]
            self._steps, self._last = [], (out[0], out[1]["action_mask"])
        self.env_seconds += time.perf_counter() - t0
        return out

    def action_masks(self) -> np.ndarray:
        """The catalog env's mask, timed with ``reset`` and ``step``: MaskablePPO asks for it at
        every step, so it is env time too."""
        t0 = time.perf_counter()
        mask = self.env.get_wrapper_attr("action_masks")()
        self.env_seconds += time.perf_counter() - t0
        return mask

    def focus(self, task_ids: Sequence[str]) -> None:
        """Aim a ``greedy-failures`` env's draws at ``task_ids`` (the learner's greedy failures)."""
        if not isinstance(self.tasks, GreedyFailures):
            raise TypeError("focus needs task_sampling='greedy-failures'")
        self.tasks.focus(task_ids)

    def step(self, action: Any) -> Any:
        t0 = time.perf_counter()
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.passes is not None and self._last is not None:
            self._steps.append((*self._last, int(action), float(reward)))
            self._last = (obs, info["action_mask"])
        if terminated or truncated:
            info = {k: v for k, v in info.items() if k not in UNREAD_INFO}
            if self.tasks is not None and self.task_id is not None and "score" in info:
                self.tasks.record(self.task_id, info["score"], bool(info.get("is_success")))
            if self.passes is not None and self.task_id is not None and info.get("is_success"):
                self.passes.add(self.task_id, self._steps)
        self.env_seconds += time.perf_counter() - t0
        return obs, reward, terminated or truncated, False, info


def training_env(domain: str, task_sampling: str = "uniform", keep_passes: bool = False, **kwargs: Any) -> TrainingEnv:
    """A catalog env inside a :class:`TrainingEnv` (picklable factory for ``SubprocVecEnv``);
    ``task_sampling="failures"`` or ``"unsolved"`` gives it a
    :class:`~backoffice.training.rl.curriculum.FailureWeighted` choice over its ``task_ids``,
    ``"greedy-failures"`` a :class:`~backoffice.training.rl.curriculum.GreedyFailures` one;
    ``keep_passes`` keeps its passed episodes for self-imitation."""
    from backoffice.training.catalog import make_catalog_env

    tasks = task_sampler(task_sampling, kwargs.get("task_ids") or ())
    return TrainingEnv(make_catalog_env(domain, **kwargs), tasks=tasks, keep_passes=keep_passes)


def ending_actions(env: Any, tools: Sequence[str] = ()) -> list[int]:
    """Catalog actions whose native tool ends the episode (``submit``, referrals ...) or is one of
    ``tools`` (a config's ``finish_tools``)."""
    ending = set(env.unwrapped.domain.terminal_tools) | set(tools)
    return [i for i, a in enumerate(env.agent.spec.actions) if a.tool in ending]


def rollout_on(hyperparams: Mapping[str, Any], n_envs: int) -> dict[str, Any]:
    """``hyperparams`` (``TrainConfig`` fields; defaults where absent) on ``n_envs`` envs with the
    same rollout size (``n_envs * n_steps``): what the raw tiers' runs and the worker benchmarks
    use (2 envs)."""
    defaults = {f.name: f.default for f in fields(TrainConfig) if f.name in ("n_envs", "n_steps")}
    rollout = hyperparams.get("n_envs", defaults["n_envs"]) * hyperparams.get("n_steps", defaults["n_steps"])
    if rollout % n_envs:
        raise ValueError(f"a rollout of {rollout} steps does not split over {n_envs} envs")
    return {**hyperparams, "n_envs": n_envs, "n_steps": rollout // n_envs}


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


def validation_ids(domain: str, n: int) -> list[str]:
    """``n`` released train task ids chosen by a seeded hash (stable across runs)."""
    from backoffice.envs.core.release import load_release

    ids = sorted(load_release(domain).split_ids["train"], key=lambda t: derive_seed("validation", domain, t))
    if not 0 < n < len(ids):
        raise ValueError(f"validation_size must be in 1..{len(ids) - 1}")
    return sorted(ids[:n])


def play_each(model: Any, env: Any, task_ids: Sequence[str], masked: bool = True) -> list[tuple[str, bool, float]]:
    """Run ``model`` deterministically on each task of a catalog env: ``(task_id, passed,
    pure score)`` per task, in order."""
    out = []
    for tid in task_ids:
        obs, _ = env.reset(options={"task_id": tid})
        while True:
            if masked:
                action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            else:
                action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                break
        out.append((tid, bool(info["is_success"]), float(info["score"])))
    return out


def play(model: Any, env: Any, task_ids: Sequence[str], masked: bool = True) -> dict[str, float]:
    """Run ``model`` deterministically on each task of a catalog env; pure pass rate and score."""
    each = play_each(model, env, task_ids, masked)
    n = max(1, len(task_ids))
    return {"pass_rate": sum(p for _, p, _ in each) / n, "mean_score": sum(s for _, _, s in each) / n}


def _make_callback(config: TrainConfig, val_env: Any, val_ids: Sequence[str], on_progress: Callable[[int], None] | None,
                   focus_env: Any = None, train_ids: Sequence[str] = ()) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class TrainingMonitor(BaseCallback):
        """Collects finished episodes, validates, keeps the best model, stops early."""

        def __init__(self) -> None:
            super().__init__()
            self.episodes: list[dict[str, float]] = []
            self.validation: list[dict[str, float]] = []
            self.best = -1.0
            self.stale = 0
            self.next_eval = config.eval_freq
            self.imitation_rng = np.random.default_rng(derive_seed("self-imitation", config.seed))
            #: rollouts followed by self-imitation, and the tasks imitated at the last one
            self.imitation = {"updates": 0, "tasks": 0}
            self.next_focus = config.focus_freq
            #: greedy-failures: (timesteps, train tasks the greedy policy failed) per replay
            self.focus: list[dict[str, int]] = []

        def _on_rollout_start(self) -> None:
            # after the last PPO update, before the next rollout: the rollout's log-probs are
            # those of the policy that collects it, as PPO's ratio needs
            if focus_env is not None and self.num_timesteps >= self.next_focus:
                self.next_focus += config.focus_freq
                each = play_each(self.model, focus_env, train_ids, masked=config.algo == "maskable-ppo")
                failed = [t for t, passed, _ in each if not passed]
                self.training_env.env_method("focus", failed)
                self.focus.append({"t": self.num_timesteps, "failed": len(failed), "tasks": len(each)})
            if config.self_imitation:
                episodes = merge(p.episodes for p in self.training_env.get_attr("passes"))
                if imitate(self.model, episodes, config.self_imitation, config.batch_size, self.imitation_rng) is not None:
                    self.imitation["updates"] += 1
                    self.imitation["tasks"] = len(episodes)

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
                if done and "score" in info:
                    self.episodes.append({"t": self.num_timesteps, "score": float(info["score"]),
                                          "shaped": float(info["shaped_reward"]), "pass": float(info["is_success"])})
            if on_progress is not None:
                on_progress(self.num_timesteps)
            if self.num_timesteps >= self.next_eval:
                self.next_eval += config.eval_freq
                return self.validate()
            return True

        def validate_start(self, model: Any) -> bool:
            """Validate ``model`` before any PPO update (``t=0``); whether to train on."""
            self.init_callback(model)
            return self.validate()

        def validate(self) -> bool:
            res = play(self.model, val_env, val_ids, masked=config.algo == "maskable-ppo")
            self.validation.append({"t": self.num_timesteps, **res})
            if res["pass_rate"] > self.best:
                self.best, self.stale = res["pass_rate"], 0
                self.model.save(config.out / "model.zip")
            else:
                self.stale += 1
            return res["pass_rate"] < 1.0 and self.stale < config.patience

    return TrainingMonitor()


def _rolling(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` values (fewer at the start)."""
    if len(values) == 0:
        return values
    c = np.cumsum(np.insert(values.astype(float), 0, 0.0))
    hi = np.arange(1, len(values) + 1)
    lo = np.maximum(0, hi - max(1, window))
    return (c[hi] - c[lo]) / (hi - lo)


def plot_curve(curve: dict[str, Any], path: Path, title: str) -> Path:
    """Learning curve: pure score and shaped reward (rolling means over training episodes)
    against timesteps, and the validation pass rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    eps = curve["episodes"]
    t = np.array([e["t"] for e in eps], dtype=float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    if len(t):
        window = max(20, len(t) // 50)
        ax1.plot(t, _rolling(np.array([e["score"] for e in eps]), window), label=f"train pure score (mean of {window} episodes)")
        ax1.plot(t, _rolling(np.array([e["pass"] for e in eps]), window), label="train pass rate", alpha=0.7)
        ax2.plot(t, _rolling(np.array([e["shaped"] for e in eps]), window), color="tab:green", label="shaped reward")
    val = curve["validation"]
    if val:
        ax1.plot([v["t"] for v in val], [v["pass_rate"] for v in val], "o-", color="black", label="validation pass rate")
    ax1.set(xlabel="timesteps", ylabel="pure score / pass rate", ylim=(-0.02, 1.02), title="pure grade")
    ax2.set(xlabel="timesteps", ylabel="episode shaped reward", title="shaped reward (training signal)")
    thousands = FuncFormatter(lambda x, _: f"{x / 1000:.0f}k")
    for ax in (ax1, ax2):
        ax.xaxis.set_major_formatter(thousands)
        if ax.get_legend_handles_labels()[0]:  # a clone kept without PPO has no training episodes
            ax.legend(loc="best", fontsize=8, framealpha=0.6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def train(config: TrainConfig, on_progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run the whole loop of the module docstring; returns the summary (also ``summary.json``)."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from backoffice.training.catalog import catalog_env_id, make_catalog_env
    from backoffice.training.rl.sb3_policy import META_FILE, catalog_signature

    torch.set_num_threads(config.torch_threads)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("model.zip", "heldout.jsonl"):
        (out / stale).unlink(missing_ok=True)
    val_ids = validation_ids(config.domain, config.validation_size)
    train_ids = training_task_ids(config)
    make = functools.partial(training_env, config.domain, split=config.train_split,
                             reward_mode=config.reward_mode, call_cost=config.call_cost,
                             gate_cap=config.gate_cap, task_ids=train_ids,
                             task_sampling=config.task_sampling, keep_passes=config.self_imitation > 0, spec=config.spec)
    # fork where the platform has it: workers inherit the loaded modules instead of re-importing
    # them (forkserver, SB3's default, pays the start-up again in every worker)
    start = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    venv = (SubprocVecEnv([make] * config.n_envs, start_method=start) if config.vec_env == "subproc"
            else DummyVecEnv([make] * config.n_envs))
    venv.seed(config.seed)
    val_env = make_catalog_env(config.domain, split="train", spec=config.spec)
    # the greedy replay's own env (the validation env's state stays the validation's alone)
    focus_env = make_catalog_env(config.domain, split="train", spec=config.spec) if config.task_sampling == "greedy-failures" else None
    model = build_model(config, venv, ending_actions(val_env, config.finish_tools))
    cpu_start = os.times()
    warm: dict[str, Any] | None = None
    if config.warm_start == "demos":
        warm = warm_start_from_demos(model, config)
    monitor = _make_callback(config, val_env, val_ids, on_progress, focus_env, train_ids or ())
    started = time.perf_counter()
    try:
        # a clone is a candidate too (validated at t=0): PPO's first updates can undo part of
        # it, and model selection (on validation, never heldout) keeps whichever is better; a
        # clone that passes every validation task needs no PPO
        learn = warm is None or monitor.validate_start(model)
        if learn:
            model.learn(total_timesteps=config.timesteps, callback=monitor)
        if not monitor.validation or monitor.validation[-1]["t"] != model.num_timesteps:
            if monitor.best < 1.0:
                monitor.validate()
        train_seconds = time.perf_counter() - started
        worker_seconds = [float(x) for x in venv.get_attr("env_seconds")]
    finally:
        venv.close()
    cpu_end = os.times()  # the workers have exited: their CPU time is in the children's fields
    cpu_seconds = sum(getattr(cpu_end, f) - getattr(cpu_start, f) for f in ("user", "system", "children_user", "children_system"))
    signature = catalog_signature(config.domain, config.spec)
    meta = {**signature, "algo": config.algo, "env_id": catalog_env_id(config.domain)}
    (out / META_FILE).write_bytes(dumps(meta))
    curve = {"episodes": monitor.episodes, "validation": monitor.validation}
    (out / "curve.json").write_bytes(dumps(curve))
    plot_curve(curve, out / "learning_curve.png", f"{config.domain}: {config.algo}, {model.num_timesteps:,} timesteps")
    summary: dict[str, Any] = {
        "config": config.record(),
        "timesteps": int(model.num_timesteps), "train_seconds": round(train_seconds, 1),
        "episodes": len(monitor.episodes), "best_validation_pass_rate": monitor.best,
        "validation_ids": len(val_ids),
        # time inside the training envs' reset, step and action mask: per step, summed over
        # every env the learner steps as a share of the learn wall time (the run's own layout:
        # with the default in-process envs, what the learner waits for), and the largest
        # single env's share (with worker processes, the slowest worker's)
        "env_step_us": round(sum(worker_seconds) / max(1, model.num_timesteps) * 1e6, 1),
        "env_share_of_wall": round(sum(worker_seconds) / max(train_seconds, 1e-9), 4),
        "env_share_per_worker": round(max(worker_seconds) / max(train_seconds, 1e-9), 4),
        "cpu_minutes": round(cpu_seconds / 60, 2),
        # the validation curve (a few dozen points) travels with the summary, which is committed
        # beside the model; curve.json (every training episode) stays local
        "validation": monitor.validation,
        "tier": signature["tier"], "catalog_hash": signature["catalog_hash"], "release": release_id(config.domain),
        "model": str(out / "model.zip"),
    }
    if config.reward_mode == "progress":  # the end-state distance the progress reward was paid on
        summary["progress_distance"] = DISTANCE_VERSION
    if warm is not None:
        summary["warm_start"] = warm
    if config.self_imitation:
        summary["self_imitation"] = monitor.imitation
    if monitor.focus:
        summary["greedy_focus"] = monitor.focus
    if config.heldout_eval:
        summary["heldout"] = evaluate_heldout(config.domain, out / "model.zip", out / "heldout.jsonl")
    (out / "summary.json").write_bytes(dumps(summary))
    return summary


def build_model(config: TrainConfig, venv: Any, ending: Sequence[int]) -> OnPolicyAlgorithm:
    """The untrained model of ``config`` on ``venv``: its algorithm and hyperparameters, seeded,
    with ``finish_bias`` added to the initial logits of the ``ending`` actions."""
    import torch

    policy_kwargs: dict[str, Any] = {"net_arch": list(config.net_arch)}
    policy: Any = "MlpPolicy"
    if config.policy == "slots":
        from backoffice.training.catalog import catalog_agent
        from backoffice.training.rl.slot_policy import SlotPolicy, slot_layout

        agent = catalog_agent(config.domain, spec=config.spec)
        spec = type(agent.spec)
        if not spec.slot_actions:
            raise ValueError(f"the catalog {config.spec or config.domain} names no slot_actions for policy='slots'")
        policy = SlotPolicy
        policy_kwargs["slots"] = slot_layout([f.name for f in agent.feature_defs], [a.name for a in spec.actions],
                                             spec.slot_actions, spec.slot_sets)
    common: dict[str, Any] = dict(n_steps=config.n_steps, batch_size=config.batch_size, n_epochs=config.n_epochs,
                  learning_rate=config.learning_rate, gamma=config.gamma, gae_lambda=config.gae_lambda,
                  clip_range=config.clip_range, ent_coef=config.ent_coef,
                  policy_kwargs=policy_kwargs, seed=config.seed, device="cpu", verbose=0,
                  tensorboard_log=config.tensorboard_log)
    if config.algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO

        model: OnPolicyAlgorithm = MaskablePPO(policy, venv, **common)
    else:
        from stable_baselines3 import PPO

        model = PPO("MlpPolicy", venv, **common)
    with torch.no_grad():
        # a Discrete action space's head is an nn.Linear (SB3 types it as nn.Module)
        cast("torch.nn.Linear", model.policy.action_net).bias[list(ending)] += config.finish_bias
    return model


def release_id(domain: str) -> str:
    """A digest of the installed release's content (its files' digests and version): a model
    or result made on another release is out of date."""
    from backoffice.envs.core.canonical import hash_obj
    from backoffice.envs.core.release import load_release

    manifest = load_release(domain).manifest
    return hash_obj({"release": manifest.get("release"), "files": manifest["files"]})[:16]


def warm_start_from_demos(model: Any, config: TrainConfig) -> dict[str, Any]:
    """Behaviour-clone the tier's feature policy (on :func:`demo_task_ids`) into ``model`` before PPO;
    returns the demonstrations' size, the fit and the cloned policy's heldout pass rate (the
    behaviour-cloning ceiling), measured before any PPO update."""
    from backoffice.training.rl.demos import behaviour_clone, collect
    from backoffice.training.rl.sb3_policy import evaluate_split

    started = time.perf_counter()
    demos = collect(config.domain, demo_task_ids(config), spec=config.spec)
    fit = behaviour_clone(model, demos, epochs=config.bc_epochs or BC_EPOCHS, seed=config.seed)
    out: dict[str, Any] = {"demo_episodes": demos.episodes, "demo_pass_rate": demos.passed / max(1, demos.episodes), **fit}
    if config.heldout_eval:
        out["bc_heldout_pass_rate"] = evaluate_split(model, config.domain, "heldout", spec=config.spec)["pass_rate"]
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def evaluate_heldout(domain: str, model_path: Path, out: Path) -> dict[str, Any]:
    """Pure-grade evaluation of a saved model on the heldout split, through the common
    evaluation path (one JSONL record per episode)."""
    from backoffice.training.eval.evaluate import SerialExecutor, evaluate, plan_jobs

    agent = f"sb3:{model_path}"
    started = time.perf_counter()
    jobs = plan_jobs([domain], [agent], "heldout", run_id=f"sb3-{domain}-heldout")
    records = evaluate(jobs, out=out, executor=SerialExecutor())
    n = len(records)
    return {"episodes": n, "pass_rate": sum(r["pass"] for r in records) / max(1, n),
            "mean_score": sum(r["score"] for r in records) / max(1, n), "records": str(out),
            "records_command": records_command(domain, model_path, out),
            "seconds": round(time.perf_counter() - started, 1)}


def records_command(domain: str, model_path: str | Path, out: str | Path) -> str:
    """The command that writes a model's heldout records (``evaluate_heldout``'s) again: the
    shipped models ship no ``heldout.jsonl``, their summaries carry this instead."""
    return (f"backoffice eval --env {domain} --split heldout --policy sb3:{model_path} "
            f"--run-id sb3-{domain}-heldout --out {out}")
