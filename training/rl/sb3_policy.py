"""A trained stable-baselines3 model as a :class:`Policy` (``sb3:<path/to/model.zip>``).

The model acts in the catalog (``Discrete(K)`` over float32 features); this policy runs the same
:class:`~backoffice.training.catalog.CatalogAgent` the catalog env runs, so a saved model goes
through the native env and the common evaluation path like every other policy, and its records
are comparable line for line with the oracle's.

A model folder written by ``backoffice train`` holds ``model.zip`` and ``catalog.json`` (domain,
algorithm, action and feature names); the policy refuses a model whose catalog no longer matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from backoffice.envs.core.canonical import digest, dumps, loads
from backoffice.training.catalog.policy import CatalogPolicy

META_FILE = "catalog.json"


def model_meta(model_path: str | Path) -> dict[str, Any]:
    """The ``catalog.json`` beside a saved model."""
    path = Path(model_path)
    meta = path.parent / META_FILE
    if not path.exists():
        raise FileNotFoundError(f"no model at {path} (train one with `backoffice train`)")
    if not meta.exists():
        raise FileNotFoundError(f"{meta} is missing: save a model trained in Python with "
                                f"backoffice.training.rl.sb3_policy.save_model(model, {str(path)!r}, domain, spec=tier), "
                                "which writes it (or train with `backoffice train`)")
    return loads(meta.read_bytes())


def recorded_spec(domain: str, meta: Mapping[str, Any]) -> str | None:
    """The catalog spec a model's ``catalog.json`` (or ``summary.json``) names, resolved from its
    recorded ``tier`` when that is one of the domain's own tiers: the module a tier lives in may
    move (the catalog_hash check then proves the tier is the same); a user's tier is found by
    its recorded ``spec``."""
    from backoffice.training.catalog import tier_specs

    builtin = tier_specs(domain)
    tier = meta.get("tier")
    if isinstance(tier, str) and tier in builtin:
        return builtin[tier]
    spec = meta.get("spec")
    return spec if isinstance(spec, str) else None


def write_model_meta(model_path: str | Path, domain: str, spec: str | None = None, algo: str = "maskable-ppo") -> Path:
    """Write the ``catalog.json`` an ``sb3:`` policy checks beside ``model_path``: the domain,
    the catalog (``spec``: the tier, e.g. ``"facts"``; ``None``: the default tier) and ``algo``
    (``maskable-ppo`` or ``ppo``), as ``backoffice train`` writes it."""
    from backoffice.training.catalog import catalog_env_id

    if algo not in ("maskable-ppo", "ppo"):
        raise ValueError(f"algo must be 'maskable-ppo' or 'ppo', got {algo!r}")
    meta = {**catalog_signature(domain, spec), "algo": algo, "env_id": catalog_env_id(domain)}
    target = Path(model_path).parent / META_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(dumps(meta))
    return target


def save_model(model: Any, model_path: str | Path, domain: str, spec: str | None = None) -> Path:
    """Save an SB3 model trained in Python on ``backoffice/<Domain>-Catalog-v0`` (tier
    ``spec``) so the CLI evaluates it: ``model.save(model_path)`` and its ``catalog.json``
    (:func:`write_model_meta`). Then ``backoffice eval --env <domain> --policy sb3:<model_path>``."""
    path = Path(model_path)
    if path.suffix != ".zip":
        raise ValueError(f"model_path must end in .zip (SB3 adds it otherwise), got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(path))
    algo = "maskable-ppo" if type(model).__name__.startswith("Maskable") else "ppo"
    write_model_meta(path, domain, spec=spec, algo=algo)
    return path


def catalog_signature(domain: str, spec: str | None = None) -> dict[str, Any]:
    """Names of the current catalog's actions and features (what a model was trained on)."""
    from backoffice.training.catalog import catalog_agent

    agent = catalog_agent(domain, spec=spec)
    actions = [a.name for a in agent.spec.actions]
    features = [f.name for f in agent.feature_defs]
    return {"domain": domain, "spec": spec, "tier": type(agent.spec).tier, "n_actions": len(actions),
            "n_features": len(features), "actions": actions, "features": features,
            "catalog_hash": digest(dumps([actions, features]))}


