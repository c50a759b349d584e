"""Schedules calls that replay, or are refused, whatever an agent sends in them (regressions of the replay issue)."""

from __future__ import annotations

from traced import SUBMIT, first_oracle_run_with, traced

from backoffice.envs import make_native
from backoffice.envs.core.replay import replay
from backoffice.envs.core.trace import decode_sent


def test_schedules_commit_with_an_int_key_replays(tmp_path) -> None:
    infos, lines = traced("schedules", tmp_path, [{"tool": "commit_schedule", "args": {1: "int key"}}, SUBMIT])
    assert lines[0]["tool"] == "commit_schedule" and lines[0]["sent"] == {"tool": "commit_schedule", "args": {"$map": [[1, "int key"]]}}
    assert decode_sent(lines[0]["sent"]) == {"tool": "commit_schedule", "args": {1: "int key"}}
    res = replay(lines)
    assert [r.ok for r in res] == [True] and res[0].grade == infos[-1]["grade"]


def test_schedules_period_in_other_digits_is_invalid_args(tmp_path) -> None:
    task_id, actions = first_oracle_run_with("schedules", "add_instalment")
    i = next(i for i, a in enumerate(actions) if a["tool"] == "add_instalment")
    env = make_native("schedules")
    env.reset(options={"task_id": task_id})
    for a in actions[:i]:
        env.step(a)
    for period in ("③0③⑦-①③", "٢٠٢٦-٠٣", "２０２６-０３", "2026-0³", "2026-1٢"):
        before = env.state.content_hash()
        _, _, _, _, info = env.step({"tool": "add_instalment", "args": {**actions[i]["args"], "period": period}})
        assert info["error_code"] == "invalid_args", period
        assert env.state.content_hash() == before
    _, _, _, _, info = env.step(actions[i])  # the ASCII call still works
    assert info["result_status"] == "ok"
