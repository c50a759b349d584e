"""Catalog envs (``backoffice/<Title>-Catalog-v0``): Gymnasium and SB3 correctness, fixed K,
masks, errors as data, no answer-key leak, and the SB3 pipeline (SubprocVecEnv + MaskablePPO)."""

from __future__ import annotations

import re
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import backoffice.envs  # noqa: F401  (registers the ids)
from backoffice.envs import DOMAINS, make_native
from backoffice.training.catalog import catalog_agent, catalog_env_id, make_catalog_env, spec_class
from backoffice.training.catalog.policy import feature_policy_of
from conftest import domain_params

pytestmark = pytest.mark.parametrize("domain", domain_params())


def feature_policy(domain: str, env: Any) -> Any:
    """The domain's hand-written policy over (features, mask) only."""
    return feature_policy_of(spec_class(domain))(env.agent)


def masked_random_actions(env: Any, rng: np.random.Generator, first: int | None = None) -> list[int]:
    """One episode of uniformly random valid actions; returns the actions taken."""
    actions = []
    while True:
        valid = np.flatnonzero(env.action_masks())
        action = int(rng.choice(valid))
        actions.append(action)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return actions


def test_registered_and_check_env(domain: str) -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(catalog_env_id(domain))
    assert env.spec.id == f"backoffice/{DOMAINS[domain]}-Catalog-v0"
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.dtype == np.float32
    raw = make_catalog_env(domain)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(raw, skip_render_check=True)
    sb3_check_env(make_catalog_env(domain), warn=False)
    # MaskablePPO reaches the mask through gym.make's wrappers without ActionMasker
    env.reset(seed=0)
    assert env.get_wrapper_attr("action_masks")().shape == (env.action_space.n,)


def test_k_and_features_fixed_across_tasks_and_splits(domain: str) -> None:
    shapes = set()
    for split in ("train", "heldout", "generated"):
        env = make_catalog_env(domain, split=split)
        for seed in range(8):
            obs, info = env.reset(seed=seed)
            shapes.add((env.action_space.n, obs.shape, info["action_mask"].shape))
    agent = catalog_agent(domain)
    assert shapes == {(agent.n_actions, (agent.n_features,), (agent.n_actions,))}
    described = agent.describe()
    assert all(f["doc"] for f in described["features"]) and all(a["doc"] for a in described["actions"])


def test_masks_and_observations_along_random_episodes(domain: str) -> None:
    env = make_catalog_env(domain, split="train")
    rng = np.random.default_rng(0)
    finish = env.agent.finish
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        steps = 0
        while True:
            mask = info["action_mask"]
            assert mask.dtype == np.int8 and mask[finish] == 1
            assert np.array_equal(mask.astype(bool), env.action_masks())
            assert env.observation_space.contains(obs)
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            # one catalog action = one native tool call in the native trace
            assert len(env.unwrapped.trace) == steps
            if terminated or truncated:
                assert "grade" in info and info["action_mask"][finish] == 1
                break


def test_bad_actions_are_errors_not_exceptions(domain: str) -> None:
    env = make_catalog_env(domain)
    env.reset(seed=3)
    before = env.unwrapped.state.content_hash()
    for bad in (env.action_space.n, -1, 10**9, 2.5, "submit", "0", True, None):
        obs, reward, terminated, truncated, info = env.step(bad)
        assert info["result_status"] == "error" and info["error_code"] == "invalid_action"
        assert env.observation_space.contains(obs) and not terminated
        if truncated:
            break
    assert env.unwrapped.state.content_hash() == before


def test_feature_policy_actions_are_valid_and_trace_truthful(domain: str) -> None:
    """Masked-out actions are never needed: the feature policy picks only valid actions, and
    each action's native call is what the native trace holds."""
    env = make_catalog_env(domain, split="heldout")
    policy = feature_policy(domain, env)
    for tid in env.unwrapped.release.split_ids["heldout"][:20]:
        obs, info = env.reset(options={"task_id": tid})
        while True:
            action = policy(obs, env.action_masks())
            assert env.action_masks()[action]
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break


#: answer-key fields that give a key its structure (what to look at), kept as they are
STRUCTURAL = frozenset({"targets", "task_id", "defect_tags", "kind", "id", "failure_code", "table", "fields", "order_by", "row_id", "tool"})


