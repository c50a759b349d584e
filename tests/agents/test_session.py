"""The per-episode Session: tools, call, done, final-only grade, reward, transcript; sync and
async; many sessions in one process share the loaded snapshot and never each other's state."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from backoffice.envs.core.build import build_release
from backoffice.envs.core.canonical import loads
from backoffice.envs.core.release import Release
from backoffice.training.agents.session import EpisodeNotOver, Session
from toy_domain import DOMAIN as TOY, ToyEnv

BUMP = {"counter_id": "C-1"}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    root = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return Release("toy", root)


def session(release: Release, task_id: str = "TOY-H0001", **kw: Any) -> Session:
    return Session(ToyEnv(release=release, split="heldout"), task_id=task_id, **kw)


def test_session_plays_an_episode_like_the_native_env(release: Release) -> None:
    s = session(release)
    native = ToyEnv(release=release, split="heldout")
    native.reset(seed=release.task("TOY-H0001").seed, options={"task_id": "TOY-H0001"})
    assert [t["name"] for t in s.tools] == ["get_counter", "bump", "submit"]
    assert s.tool_specs("openai")[0]["type"] == "function" and "TOY-H0001" in s.system_prompt
    calls = [("get_counter", BUMP), ("bump", '{"counter_id": "C-1"}'), ("bump", "{oops"), ("submit", None)]
    for name, args in calls:
        assert not s.done and s.reward == 0.0
        with pytest.raises(EpisodeNotOver):
            s.grade()  # nothing of the grade before the end
        res = s.call(name, args)
        native_args = {} if args is None else args if not isinstance(args, str) else loads(args) if args != "{oops" else args
        obs, _, term, trunc, info = native.step({"tool": name, "args": native_args})
        assert res.observation == obs and (res.terminated, res.truncated) == (term, trunc)
        assert res.is_error == (info["result_status"] != "ok")
    assert s.done and s.grade() == info["grade"] and s.reward == info["score"] and s.shaped_reward == info["shaped_reward"]
    assert [t["tool"] for t in s.transcript] == [c[0] for c in calls] and s.transcript[2]["is_error"]
    over = s.call("bump", BUMP)
    assert over.is_error and loads(over.observation)["code"] == "episode_over" and s.steps == 4


def test_async_sessions_share_the_snapshot_and_not_their_state(release: Release) -> None:
    sessions = [session(release, task_id=t) for t in release.split_ids["heldout"][:12]]
    assert len({id(s.env.unwrapped._snapshot) for s in sessions if s.task_id == sessions[0].task_id}) == 1
    assert len({id(s.env.unwrapped.release) for s in sessions}) == 1

    async def play(s: Session, bumps: int) -> None:
        await s.acall("get_counter", BUMP)
        for _ in range(bumps):
            await s.acall("bump", BUMP)
        await s.acall("submit", {})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i, s in enumerate(sessions):
                tg.start_soon(play, s, 1 + i % 3)

    anyio.run(main)
    for i, s in enumerate(sessions):
        target = release.task(s.task_id).params["target"]
        assert s.steps == 3 + i % 3 and s.grade()["pass"] == (1 + i % 3 == target)
        assert s.env.unwrapped.state.get("counters", "C-1")["value"] == 1 + i % 3


def test_session_serves_its_envs_split_only(release: Release) -> None:
    with pytest.raises(ValueError, match="TOY-T0001 is a train task; this env serves the heldout split only"):
        session(release, task_id="TOY-T0001")


def test_session_public_grade_is_pass_score_and_failure_codes(release: Release) -> None:
    s = session(release)
    with pytest.raises(EpisodeNotOver):
        s.public_grade()
    s.call("submit", {})
    assert s.public_grade() == {k: s.grade()[k] for k in ("pass", "score", "failure_codes")}
