"""A newcomer's first hour (issue 35): each test makes a newcomer's mistake and asserts what
they now get: a one-line message that names the fix and a non-zero exit, or the behaviour the
docs describe."""

from __future__ import annotations

import gymnasium as gym
import pytest

import backoffice.envs  # noqa: F401  (registers the ids)
from conftest import DOMAINS


@pytest.mark.parametrize("env_id", ["backoffice/Approvals-v0", "backoffice/Approvals-Catalog-v0"])
def test_a_failed_first_reset_leaves_a_gym_make_env_usable(env_id: str) -> None:
    if "approvals" not in DOMAINS:
        pytest.skip("needs the approvals release")
    env = gym.make(env_id)
    with pytest.raises(KeyError, match="unknown task id"):
        env.reset(options={"task_id": "APR-H9999"})
    env.reset(seed=3)  # Gymnasium's passive checker ran its one reset check on the failed call
    catalog = "Catalog" in env_id
    for _ in range(100):
        action = int(env.get_wrapper_attr("action_masks")().nonzero()[0][0]) if catalog else {"tool": "submit", "args": {}}
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert terminated or truncated
    env.close()
