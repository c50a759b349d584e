"""The slot-factored policy (``policy="slots"``): the layout read from a catalog's names, the
weights shared between slots (swapping two entities swaps their actions' logits and nothing
else), the finishing prior, and a trained model that saves, loads and plays through ``sb3:``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from backoffice.envs.core.canonical import loads
from backoffice.training.catalog import catalog_agent, spec_class, tier_specs
from backoffice.training.cli.main import app
from backoffice.training.rl.config import TrainConfig
from backoffice.training.rl.slot_policy import slot_layout
from backoffice.training.rl.train import build_model
from conftest import DOMAINS

#: every tier that names slot actions (what ``policy="slots"`` shares between the slots)
SLOTTED = [(d, t) for d in DOMAINS for t, s in tier_specs(d).items() if spec_class(d, s).slot_actions]


def _names(domain: str, tier: str) -> tuple[list[str], list[str], type]:
    agent = catalog_agent(domain, tier=tier)
    cls = type(agent.spec)
    return [f.name for f in agent.feature_defs], [a.name for a in cls.actions], cls


@pytest.mark.parametrize(("domain", "tier"), SLOTTED)
def test_layout_covers_every_slot_action_once(domain: str, tier: str) -> None:
    features, actions, cls = _names(domain, tier)
    layout = slot_layout(features, actions, cls.slot_actions, cls.slot_sets)
    picked = [a for fams in layout["families"].values() for fam in fams for a in fam if a >= 0]
    assert len(picked) == len(set(picked))
    expected = {i for i, a in enumerate(actions) if a.rsplit("[", 1)[0] in cls.slot_actions}
    assert set(picked) == expected
    for g, slots in layout["groups"].items():
        # every slot of a group reads the same feature names, in the same order
        suffixes = [[features[j].split(".", 1)[1] for j in slot] for slot in slots]
        assert all(s == suffixes[0] for s in suffixes), g
        assert all(features[j].startswith(f"{g}[{i}].") for i, slot in enumerate(slots) for j in slot)


def test_layout_refuses_what_it_cannot_share() -> None:
    features = ["a[0].x", "a[0].y", "a[1].x", "g"]
    with pytest.raises(ValueError, match="same features"):
        slot_layout(features, ["pick[0]", "pick[1]"], {"pick": "a"})
    with pytest.raises(ValueError, match="no features"):
        slot_layout(["g"], ["pick[0]"], {"pick": "b"})
    with pytest.raises(ValueError, match="no actions"):
        slot_layout(["a[0].x"], ["other"], {"pick": "a"})
    with pytest.raises(ValueError, match="more slots"):
        slot_layout(["a[0].x"], ["pick[0]", "pick[1]"], {"pick": "a"})


def _model(domain: str, tier: str, **overrides: object):  # noqa: ANN202 - an SB3 model
    from stable_baselines3.common.vec_env import DummyVecEnv

    from backoffice.training.catalog import make_catalog_env
    from backoffice.training.rl.train import ending_actions

    config = TrainConfig.for_domain(domain, Path("unused"), tier=tier, policy="slots", **overrides)
    env = make_catalog_env(domain, split="train", spec=config.spec)
    return build_model(config, DummyVecEnv([lambda: env]), ending_actions(env, config.finish_tools)), env


@pytest.mark.parametrize(("domain", "tier"), SLOTTED)
def test_swapping_two_entities_swaps_their_logits(domain: str, tier: str) -> None:
    """The same weights score every slot: exchanging the features of slots 0 and 1 of a group
    exchanges the logits of every ``<family>[0]`` / ``<family>[1]`` pair, leaves every other logit
    and the value as they were."""
    model, env = _model(domain, tier)
    features, actions, cls = _names(domain, tier)
    layout = slot_layout(features, actions, cls.slot_actions, cls.slot_sets)
    policy = model.policy
    gen = torch.Generator().manual_seed(0)
    for module in policy.modules():  # the untrained head is ~0: give it weight to compare
        if isinstance(module, torch.nn.Linear):
            module.weight.data = torch.randn(module.weight.shape, generator=gen)
    obs = torch.rand(1, len(features), generator=gen)
    for g, slots in layout["groups"].items():
        if not layout["families"][g]:
            continue  # a group no action picks from enters the trunk in order (positions may mean something)
        swapped = obs.clone()
        swapped[0, slots[0]], swapped[0, slots[1]] = obs[0, slots[1]], obs[0, slots[0]]
        with torch.no_grad():
            before = policy.get_distribution(obs).distribution.logits[0]
            after = policy.get_distribution(swapped).distribution.logits[0]
            values = policy.predict_values(obs), policy.predict_values(swapped)
        perm = list(range(len(actions)))
        for fam in layout["families"][g]:
            if fam[0] >= 0 and fam[1] >= 0:
                perm[fam[0]], perm[fam[1]] = fam[1], fam[0]
        torch.testing.assert_close(after, before[perm])
        torch.testing.assert_close(values[0], values[1])
        assert not torch.allclose(after, before), g  # the swap did change which slot scores what
    env.close()


def test_finish_bias_is_the_initial_prior_of_the_ending_actions() -> None:
    model, env = _model("approvals", "facts", finish_bias=-3.0)
    submit = spec_class("approvals", tier_specs("approvals")["facts"]).finish_action()
    with torch.no_grad():
        logits = model.policy.get_distribution(torch.zeros(1, env.observation_space.shape[0])).distribution.logits[0]
    others = torch.cat([logits[:submit], logits[submit + 1:]])
    assert float(logits[submit]) < float(others.max()) - 2.5
    env.close()


def test_finish_tools_put_the_finishing_prior_on_their_actions_too() -> None:
    """``finish_tools`` adds the actions of those native tools (remittance's ``post_payment``) to
    the ending actions that start with the finishing prior; the others start level."""
    from backoffice.training.rl.train import ending_actions

    bare, env = _model("remittance", "facts", finish_bias=-4.0, finish_tools=())
    tooled, _ = _model("remittance", "facts", finish_bias=-4.0, finish_tools=("post_payment",))
    names = [a.name for a in env.agent.spec.actions]
    posts = [i for i, n in enumerate(names) if n.startswith("post_")]
    assert len(posts) == 3 and ending_actions(env, ("post_payment",)) == sorted([*posts, names.index("submit")])
    zero = torch.zeros(1, env.observation_space.shape[0])
    with torch.no_grad():
        before, after = (m.policy.get_distribution(zero).distribution.logits[0] for m in (bare, tooled))
    rest = [i for i in range(len(names)) if i not in posts and names[i] != "submit"]
    assert float(after[posts].max()) < float(after[rest].min()) - 3.5
    assert float(before[posts].min()) > float(before[rest].max()) - 0.5
    env.close()


def test_a_catalog_without_slots_is_refused() -> None:
    with pytest.raises(ValueError, match="slot_actions"):
        _model("schedules", "facts")
    with pytest.raises(ValueError, match="MaskablePPO"):
        TrainConfig(domain="approvals", out=Path("x"), policy="slots", algo="ppo")
    with pytest.raises(ValueError, match="policy"):
        TrainConfig(domain="approvals", out=Path("x"), policy="transformer")


@pytest.mark.xdist_group("approvals")
def test_a_slots_model_trains_saves_and_plays_through_sb3(tmp_path: Path) -> None:
    out = tmp_path / "approvals"
    args = ["train", "--env", "approvals", "--tier", "facts", "--policy", "slots", "--timesteps", "600", "--n-envs", "2",
            "--eval-freq", "256", "--validation-size", "12", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = loads((out / "summary.json").read_bytes())
    assert summary["config"]["policy"] == "slots"
    from backoffice.training.policies import get_policy

    policy = get_policy("approvals", f"sb3:{out / 'model.zip'}")
    # the loaded model plays the recorded heldout episodes again, to the grade
    from backoffice.envs import make_native
    from backoffice.training.eval.rollout import run_episode

    records = [loads(line) for line in (out / "heldout.jsonl").read_bytes().splitlines()][:5]
    env = make_native("approvals", split="heldout")
    for record in records:
        assert run_episode(env, policy, task_id=record["task_id"]).grade["score"] == record["score"]
    assert type(policy.model.policy).__name__ == "SlotPolicy"
    assert np.isfinite(summary["heldout"]["pass_rate"])
    # seeded training is reproducible to the byte with this network too
    import zipfile

    again = tmp_path / "again"
    result = CliRunner().invoke(app, [*args[:-1], str(again), "--no-heldout"])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out / "model.zip") as a, zipfile.ZipFile(again / "model.zip") as b:
        assert a.read("policy.pth") == b.read("policy.pth")
