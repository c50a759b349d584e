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
from collections.abc import Callable, Sequence
from datetime import date
from functools import cache
from typing import Any

import numpy as np

from backoffice.envs.core.build import ID_NUMERIC, index_features
from backoffice.envs.core.trees import Probe, probe


def id_features(task_id: str) -> list[int]:
    """What a task id shows: its index, each of its four digits and the index mod 2 … 24."""
    digits = "".join(ch for ch in task_id.rsplit("-", 1)[-1] if ch.isdigit())
    return index_features(int(digits) if digits else 0)




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
