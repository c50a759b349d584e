"""``backoffice train`` end to end on a tiny budget, and ``sb3:`` models in the common
evaluation path. No score is asserted: the pipeline is."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import load_release
from backoffice.training.cli.main import app
from backoffice.training.rl.config import TrainConfig, validation_ids
from conftest import REPO

pytestmark = pytest.mark.xdist_group("approvals")
DOMAIN = "approvals"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / DOMAIN
    result = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--timesteps", "600", "--n-envs", "2",
                                      "--eval-freq", "256", "--validation-size", "12", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_train_writes_model_curve_and_heldout_records(trained: Path) -> None:
    for name in ("model.zip", "catalog.json", "curve.json", "learning_curve.png", "heldout.jsonl", "summary.json"):
        assert (trained / name).stat().st_size > 0, name
    summary = loads((trained / "summary.json").read_bytes())
    assert summary["timesteps"] >= 600 and summary["config"]["n_envs"] == 2
    curve = loads((trained / "curve.json").read_bytes())
    assert curve["episodes"] and curve["validation"]
    assert all(v["t"] <= summary["timesteps"] for v in curve["validation"])
    # the committed summary keeps the validation curve (curve.json stays local)
    assert summary["validation"] == curve["validation"]
    records = [loads(line) for line in (trained / "heldout.jsonl").read_bytes().splitlines()]
    heldout = load_release(DOMAIN).split_ids["heldout"]
    assert sorted(r["task_id"] for r in records) == sorted(heldout)
    assert {r["split"] for r in records} == {"heldout"}
    assert summary["heldout"]["pass_rate"] == sum(r["pass"] for r in records) / len(records)


def test_heldout_evaluation_is_measured_afresh_never_read_back(trained: Path, tmp_path: Path) -> None:
    """A records file already at the output (another model's, an earlier release's or code's,
    under the same run id) is replaced: its episodes never stand in for the model's."""
    from backoffice.training.rl.train import evaluate_heldout

    out = tmp_path / "heldout.jsonl"
    forged = [{**loads(line), "pass": True, "score": 1.0} for line in (trained / "heldout.jsonl").read_bytes().splitlines()]
    out.write_bytes(b"".join(dumps(r) + b"\n" for r in forged))
    measured = evaluate_heldout(DOMAIN, trained / "model.zip", out)
    fresh = evaluate_heldout(DOMAIN, trained / "model.zip", tmp_path / "fresh.jsonl")
    assert measured["pass_rate"] == fresh["pass_rate"] < 1.0
    assert out.read_bytes().count(b"\n") == len(forged)  # no forged line kept beside the new ones


def test_validation_is_carved_from_train_never_heldout() -> None:
    ids = validation_ids(DOMAIN, 50)
    rel = load_release(DOMAIN)
    assert len(ids) == 50 and set(ids) <= set(rel.split_ids["train"])
    assert not set(ids) & set(rel.split_ids["heldout"])
    assert ids == validation_ids(DOMAIN, 50)
    with pytest.raises(ValueError):
        TrainConfig(domain=DOMAIN, out=Path("x"), train_split="heldout")


def test_eval_sb3_policy_matches_training_records(trained: Path, tmp_path: Path) -> None:
    """``backoffice eval --policy sb3:...`` goes through the common path and reproduces the
    records written at the end of training (same model, deterministic actions)."""
    out = tmp_path / "eval.jsonl"
    model = trained / "model.zip"
    result = CliRunner().invoke(app, ["eval", "--env", DOMAIN, "--policy", f"sb3:{model}", "--limit", "15",
                                      "--run-id", f"sb3-{DOMAIN}-heldout", "--out", str(out)])
    assert result.exit_code == 0, result.output
    mine = {r["task_id"]: r for r in map(loads, out.read_bytes().splitlines())}
    theirs = {r["task_id"]: r for r in map(loads, (trained / "heldout.jsonl").read_bytes().splitlines())}
    assert len(mine) == 15
    for tid, rec in mine.items():
        assert dumps(rec) == dumps(theirs[tid])


