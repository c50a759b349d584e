"""Demonstrations, behaviour cloning, the tree baseline and the resumable results table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import load_release
from backoffice.training.rl import results
from backoffice.training.rl.demos import behaviour_clone, collect, fit_tree


def test_tree_recovers_a_two_split_rule_and_respects_its_depth() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(400, 5)).astype(np.float32)
    y = (x[:, 0] > 0.2).astype(np.int64) + 2 * (x[:, 3] > -0.5).astype(np.int64)
    tree = fit_tree(x, y, max_depth=2, thresholds=64)
    assert np.mean([tree.predict(row) == label for row, label in zip(x, y, strict=True)]) > 0.97
    stump = fit_tree(x, y, max_depth=1)
    assert stump.leaves == 2
    assert fit_tree(x, np.zeros(400, dtype=np.int64), max_depth=5).leaves == 1  # nothing to split


def test_demonstrations_are_valid_feature_policy_decisions() -> None:
    ids = load_release("approvals").split_ids["train"][:8]
    demos = collect("approvals", ids)
    assert demos.episodes == 8 and demos.passed == 8
    assert demos.obs.shape[0] == len(demos.actions) == len(demos.masks) > 8
    assert demos.masks[np.arange(len(demos.actions)), demos.actions].all()  # every action was legal
    assert np.abs(demos.obs).max() <= 1.0


def test_behaviour_cloning_reproduces_the_demonstrations() -> None:
    from sb3_contrib import MaskablePPO

    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.rl.sb3_policy import evaluate_split

    release = load_release("approvals")
    demos = collect("approvals", release.split_ids["train"][:150])
    env = make_catalog_env("approvals", split="train")
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64]}, seed=0, device="cpu")
    untrained = evaluate_split(model, "approvals", "heldout", task_ids=release.split_ids["heldout"][:20])["pass_rate"]
    fit = behaviour_clone(model, demos)
    assert fit["accuracy"] >= 0.95
    cloned = evaluate_split(model, "approvals", "heldout", task_ids=release.split_ids["heldout"][:20])["pass_rate"]
    assert cloned >= 0.9 > untrained


def test_results_skip_only_runs_that_are_up_to_date(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "MODELS", tmp_path)
    runs = results.plan(["approvals"])
    assert {r.tier for r in runs} >= {"conclusions"}
    assert sum(r.kind == "ppo" and r.tier == "conclusions" for r in runs) == results.SEEDS["conclusions"]
    run = runs[0]
    assert not results.up_to_date(run, 1000)
    run.out.mkdir(parents=True)
    (run.out / "model.zip").write_bytes(b"x")
    ident = results._identity(run.domain, run.tier)
    config = results.run_config(run, 1000)
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": config}))
    assert results.up_to_date(run, 1000)
    assert not results.up_to_date(run, 2000)  # another budget
    (run.out / "summary.json").write_bytes(dumps({**ident, "release": "other", "config": config}))
    assert not results.up_to_date(run, 1000)  # another release
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": {**config, "reward_mode": "sparse"}}))
    assert not results.up_to_date(run, 1000)  # other hyperparameters (the catalog's tuning changed)
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": {**config, "n_envs": config["n_envs"] // 2}}))
    assert not results.up_to_date(run, 1000)  # other envs per rollout step: another training
    other_kind = "subproc" if config["vec_env"] == "dummy" else "dummy"
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": {**config, "vec_env": other_kind}}))
    assert results.up_to_date(run, 1000)  # the same envs in other processes: the same model (test_train)
    # a run that passed every validation task and stopped early holds for any budget reaching its stop
    converged = {**ident, "config": config, "timesteps": 600, "best_validation_pass_rate": 1.0}
    (run.out / "summary.json").write_bytes(dumps(converged))
    assert results.up_to_date(run, 2000) and results.up_to_date(run, 600) and not results.up_to_date(run, 500)
    (run.out / "summary.json").write_bytes(dumps({**converged, "best_validation_pass_rate": 0.9}))
    assert not results.up_to_date(run, 2000)  # stopped by patience: a larger budget could go further


def test_a_run_is_judged_on_its_catalogs_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Remittance's conclusions tier is tuned to 400k steps, its facts tier to 1.2M, its raw tier
    and approvals' conclusions tier train the default 200k; ``--timesteps`` overrides every budget."""
    monkeypatch.setattr(results, "MODELS", tmp_path)
    remit = {r.tier: r for r in results.plan(["remittance"]) if r.kind == "ppo" and r.seed == 0}
    assert results.budget(remit["conclusions"]) == 400_000
    assert results.budget(remit["facts"]) == 1_200_000
    assert results.budget(remit["raw"]) == results.budget(results.plan(["approvals"])[0]) == 200_000
    assert results.budget(remit["conclusions"], 1000) == 1000
    run = remit["conclusions"]
    run.out.mkdir(parents=True)
    (run.out / "model.zip").write_bytes(b"x")
    ident = results._identity(run.domain, run.tier)
    from backoffice.graders.progress import DISTANCE_VERSION

    for steps in (200_000, 400_000):
        summary = {**ident, "config": results.run_config(run, steps), "progress_distance": DISTANCE_VERSION}
        (run.out / "summary.json").write_bytes(dumps(summary))
        assert results.up_to_date(run) is (steps == 400_000)
        assert results.up_to_date(run, 200_000) is (steps == 200_000)


