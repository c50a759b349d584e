"""Greedy-failure task sampling (``task_sampling="greedy-failures"``): half the draws come from
the train tasks the learner's deterministic policy failed at its latest replay, only train tasks
are drawn, and a run stays reproducible to the byte."""

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
from backoffice.training.rl.config import TrainConfig, training_task_ids, validation_ids
from backoffice.training.rl.curriculum import GreedyFailures, task_sampler
from backoffice.training.rl.envs import training_env

pytestmark = pytest.mark.xdist_group("approvals")


def _draws(tasks: GreedyFailures, n: int) -> collections.Counter[str]:
    return collections.Counter(tasks.pick() for _ in range(n))


def test_only_uniform_and_greedy_failures_are_samplings() -> None:
    """The failure-weighted samplings (``failures``, ``unsolved``) were tried and retired
    (docs/EXPERIMENTS.md); greedy-failures weights the released train tasks only."""
    assert task_sampler("uniform", ["T0"]) is None
    for retired in ("failures", "unsolved", "hardest"):
        with pytest.raises(ValueError, match="task_sampling"):
            task_sampler(retired, ["T0"])
        with pytest.raises(ValueError, match="task_sampling"):
            TrainConfig(domain="approvals", out=Path("x"), task_sampling=retired)
    with pytest.raises(ValueError, match="train_split"):
        TrainConfig(domain="approvals", out=Path("x"), task_sampling="greedy-failures", train_split="generated")


def _cli_train(out: Path, kind: str, *options: str) -> tuple[dict[str, Any], tuple[bytes, bytes]]:
    """A short ``backoffice train`` run on approvals (2 envs of ``kind``, 12 validation tasks):
    its summary, and its policy weights and curve as bytes."""
    result = CliRunner().invoke(app, ["train", "--env", "approvals", "--n-envs", "2", "--vec-env", kind, *options,
                                      "--validation-size", "12", "--no-heldout", "--out", str(out)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out / "model.zip") as z:
        return loads((out / "summary.json").read_bytes()), (z.read("policy.pth"), (out / "curve.json").read_bytes())


def test_greedy_failures_draw_half_from_the_focus_set_and_uniformly_before_any_replay() -> None:
    ids = [f"T{i}" for i in range(10)]
    tasks = task_sampler("greedy-failures", ids)
    assert isinstance(tasks, GreedyFailures)
    tasks.seed(4)
    before = _draws(tasks, 4000)  # no replay yet: uniform
    assert all(before[t] / 4000 == pytest.approx(0.1, abs=0.025) for t in ids)
    tasks.focus(["T7", "T2", "elsewhere"])  # an id outside the sampler's tasks is dropped
    assert tasks.focused == ("T2", "T7")  # in train order, whatever the caller's
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
    plain = training_env("approvals", split="train", task_ids=["APR-T0001"])
    with pytest.raises(TypeError, match="greedy-failures"):
        plain.focus(["APR-T0001"])
    plain.close()


def test_a_greedy_learner_env_draws_half_from_the_focus_and_only_its_train_tasks() -> None:
    config = TrainConfig(domain="approvals", out=Path("x"), task_sampling="greedy-failures")
    ids = training_task_ids(config)
    assert ids is not None
    env = training_env("approvals", task_sampling="greedy-failures", split="train", task_ids=ids)
    env.focus(ids[:3])
    drawn = [env.reset(seed=5)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(399)]
    assert set(drawn) <= set(ids)
    # half the draws from the three focused tasks, plus their share of the uniform half
    assert sum(t in ids[:3] for t in drawn) / len(drawn) == pytest.approx(0.5 + 0.5 * 3 / len(ids), abs=0.07)
    held = set(validation_ids("approvals", config.validation_size)) | set(load_release("approvals").split_ids["heldout"])
    assert not held & set(drawn)
    env.close()


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
    assert np.asarray(env.env.action_masks()).any()
    env.close()
