"""Sufficiency calls that replay whatever an agent sends in them (regressions of the replay issue)."""

from __future__ import annotations

import math

from traced import first_oracle_run_with, traced

from backoffice.envs.core.replay import replay


def test_sufficiency_request_with_a_nan_message_replays(tmp_path) -> None:
    task_id, actions = first_oracle_run_with("sufficiency", "request_items")
    i = next(i for i, a in enumerate(actions) if a["tool"] == "request_items")
    actions[i] = {"tool": "request_items", "args": {**actions[i]["args"], "message": math.nan}}
    infos, lines = traced("sufficiency", tmp_path, actions, options={"task_id": task_id})
    assert infos[i]["error_code"] == "invalid_args"
    res = replay(lines)
    assert res[0].ok, res[0].divergences
    assert res[0].grade == infos[-1]["grade"]
