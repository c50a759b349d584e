"""Self-imitation: between PPO updates, a few cross-entropy steps towards the agent's own passed
train episodes (after Oh et al. 2018, "Self-Imitation Learning"; no demonstration is involved).

Why. A rare decision that depends on a policy flag (remittance: open a refund case on an
overpaid line only when the desk policy says so) is tried with probability ~0.01 by a policy
that has learnt the common work. Each try is one PPO sample among millions, clipped to a 20 %
change of its probability per update, and the same action under the other policy value costs
the pass: measured on a trained remittance/facts model, forcing the case where it is due lifts
the pass rate of those train tasks from 0 to 77 % (return +0.56), and forcing it where it is not
due drops it from 87 % to 0. PPO knows the answer after a few dozen lucky tries and still does
not act on it. Self-imitation keeps every lucky pass and fits the policy to it.

What. Each learner env (:class:`~backoffice.training.rl.train.TrainingEnv`) keeps the latest passed
episode of every train task it passed (observations, masks, actions, training rewards; at most
:data:`KEEP` tasks, the oldest dropped first). After each rollout, :func:`imitate` takes
``steps`` minibatches of steps from those episodes (one per task across the envs) and lowers the
masked cross-entropy of their actions with the policy's own optimizer. A step is drawn in
proportion to ``max(0, R - V(s))``, its discounted return in the kept episode over what the
value head expects there (Oh et al.'s clipped advantage): a step the policy already expects to
do that well is not imitated. The value head is left to PPO.

Measured (remittance/facts, seed 0, 900k steps; pure PPO as tuned: 79.0 % heldout). It hurts,
and it is off by default. Imitating every kept step, 10 minibatches per rollout, froze the
policy at 3 % validation: the first passes are short duplicate-payment episodes (a duplicate
case, then hold), kept with the case opened before the listing that justifies it was read; from
the opening observation every task looks alike, so imitation taught that sequence everywhere (36
of 40 validation tasks: get_payment, case_duplicate, list_payments, post, submit). With the
clipped advantage, 10 minibatches froze the same way (5 % heldout), and 30 learnt, but more
slowly than PPO alone: 47.5 % heldout (validation 0.49).
Imitating one's own passes assumes a pass's actions were right in the states as observed; an
observation that hides what sets tasks apart breaks that.

Everything it reads is the learner's own graded episodes on train tasks: no answer key, no
feature policy, no heldout or validation task. Seeded by the run's seed, so byte-identical across
repeats and vec env kinds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: the most tasks whose latest pass an env keeps (a released train split has 300-400 tasks)
KEEP = 1024

#: one passed episode: its observations (T, F), masks (T, K), actions (T,) and training rewards (T,)
Episode = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class PassedEpisodes:
    """The latest passed episode of each task an env passed (at most ``keep`` tasks)."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self.episodes: OrderedDict[str, tuple[int, Episode]] = OrderedDict()
        self.count = 0  # episodes recorded, the serial of the next one

    def add(self, task_id: str, steps: Iterable[tuple[np.ndarray, np.ndarray, int, float]]) -> None:
        """Keep ``steps`` (observation and mask before each step, the action, the reward it
        earned) as ``task_id``'s latest pass."""
        obs, masks, actions, rewards = zip(*steps, strict=True)
        self.episodes[task_id] = (self.count, (np.stack(obs), np.stack(masks).astype(bool),
                                               np.asarray(actions, dtype=np.int64), np.asarray(rewards, dtype=np.float64)))
        self.episodes.move_to_end(task_id)
        self.count += 1
        while len(self.episodes) > self.keep:
            self.episodes.popitem(last=False)


def merge(per_env: Iterable[Mapping[str, tuple[int, Episode]]]) -> list[Episode]:
    """One episode per task over the envs' tables (the latest by serial, then by env index),
    in task order."""
    best: dict[str, tuple[tuple[int, int], Episode]] = {}
    for i, table in enumerate(per_env):
        for task, (serial, episode) in table.items():
            if task not in best or (serial, i) > best[task][0]:
                best[task] = ((serial, i), episode)
    return [best[t][1] for t in sorted(best)]


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """The discounted return from each step of an episode to its end."""
    out = np.empty(len(rewards), dtype=np.float64)
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[t]) + gamma * acc
        out[t] = acc
    return out


def imitate(model: Any, episodes: list[Episode], steps: int, batch_size: int, rng: np.random.Generator) -> float | None:
    """``steps`` minibatch steps of masked cross-entropy towards the steps of ``episodes`` whose
    return beat the value the policy expected there, drawn in proportion to by how much
    (``max(0, R - V(s))``, Oh et al.'s clipped advantage); the last loss, or ``None`` when no
    kept step beats its value (nothing to imitate)."""
    import torch

    if not episodes or steps < 1:
        return None
    policy = model.policy
    obs = np.concatenate([e[0] for e in episodes])
    masks = np.concatenate([e[1] for e in episodes])
    actions = np.concatenate([e[2] for e in episodes])
    returns = np.concatenate([returns_to_go(e[3], model.gamma) for e in episodes])
    with torch.no_grad():
        values = policy.predict_values(torch.as_tensor(obs, device=policy.device)).cpu().numpy().reshape(-1)
    advantage = np.clip(returns - values.astype(np.float64), 0.0, None)
    total = float(advantage.sum())
    if not total > 0.0:
        return None
    weights = advantage / total
    loss = torch.tensor(0.0)
    policy.set_training_mode(True)
    for _ in range(steps):
        idx = rng.choice(len(actions), size=min(batch_size, len(actions)), p=weights)
        dist = policy.get_distribution(torch.as_tensor(obs[idx], device=policy.device), action_masks=masks[idx])
        loss = -dist.log_prob(torch.as_tensor(actions[idx], device=policy.device)).mean()
        policy.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
        policy.optimizer.step()
    policy.set_training_mode(False)
    return float(loss.detach())
