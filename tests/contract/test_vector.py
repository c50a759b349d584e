"""Gymnasium vector envs (sync and async, shared memory on) give, env by env, exactly the
observations, rewards, flags and infos of the single env, over mixed endings: submit, a
terminal tool other than submit (a referral), truncation at the step limit, and Gymnasium's
own ``TimeLimit``. Also the stable-baselines3 entry points (``make_vec_env``, ``Monitor``).

The reference is the same env run alone with the same actions and Gymnasium's next-step
autoreset (an ended env is reset, without a seed, by the next call). Infos are compared after
undoing Gymnasium's info merging (per key arrays and ``_key`` masks), so a value that merging
coerces (``None`` into a float array, a dict after a ``None``) fails the comparison.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import backoffice.envs  # noqa: F401  (registers the ids)
from backoffice.envs import DOMAINS as TITLES, make_native
from backoffice.envs.core.build import build_release
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.release import Release
from backoffice.training.catalog import make_catalog_env
from backoffice.training.policies import get_policy
from conftest import DOMAINS, domain_params
from toy_domain import DOMAIN as TOY, ToyEnv


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return str(root)


def plain(value: Any) -> Any:
    """Numpy scalars and arrays as Python data, so infos compare as canonical JSON."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def unbatch(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info out of Gymnasium's merged vector info."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_") or not infos[f"_{key}"][i]:
            continue
        out[key] = unbatch(value, i) if isinstance(value, dict) else plain(value[i])
    return out


def rng_of(env: Any) -> np.random.Generator:
    """The test's own generator for ``env`` (drawing from the env's would change its resets)."""
    if not hasattr(env, "_test_rng"):
        env._test_rng = np.random.default_rng(5)
    return env._test_rng


def reference(make_env: Any, choose: Any, seed: int, steps: int) -> list[tuple]:
    """``steps`` vector steps of one env alone: (action, obs, reward, terminated, truncated, info)."""
    env = make_env()
    obs, info = env.reset(seed=seed)
    rows: list[tuple] = [(None, obs, 0.0, False, False, info)]
    state = choose(env, obs, info, None)
    done = False
    for _ in range(steps):
        if done:  # next-step autoreset: the action is ignored
            action = rows[-1][0]
            obs, info = env.reset()
            reward, terminated, truncated = 0.0, False, False
            state = choose(env, obs, info, None)
        else:
            action, state = choose(env, obs, None, state)
            obs, reward, terminated, truncated, info = env.step(action)
        rows.append((action, obs, reward, terminated, truncated, info))
        done = terminated or truncated
    env.close()
    return rows


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two infos differ first (for the failure message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}/{key}: only in {'the vector' if key in a else 'the single env'}"
            found = first_difference(a[key], b[key], f"{path}/{key}")
            if found:
                return found
        return None
    return None if dumps(a) == dumps(b) else f"{path}: {dumps(a)[:200]!r} != {dumps(b)[:200]!r}"


def ending(info: dict[str, Any], terminated: bool, truncated: bool, last_tool: str | None) -> str | None:
    if truncated:
        return "truncated"
    if terminated:
        return "submit" if last_tool == "submit" else "terminal-tool"
    return None


def compare(make_env: Any, choose: Any, n: int, steps: int, mode: str, tool_of: Any) -> Counter:
    """Run ``n`` envs alone and in a ``mode`` vector env; assert equality step by step;
    return how the episodes ended."""
    seeds = [11 + 7 * i for i in range(n)]
    refs = [reference(make_env, choose, s, steps) for s in seeds]
    vec_cls = gym.vector.AsyncVectorEnv if mode == "async" else gym.vector.SyncVectorEnv
    vec = vec_cls([make_env] * n)
    endings: Counter = Counter()
    try:
        obs, infos = vec.reset(seed=seeds)
        for t in range(steps + 1):
            if t:
                obs, rewards, terms, truncs, infos = vec.step([refs[i][t][0] for i in range(n)])
            for i in range(n):
                action, r_obs, r_rew, r_term, r_trunc, r_info = refs[i][t]
                assert np.array_equal(np.asarray(obs[i]), np.asarray(r_obs)) if not isinstance(r_obs, str) else obs[i] == r_obs, (mode, i, t)
                got = unbatch(infos, i)
                assert dumps(got) == dumps(plain(r_info)), (mode, i, t, first_difference(got, plain(r_info)))
                if t:
                    assert (float(rewards[i]), bool(terms[i]), bool(truncs[i])) == (r_rew, r_term, r_trunc), (mode, i, t)
                    kind = ending(r_info, r_term, r_trunc, tool_of(action))
                    if kind:
                        endings[kind] += 1
    finally:
        vec.close()
    return endings


# -- native envs: text observations through shared memory ---------------------------------------
def native_chooser(domain: str) -> Any:
    """Episode k of an env plays, in turn, the oracle, the random baseline and the oracle again
    under a short step limit (so some episodes truncate)."""

    def choose(env: Any, obs: str, info: dict | None, state: Any) -> Any:
        if info is not None:  # a new episode
            kinds = ("oracle", "random", "oracle")
            count = getattr(env, "_episodes", 0)
            env._episodes = count + 1
            policy = get_policy(domain, kinds[count % 3], seed=count)
            policy.reset(obs, info)
            return policy
        return state.act(obs), state

    return choose