def _perturb(value: Any) -> Any:
    """A key with the same structure but other expected values: flip booleans, shift numbers,
    rename enum words (ids, tables, fields and check kinds stay)."""
    if isinstance(value, dict):
        return {k: v if k in STRUCTURAL else _perturb(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_perturb(v) for v in value]
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if isinstance(value, str) and re.fullmatch(r"[a-z_]+", value):
        return value + "_other"
    return value


class _OtherKeys:
    """A release whose answer keys are replaced; everything public is the same object."""

    def __init__(self, release: Any):
        self._release = release

    def __getattr__(self, name: str) -> Any:
        return getattr(self._release, name)

    def answer_key(self, task_id: str) -> dict[str, Any]:
        return _perturb(self._release.answer_key(task_id))


def assert_keys_unseen(env_a: Any, env_b: Any, policy: Any, task_ids: Any) -> None:
    """Play ``task_ids`` on ``env_a`` and on ``env_b`` (the same tasks under perturbed answer
    keys) with the same actions (even episodes follow ``policy``, odd ones explore) and require
    identical observations, masks and native traces, while some grades differ."""
    rng = np.random.default_rng(1)
    grades_differ = 0
    for i, tid in enumerate(task_ids):
        obs_a, info_a = env_a.reset(seed=i, options={"task_id": tid})
        obs_b, info_b = env_b.reset(seed=i, options={"task_id": tid})
        while True:
            assert np.array_equal(obs_a, obs_b)
            assert np.array_equal(info_a["action_mask"], info_b["action_mask"])
            mask = env_a.action_masks()
            action = policy(obs_a, mask) if i % 2 == 0 else int(rng.choice(np.flatnonzero(mask)))
            obs_a, _, term_a, trunc_a, info_a = env_a.step(action)
            obs_b, _, term_b, trunc_b, info_b = env_b.step(action)
            assert (term_a, trunc_a) == (term_b, trunc_b)
            if term_a or trunc_a:
                assert np.array_equal(obs_a, obs_b)
                break
        strip = lambda trace: [{k: v for k, v in r.items() if k != "grade"} for r in trace]  # noqa: E731
        assert strip(env_a.unwrapped.trace) == strip(env_b.unwrapped.trace)
        grades_differ += info_a["grade"] != info_b["grade"]
    assert grades_differ > 0, "the perturbed keys never changed a grade: the test would prove nothing"


def test_observations_carry_no_answer_key(domain: str) -> None:
    """Two tasks that differ only in their answer key give identical observations, masks and
    native traces for the same action sequence (while the key changes some grades)."""
    env_a = make_catalog_env(domain, split="heldout")
    env_b = make_catalog_env(domain, split="heldout")
    env_b.unwrapped.release = _OtherKeys(env_a.unwrapped.release)
    assert_keys_unseen(env_a, env_b, feature_policy(domain, env_a), env_a.unwrapped.release.split_ids["heldout"][:30])


def test_catalog_agent_matches_the_wrapper(domain: str) -> None:
    """The policy-side agent (used by ``sb3:`` policies on the native env) computes the same
    features and masks as the env wrapper for the same history."""
    env = make_catalog_env(domain, split="train")
    native = make_native(domain, split="train")
    agent = catalog_agent(domain)
    rng = np.random.default_rng(2)
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        nobs, ninfo = native.reset(seed=seed, options={"task_id": info["task_id"]})
        agent.reset(nobs, ninfo)
        while True:
            assert np.array_equal(obs, agent.observation()) and np.array_equal(env.action_masks(), agent.mask())
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            obs, _, terminated, truncated, _ = env.step(action)
            nobs, _, nterm, ntrunc, _ = native.step(agent.native_action(action))
            agent.update(nobs)
            if terminated or truncated:
                assert (nterm, ntrunc) == (terminated, truncated)
                break


def test_subproc_vec_env_maskable_ppo_runs(domain: str) -> None:
    """The pipeline works: 2 SubprocVecEnv workers, MaskablePPO, a few hundred steps."""
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import SubprocVecEnv

    torch.set_num_threads(1)
    # fork, as the trainer does: forkserver workers would import everything again (seconds each)
    venv = SubprocVecEnv([lambda: make_catalog_env(domain, split="generated", reward_mode="shaped")] * 2, start_method="fork")
    try:
        venv.seed(0)
        model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
        model.learn(256)
        assert model.num_timesteps >= 256
        obs = venv.reset()
        masks = get_action_masks(venv)
        assert masks.shape == (2, venv.action_space.n)
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert all(masks[i, a] for i, a in enumerate(actions))
    finally:
        venv.close()


def test_catalog_policies_run_in_the_common_evaluation_path(domain: str) -> None:
    """``catalog-features`` passes on the native env; the random catalog baselines are seeded
    and reproducible."""
    from backoffice.training.eval.evaluate import Runner, SerialExecutor, evaluate, plan_jobs

    jobs = plan_jobs([domain], ["catalog-features", "catalog-random", "catalog-mask-only"], "heldout", limit=6)
    first = {(r["agent"], r["task_id"]): r for r in evaluate(jobs, executor=SerialExecutor(), runner=Runner())}
    again = {(r["agent"], r["task_id"]): r for r in evaluate(jobs, executor=SerialExecutor(), runner=Runner())}
    assert first == again
    assert all(r["pass"] for (agent, _), r in first.items() if agent == "catalog-features")


def test_a_catalog_env_builds_without_the_trainer(domain: str) -> None:
    """Building and stepping every tier of a catalog env imports nothing of the trainer
    (``backoffice.training.rl``) nor torch or SB3: a catalog declares its hyperparameters as
    values. In a fresh interpreter, so what other tests imported does not count."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from backoffice.training.catalog import make_catalog_env, tier_specs\n"
        f"for tier in tier_specs({domain!r}):\n"
        f"    env = make_catalog_env({domain!r}, split='train', tier=tier)\n"
        "    env.reset(seed=0)\n"
        "    env.step(int(env.action_masks().argmax()))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('backoffice.training.rl', 'torch', 'stable_baselines3', 'sb3_contrib'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