@lru_cache(maxsize=8)
def _load(path: str, algo: str, stamp: tuple[int, int]) -> Any:
    """Load a model once per process (evaluation builds one policy per episode); ``stamp``
    (mtime, size) makes a rewritten file load again."""
    import torch

    torch.set_num_threads(1)  # one small MLP forward per step: threads only add overhead
    if algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO.load(path, device="cpu")
    from stable_baselines3 import PPO

    return PPO.load(path, device="cpu")


class SB3Policy(CatalogPolicy):
    """Acts with a saved model through the domain's catalog; deterministic (argmax) actions."""

    def __init__(self, domain: str, model_path: str | Path):
        meta = model_meta(model_path)
        if meta["domain"] != domain:
            raise KeyError(f"model {model_path} was trained on {meta['domain']!r}, not {domain!r}")
        spec = recorded_spec(domain, meta)
        current = catalog_signature(domain, spec)
        if meta["catalog_hash"] != current["catalog_hash"]:
            raise ValueError(f"model {model_path} was trained on another version of the {domain} catalog; retrain it")
        super().__init__(domain, spec=spec)
        self.path = str(Path(model_path).resolve())
        self.algo = meta.get("algo", "maskable-ppo")
        self.name = f"sb3:{model_path}"
        self.version = meta["catalog_hash"][:12]

    def reset(self, obs: str, info: dict[str, Any]) -> None:
        stat = Path(self.path).stat()
        self.model = _load(self.path, self.algo, (stat.st_mtime_ns, stat.st_size))
        super().reset(obs, info)

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:
        return greedy_action(self.model, features, mask if self.algo == "maskable-ppo" else None)


def greedy_action(model: Any, features: np.ndarray, mask: np.ndarray | None = None) -> int:
    """``model``'s deterministic action on ``features`` (masked by ``mask`` when given)."""
    kwargs = {"action_masks": mask} if mask is not None else {}
    action, _ = model.predict(features, deterministic=True, **kwargs)
    return int(np.asarray(action).item())


class ModelActor:
    """A model (anything with SB3's ``predict``) acting in a catalog env: deterministic actions
    on the env's features, masked by ``env.action_masks()`` when ``masked`` (default: when the
    model's class name starts with ``Maskable``). What :func:`~backoffice.training.eval.rollout.run_episode`
    plays during training (validation, greedy replays) and in :func:`evaluate_split`."""

    def __init__(self, model: Any, env: Any, masked: bool | None = None):
        self.model = model
        self.env = env
        self.masked = type(model).__name__.startswith("Maskable") if masked is None else masked

    def reset(self, obs: np.ndarray, info: dict[str, Any]) -> None:
        pass

    def act(self, obs: np.ndarray) -> int:
        return greedy_action(self.model, obs, self.env.action_masks() if self.masked else None)


def evaluate_split(model: Any, domain: str, split: str = "heldout", task_ids: Any = None, masked: bool | None = None,
                   spec: str | None = None) -> dict[str, Any]:
    """Evaluate a model (anything with SB3's ``predict``) on every task of ``split``, each once,
    through the domain's catalog env; what ``evaluate_policy`` cannot do without a wrapper.

    ``masked`` passes ``action_masks`` to ``predict`` (default: when the model's class name
    starts with ``Maskable``). Returns ``pass_rate``, ``mean_score``, ``episodes`` and one
    ``records`` entry per task (``task_id``, ``pass``, ``score``, ``failure_codes``, ``steps``).
    """
    from backoffice.envs.core.release import load_release
    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.eval.rollout import play

    ids = list(task_ids) if task_ids is not None else list(load_release(domain).split_ids[split])
    env = make_catalog_env(domain, split=split, spec=spec)
    try:
        episodes = play(env, ModelActor(model, env, masked), ids)
    finally:
        env.close()
    records = [{"task_id": e.task_id, "pass": bool(e.grade["pass"]), "score": float(e.grade["score"]),
                "failure_codes": e.grade["failure_codes"], "steps": e.steps} for e in episodes]
    n = len(records)
    return {"domain": domain, "split": split, "episodes": n,
            "pass_rate": sum(r["pass"] for r in records) / n if n else 0.0,
            "mean_score": sum(r["score"] for r in records) / n if n else 0.0, "records": records}