def test_sb3_policy_refuses_wrong_domain_and_stale_catalog(trained: Path, tmp_path: Path) -> None:
    from backoffice.training.policies import get_policy

    with pytest.raises(KeyError):
        get_policy("schedules", f"sb3:{trained / 'model.zip'}")
    with pytest.raises(FileNotFoundError):
        get_policy(DOMAIN, f"sb3:{tmp_path / 'none.zip'}")
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "model.zip").write_bytes((trained / "model.zip").read_bytes())
    meta = loads((trained / "catalog.json").read_bytes())
    (stale / "catalog.json").write_bytes(dumps({**meta, "catalog_hash": "0" * 32}))
    with pytest.raises(ValueError, match="retrain"):
        get_policy(DOMAIN, f"sb3:{stale / 'model.zip'}")
    # `eval --env all` runs a model only on its own domain
    result = CliRunner().invoke(app, ["eval", "--env", "all", "--policy", f"sb3:{trained / 'model.zip'}", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "schedules" not in result.output and DOMAIN in result.output


def test_shipped_models_match_the_current_catalogs() -> None:
    """The README's models (models/<domain>) load through ``sb3:`` with the catalog they were
    trained on; a catalog change without retraining fails here."""
    from backoffice.training.policies import get_policy

    root = REPO / "models"
    shipped = sorted(root.glob("*/model.zip")) + sorted(root.glob("*/*/*/model.zip"))  # models/<domain>/<tier>/<run>/
    if not shipped:
        pytest.skip("no shipped models in this checkout")
    for model in shipped:
        domain = model.relative_to(root).parts[0]
        policy = get_policy(domain, f"sb3:{model}")
        assert policy.domain == domain


def test_training_twice_on_one_machine_gives_the_same_model_and_curve(trained: Path, tmp_path: Path) -> None:
    """Seeded training (fork workers, one torch thread) is reproducible to the byte on one
    machine: the same weights, training episodes and validation curve."""
    import zipfile

    again = tmp_path / DOMAIN
    result = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--timesteps", "600", "--n-envs", "2",
                                      "--eval-freq", "256", "--validation-size", "12", "--no-heldout", "--out", str(again)])
    assert result.exit_code == 0, result.output

    def weights(out: Path) -> bytes:
        with zipfile.ZipFile(out / "model.zip") as z:
            return z.read("policy.pth")

    assert weights(again) == weights(trained)
    assert (again / "curve.json").read_bytes() == (trained / "curve.json").read_bytes()


def test_the_vec_env_kind_changes_the_cost_not_the_model(trained: Path, tmp_path: Path) -> None:
    """``--vec-env subproc`` steps the same envs in worker processes: same seeds, same order, so
    the same weights and curve as the default ``dummy`` (every env in the learner's process)."""
    import zipfile

    again = tmp_path / DOMAIN
    result = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--timesteps", "600", "--n-envs", "2", "--vec-env", "subproc",
                                      "--eval-freq", "256", "--validation-size", "12", "--no-heldout", "--out", str(again)])
    assert result.exit_code == 0, result.output
    assert loads((again / "summary.json").read_bytes())["config"]["vec_env"] == "subproc"
    assert loads((trained / "summary.json").read_bytes())["config"]["vec_env"] == "dummy"
    with zipfile.ZipFile(again / "model.zip") as a, zipfile.ZipFile(trained / "model.zip") as b:
        assert a.read("policy.pth") == b.read("policy.pth")
    assert (again / "curve.json").read_bytes() == (trained / "curve.json").read_bytes()
    with pytest.raises(ValueError, match="vec_env"):
        TrainConfig(domain=DOMAIN, out=Path("x"), vec_env="ray")


def test_demonstrations_follow_the_training_split() -> None:
    """A run on released train tasks clones on them (never validation, never heldout); a run on
    generated tasks clones on generated ones (it used to clone on nothing)."""
    from backoffice.envs.core.release import is_generated_id
    from backoffice.training.rl.config import DEMO_GENERATED, demo_task_ids, training_task_ids

    rel = load_release(DOMAIN)
    on_train = TrainConfig(domain=DOMAIN, out=Path("x"), warm_start="demos")
    ids = demo_task_ids(on_train)
    assert ids == training_task_ids(on_train) and set(ids) < set(rel.split_ids["train"])
    assert not set(ids) & set(validation_ids(DOMAIN, on_train.validation_size))
    generated = TrainConfig(domain=DOMAIN, out=Path("x"), warm_start="demos", train_split="generated")
    assert training_task_ids(generated) is None
    gen_ids = demo_task_ids(generated)
    assert len(set(gen_ids)) == DEMO_GENERATED and all(map(is_generated_id, gen_ids))
    assert not set(gen_ids) & (set(rel.split_ids["train"]) | set(rel.split_ids["heldout"]))


def test_the_learner_env_ends_at_the_limit_and_drops_the_unread_grade() -> None:
    """The learner's env keeps what training reads of a finished episode (score, pass, shaped
    reward) and drops the grade, diff and judge, and every step's mask, which SB3's DummyVecEnv
    would deep-copy every step; the step limit ends the episode (``terminated``, never ``truncated``)."""
    import numpy as np

    from backoffice.training.rl.envs import UNREAD_INFO, UNREAD_STEP_INFO, training_env

    env = training_env("remittance", split="train", reward_mode="progress", call_cost=0.0, tier="facts", max_steps=3)
    env.reset(seed=3)
    steps = []
    while not steps or not steps[-1][2]:
        mask = env.env.action_masks()
        choice = int(np.flatnonzero(mask)[0])  # the first legal action: a read, never submit
        steps.append(env.step(choice))
    assert len(steps) == 3 and not any(s[3] for s in steps)
    assert not any(UNREAD_STEP_INFO in s[4] for s in steps)
    info = steps[-1][4]
    assert not UNREAD_INFO & info.keys()
    assert {"score", "is_success", "shaped_reward"} <= info.keys()
    env.close()


