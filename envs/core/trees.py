"""A small decision tree (CART) and the probe built on it: does a feature set predict a class
on another split better than the class prior?

Shared by the release builder (which deals the defect tags so that the task ids predict no
outcome, :mod:`.build`) and the integrity probes (``backoffice.training.integrity.probes``). The
tree is a plain CART (Gini impurity, binary splits ``x == v`` on categorical columns and
``x <= t`` on numeric ones, depth-limited); deterministic, numpy only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Node:
    """A tree node: a leaf (``label``) or a split on column ``col`` (``== value`` or ``<= value``)."""

    label: int
    col: int = -1
    value: float = 0.0
    numeric: bool = False
    left: Node | None = None  # the rows that match the test
    right: Node | None = None

    def predict(self, row: np.ndarray) -> int:
        node = self
        while node.left is not None and node.right is not None:
            hit = row[node.col] <= node.value if node.numeric else row[node.col] == node.value
            node = node.left if hit else node.right
        return node.label


def _gini_rows(counts: np.ndarray) -> np.ndarray:
    """Gini impurity of each row of class counts (0 for an empty row)."""
    totals = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
    return np.asarray(1.0 - (share**2).sum(axis=1))


def _best_split(x: np.ndarray, y: np.ndarray, numeric: bool, n_classes: int, min_leaf: int) -> tuple[float, float]:
    """The lowest weighted impurity of a split of one column, and the value it splits at: the
    first (lowest) value reaching it. ``(inf, 0)`` when no split leaves ``min_leaf`` rows a side."""
    values, inverse = np.unique(x, return_inverse=True)
    per_value = np.zeros((len(values), n_classes))
    np.add.at(per_value, (inverse, y), 1)
    left = np.cumsum(per_value, axis=0) if numeric else per_value  # x <= v, or x == v
    total = per_value.sum(axis=0)
    k = left.sum(axis=1)
    n = len(y)
    impurity = (k * _gini_rows(left) + (n - k) * _gini_rows(total - left)) / n
    impurity[(k < min_leaf) | (n - k < min_leaf)] = np.inf
    i = int(np.argmin(impurity))
    return float(impurity[i]), float(values[i])


def fit_tree(x: np.ndarray, y: np.ndarray, numeric: Sequence[bool], depth: int = 4, min_leaf: int = 5) -> Node:
    """A CART tree of at most ``depth`` levels over ``x`` (rows x columns) and labels ``y`` (ints).
    Ties are broken by column, then value, so the same data give the same tree."""
    n_classes = int(y.max()) + 1 if len(y) else 1

    def build(idx: np.ndarray, level: int) -> Node:
        counts = np.bincount(y[idx], minlength=n_classes)
        node = Node(label=int(counts.argmax()))
        if level >= depth or len(idx) < 2 * min_leaf or counts.max() == len(idx):
            return node
        best = (float(_gini_rows(counts[None, :].astype(float))[0]) - 1e-12, -1, 0.0)
        for col in range(x.shape[1]):
            impurity, value = _best_split(x[idx, col], y[idx], bool(numeric[col]), n_classes, min_leaf)
            if impurity < best[0]:
                best = (impurity, col, value)
        if best[1] < 0:
            return node
        _, col, value = best
        values = x[idx, col]
        mask = values <= value if numeric[col] else values == value
        node.col, node.value, node.numeric = col, value, bool(numeric[col])
        node.left, node.right = build(idx[mask], level + 1), build(idx[~mask], level + 1)
        return node

    return build(np.arange(len(y)), 0)


@dataclass(frozen=True)
class Probe:
    """A probe's result on the heldout split: the tree's accuracy and the class prior's."""

    accuracy: float
    prior: float
    classes: int

    @property
    def gain(self) -> float:
        """Points (as a fraction) the tree gains over the prior."""
        return self.accuracy - self.prior

    def to_json(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "prior": self.prior, "gain": self.gain, "classes": self.classes}


def probe(train: Sequence[tuple[Sequence[float], str]], heldout: Sequence[tuple[Sequence[float], str]],
          numeric: Sequence[bool], depth: int = 4) -> Probe:
    """Fit on ``train`` (feature row, outcome class) pairs, score on ``heldout``."""
    names = sorted({c for _, c in train} | {c for _, c in heldout})
    code = {c: i for i, c in enumerate(names)}
    x_tr = np.array([row for row, _ in train], dtype=float)
    y_tr = np.array([code[c] for _, c in train], dtype=np.int64)
    tree = fit_tree(x_tr, y_tr, numeric, depth=depth)
    hits = sum(tree.predict(np.asarray(row, dtype=float)) == code[c] for row, c in heldout)
    prior = Counter(c for _, c in heldout).most_common(1)[0][1] / len(heldout)  # the best constant answer
    return Probe(hits / len(heldout), prior, len(names))


__all__ = ["Node", "Probe", "fit_tree", "probe"]
