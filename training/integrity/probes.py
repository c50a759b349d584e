"""A leakage probe: does anything visible before the judgement predict a task's outcome class?

An attacker fits a small decision tree on the train split (features it can see, the outcome
class it learnt from training) and predicts the heldout class. The probe reports its heldout
accuracy beside the class prior (the share of heldout's most common class, the best constant answer):
a feature set that carries no information about the outcome scores about the prior.

The tree is a plain CART (Gini impurity, binary splits ``x == v`` on categorical columns and
``x <= t`` on numeric ones, depth-limited); deterministic, numpy only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
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


def id_probe(domain: str, depth: int = 4, features: Callable[[str], list[int]] = id_features) -> Probe:
    """The id attacker on ``domain``'s release: a tree over what the task id shows, fitted on
    train outcome classes, predicting heldout's."""
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)

    def rows(split: str) -> list[tuple[list[int], str]]:
        return [(features(t), str(rel.answer_key(t).get("outcome_class"))) for t in rel.split_ids[split]]

    return probe(rows("train"), rows("heldout"), ID_NUMERIC, depth=depth)


# -- what the agent sees before the judgement --------------------------------------------------
#: the parts of what an agent sees before its judgement that :func:`visible_probe` may read
VISIBLE_PARTS = ("brief", "tools", "read")
#: the list elements of a read whose fields become features (the rest count only in ``#len``)
LIST_ELEMENTS = 3
_TOKEN = re.compile(r"[A-Za-z_]+")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _flatten(value: Any, path: str, out: dict[str, float | str]) -> None:
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(value[k], f"{path}.{k}", out)
    elif isinstance(value, list):
        out[f"{path}#len"] = float(len(value))
        for i, v in enumerate(value[:LIST_ELEMENTS]):
            _flatten(v, f"{path}[{i}]", out)
    elif isinstance(value, bool):
        out[path] = float(value)
    elif isinstance(value, (int, float)):
        out[path] = float(value)
    elif isinstance(value, str):
        out[path] = value
        out[f"{path}#empty"] = float(value == "")
        if _DATE.match(value):
            out[f"{path}@day"] = float(date.fromisoformat(value[:10]).toordinal())
    else:
        out[path] = "null"


def visible_features(brief: dict[str, Any], reads: Sequence[Any], parts: Sequence[str] = VISIBLE_PARTS) -> dict[str, float | str]:
    """Features of what an agent sees before judging: the brief's instruction tokens (present or
    not), the numbers it states in order, and its params (``brief``); the allowed tools
    (``tools``); every field of the first read's results, list lengths and the first
    :data:`LIST_ELEMENTS` entries of each list, dates also as day numbers (``read``). Numbers
    are numeric features, strings categorical."""
    out: dict[str, float | str] = {}
    if "brief" in parts:
        text = str(brief.get("instructions", ""))
        for token in sorted({t.lower() for t in _TOKEN.findall(text)}):
            out[f"tok:{token}"] = 1.0
        for i, number in enumerate(_NUMBER.findall(text)):
            out[f"num:{i}"] = float(number.replace(",", ""))
        _flatten(brief.get("params", {}), "params", out)
    if "tools" in parts:
        for tool in brief.get("allowed_tools", ()):
            out[f"tool:{tool}"] = 1.0
    if "read" in parts:
        for i, result in enumerate(reads):
            _flatten(result, f"read{i}", out)
    return out


#: a missing numeric feature (a token absent, a field a read did not have)
MISSING = -1e18


def encode(train: Sequence[dict[str, float | str]], heldout: Sequence[dict[str, float | str]]
           ) -> tuple[np.ndarray, np.ndarray, list[bool], list[str]]:
    """Feature dicts as two matrices over the columns train has (tokens: 0 when absent);
    a column is numeric when every train value is a number, else categorical (codes by sorted
    value; a value train never had gets its own code)."""
    columns = sorted({k for row in train for k in row})
    numeric = [all(not isinstance(row.get(c, 0.0), str) for row in train) for c in columns]
    codes: list[dict[str, int]] = []
    for c, is_num in zip(columns, numeric):
        codes.append({} if is_num else {v: i for i, v in enumerate(sorted({str(row.get(c, "<none>")) for row in train}))})

    def matrix(rows: Sequence[dict[str, float | str]]) -> np.ndarray:
        out = np.empty((len(rows), len(columns)))
        for j, (c, is_num, code) in enumerate(zip(columns, numeric, codes)):
            absent = 0.0 if c.startswith("tok:") or c.startswith("tool:") else MISSING
            for i, row in enumerate(rows):
                v = row.get(c)
                if is_num:
                    out[i, j] = absent if v is None or isinstance(v, str) else float(v)
                else:
                    out[i, j] = code.get(str(v if v is not None else "<none>"), -1)
        return out

    return matrix(train), matrix(heldout), numeric, columns


def visible_probe(domain: str, depth: int = 4, parts: Sequence[str] = VISIBLE_PARTS, label: str = "outcome_class") -> Probe:
    """The attacker that reads before it judges: a tree over :func:`visible_features` (the
    ``parts`` given) fitted on train, predicting heldout's ``label`` (``outcome_class``, or
    ``decision``: the domain's decision class)."""
    rows = {split: visible_rows(domain, split, parts, label) for split in ("train", "heldout")}
    x_tr, x_he, numeric, _ = encode([f for f, _ in rows["train"]], [f for f, _ in rows["heldout"]])
    return probe(list(zip(x_tr.tolist(), (c for _, c in rows["train"]))),
                 list(zip(x_he.tolist(), (c for _, c in rows["heldout"]))), numeric, depth=depth)


def visible_rows(domain: str, split: str, parts: Sequence[str], label: str) -> list[tuple[dict[str, float | str], str]]:
    """``(features, class)`` per task of ``split``: the brief and the first read's results
    (the policies module's ``first_read(brief)`` calls, run in a fresh episode)."""
    return list(_visible_rows(domain, split, tuple(parts), label))


@cache
def _first_reads(domain: str, split: str) -> tuple[tuple[str, dict[str, Any], tuple[Any, ...]], ...]:
    from backoffice.envs import make_native
    from backoffice.envs.core.canonical import loads
    from backoffice.envs.core.release import load_release
    from backoffice.training.policies import domain_module

    first_read = domain_module(domain).first_read
    env = make_native(domain, split=split)
    out = []
    for task_id in load_release(domain).split_ids[split]:
        obs, _ = env.reset(**env.unwrapped.reset_args(task_id))
        brief = loads(obs)
        reads = []
        for action in first_read(brief):
            got = loads(env.step(action)[0])
            reads.append(got.get("result") if got.get("status") == "ok" else {"error": got.get("code")})
        out.append((task_id, brief, tuple(reads)))
    return tuple(out)


@cache
def _visible_rows(domain: str, split: str, parts: tuple[str, ...], label: str) -> tuple[tuple[dict[str, float | str], str], ...]:
    from backoffice.envs import get_domain
    from backoffice.envs.core.release import load_release

    rel, dom = load_release(domain), get_domain(domain)

    def cls(task_id: str) -> str:
        key = rel.answer_key(task_id)
        return dom.decision(key) if label == "decision" else str(key.get(label))

    return tuple((visible_features(brief, reads, parts), cls(t)) for t, brief, reads in _first_reads(domain, split))
