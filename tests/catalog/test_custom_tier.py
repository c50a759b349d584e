"""A user's own tier, defined outside the package (docs/examples/my_tiers.py, copied into a
temporary module): it picks features by name, adds a feature function, keeps the actions, and
works with ``gym.make(..., tier=...)``, ``backoffice train`` and ``backoffice eval``, under a
``catalog_hash`` of its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import backoffice.envs  # noqa: F401  (registers the ids)
from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import catalog_agent
from backoffice.training.cli import app
from backoffice.training.rl.sb3_policy import catalog_signature
from conftest import REPO

pytestmark = pytest.mark.xdist_group("approvals")

EXAMPLE = REPO / "docs" / "examples" / "my_tiers.py"
SPEC = "my_tiers:NO_VERDICT"


@pytest.fixture
def my_tiers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    shutil.copy(EXAMPLE, tmp_path / "my_tiers.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    return SPEC


def test_the_example_is_short() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 30


def test_a_tier_of_ones_own_is_a_catalog_env(my_tiers: str) -> None:
    env = gym.make("backoffice/Approvals-Catalog-v0", split="train", tier=my_tiers)
    agent = env.get_wrapper_attr("agent")
    names = [f.name for f in agent.feature_defs]
    assert "band_is_top" in names and not any(n.startswith("procedure_") for n in names)
    assert "delegations_read" in names and "sod_clear" in names  # picked by name from the registry
    mine, base = catalog_signature("approvals", my_tiers), catalog_signature("approvals", None)
    assert mine["tier"] == "no_verdict" and mine["actions"] == base["actions"]
    assert mine["catalog_hash"] != base["catalog_hash"]
    # the added feature reads the desk: 1 once the cited band is the top one (no upper bound)
    actions = [a.name for a in agent.spec.actions]
    tops = set()
    for seed in range(12):
        obs, _ = env.reset(seed=seed)
        for name in ("get_request", "get_rules"):
            obs, *_ = env.step(actions.index(name))
        desk = agent.spec.desk
        band = desk.band()
        assert band is not None
        assert obs[names.index("band_is_top")] == float(band["max_amount"] is None)
        tops.add(bool(obs[names.index("band_is_top")]))
    assert tops == {True, False}
    assert catalog_agent("approvals", tier=my_tiers).n_features == len(names)
    assert np.isfinite(obs).all()


def test_train_and_eval_take_the_tier(my_tiers: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--env", "approvals", "--tier", my_tiers, "--timesteps", "600", "--n-envs", "2",
                                 "--eval-freq", "256", "--validation-size", "8", "--no-heldout", "--out", str(out)])
    assert result.exit_code == 0, result.output
    meta = loads((out / "catalog.json").read_bytes())
    assert meta["tier"] == "no_verdict" and meta["spec"] == my_tiers
    assert meta["catalog_hash"] == catalog_signature("approvals", my_tiers)["catalog_hash"]
    records = tmp_path / "heldout.jsonl"
    result = runner.invoke(app, ["eval", "--env", "approvals", "--policy", f"sb3:{out / 'model.zip'}", "--split", "heldout",
                                 "--limit", "3", "--out", str(records)])
    assert result.exit_code == 0, result.output
    assert len(records.read_text().splitlines()) == 3
