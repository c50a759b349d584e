"""Which released train task a learner's env plays next: uniformly, or weighted towards the
tasks it has been failing (a small form of prioritized level replay, Jiang et al. 2021).

A catalog's rare cases are rare in its train split too: in remittance, one train task in ten
calls for a refund case and one in nine for an unidentified-line case. A policy that has learnt
the common work passes most tasks and meets those cases a few thousand times in a run, choosing
the right action with probability ~0.01 each time, so PPO barely sees them pay.
:class:`FailureWeighted` draws a task from a mixture: with probability ``uniform_share``
uniformly over the train tasks (so nothing learnt is forgotten for lack of practice), otherwise
in proportion to each task's recent *shortfall* ``1 - score`` (a running mean over the env's
own episodes of that task; a task not yet played counts as 1).

Everything it reads is the env's own graded episodes on train tasks: no answer key, no heldout
task, no defect tag. Each env keeps its own table and its own generator (seeded by its first
reset), so a run is the same with ``DummyVecEnv`` and ``SubprocVecEnv`` and byte-identical
across repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from backoffice.envs.core.canonical import derive_seed

#: the ways a learner's env picks its next train task (``TrainConfig.task_sampling``)
TASK_SAMPLINGS = ("uniform", "failures")


class FailureWeighted:
    """Failure-weighted task choice over ``task_ids`` (module docstring).

    Args:
        task_ids: the train tasks to draw from (non-empty).
        uniform_share: the probability of a uniform draw, in ``[0, 1]``.
        memory: the weight of the newest episode in a task's running shortfall, in ``(0, 1]``.
    """

    def __init__(self, task_ids: Sequence[str], uniform_share: float = 0.5, memory: float = 0.5):
        if not task_ids:
            raise ValueError("failure-weighted sampling needs at least one task id")
        if not 0.0 <= uniform_share <= 1.0:
            raise ValueError(f"uniform_share must be in [0, 1], got {uniform_share}")
        if not 0.0 < memory <= 1.0:
            raise ValueError(f"memory must be in (0, 1], got {memory}")
        self.task_ids = tuple(task_ids)
        self.index = {t: i for i, t in enumerate(self.task_ids)}
        self.uniform_share = float(uniform_share)
        self.memory = float(memory)
        self.shortfall = np.ones(len(self.task_ids))
        self.rng = np.random.default_rng(0)

    def seed(self, seed: int) -> None:
        """Restart the generator (the env's seeded reset); the table is kept."""
        self.rng = np.random.default_rng(derive_seed("task-sampling", seed))

    def pick(self) -> str:
        """The next task id."""
        total = float(self.shortfall.sum())
        if total <= 0.0 or self.rng.random() < self.uniform_share:
            return self.task_ids[int(self.rng.integers(len(self.task_ids)))]
        i = int(np.searchsorted(np.cumsum(self.shortfall), self.rng.random() * total, side="right"))
        return self.task_ids[min(i, len(self.task_ids) - 1)]

    def record(self, task_id: str, score: float) -> None:
        """Fold a finished episode's pure score into its task's shortfall (unknown ids are ignored)."""
        i = self.index.get(task_id)
        if i is not None:
            self.shortfall[i] += self.memory * ((1.0 - float(score)) - self.shortfall[i])
