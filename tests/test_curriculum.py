"""Failure-weighted task sampling (``task_sampling="failures"``, ``"unsolved"`` and
``"greedy-failures"``): the tasks a learner fails are drawn more often, only train tasks are
drawn, and a run stays reproducible to the byte."""

from __future__ import annotations

import collections
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from backoffice.envs.core.canonical import loads
from backoffice.envs.core.release import load_release
from backoffice.training.cli.main import app
from backoffice.training.rl.curriculum import FailureWeighted, GreedyFailures, task_sampler
from backoffice.training.rl.train import TrainConfig, training_env, training_task_ids, validation_ids

pytestmark = pytest.mark.xdist_group("approvals")


def _draws(tasks: FailureWeighted, n: int) -> collections.Counter[str]:
    return collections.Counter(tasks.pick() for _ in range(n))


def test_a_failed_task_is_drawn_more_often_and_a_passed_one_less() -> None:
    ids = [f"T{i}" for i in range(10)]
    tasks = FailureWeighted(ids, uniform_share=0.5, memory=1.0)
    for t in ids:
        tasks.record(t, 1.0)  # every task passed once
    tasks.record("T3", 0.0)  # then T3 failed
    tasks.seed(7)
    drawn = _draws(tasks, 4000)
    # T3 holds the whole weighted half plus its uniform share: 0.5 + 0.05
    assert drawn["T3"] / 4000 == pytest.approx(0.55, abs=0.03)
    assert all(drawn[t] / 4000 == pytest.approx(0.05, abs=0.02) for t in ids if t != "T3")
    tasks.record("T3", 1.0)  # once it passes, it is one task among ten again
    assert _draws(tasks, 4000)["T3"] / 4000 == pytest.approx(0.1, abs=0.03)


def test_unsolved_sampling_concentrates_on_the_tasks_failed_every_time_not_on_slips() -> None:
    """``"unsolved"``: a failed pass counts 1 whatever the score, and the weights are the fourth
    power of the running failure rate, so a task failed every time outweighs a task a
    stochastic policy slips on half the time sixteen times over; ``"failures"`` weighs a low
    score, not a failure."""
    ids = [f"T{i}" for i in range(10)]
    tasks = task_sampler("unsolved", ids)
    assert tasks is not None and tasks.measure == "pass"
    tasks.memory = 1.0
    for t in ids:
        tasks.record(t, 1.0, True)
    tasks.record("T0", 0.9, False)  # a near miss fails: shortfall 1
    tasks.shortfall[1] = 0.5  # failed half the time
    tasks.seed(11)
    drawn = _draws(tasks, 6000)
    # the weighted half: T0 16/17, T1 1/17; plus the uniform half's 5 % each
    assert drawn["T0"] / 6000 == pytest.approx(0.5 * 16 / 17 + 0.05, abs=0.03)
    assert drawn["T1"] / 6000 == pytest.approx(0.5 / 17 + 0.05, abs=0.02)
    by_score = task_sampler("failures", ids)
    assert by_score is not None
    by_score.record("T0", 0.9, False)
    assert by_score.shortfall[0] == pytest.approx(0.55)  # 1 -> halfway to 1 - 0.9
    tasks.record("T0", 1.0)  # without ``passed``, a score of 1 is a pass
    assert tasks.shortfall[0] == 0.0
    assert task_sampler("uniform", ids) is None
    with pytest.raises(ValueError, match="task_sampling"):
        task_sampler("hardest", ids)
    for bad in ({"measure": "grade"}, {"power": 0.0}):
        with pytest.raises(ValueError):
            FailureWeighted(ids, **bad)


def test_the_shortfall_is_a_running_mean_and_unplayed_tasks_count_as_failed() -> None:
    tasks = FailureWeighted(["a", "b"], memory=0.5)
    assert list(tasks.shortfall) == [1.0, 1.0]
    tasks.record("a", 1.0)
    tasks.record("a", 1.0)
    tasks.record("zzz", 0.0)  # not a task of this sampler: ignored
    assert list(tasks.shortfall) == [0.25, 1.0]


