"""Which released train task a learner's env plays next: uniformly (the catalog env draws it), or
half the time from the tasks the learner's *deterministic* policy fails
(``task_sampling="greedy-failures"``, a small form of prioritized level replay, Jiang et al. 2021).

Why. A catalog's rare cases are rare in its train split too (in remittance, one train task in
ten calls for a refund case). A policy that has learnt the common work passes most tasks and
meets those cases a few thousand times in a run, choosing the right action with a small
probability each time, so PPO barely sees them pay. Every ``TrainConfig.focus_freq`` steps the
learner replays its greedy policy on the train tasks and hands each env the ids it failed
(:meth:`GreedyFailures.focus`); each env then draws half its tasks from those, half uniformly,
so the tasks where the rare case is *not* due keep their share and the case is learnt where it
is due, not everywhere. The greedy replay isolates the tasks whose right action is still
improbable; weighting by a stochastic policy's own failures did not (it slips on most tasks
now and then, which spreads the weight thin: docs/EXPERIMENTS.md).

Everything it reads is graded episodes of the greedy policy on train tasks: no answer key, no
heldout task, no defect tag. Each env keeps its own generator (seeded by its first reset), and
the replay is deterministic and handed to every env alike, so a run is the same with
``DummyVecEnv`` and ``SubprocVecEnv`` and byte-identical across repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from backoffice.envs.core.canonical import derive_seed
from backoffice.training.rl.config import TASK_SAMPLINGS


class GreedyFailures:
    """Draws aimed at the train tasks the deterministic policy fails (``task_sampling=
    "greedy-failures"``): with probability ``focus_share`` uniformly over the focus set, else
    uniformly over all of ``task_ids``. Before the first replay, and when the greedy policy
    fails no task, the draws are uniform.

    Args:
        task_ids: the train tasks to draw from (non-empty).
        focus_share: the probability of a draw from the focus set, in ``[0, 1]``.
    """

    def __init__(self, task_ids: Sequence[str], focus_share: float = 0.5):
        if not task_ids:
            raise ValueError("greedy-failure sampling needs at least one task id")
        if not 0.0 <= focus_share <= 1.0:
            raise ValueError(f"focus_share must be in [0, 1], got {focus_share}")
        self.task_ids = tuple(task_ids)
        self.focus_share = float(focus_share)
        self.focused: tuple[str, ...] = ()
        self.rng = np.random.default_rng(0)

    def seed(self, seed: int) -> None:
        """Restart the generator (the env's seeded reset); the focus set is kept."""
        self.rng = np.random.default_rng(derive_seed("task-sampling", seed))

    def focus(self, task_ids: Sequence[str]) -> None:
        """The tasks the greedy policy failed at the latest replay (ids outside ``task_ids``
        are dropped; the order is the train order, whatever the caller's)."""
        wanted = set(task_ids)
        self.focused = tuple(t for t in self.task_ids if t in wanted)

    def pick(self) -> str:
        """The next task id."""
        pool = self.focused if self.focused and self.rng.random() < self.focus_share else self.task_ids
        return pool[int(self.rng.integers(len(pool)))]


def task_sampler(mode: str, task_ids: Sequence[str]) -> GreedyFailures | None:
    """The task choice of a ``TrainConfig.task_sampling`` mode over ``task_ids``: ``None`` for
    ``"uniform"`` (the catalog env draws itself), :class:`GreedyFailures` for ``"greedy-failures"``."""
    if mode not in TASK_SAMPLINGS:
        raise ValueError(f"task_sampling must be one of {TASK_SAMPLINGS}, got {mode!r}")
    if mode == "greedy-failures":
        return GreedyFailures(task_ids)
    return None
