"""Train a stable-baselines3 agent on a domain's catalog env (``backoffice train``).

:func:`train` is the run, top to bottom:

1. **Tasks.** A validation set is carved from the released ``train`` split (a fixed, seeded
   choice of ``validation_size`` task ids, :mod:`~backoffice.training.rl.config`). Training runs
   on the rest of ``train`` (default) or on fresh ``generated`` tasks; the ``heldout`` split is
   never seen until the end.
2. **Envs.** ``n_envs`` catalog envs (8 by default) in a ``DummyVecEnv`` (``vec_env="subproc"``:
   one worker process each, the same model) with the catalog's training reward
   (:mod:`~backoffice.training.rl.envs`).
3. **Model.** MaskablePPO (or PPO) with the run's hyperparameters and a prior against ending
   the episode early (:func:`build_model`); ``warm_start="demos"`` behaviour-clones the tier's
   feature policy into it first.
4. **Learn.** Every ``eval_freq`` timesteps the model plays the validation tasks
   (deterministic, masked, pure grade); the best one is saved to ``<out>/model.zip``. Training
   stops early once validation passes every task or has not improved for ``patience``
   evaluations (:mod:`~backoffice.training.rl.callbacks`). A warm-started model is also
   validated at ``t=0``, right after cloning: the clone is a candidate, and one that passes
   every validation task is kept as is.
5. **Save and evaluate.** ``catalog.json`` (what ``sb3:`` policies check), ``curve.json`` and
   ``learning_curve.png`` (:mod:`~backoffice.training.rl.plots`), the held-out evaluation as
   evaluation JSONL (``heldout.jsonl``, through the same path as ``backoffice eval``) and
   ``summary.json``.

Wall time is measured here (for the report only); nothing the agent sees depends on it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from backoffice.envs.core.canonical import dumps
from backoffice.graders.progress import DISTANCE_VERSION
from backoffice.training.rl.config import (
    BC_EPOCHS,
    DEMO_GENERATED,
    TrainConfig,
    demo_task_ids,
    rollout_on,
    training_task_ids,
    validation_ids,
)
from backoffice.training.rl.envs import UNREAD_INFO, TimedEnv, TrainingEnv, learner_envs, training_env
from backoffice.training.rl.plots import plot_curve

if TYPE_CHECKING:
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

# what callers import from here (the benchmarks import ``rollout_on``; it lives in config)
__all__ = ["BC_EPOCHS", "DEMO_GENERATED", "UNREAD_INFO", "TrainConfig", "TrainingEnv", "build_model", "demo_task_ids",
           "ending_actions", "evaluate_heldout", "plot_curve", "records_command", "release_id", "rollout_on", "train",
           "training_env", "training_task_ids", "validation_ids", "warm_start_from_demos"]


def train(config: TrainConfig, on_progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run the whole loop of the module docstring; returns the summary (also ``summary.json``)."""
    # torch, SB3 and the callback load here, not with the module: importing the trainer's
    # helpers (config, evaluation) must not pull them in
    import torch

    from backoffice.training.catalog import catalog_env_id, make_catalog_env
    from backoffice.training.rl.callbacks import TrainingMonitor
    from backoffice.training.rl.sb3_policy import META_FILE, catalog_signature

    torch.set_num_threads(config.torch_threads)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("model.zip", "heldout.jsonl"):
        (out / stale).unlink(missing_ok=True)

    # 1. tasks
    val_ids = validation_ids(config.domain, config.validation_size)
    train_ids = training_task_ids(config)

    # 2. envs: the learner's, the validation's, and the greedy replay's own (so the validation
    # env's state stays the validation's alone)
    venv = learner_envs(config, train_ids)
    # validation reads each episode's score and pass only: lean_info skips the rest of the info;
    # both are timed too (their episodes run inside learn's wall time)
    val_env = TimedEnv(make_catalog_env(config.domain, split="train", spec=config.spec, lean_info=True))
    focus_env = (TimedEnv(make_catalog_env(config.domain, split="train", spec=config.spec, lean_info=True))
                 if config.task_sampling == "greedy-failures" else None)

    # 3. model
    model = build_model(config, venv, ending_actions(val_env, config.finish_tools))
    cpu_start = os.times()
    warm = warm_start_from_demos(model, config) if config.warm_start == "demos" else None
    monitor = TrainingMonitor(config, val_env, val_ids, on_progress, focus_env, train_ids or ())

    # 4. learn
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
        check_seconds = val_env.env_seconds + (focus_env.env_seconds if focus_env is not None else 0.0)
    finally:
        venv.close()
    cpu_end = os.times()  # the workers have exited: their CPU time is in the children's fields
    cpu_seconds = sum(getattr(cpu_end, f) - getattr(cpu_start, f) for f in ("user", "system", "children_user", "children_system"))

    # 5. save: the catalog the model acts in, the curve
    signature = catalog_signature(config.domain, config.spec)
    meta = {**signature, "algo": config.algo, "env_id": catalog_env_id(config.domain)}
    (out / META_FILE).write_bytes(dumps(meta))
    curve = {"episodes": monitor.episodes, "validation": monitor.validation}
    (out / "curve.json").write_bytes(dumps(curve))
    plot_curve(curve, out / "learning_curve.png", f"{config.domain}: {config.algo}, {model.num_timesteps:,} timesteps")

    # 6. evaluate and summarize
    summary: dict[str, Any] = {
        "config": config.record(),
        "timesteps": int(model.num_timesteps), "train_seconds": round(train_seconds, 1),
        "episodes": len(monitor.episodes), "best_validation_pass_rate": monitor.best,
        "validation_ids": len(val_ids),
        # time inside the training envs' reset, step and action mask: per step, summed over
        # every env the learner steps as a share of the learn wall time (the run's own layout:
        # with the default in-process envs, what the learner waits for), and the largest
        # single env's share (with worker processes, the slowest worker's); then the same for
        # the validation and greedy-replay envs, whose episodes run inside learn's wall time too
        "env_step_us": round(sum(worker_seconds) / max(1, model.num_timesteps) * 1e6, 1),
        "env_share_of_wall": round(sum(worker_seconds) / max(train_seconds, 1e-9), 4),
        "env_share_per_worker": round(max(worker_seconds) / max(train_seconds, 1e-9), 4),
        "validation_env_share_of_wall": round(check_seconds / max(train_seconds, 1e-9), 4),
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


def ending_actions(env: Any, tools: Sequence[str] = ()) -> list[int]:
    """Catalog actions whose native tool ends the episode (``submit``, referrals ...) or is one of
    ``tools`` (a config's ``finish_tools``)."""
    ending = set(env.unwrapped.domain.terminal_tools) | set(tools)
    return [i for i, a in enumerate(env.get_wrapper_attr("agent").spec.actions) if a.tool in ending]


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
    evaluation path (one JSONL record per episode), measured afresh: a records file already at
    ``out`` is replaced, never resumed. (Its episodes may come from another model, release or
    version of the code under the same run id: a re-evaluation once read such a file back and
    reported its pass rate, 11.2 % where the model passes 14.2 %.)"""
    from backoffice.training.eval.evaluate import SerialExecutor, evaluate, plan_jobs

    agent = f"sb3:{model_path}"
    started = time.perf_counter()
    out.unlink(missing_ok=True)
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