def test_draws_repeat_under_a_seed_and_the_arguments_are_checked() -> None:
    a, b = FailureWeighted(["x", "y", "z"]), FailureWeighted(["x", "y", "z"])
    a.seed(3)
    b.seed(3)
    assert [a.pick() for _ in range(50)] == [b.pick() for _ in range(50)]
    for bad in ({"uniform_share": 1.5}, {"memory": 0.0}):
        with pytest.raises(ValueError):
            FailureWeighted(["x"], **bad)
    with pytest.raises(ValueError, match="task id"):
        FailureWeighted([])
    with pytest.raises(ValueError, match="task_sampling"):
        TrainConfig(domain="approvals", out=Path("x"), task_sampling="hardest")
    with pytest.raises(ValueError, match="train_split"):
        TrainConfig(domain="approvals", out=Path("x"), task_sampling="failures", train_split="generated")


@pytest.mark.parametrize("sampling", ["failures", "unsolved"])
def test_the_learner_env_draws_the_tasks_a_wrong_policy_fails_more_often(sampling: str) -> None:
    """A policy that does the work on half of the train tasks and submits at once on the other
    half: the env soon draws mostly from the failed half, and never a validation or heldout task."""
    from backoffice.training.rl.demos import feature_chooser

    config = TrainConfig(domain="approvals", out=Path("x"), task_sampling="failures")
    ids = training_task_ids(config)
    assert ids is not None
    good = set(ids[::2])
    env = training_env("approvals", task_sampling=sampling, split="train", task_ids=ids, reward_mode="progress", call_cost=0.0)
    chooser = feature_chooser(env.env.agent)
    submit = env.env.agent.spec.actions.index(next(a for a in env.env.agent.spec.actions if a.tool == "submit"))
    obs, _ = env.reset(seed=5)
    played: list[tuple[str, bool]] = []
    while len(played) < 1200:
        task = env.task_id
        assert task is not None
        action = int(chooser(obs, env.env.action_masks())) if task in good else submit
        obs, _, done, _, info = env.step(action)
        if done:
            played.append((task, bool(info["is_success"])))
            obs, _ = env.reset()
    assert all(passed == (task in good) for task, passed in played)
    late = [task for task, _ in played[-600:]]
    # uniform draws would give the failed half 50 % (sd 2 points over 600 draws); once every
    # task was played, it also carries most of the weighted half
    assert sum(t not in good for t in late) / len(late) > 0.6
    held = set(validation_ids("approvals", config.validation_size)) | set(load_release("approvals").split_ids["heldout"])
    assert not held & {t for t, _ in played}
    env.close()


