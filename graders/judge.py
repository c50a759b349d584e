"""Judges score free text (hand-over notes, case notes) apart from the state-based grade.

A judge's score never enters ``pass``. The default :class:`RubricJudge` is deterministic; a
model-based judge implements the same :class:`Judge` protocol and returns ``None`` ("not run")
when it is not configured, so a missing key never loses a task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class JudgeResult:
    judge: str
    score: float
    criteria: dict[str, bool]
    rationale: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "score": self.score, "criteria": dict(self.criteria), "rationale": self.rationale}


@runtime_checkable
class Judge(Protocol):
    @property
    def name(self) -> str:
        """The judge's name (read-only: frozen dataclasses implement it with a field)."""
        ...

    def judge(self, text: str, context: Mapping[str, Any]) -> JudgeResult | None:
        """Score ``text`` given ``context`` (task facts the judge may use); ``None`` if not run."""
        ...


Criterion = Callable[[str, Mapping[str, Any]], bool]


@dataclass(frozen=True)
class RubricJudge:
    """A deterministic judge: the score is the share of rubric criteria the text meets."""

    criteria: Sequence[tuple[str, Criterion]]
    name: str = "rubric"

    def judge(self, text: str, context: Mapping[str, Any]) -> JudgeResult:
        met = {name: bool(fn(text, context)) for name, fn in self.criteria}
        score = sum(met.values()) / len(met) if met else 0.0
        return JudgeResult(self.name, score, met, ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in met.items()))