def test_cached_baselines_are_reused_until_the_cloning_settings_change(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    calls: list[str] = []

    def ceiling(domain: str, tier: str) -> dict[str, object]:
        calls.append(tier)
        return {"bc": 0.5, "bc_accuracy": 1.0, "bc_settings": results._bc_settings(
            results._train_config(results.Run(domain, tier, "warm", 0)))}

    monkeypatch.setattr(results, "bc_ceiling", ceiling)
    path = tmp_path / "approvals" / "conclusions.json"
    path.parent.mkdir()
    cached = {**results._identity("approvals", "conclusions"), **ceiling("approvals", "conclusions")}
    path.write_bytes(dumps(cached))
    assert results.baselines("approvals", "conclusions")["bc"] == 0.5 and len(calls) == 1  # reused
    path.write_bytes(dumps({**cached, "bc_settings": {**cached["bc_settings"], "bc_epochs": 30}}))
    results.baselines("approvals", "conclusions")
    assert len(calls) == 2  # another cloning setting: recomputed


def test_results_judge_the_reward_a_run_was_trained_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A setting added after a run was made counts at its default; a progress run made on an
    older end-state distance is stale (it was trained on another reward)."""
    from backoffice.graders.progress import DISTANCE_VERSION

    monkeypatch.setattr(results, "MODELS", tmp_path)
    run = next(r for r in results.plan(["schedules"]) if r.kind == "ppo")
    run.out.mkdir(parents=True)
    (run.out / "model.zip").write_bytes(b"x")
    ident = results._identity(run.domain, run.tier)
    config = results.run_config(run, 1000)
    assert config["reward_mode"] == "progress" and config["call_cost"] is None
    older = {k: v for k, v in config.items() if k != "call_cost"}  # made before call_cost existed
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": older, "progress_distance": DISTANCE_VERSION}))
    assert results.up_to_date(run, 1000)
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": {**config, "call_cost": 0.0},
                                                  "progress_distance": DISTANCE_VERSION}))
    assert not results.up_to_date(run, 1000)  # trained without the per-call cost: another reward
    (run.out / "summary.json").write_bytes(dumps({**ident, "config": config}))
    assert not results.up_to_date(run, 1000)  # paid on the first end-state distance


def test_a_warm_run_cloned_with_other_passes_is_stale_and_a_pure_run_is_not(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm runs made before ``bc_epochs`` existed cloned with 30 passes: another run. Pure runs
    never clone, so the setting is unset for them and older pure runs stay current."""
    from backoffice.graders.progress import DISTANCE_VERSION
    from backoffice.training.rl.config import BC_EPOCHS, TrainConfig

    monkeypatch.setattr(results, "MODELS", tmp_path)
    plan = results.plan(["approvals"], ["facts"])
    warm = next(r for r in plan if r.kind == "warm")
    pure = next(r for r in plan if r.kind == "ppo")
    ident = results._identity("approvals", "facts")
    for run in (warm, pure):
        run.out.mkdir(parents=True)
        (run.out / "model.zip").write_bytes(b"x")
        config = results.run_config(run, 1000)
        assert config["bc_epochs"] == (BC_EPOCHS if run is warm else None)
        summary = {**ident, "config": config, "progress_distance": DISTANCE_VERSION, "validation": [{"t": 0}]}
        (run.out / "summary.json").write_bytes(dumps(summary))
        assert results.up_to_date(run, 1000)
        older = {k: v for k, v in config.items() if k != "bc_epochs"}
        (run.out / "summary.json").write_bytes(dumps({**summary, "config": older}))
    assert results.up_to_date(pure, 1000)
    assert not results.up_to_date(warm, 1000)
    # a warm run whose clone was not validated before PPO (no t=0 point) is stale too
    (warm.out / "summary.json").write_bytes(dumps({**summary, "config": results.run_config(warm, 1000),
                                                   "validation": [{"t": 10_000}]}))
    assert not results.up_to_date(warm, 1000)
    with pytest.raises(ValueError, match="bc_epochs"):
        TrainConfig.for_domain("approvals", tmp_path, bc_epochs=50)  # no cloning without a warm start
    with pytest.raises(ValueError, match="bc_epochs"):
        TrainConfig.for_domain("approvals", tmp_path, warm_start="demos", bc_epochs=0)


def test_stale_runs_are_not_tabulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from backoffice.graders.progress import DISTANCE_VERSION

    monkeypatch.setattr(results, "MODELS", tmp_path)
    runs = [r for r in results.plan(["schedules"], ["conclusions"]) if r.kind == "ppo"]
    ident = results._identity("schedules", "conclusions")
    for run, rate in zip(runs, (0.5, 0.7, 0.9), strict=True):
        run.out.mkdir(parents=True)
        (run.out / "model.zip").write_bytes(b"x")
        summary = {**ident, "config": results.run_config(run, 1000), "timesteps": 1000, "heldout": {"pass_rate": rate}}
        if run.seed != 2:  # seed 2 was paid on the first end-state distance
            summary["progress_distance"] = DISTANCE_VERSION
        (run.out / "summary.json").write_bytes(dumps(summary))
    (row,) = results.collect_rows(["schedules"], ["conclusions"])
    assert row["seeds"] == 2 and row["ppo_mean"] == pytest.approx(0.6)


def test_learning_curves_come_from_the_summary_and_name_runs_without_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed summary carries the validation curve; a current run without a recorded
    curve is named under the plot, a stale run is neither drawn nor named."""
    from backoffice.graders.progress import DISTANCE_VERSION

    monkeypatch.setattr(results, "MODELS", tmp_path)
    runs = [r for r in results.plan(["schedules"], ["conclusions"]) if r.kind == "ppo"]
    ident = results._identity("schedules", "conclusions")
    for run in runs:
        run.out.mkdir(parents=True)
        (run.out / "model.zip").write_bytes(b"x")
        summary = {**ident, "config": results.run_config(run, 1000), "timesteps": 1000, "heldout": {"pass_rate": 0.5},
                   "progress_distance": DISTANCE_VERSION}
        if run.seed == 0:
            summary["validation"] = [{"t": 500, "pass_rate": 0.2}, {"t": 1000, "pass_rate": 0.4}]
        (run.out / "summary.json").write_bytes(dumps(summary))
    (runs[1].out / "curve.json").write_bytes(dumps({"episodes": [], "validation": [{"t": 1000, "pass_rate": 0.3}]}))
    assert results.validation_curve(runs[0]) == [{"t": 500, "pass_rate": 0.2}, {"t": 1000, "pass_rate": 0.4}]
    assert results.validation_curve(runs[1]) == [{"t": 1000, "pass_rate": 0.3}]
    assert results.validation_curve(runs[2]) is None
    out = results.plot_curves("schedules", tmp_path / "curves.png")
    assert out is not None and out.stat().st_size > 0
    for run in runs:  # no run has a curve: nothing is drawn over the existing figure
        (run.out / "curve.json").unlink(missing_ok=True)
        summary = loads((run.out / "summary.json").read_bytes())
        summary.pop("validation", None)
        (run.out / "summary.json").write_bytes(dumps(summary))
    assert results.plot_curves("schedules", tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def _attainable_accuracy(demos) -> float:
    """The share of decisions the best function of the observation (the majority action of each
    distinct observation vector) reproduces."""
    counts: dict[bytes, dict[int, int]] = {}
    for row, action in zip(demos.obs, demos.actions, strict=True):
        seen = counts.setdefault(row.tobytes(), {})
        seen[int(action)] = seen.get(int(action), 0) + 1
    return sum(max(c.values()) for c in counts.values()) / len(demos.actions)


@pytest.mark.xdist_group("sufficiency")
def test_bc_ceiling_is_what_a_warm_started_run_measures_before_ppo(tmp_path: Path) -> None:
    """The table's behaviour-cloning column comes from the baselines (no PPO needed); it is the
    same number a warm-started run records before its first PPO update, and the clone is fitted:
    it reproduces the demonstrations (a ceiling that underfits would understate what cloning
    reaches; docs/EXPERIMENTS.md): its accuracy is within half a point of the best any function of
    the observation reaches (demonstrations that see the same vector and act differently cap it)."""
    from backoffice.training.rl.config import TrainConfig, demo_task_ids
    from backoffice.training.rl.train import train

    ceiling = results.bc_ceiling("sufficiency", "facts")
    config = TrainConfig.for_domain("sufficiency", tmp_path / "warm", tier="facts", seed=0, timesteps=64,
                                    eval_freq=10_000, warm_start="demos")
    summary = train(config)
    demos = collect("sufficiency", demo_task_ids(config), spec=config.spec)
    assert ceiling["bc"] == summary["warm_start"]["bc_heldout_pass_rate"]
    assert ceiling["bc_accuracy"] == summary["warm_start"]["accuracy"] >= _attainable_accuracy(demos) - 0.005
    assert ceiling["bc_settings"]["bc_epochs"] == config.bc_epochs
    # the clone was a candidate before PPO; it fails validation tasks, so PPO ran
    assert summary["validation"][0]["t"] == 0 and summary["validation"][0]["pass_rate"] < 1.0
    assert summary["timesteps"] >= 64


@pytest.mark.xdist_group("approvals")
def test_a_clone_that_passes_validation_is_kept_without_ppo(tmp_path: Path) -> None:
    """PPO's first updates can undo part of a clone: a clone passing every validation task is
    the model, with no PPO step (on approvals/conclusions the clone passes everything)."""
    from backoffice.training.rl.config import TrainConfig
    from backoffice.training.rl.train import train

    config = TrainConfig.for_domain("approvals", tmp_path / "warm", seed=0, timesteps=20_000, warm_start="demos")
    summary = train(config)
    assert summary["timesteps"] == 0
    assert [v["t"] for v in summary["validation"]] == [0] and summary["best_validation_pass_rate"] == 1.0
    assert summary["heldout"]["pass_rate"] == summary["warm_start"]["bc_heldout_pass_rate"]


def test_reevaluate_measures_a_model_of_an_earlier_release_on_this_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shipped = results.Run("registration", "conclusions", "ppo", 0)
    if not (shipped.out / "model.zip").exists():
        pytest.skip("the shipped registration/conclusions model is not in this checkout")
    monkeypatch.setattr(results, "MODELS", tmp_path)
    run = results.Run("registration", "conclusions", "ppo", 0)
    shutil.copytree(results.Path("models") / "registration" / "conclusions" / "ppo-s0", run.out)
    summary = loads((run.out / "summary.json").read_bytes())
    summary.update(release="an-earlier-release", model=str(run.out / "model.zip"),
                   heldout={"episodes": 1, "pass_rate": 0.123, "mean_score": 0.5})
    summary.pop("trained_release", None)
    (run.out / "summary.json").write_bytes(dumps(summary))
    assert results.current_summary(run) is None  # measured on another release: stale as it is
    new = results.reevaluate(run)
    assert new is not None and results.current_summary(run) == new
    assert new["trained_release"] == "an-earlier-release" and new["heldout_before"]["pass_rate"] == 0.123
    assert new["release"] == results._identity("registration", "conclusions")["release"]
    assert new["heldout"]["episodes"] == len(load_release("registration").split_ids["heldout"])
    assert results.reevaluate(run) is None  # current now: nothing to do
    rows = results.collect_rows(["registration"], ["conclusions"])
    assert rows[0]["reevaluated"] == 1 and "†" in results.markdown(rows)