def test_gae_lambda_and_clip_range_reach_the_model_and_bad_values_are_refused(tmp_path: Path) -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from backoffice.training.rl.envs import training_env
    from backoffice.training.rl.train import build_model

    config = TrainConfig(domain=DOMAIN, out=tmp_path, gae_lambda=1.0, clip_range=0.35, n_envs=1)
    venv = DummyVecEnv([lambda: training_env(DOMAIN, split="train", task_ids=list(load_release(DOMAIN).split_ids["train"][:3]))])
    model = build_model(config, venv, [])
    assert model.gae_lambda == 1.0 and model.clip_range(1.0) == pytest.approx(0.35)
    assert config.record()["gae_lambda"] == 1.0 and config.record()["clip_range"] == 0.35
    default = build_model(TrainConfig(domain=DOMAIN, out=tmp_path, n_envs=1), venv, [])
    assert default.gae_lambda == 0.95 and default.clip_range(1.0) == pytest.approx(0.2)  # SB3's own defaults, as before
    venv.close()
    for bad in ({"gae_lambda": 1.5}, {"gae_lambda": -0.1}, {"clip_range": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(domain=DOMAIN, out=Path("x"), **bad)


def test_the_learner_env_times_the_mask_and_the_summary_sums_every_env(trained: Path) -> None:
    """MaskablePPO asks for the mask at every step: it is env time, counted with reset and step;
    the summary's env share is the sum over every env the learner stepped (the run's layout),
    beside the largest single env's, and the validation envs' share beside it."""
    import numpy as np

    from backoffice.training.rl.envs import training_env

    env = training_env("approvals", split="train", reward_mode="shaped")
    env.reset(seed=1)
    before = env.env_seconds
    mask = env.action_masks()
    assert env.env_seconds > before
    assert np.array_equal(mask, env.env.action_masks())  # the same mask, only timed
    env.close()
    summary = loads((trained / "summary.json").read_bytes())
    assert summary["env_share_of_wall"] >= summary["env_share_per_worker"] > 0
    assert summary["config"]["n_envs"] == 2 and summary["env_share_of_wall"] <= 2 * summary["env_share_per_worker"] + 1e-4
    # the validation's episodes run inside learn's wall time: their env time is reported too
    assert 0 < summary["validation_env_share_of_wall"] < 1 and summary["validation"]


def test_train_options_are_the_config_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``backoffice train`` has one option per ``TrainConfig`` field (help from the field); a
    value given reaches the config, one not given is the catalog's tuned value, else the field's
    default; the option checks the field's bounds and the config its choices."""
    import importlib
    from dataclasses import fields

    from backoffice.training.catalog import spec_class

    seen: dict[str, TrainConfig] = {}

    def capture(config: TrainConfig, on_progress: object = None) -> dict[str, object]:
        seen["config"] = config
        return {"timesteps": config.timesteps, "episodes": 0, "train_seconds": 0.0, "best_validation_pass_rate": 0.0,
                "validation_ids": config.validation_size, "env_step_us": 0.0, "model": str(config.out / "model.zip")}

    monkeypatch.setattr(importlib.import_module("backoffice.training.rl.train"), "train", capture)
    shown = " ".join(CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "300"}).output.split())
    for f in fields(TrainConfig):
        if f.metadata["cli"]:
            assert f"--{f.metadata['flag'] or f.name.replace('_', '-')} " in shown, f.name
            assert f.metadata["help"].split(":")[0] in shown, f.name
    result = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--out", str(tmp_path / "m"), "--batch-size", "64",
                                      "--net-arch", "32", "--net-arch", "16", "--no-heldout", "--learning-rate", "1e-3",
                                      "--finish-tool", "submit", "--seed", "7"])
    assert result.exit_code == 0, result.output
    config = seen["config"]
    assert (config.batch_size, tuple(config.net_arch), config.heldout_eval, config.learning_rate, config.finish_tools,
            config.seed) == (64, (32, 16), False, 1e-3, ("submit",), 7)
    tuned = spec_class(DOMAIN, config.spec).hyperparams
    assert config.n_steps == tuned["n_steps"] != 64 and config.gamma == 0.99  # the catalog's, else TrainConfig's
    refused = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--out", str(tmp_path / "m"), "--n-envs", "0"])
    assert refused.exit_code == 2 and "--n-envs" in refused.output
    refused = CliRunner().invoke(app, ["train", "--env", DOMAIN, "--out", str(tmp_path / "m"), "--task-sampling", "failures"])
    assert refused.exit_code == 2 and "task_sampling" in " ".join(refused.output.split())


def test_a_model_finds_a_builtin_tier_by_its_recorded_name() -> None:
    """A tier's module may move (approvals' catalog did): a model's ``catalog.json`` names a
    built-in tier by ``tier``; a user's tier is found by its recorded ``spec``."""
    from backoffice.training.catalog import tier_specs
    from backoffice.training.rl.sb3_policy import recorded_spec

    moved = {"tier": "facts", "spec": "backoffice.training.catalog.approvals_tiers:ApprovalsFactsCatalog"}
    assert recorded_spec("approvals", moved) == tier_specs("approvals")["facts"]
    assert recorded_spec("approvals", {"tier": "no_verdict", "spec": "my_tiers:NO_VERDICT"}) == "my_tiers:NO_VERDICT"
    assert recorded_spec("approvals", {"tier": "no_verdict"}) is None