def _cli_train(out: Path, kind: str, *options: str) -> tuple[dict[str, Any], tuple[bytes, bytes]]:
    """A short ``backoffice train`` run on approvals (2 envs of ``kind``, 12 validation tasks):
    its summary, and its policy weights and curve as bytes."""
    result = CliRunner().invoke(app, ["train", "--env", "approvals", "--n-envs", "2", "--vec-env", kind, *options,
                                      "--validation-size", "12", "--no-heldout", "--out", str(out)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out / "model.zip") as z:
        return loads((out / "summary.json").read_bytes()), (z.read("policy.pth"), (out / "curve.json").read_bytes())


def test_failure_weighted_self_imitating_training_repeats_to_the_byte_in_either_vec_env(tmp_path: Path) -> None:
    """Each env keeps its own task table, generator and passes, and the imitation draws from a
    seeded generator, so the run is the same in the learner's process and in worker processes,
    and the same again when repeated."""
    runs = {}
    for name, kind in (("a", "dummy"), ("b", "dummy"), ("c", "subproc")):
        summary, runs[name] = _cli_train(tmp_path / name, kind, "--timesteps", "600", "--task-sampling", "failures",
                                         "--self-imitation", "4", "--eval-freq", "256")
        assert summary["config"]["task_sampling"] == "failures" and summary["config"]["self_imitation"] == 4
        assert summary["self_imitation"]["updates"] > 0 and summary["self_imitation"]["tasks"] > 0  # it did imitate
    assert runs["a"] == runs["b"] == runs["c"]


def test_greedy_failures_draw_half_from_the_focus_set_and_uniformly_before_any_replay() -> None:
    ids = [f"T{i}" for i in range(10)]
    tasks = task_sampler("greedy-failures", ids)
    assert isinstance(tasks, GreedyFailures)
    tasks.seed(4)
    before = _draws(tasks, 4000)  # no replay yet: uniform
    assert all(before[t] / 4000 == pytest.approx(0.1, abs=0.025) for t in ids)
    tasks.focus(["T7", "T2", "elsewhere"])  # an id outside the sampler's tasks is dropped
    assert tasks.focused == ("T2", "T7")  # in train order, whatever the caller's
    tasks.record("T2", 1.0, True)  # its own episodes do not move the focus
    drawn = _draws(tasks, 6000)
    # half the draws split over the two focused tasks, plus their 5 % uniform share
    assert drawn["T2"] / 6000 == pytest.approx(0.3, abs=0.03) and drawn["T7"] / 6000 == pytest.approx(0.3, abs=0.03)
    assert all(drawn[t] / 6000 == pytest.approx(0.05, abs=0.02) for t in ids if t not in ("T2", "T7"))
    tasks.focus([])  # the greedy policy passes every task: uniform again
    assert _draws(tasks, 4000)["T2"] / 4000 == pytest.approx(0.1, abs=0.025)
    a, b = GreedyFailures(ids), GreedyFailures(ids)
    for x in (a, b):
        x.focus(["T1"])
        x.seed(9)
    assert [a.pick() for _ in range(50)] == [b.pick() for _ in range(50)]
    with pytest.raises(ValueError):
        GreedyFailures(ids, focus_share=1.5)
    with pytest.raises(ValueError, match="task id"):
        GreedyFailures([])
    plain = training_env("approvals", task_sampling="failures", split="train", task_ids=["APR-T0001"])
    with pytest.raises(TypeError, match="greedy-failures"):
        plain.focus(["APR-T0001"])
    plain.close()


def test_greedy_failure_training_replays_the_greedy_policy_and_repeats_to_the_byte(tmp_path: Path) -> None:
    """The learner replays its deterministic policy on every train task at each ``focus_freq``
    and hands the failures to each env: recorded per replay, and the run is the same with the
    envs in the learner's process or in workers."""
    runs = {}
    for name, kind in (("a", "dummy"), ("c", "subproc")):
        summary, weights = _cli_train(tmp_path / name, kind, "--timesteps", "1200", "--task-sampling", "greedy-failures",
                                      "--focus-freq", "300", "--eval-freq", "400")
        n_train = len(load_release("approvals").split_ids["train"]) - 12
        focus = summary["greedy_focus"]
        assert [f["t"] for f in focus] == sorted({f["t"] for f in focus}) and len(focus) >= 3
        assert all(f["tasks"] == n_train and 0 <= f["failed"] <= n_train for f in focus)
        assert focus[0]["failed"] > 0  # an untrained policy fails train tasks: the focus is not empty
        runs[name] = (*weights, focus)
    assert runs["a"] == runs["c"]
    with pytest.raises(ValueError, match="focus_freq"):
        TrainConfig(domain="approvals", out=Path("x"), focus_freq=0)


def test_uniform_sampling_leaves_the_task_choice_to_the_catalog_env() -> None:
    env = training_env("approvals", split="train", task_ids=["APR-T0001"], reward_mode="progress", call_cost=0.0)
    assert env.tasks is None
    env.reset(seed=1)
    assert env.task_id is None and np.asarray(env.env.action_masks()).any()
    env.close()


# -- self-imitation --------------------------------------------------------------------------
def test_passed_episodes_keep_the_latest_pass_per_task_and_drop_the_oldest_task() -> None:
    from backoffice.training.self_imitation import PassedEpisodes, merge

    def steps(action: int, n: int = 2) -> list[tuple[np.ndarray, np.ndarray, int, float]]:
        return [(np.full(3, action, dtype=np.float32), np.ones(4, dtype=bool), action, 0.5)] * n

    kept = PassedEpisodes(keep=2)
    kept.add("a", steps(0))
    kept.add("b", steps(1))
    kept.add("a", steps(2, 3))  # a's newer pass replaces the older one and makes a the newest
    kept.add("c", steps(3))  # over the limit: b, the oldest, goes
    assert list(kept.episodes) == ["a", "c"]
    assert kept.episodes["a"][1][2].tolist() == [2, 2, 2]
    other = PassedEpisodes()
    other.add("b", steps(1))
    other.add("c", steps(0))
    other.add("c", steps(1))  # serial 2 here; the first table's c has serial 3 and wins
    merged = merge([kept.episodes, other.episodes])
    assert [e[2].tolist() for e in merged] == [[2, 2, 2], [1, 1], [3, 3]]  # a, b, c in task order


def test_the_learner_env_keeps_exactly_the_passed_episodes_it_played() -> None:
    """Feature-policy episodes on some tasks, submit at once on others: only the passes are
    kept, each with the observations, masks and actions of its steps."""
    from backoffice.training.rl.demos import feature_chooser

    ids = list(load_release("approvals").split_ids["train"][:6])
    env = training_env("approvals", keep_passes=True, split="train", task_ids=ids, reward_mode="progress", call_cost=0.0)
    assert env.passes is not None
    chooser = feature_chooser(env.env.agent)
    submit = next(i for i, a in enumerate(env.env.agent.spec.actions) if a.tool == "submit")
    played: dict[str, list[int]] = {}
    for n, tid in enumerate(ids):
        obs, info = env.reset(options={"task_id": tid})
        first_obs, actions = obs, []
        done = False
        while not done:
            action = int(chooser(obs, env.env.action_masks())) if n % 2 == 0 else submit
            actions.append(action)
            obs, _, done, _, info = env.step(action)
        assert info["is_success"] == (n % 2 == 0)
        played[tid] = actions
        if n % 2 == 0:
            kept_obs, kept_masks, kept_actions, kept_rewards = env.passes.episodes[tid][1]
            assert kept_rewards.shape == kept_actions.shape and kept_rewards.sum() > 0  # the progress reward paid
            assert kept_actions.tolist() == actions and np.array_equal(kept_obs[0], first_obs)
            assert kept_masks[np.arange(len(actions)), kept_actions].all()
    assert sorted(env.passes.episodes) == sorted(ids[::2])
    env.close()


def test_returns_to_go_discount_the_rest_of_the_episode() -> None:
    from backoffice.training.self_imitation import returns_to_go

    assert returns_to_go(np.array([1.0, 0.0, 2.0]), 0.5).tolist() == [1.5, 1.0, 2.0]
    assert returns_to_go(np.array([1.0, 1.0]), 1.0).tolist() == [2.0, 1.0]


def test_imitation_pulls_the_policy_towards_the_kept_passes() -> None:
    from sb3_contrib import MaskablePPO

    from backoffice.training.rl.demos import collect
    from backoffice.training.self_imitation import imitate

    ids = list(load_release("approvals").split_ids["train"][:40])
    demos = collect("approvals", ids)
    env = training_env("approvals", split="train", task_ids=ids)
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64]}, seed=0, device="cpu")
    episodes = [(demos.obs, demos.masks, demos.actions, np.full(len(demos.actions), 0.1))]

    def agreement() -> float:
        import torch

        with torch.no_grad():
            logits = model.policy.get_distribution(torch.as_tensor(demos.obs), action_masks=demos.masks).distribution.logits
        return float((logits.argmax(dim=1).numpy() == demos.actions).mean())

    before = agreement()
    assert imitate(model, [], 5, 64, np.random.default_rng(0)) is None  # nothing kept yet: no update
    # episodes whose returns fall short of the value expected everywhere: nothing to imitate
    worse = [(demos.obs, demos.masks, demos.actions, np.full(len(demos.actions), -10.0))]
    assert imitate(model, worse, 5, 64, np.random.default_rng(0)) is None
    assert agreement() == before
    imitate(model, episodes, 200, 64, np.random.default_rng(0))
    assert agreement() > max(0.9, before + 0.3)
    with pytest.raises(ValueError, match="self_imitation"):
        TrainConfig(domain="approvals", out=Path("x"), self_imitation=-1)
    with pytest.raises(ValueError, match="maskable"):
        TrainConfig(domain="approvals", out=Path("x"), self_imitation=4, algo="ppo")
    env.close()
