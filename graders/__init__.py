"""Graders: the differ, declarative checks, the guardrail, per-domain graders and judges.

Graders are pure functions of an :class:`~backoffice.envs.core.domain.Episode` (task, answer
key, start snapshot, end state, diff, trace).
"""

from backoffice.graders.checks import CHECKS, register_check, result, run_checks
from backoffice.graders.diff import Diff, changed_keys, diff_overlay
from backoffice.graders.grade import finalize, forbidden_writes, process_metrics
from backoffice.graders.judge import Judge, JudgeResult, RubricJudge

__all__ = [
    "CHECKS", "Diff", "Judge", "JudgeResult", "RubricJudge", "changed_keys", "diff_overlay",
    "finalize", "forbidden_writes", "process_metrics", "register_check", "result", "run_checks",
]
