"""The trainer's stable-baselines3 callback: it records finished training episodes, validates
the model every ``eval_freq`` steps (keeping the best one), stops early, and for
``task_sampling="greedy-failures"`` replays the greedy policy on the train tasks before a
rollout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from backoffice.training.eval.rollout import EpisodeResult, play
from backoffice.training.rl.config import TrainConfig
from backoffice.training.rl.sb3_policy import ModelActor


def pass_rate(episodes: Sequence[EpisodeResult]) -> dict[str, float]:
    """The pure pass rate and mean score of ``episodes`` (0 for none)."""
    n = max(1, len(episodes))
    return {"pass_rate": sum(bool(e.info["is_success"]) for e in episodes) / n,
            "mean_score": sum(float(e.info["score"]) for e in episodes) / n}


class TrainingMonitor(BaseCallback):
    """Collects finished episodes, validates, keeps the best model, stops early.

    Args:
        config: the run.
        val_env: a catalog env on the ``train`` split, the validation's own.
        val_ids: the validation tasks (train tasks no learner env draws).
        on_progress: called with the timesteps so far after every step (a progress bar).
        focus_env: ``greedy-failures``: the greedy replay's own catalog env, else ``None``.
        train_ids: the train tasks the greedy policy is replayed on.
    """

    def __init__(self, config: TrainConfig, val_env: Any, val_ids: Sequence[str],
                 on_progress: Callable[[int], None] | None = None, focus_env: Any = None, train_ids: Sequence[str] = ()):
        super().__init__()
        self.config = config
        self.val_env, self.val_ids = val_env, list(val_ids)
        self.on_progress = on_progress
        self.focus_env, self.train_ids = focus_env, list(train_ids)
        self.masked = config.algo == "maskable-ppo"
        #: one entry per finished training episode: timesteps, pure score, shaped reward, pass
        self.episodes: list[dict[str, float]] = []
        #: one entry per validation: timesteps, pass rate, mean score
        self.validation: list[dict[str, float]] = []
        self.best = -1.0
        self.stale = 0
        self.next_eval = config.eval_freq
        self.next_focus = config.focus_freq
        #: greedy-failures: (timesteps, train tasks the greedy policy failed) per replay
        self.focus: list[dict[str, int]] = []

    def _on_rollout_start(self) -> None:
        # after the last PPO update, before the next rollout: the rollout's log-probs are those
        # of the policy that collects it, as PPO's ratio needs
        if self.focus_env is not None and self.num_timesteps >= self.next_focus:
            self.next_focus += self.config.focus_freq
            replay = play(self.focus_env, ModelActor(self.model, self.focus_env, self.masked), self.train_ids)
            failed = [e.task_id for e in replay if not e.info["is_success"]]
            self.training_env.env_method("focus", failed)
            self.focus.append({"t": self.num_timesteps, "failed": len(failed), "tasks": len(replay)})

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if done and "score" in info:
                self.episodes.append({"t": self.num_timesteps, "score": float(info["score"]),
                                      "shaped": float(info["shaped_reward"]), "pass": float(info["is_success"])})
        if self.on_progress is not None:
            self.on_progress(self.num_timesteps)
        if self.num_timesteps >= self.next_eval:
            self.next_eval += self.config.eval_freq
            return self.validate()
        return True

    def validate_start(self, model: Any) -> bool:
        """Validate ``model`` before any PPO update (``t=0``); whether to train on."""
        self.init_callback(model)
        return self.validate()

    def validate(self) -> bool:
        """Play the validation tasks; save the model if it is the best so far; whether to train on."""
        res = pass_rate(play(self.val_env, ModelActor(self.model, self.val_env, self.masked), self.val_ids))
        self.validation.append({"t": self.num_timesteps, **res})
        if res["pass_rate"] > self.best:
            self.best, self.stale = res["pass_rate"], 0
            self.model.save(self.config.out / "model.zip")
        else:
            self.stale += 1
        return res["pass_rate"] < 1.0 and self.stale < self.config.patience
