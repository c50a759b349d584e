"""Demonstrations: feature-policy episodes on train tasks, behaviour cloning into a stable-baselines3
policy (the warm start of ``backoffice train --warm-start demos`` and the behaviour-cloning
ceiling of the results table), and a depth-limited decision tree fitted to the same
demonstrations (the "small tree" baseline: how much of the policy a few splits recover).

Demonstrations come from the catalog tier's hand-written feature policy, which reads only the
features and the mask, on released **train** tasks; nothing here reads heldout tasks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from backoffice.training.catalog.policy import CatalogPolicy


@dataclass
class Demos:
    """``obs`` (N, F) float32, ``actions`` (N,) int64 and ``masks`` (N, K) bool, from
    ``episodes`` feature-policy episodes of which ``passed`` passed."""

    obs: np.ndarray
    actions: np.ndarray
    masks: np.ndarray
    episodes: int
    passed: int


def feature_chooser(agent: Any) -> Callable[[np.ndarray, np.ndarray], int]:
    """The hand-written feature policy of ``agent``'s catalog spec (the class's own
    ``feature_policy`` or its module's)."""
    spec_cls = type(agent.spec)
    make = getattr(spec_cls, "feature_policy", None) or importlib.import_module(spec_cls.__module__).feature_policy
    return make(agent)


class _Recorder:
    """The feature policy of a catalog env's tier, recording each decision (features, mask,
    action) as it plays."""

    def __init__(self, env: Any):
        self.env = env
        self.choose = feature_chooser(env.agent)
        self.obs: list[np.ndarray] = []
        self.actions: list[int] = []
        self.masks: list[np.ndarray] = []

    def reset(self, obs: np.ndarray, info: dict[str, Any]) -> None:
        pass

    def act(self, obs: np.ndarray) -> int:
        mask = self.env.action_masks()
        action = int(self.choose(obs, mask))
        self.obs.append(obs)
        self.actions.append(action)
        self.masks.append(mask)
        return action


def collect(domain: str, task_ids: Sequence[str], spec: str | None = None) -> Demos:
    """Play the feature policy of ``spec`` (default: the domain's catalog) once on each task of
    ``task_ids`` (released train tasks, or generated ``<PREFIX>-G<n>`` ids) through the catalog
    env and record every decision."""
    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.eval.rollout import play

    env = make_catalog_env(domain, split="train", spec=spec)
    recorder = _Recorder(env)
    try:
        passed = sum(bool(e.info["is_success"]) for e in play(env, recorder, task_ids))
    finally:
        env.close()
    return Demos(np.asarray(recorder.obs, dtype=np.float32), np.asarray(recorder.actions, dtype=np.int64),
                 np.asarray(recorder.masks, dtype=bool), len(task_ids), passed)


