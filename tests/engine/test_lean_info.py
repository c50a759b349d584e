"""``lean_info=True`` (what the learner's envs use): a finished episode's info and trace record
leave out the grade, diff, judge and end-state hash, and nothing else changes: the same policy
gets the same observations, rewards, ends, score, pass and shaped reward step for step."""

from __future__ import annotations

import pytest

from backoffice.envs import make_native
from backoffice.training.policies import get_policy, policy_names
from conftest import domain_params

#: what ``lean_info`` leaves out of a finished episode's info
LEFT_OUT = {"grade", "diff", "judge", "end_state_hash"}


@pytest.mark.parametrize("domain", domain_params())
@pytest.mark.parametrize("reward_mode", ["shaped", "progress"])
def test_lean_info_changes_nothing_but_the_info_it_leaves_out(domain: str, reward_mode: str) -> None:
    full = make_native(domain, split="train", reward_mode=reward_mode)
    lean = make_native(domain, split="train", reward_mode=reward_mode, lean_info=True)
    names = [n for n in policy_names(domain) if n != "noop"]
    finished = 0
    for name in names:
        for k, task_id in enumerate(full.release.split_ids["train"][:12]):
            policies = [get_policy(domain, name, seed=k) for _ in range(2)]
            (obs_a, info_a), (obs_b, info_b) = (env.reset(**env.reset_args(task_id)) for env in (full, lean))
            assert obs_a == obs_b
            for policy, obs, info in zip(policies, (obs_a, obs_b), (info_a, info_b), strict=True):
                policy.reset(obs, info)
            for _ in range(200):
                a = full.step(policies[0].act(obs_a))
                b = lean.step(policies[1].act(obs_b))
                obs_a, obs_b = a[0], b[0]
                assert a[:4] == b[:4], (name, task_id)
                if a[2] or a[3]:
                    assert LEFT_OUT & b[4].keys() == set()
                    assert {k: v for k, v in a[4].items() if k not in LEFT_OUT} == b[4], (name, task_id)
                    assert "grade" in full.trace[-1] and "grade" not in lean.trace[-1]
                    finished += 1
                    break
    assert finished == len(names) * 12


def test_lean_info_is_refused_with_a_trace_and_must_be_a_bool(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="trace"):
        make_native("approvals", lean_info=True, trace_path=str(tmp_path / "t.jsonl"))
    with pytest.raises(ValueError, match="lean_info"):
        make_native("approvals", lean_info=1)


def test_the_learner_envs_are_lean() -> None:
    from backoffice.training.rl.config import TrainConfig
    from backoffice.training.rl.envs import learner_envs

    config = TrainConfig.for_domain("approvals", "unused")
    venv = learner_envs(config, None)
    try:
        assert all(env.unwrapped.lean_info for env in venv.envs)  # type: ignore[attr-defined]
    finally:
        venv.close()