def native_tool(action: Any) -> str | None:
    return action.get("tool") if isinstance(action, dict) else None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_toy_vector_env_matches_single_envs(toy_root: str, mode: str) -> None:
    def make_env() -> ToyEnv:
        return ToyEnv(release=Release("toy", Path(toy_root)), split="heldout", max_steps=3)

    def choose(env: Any, obs: str, info: dict | None, state: Any) -> Any:
        if info is not None:
            return 0
        calls = [{"tool": "get_counter", "args": {"counter_id": "C-1"}}, {"tool": "bump", "args": {"counter_id": "C-1"}},
                 {"tool": "submit", "args": {}}]
        # alternate: submit on the 2nd call, or keep reading until the limit truncates
        action = calls[state % 3] if rng_of(env).integers(2) else calls[0]
        return action, state + 1

    endings = compare(make_env, choose, 3, 24, mode, native_tool)
    assert endings["submit"] and endings["truncated"], endings


@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_native_vector_env_observations_are_the_single_envs(mode: str) -> None:
    domain = DOMAINS[0]

    def make_env() -> Any:
        return make_native(domain, split="heldout", max_steps=4)

    endings = compare(make_env, native_chooser(domain), 2, 30, mode, native_tool)
    assert endings["truncated"] and sum(endings.values()) >= 4, endings


def test_async_make_vec_returns_real_observations() -> None:
    if not DOMAINS:
        pytest.skip("needs an installed domain")
    env_id = f"backoffice/{TITLES[DOMAINS[0]]}-v0"
    vec = gym.make_vec(env_id, 2, vectorization_mode="async")
    single = gym.make(env_id)
    try:
        obs, _ = vec.reset(seed=[3, 4])
        assert obs[0] == single.reset(seed=3)[0] and obs[1] == single.reset(seed=4)[0]
        obs, *_ = vec.step([{"tool": "submit", "args": {}}] * 2)
        assert obs[0].startswith('{"result"') and vec.single_observation_space.contains(obs[0])
    finally:
        vec.close()


# -- catalog envs: random valid actions give every kind of ending --------------------------------
def catalog_chooser(env: Any, obs: Any, info: dict | None, state: Any) -> Any:
    """Each episode is uniform over the valid actions, or over those other than submit (which
    reaches the step limit or a terminal tool)."""
    rng = rng_of(env)
    if info is not None:
        return bool(rng.integers(2))
    mask = env.action_masks()
    if state:
        mask[env.agent.finish] = not mask.sum() > 1
    return int(rng.choice(np.flatnonzero(mask))), state


@pytest.mark.parametrize("domain", domain_params())
def test_catalog_vector_env_matches_single_envs_over_mixed_endings(domain: str) -> None:
    def make_env() -> Any:
        return make_catalog_env(domain, split="train", max_steps=4)

    agent_actions = make_catalog_env(domain).agent.spec.actions

    def tool_of(action: Any) -> str | None:
        return None if action is None else agent_actions[int(action)].tool

    terminal = set(make_native(domain).domain.terminal_tools) - {"submit"}
    endings = Counter()
    for mode in ("sync", "async"):
        endings += compare(make_env, catalog_chooser, 3, 40, mode, tool_of)
    assert endings["submit"] and endings["truncated"], endings
    if terminal and any(a.tool in terminal for a in agent_actions):
        assert endings["terminal-tool"], endings


# -- stable-baselines3 entry points --------------------------------------------------------------
@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")
def test_sb3_make_vec_env_builds_catalog_envs() -> None:
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(f"backoffice/{TITLES[DOMAINS[0]]}-Catalog-v0", n_envs=2)  # passes render_mode="rgb_array"
    try:
        assert vec.reset().shape[0] == 2
        masks = vec.env_method("action_masks")
        assert len(masks) == 2 and all(m.dtype == bool for m in masks)
    finally:
        vec.close()
    with pytest.raises(ValueError, match="render_mode"):
        make_native(DOMAINS[0], render_mode="rgb_array")


@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")
@pytest.mark.parametrize("kind", ["Catalog-v0", "v0"])
def test_time_limit_truncation_carries_the_grade_for_monitor(kind: str) -> None:
    from stable_baselines3.common.monitor import Monitor

    env = Monitor(gym.make(f"backoffice/{TITLES[DOMAINS[0]]}-{kind}", max_episode_steps=3), info_keywords=("is_success",))
    env.reset(seed=0)
    read = 0 if kind == "Catalog-v0" else {"tool": "no_such_tool", "args": {}}
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step(read)
    assert truncated and not terminated and info["is_success"] is False
    assert info["grade"]["process_metrics"]["steps"] == 3 and info["episode"]["is_success"] is False
    assert reward == info["score"]  # sparse: the terminal step pays the pure score


def test_action_masks_before_reset() -> None:
    if not DOMAINS:
        pytest.skip("needs an installed domain")
    env = make_catalog_env(DOMAINS[0])
    mask = env.action_masks()
    assert mask.sum() == 1 and mask[env.agent.finish]


@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")
def test_sb3_split_helper_runs_each_task_once() -> None:
    from backoffice.envs.core.release import load_release
    from backoffice.training.eval.evaluate import evaluate, plan_jobs
    from backoffice.training.rl.sb3_policy import evaluate_split

    domain = DOMAINS[0]
    ids = load_release(domain).split_ids["heldout"][:15]

    finish = make_catalog_env(domain).agent.finish

    class SubmitAtOnce:  # SB3's predict signature; masked like MaskablePPO
        def __init__(self) -> None:
            self.masks: list[np.ndarray] = []

        def predict(self, obs: np.ndarray, deterministic: bool = True, action_masks: Any = None) -> tuple[np.ndarray, None]:
            self.masks.append(action_masks)
            return np.array(finish), None

    model = SubmitAtOnce()
    out = evaluate_split(model, domain, task_ids=ids, masked=True)
    assert [r["task_id"] for r in out["records"]] == list(ids) and out["episodes"] == 15
    assert all(m is not None and m.dtype == bool for m in model.masks)
    noop = evaluate(plan_jobs([domain], ["noop"], "heldout", limit=15))
    assert [r["pass"] for r in out["records"]] == [r["pass"] for r in noop]