def behaviour_clone(model: Any, demos: Demos, epochs: int = 30, batch_size: int = 256, lr: float = 1e-3,
                    seed: int = 0) -> dict[str, float]:
    """Fit ``model.policy``'s action head (and its shared layers) to the demonstrations by
    cross-entropy over the masked action distribution; returns the final loss and the share of
    demonstrated actions the policy's argmax reproduces. The value head is left to PPO."""
    import torch

    policy = model.policy
    masked = "Maskable" in type(model).__name__
    generator = np.random.default_rng(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    obs = torch.as_tensor(demos.obs, device=policy.device)
    actions = torch.as_tensor(demos.actions, device=policy.device)
    n = len(demos.actions)

    def distribution(idx: np.ndarray) -> Any:
        if masked:
            return policy.get_distribution(obs[idx], action_masks=demos.masks[idx])
        return policy.get_distribution(obs[idx])

    loss = torch.tensor(0.0)
    policy.set_training_mode(True)
    for _ in range(epochs):
        order = generator.permutation(n)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            loss = -distribution(idx).log_prob(actions[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        every = np.arange(n)
        logits = distribution(every).distribution.logits
        accuracy = float((logits.argmax(dim=1) == actions).float().mean())
    return {"loss": float(loss.detach()), "accuracy": accuracy, "samples": float(n)}


# -- a depth-limited decision tree (CART, Gini), numpy only ----------------------------------
@dataclass
class Tree:
    """A fitted tree: ``feature[i] < 0`` marks a leaf whose action is ``value[i]``; otherwise go
    left when ``x[feature[i]] <= threshold[i]``."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[int]

    @property
    def leaves(self) -> int:
        return sum(1 for f in self.feature if f < 0)

    def predict(self, x: np.ndarray) -> int:
        node = 0
        while self.feature[node] >= 0:
            node = self.left[node] if x[self.feature[node]] <= self.threshold[node] else self.right[node]
        return self.value[node]


def fit_tree(obs: np.ndarray, actions: np.ndarray, max_depth: int = 6, min_leaf: int = 1, thresholds: int = 16) -> Tree:
    """Fit a classification tree of depth at most ``max_depth`` (Gini impurity; candidate
    thresholds: midpoints between up to ``thresholds`` distinct quantiles per feature)."""
    tree = Tree([], [], [], [], [])
    n_classes = int(actions.max()) + 1 if len(actions) else 1

    def majority(idx: np.ndarray) -> int:
        return int(np.bincount(actions[idx], minlength=n_classes).argmax())

    def gini(counts: np.ndarray, total: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = counts / np.maximum(total, 1)[..., None]
        return 1.0 - (p * p).sum(axis=-1)

    def grow(idx: np.ndarray, depth: int) -> int:
        node = len(tree.feature)
        tree.feature.append(-1)
        tree.threshold.append(0.0)
        tree.left.append(-1)
        tree.right.append(-1)
        tree.value.append(majority(idx))
        y = actions[idx]
        if depth >= max_depth or len(idx) < 2 * min_leaf or np.all(y == y[0]):
            return node
        best = (0.0, -1, 0.0)
        onehot = np.eye(n_classes, dtype=np.float64)[y]
        parent = gini(onehot.sum(axis=0), np.array(len(idx)))
        for f in range(obs.shape[1]):
            col = obs[idx, f]
            values = np.unique(col)
            if len(values) < 2:
                continue
            if len(values) > thresholds:
                values = np.unique(np.quantile(col, np.linspace(0, 1, thresholds)))
            cuts = (values[:-1] + values[1:]) / 2
            left = col[None, :] <= cuts[:, None]  # (cuts, n)
            n_left = left.sum(axis=1)
            ok = (n_left >= min_leaf) & (len(idx) - n_left >= min_leaf)
            if not ok.any():
                continue
            counts_left = left.astype(np.float64) @ onehot
            counts_right = onehot.sum(axis=0)[None, :] - counts_left
            impurity = (n_left * gini(counts_left, n_left) + (len(idx) - n_left) * gini(counts_right, len(idx) - n_left)) / len(idx)
            gain = np.where(ok, parent - impurity, -1.0)
            k = int(gain.argmax())
            if gain[k] > best[0] + 1e-12:
                best = (float(gain[k]), f, float(cuts[k]))
        if best[1] < 0:
            return node
        _, f, cut = best
        mask = obs[idx, f] <= cut
        tree.feature[node], tree.threshold[node] = f, cut
        tree.left[node] = grow(idx[mask], depth + 1)
        tree.right[node] = grow(idx[~mask], depth + 1)
        return node

    if len(actions):
        grow(np.arange(len(actions)), 0)
    return tree


class TreePolicy(CatalogPolicy):
    """A fitted :class:`Tree` acting in the catalog: its action when the mask allows it, else
    the finishing action (``catalog-tree``: the depth-limited tree baseline)."""

    name = "catalog-tree"

    def __init__(self, domain: str, tree: Tree, spec: str | None = None):
        super().__init__(domain, spec=spec)
        self.tree = tree

    def choose(self, features: np.ndarray, mask: np.ndarray) -> int:
        action = self.tree.predict(features)
        return action if 0 <= action < len(mask) and mask[action] else self.agent.finish


__all__ = ["Demos", "Tree", "TreePolicy", "behaviour_clone", "collect", "feature_chooser", "fit_tree"]
