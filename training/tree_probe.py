"""A leakage probe: does anything visible before the judgement predict a task's outcome class?

An attacker fits a small decision tree on the train split (features it can see, the outcome
class it learnt from training) and predicts the heldout class. The probe reports its heldout
accuracy beside the class prior (the share of heldout's most common class, the best constant answer):
a feature set that carries no information about the outcome scores about the prior.

The tree is a plain CART (Gini impurity, binary splits ``x == v`` on categorical columns and
``x <= t`` on numeric ones, depth-limited); deterministic, numpy only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from backoffice.envs.core.build import ID_MODULI, index_features


def id_features(task_id: str) -> list[int]:
    """What a task id shows: its index, each of its four digits and the index mod 2 … 24."""
    digits = "".join(ch for ch in task_id.rsplit("-", 1)[-1] if ch.isdigit())
    return index_features(int(digits) if digits else 0)


#: which columns of :func:`id_features` are numeric (threshold splits); the rest are categorical
ID_NUMERIC = (True, *(False for _ in range(4 + len(ID_MODULI))))


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


def _gini(counts: np.ndarray) -> float:
    total = counts.sum()
    return 0.0 if total == 0 else float(1.0 - ((counts / total) ** 2).sum())


def fit_tree(x: np.ndarray, y: np.ndarray, numeric: Sequence[bool], depth: int = 4, min_leaf: int = 5) -> Node:
    """A CART tree of at most ``depth`` levels over ``x`` (rows x columns) and labels ``y`` (ints).
    Ties are broken by column, then value, so the same data give the same tree."""
    n_classes = int(y.max()) + 1 if len(y) else 1

    def build(idx: np.ndarray, level: int) -> Node:
        counts = np.bincount(y[idx], minlength=n_classes)
        node = Node(label=int(counts.argmax()))
        if level >= depth or len(idx) < 2 * min_leaf or counts.max() == len(idx):
            return node
        best = (_gini(counts) - 1e-12, -1, 0.0)
        for col in range(x.shape[1]):
            values = x[idx, col]
            for v in np.unique(values):
                mask = values <= v if numeric[col] else values == v
                k = int(mask.sum())
                if k < min_leaf or len(idx) - k < min_leaf:
                    continue
                left = np.bincount(y[idx[mask]], minlength=n_classes)
                impurity = (k * _gini(left) + (len(idx) - k) * _gini(counts - left)) / len(idx)
                if impurity < best[0]:
                    best = (impurity, col, float(v))
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


def id_probe(domain: str, depth: int = 4, features: Callable[[str], list[int]] = id_features) -> Probe:
    """The id attacker on ``domain``'s release: a tree over what the task id shows, fitted on
    train outcome classes, predicting heldout's."""
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)

    def rows(split: str) -> list[tuple[list[int], str]]:
        return [(features(t), str(rel.answer_key(t).get("outcome_class"))) for t in rel.split_ids[split]]

    return probe(rows("train"), rows("heldout"), ID_NUMERIC, depth=depth)
