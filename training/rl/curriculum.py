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

``task_sampling="unsolved"`` measures the shortfall as ``1 - pass`` and weighs it to the fourth
power, to aim at the tasks failed every time (a missed refund case) rather than the ones a
stochastic policy slips on. Measured on remittance/facts (900k steps, ``gae_lambda`` 0.99,
seeds 0/1): 83.5 / 85.5 % heldout against 83.5 / 80.5 % uniform; the refund case was still
not learnt (p ~ 0.005-0.02 where due). The learner's own pass rate on its draws fell from
~0.57 to ~0.32 over 600-900k steps: under a stochastic policy most train tasks fail often
enough to share the weight. The case is learnable once frequent: continuing a trained model
on draws 71 % refund tasks raised p(case_refund) where due from 0.007 to 0.63 in
60k steps (and, unbalanced, where it is not due too). Neither of these two is on in a catalog.

``task_sampling="greedy-failures"`` (:class:`GreedyFailures`) takes the focus from the
*deterministic* policy instead: every ``TrainConfig.focus_freq`` steps the learner replays it on
the train tasks and each env then draws half its tasks from the ones it failed, half uniformly
(the tasks where the rare case is not due keep their share, so the case is learnt where it is
due and not everywhere). Remittance/facts trains with it: with ``gae_lambda`` 0.99, 900k steps,
the greedy failures fell from all 300 train tasks to 22 / 32 / 80 at the last replay and
heldout rose to 94.0 / 90.0 / 76.0 % (seeds 0-2) from 83.5 / 80.5 / 84.5 % uniform; with the
1.2M budget it trains with now, 94.0 / 94.5 / 94.0 %. The replays (17-23 per run, 300 tasks
each, up to 11.6 CPU-seconds for a trained policy) cost at most ~4 of a run's 26-30
CPU-minutes.

Everything it reads is graded episodes on train tasks (the env's own, or the greedy replay's):
no answer key, no heldout task, no defect tag. Each env keeps its own table and its own
generator (seeded by its first reset), and the replay is deterministic and handed to every env
alike, so a run is the same with ``DummyVecEnv`` and ``SubprocVecEnv`` and byte-identical
across repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from backoffice.envs.core.canonical import derive_seed

#: the ways a learner's env picks its next train task (``TrainConfig.task_sampling``)
TASK_SAMPLINGS = ("uniform", "failures", "unsolved", "greedy-failures")
#: the shortfall measures of :class:`FailureWeighted`: ``1 - score`` or ``1 - pass``
MEASURES = ("score", "pass")
#: ``task_sampling="unsolved"``'s power: a task failed every time weighs 1, one failed half the
#: time (a stochastic policy's slips) 1/16
UNSOLVED_POWER = 4.0


class FailureWeighted:
    """Failure-weighted task choice over ``task_ids`` (module docstring).

    Args:
        task_ids: the train tasks to draw from (non-empty).
        uniform_share: the probability of a uniform draw, in ``[0, 1]``.
        memory: the weight of the newest episode in a task's running shortfall, in ``(0, 1]``.
        measure: what an episode falls short by: ``"score"`` (``1 - score``) or ``"pass"``
            (``1`` for a failed episode, ``0`` for a passed one).
        power: the weighted draws pick a task in proportion to ``shortfall ** power`` (``> 0``);
            above 1 they concentrate on the tasks failed most consistently.
    """

    def __init__(self, task_ids: Sequence[str], uniform_share: float = 0.5, memory: float = 0.5,
                 measure: str = "score", power: float = 1.0):
        if not task_ids:
            raise ValueError("failure-weighted sampling needs at least one task id")
        if not 0.0 <= uniform_share <= 1.0:
            raise ValueError(f"uniform_share must be in [0, 1], got {uniform_share}")
        if not 0.0 < memory <= 1.0:
            raise ValueError(f"memory must be in (0, 1], got {memory}")
        if measure not in MEASURES:
            raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
        if not power > 0.0:
            raise ValueError(f"power must be > 0, got {power}")
        self.task_ids = tuple(task_ids)
        self.measure = measure
        self.power = float(power)
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
        weights = self.shortfall ** self.power
        total = float(weights.sum())
        if total <= 0.0 or self.rng.random() < self.uniform_share:
            return self.task_ids[int(self.rng.integers(len(self.task_ids)))]
        i = int(np.searchsorted(np.cumsum(weights), self.rng.random() * total, side="right"))
        return self.task_ids[min(i, len(self.task_ids) - 1)]

    def record(self, task_id: str, score: float, passed: bool | None = None) -> None:
        """Fold a finished episode's pure score (``measure="score"``) or pass (``"pass"``; the
        score's ``== 1`` when ``passed`` is not given) into its task's shortfall (unknown ids are
        ignored)."""
        i = self.index.get(task_id)
        if i is not None:
            if self.measure == "pass":
                short = 0.0 if (bool(passed) if passed is not None else float(score) >= 1.0) else 1.0
            else:
                short = 1.0 - float(score)
            self.shortfall[i] += self.memory * (short - self.shortfall[i])


class GreedyFailures:
    """Draws aimed at the train tasks the *deterministic* policy fails (``task_sampling=
    "greedy-failures"``): with probability ``focus_share`` uniformly over the focus set, else
    uniformly over all of ``task_ids`` (so the tasks where the rare action is *not* due stay
    half the draws). The learner replays its greedy policy on the train tasks every
    ``TrainConfig.focus_freq`` steps and hands each env the ids it failed (:meth:`focus`); before
    the first check, and when it fails none, the draws are uniform.

    A stochastic policy slips on most tasks now and then, so its own episodes spread the weight
    thin (``"unsolved"``); the greedy replay isolates the tasks whose right action is still
    improbable, such as remittance's refund cases (p ~ 0.01 where due).

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
        """The tasks the greedy policy failed at the latest check (ids outside ``task_ids``
        are dropped; the order is the train order, whatever the caller's)."""
        wanted = set(task_ids)
        self.focused = tuple(t for t in self.task_ids if t in wanted)

    def pick(self) -> str:
        """The next task id."""
        pool = self.focused if self.focused and self.rng.random() < self.focus_share else self.task_ids
        return pool[int(self.rng.integers(len(pool)))]

    def record(self, task_id: str, score: float, passed: bool | None = None) -> None:
        """Nothing: the focus comes from the greedy replay, not the env's own episodes."""


def task_sampler(mode: str, task_ids: Sequence[str]) -> FailureWeighted | GreedyFailures | None:
    """The task choice of a ``TrainConfig.task_sampling`` mode over ``task_ids``: ``None`` for
    ``"uniform"`` (the catalog env draws itself), :class:`FailureWeighted` by ``1 - score`` for
    ``"failures"``, by the running failure rate to the fourth power for ``"unsolved"``, and
    :class:`GreedyFailures` for ``"greedy-failures"``."""
    if mode not in TASK_SAMPLINGS:
        raise ValueError(f"task_sampling must be one of {TASK_SAMPLINGS}, got {mode!r}")
    if mode == "failures":
        return FailureWeighted(task_ids)
    if mode == "unsolved":
        return FailureWeighted(task_ids, measure="pass", power=UNSOLVED_POWER)
    if mode == "greedy-failures":
        return GreedyFailures(task_ids)
    return None
