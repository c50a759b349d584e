"""The MCP server, driven by the official SDK's own client: in-process and over stdio.

The same tool calls through MCP and through the native env must give the same observations,
end state and grade. Checked on the toy domain always, and on every installed domain.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the `llm` extra (mcp)")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from backoffice.envs import make_native  # noqa: E402
from backoffice.envs.core.build import build_release  # noqa: E402
from backoffice.envs.core.canonical import loads  # noqa: E402
from backoffice.envs.core.release import Release, load_release  # noqa: E402
from backoffice.envs.core.replay import replay  # noqa: E402
from backoffice.envs.core.trace import read_trace  # noqa: E402
from backoffice.training.agents.mcp import EpisodeSession, build_server, make_pool, make_session  # noqa: E402
from backoffice.training.agents.session import PUBLIC_GRADE_FIELDS, Attempts  # noqa: E402
from backoffice.training.eval.rollout import run_episode  # noqa: E402
from backoffice.training.policies import get_policy  # noqa: E402
from conftest import DOMAINS, TESTS, domain_params  # noqa: E402
from toy_domain import DOMAIN as TOY, ToyEnv  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    root = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return Release("toy", root)


def native_calls(env: Any, policy: Any, task_id: str) -> tuple[list[dict], list[str], dict[str, Any]]:
    """The calls a policy makes natively, their observations and the terminal info."""
    res = run_episode(env, policy, task_id=task_id, keep_observations=True)
    calls = [{"tool": r["tool"], "args": r["args"]} for r in env.trace]
    return calls, res.observations[1:], res.info


def agent_grade(info: dict[str, Any], steps: int) -> dict[str, Any]:
    """What the ``grade`` tool may show an agent of a native terminal ``info``: pass, score and
    failure codes, nothing else (no check, detail or expected value)."""
    return {"final": True, "steps": steps, **{k: info["grade"][k] for k in PUBLIC_GRADE_FIELDS}}


async def play(client: Client, task_id: str, calls: list[dict]) -> tuple[list[Any], dict[str, Any]]:
    """Reset to ``task_id``, make ``calls`` over MCP, return the results and the grade."""
    reset = await client.call_tool("reset", {"task_id": task_id})
    assert not reset.is_error and reset.structured_content["task_id"] == task_id
    results = [await client.call_tool(c["tool"], c["args"]) for c in calls]
    grade = await client.call_tool("grade", {})
    return results, grade.structured_content


# -- toy domain, in process --------------------------------------------------------------------
TOY_CALLS = [
    {"tool": "get_counter", "args": {"counter_id": "C-1"}},
    {"tool": "bump", "args": {"counter_id": "C-1", "by": "x"}},  # invalid_args
    {"tool": "bump", "args": {"counter_id": "C-9"}},             # not_found
    {"tool": "bump", "args": {"counter_id": "C-1"}},
    {"tool": "bump", "args": {"counter_id": "C-1"}},
    {"tool": "submit", "args": {}},
]


def test_in_process_server_lists_calls_and_grades_like_the_native_env(release: Release) -> None:
    session = EpisodeSession(ToyEnv(release=release, split="heldout"), task_id="TOY-H0001")
    native = ToyEnv(release=release, split="heldout")

    async def main() -> None:
        async with Client(build_server(session)) as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == ["get_counter", "bump", "submit", "reset", "grade"]
            specs = {s["name"]: s for s in native.tool_specs(format="mcp", allowed_only=False)}
            for tool in listed[:3]:
                assert tool.input_schema == specs[tool.name]["inputSchema"] and tool.description == specs[tool.name]["description"]
            assert "reset" in (client.instructions or "")
            for task_id in ("TOY-H0001", "TOY-H0002"):
                results, grade = await play(client, task_id, TOY_CALLS)
                native.reset(seed=release.task(task_id).seed, options={"task_id": task_id})
                for call, result in zip(TOY_CALLS, results):
                    obs, _, term, trunc, info = native.step(call)
                    assert result.content[0].text == obs
                    assert result.is_error == (info["result_status"] == "error")
                    assert result.structured_content["terminated"] == term
                assert grade == agent_grade(info, len(TOY_CALLS))
                assert session.grade() == info["grade"]  # the full grade stays the operator's
            after = await client.call_tool("bump", {"counter_id": "C-1"})
            assert after.is_error and loads(after.content[0].text)["code"] == "episode_over"
            assert session.steps == len(TOY_CALLS)  # the refused call was not a step

    anyio.run(main)


def test_no_grade_before_the_end_and_reset_errors(release: Release) -> None:
    session = EpisodeSession(ToyEnv(release=release, split="heldout"))  # starts on a task drawn by seed 0

    async def main() -> None:
        async with Client(build_server(session)) as client:
            first = await client.call_tool("grade", {})
            assert first.structured_content == {"final": False, "steps": 0}
            reset = await client.call_tool("reset", {"task_id": "TOY-H0003"})
            body = reset.structured_content
            assert body["brief"]["task_id"] == "TOY-H0003" and "Allowed tools:" in body["system_prompt"]
            assert "checks" not in reset.content[0].text  # no answer-key content
            await client.call_tool("bump", {"counter_id": "C-1"})
            mid = await client.call_tool("grade", {})
            # mid-episode: nothing of the grade (no check, no detail, no expected value)
            assert mid.structured_content == {"final": False, "steps": 1}
            assert "target" not in mid.content[0].text and "expected" not in mid.content[0].text
            for bad in ({"task_id": "NOPE"}, {"seed": -1}, {"task_id": 5}, {"colour": "red"}, {"task_id": "TOY-T0001"}):
                res = await client.call_tool("reset", bad)
                assert res.is_error and loads(res.content[0].text)["code"] == "invalid_args"
            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error and loads(unknown.content[0].text)["code"] == "unknown_tool"
            drawn = (await client.call_tool("reset", {"seed": 4})).structured_content
            assert drawn["seed"] == 4 and drawn["task_id"].startswith("TOY-H")

    anyio.run(main)


def test_the_split_is_the_envs(release: Release) -> None:
    heldout = EpisodeSession(ToyEnv(release=release, split="heldout"))
    with pytest.raises(ValueError, match="TOY-T0001 is a train task; this env serves the heldout split only"):
        heldout.reset(task_id="TOY-T0001")
    with pytest.raises(ValueError, match="generated .*heldout split only"):
        heldout.reset(task_id="TOY-G5")
    train = EpisodeSession(ToyEnv(release=release, split="train"))
    with pytest.raises(ValueError, match="TOY-H0001 is a heldout task; this env serves the train split only"):
        train.reset(task_id="TOY-H0001")


def test_session_traces_replay(release: Release, tmp_path: Path) -> None:
    trace = tmp_path / "mcp.jsonl"
    session = EpisodeSession(ToyEnv(release=release, split="heldout", trace_path=str(trace)), task_id="TOY-H0004")
    for call in TOY_CALLS:
        session.call(call["tool"], call["args"])
    session.env.close()
    records = read_trace(trace)
    assert [r["tool"] for r in records] == [c["tool"] for c in TOY_CALLS]
    assert records[-1]["grade"] == session.grade()
    assert session.grade_tool() == {"final": True, "steps": len(TOY_CALLS), **{k: records[-1]["grade"][k] for k in PUBLIC_GRADE_FIELDS}}


# -- no rehearsal: a heldout task is graded once (or --attempts times), across every session ------
def test_a_graded_heldout_task_cannot_be_rehearsed(release: Release) -> None:
    session = EpisodeSession(ToyEnv(release=release, split="heldout"), task_id="TOY-H0001")
    session.call("submit", {})
    assert set(session.grade_tool()) == {"final", "steps", *PUBLIC_GRADE_FIELDS}  # no checks, no detail
    text, err, is_error = session.dispatch("reset", {"task_id": "TOY-H0001"})
    assert is_error and err["code"] == "attempts_exhausted" and "attempts=1" in err["message"]
    # a task drawn by seed whose attempt is spent: the reset shows 0 left and every call is refused
    drawn = next(s for s in range(200) if session.reset(seed=s)["task_id"] == "TOY-H0001")
    assert session.reset(seed=drawn)["attempts_left"] == 0
    refused = session.call("bump", {"counter_id": "C-1"})
    assert refused.is_error and loads(refused.observation)["code"] == "attempts_exhausted" and refused.steps == 0
    assert session.env.unwrapped.state.get("counters", "C-1")["value"] == 0  # no step was taken
    # an untouched episode is no attempt: resetting away from it and back is free
    assert session.reset(task_id="TOY-H0002")["attempts_left"] == 1
    assert session.reset(task_id="TOY-H0002")["attempts_left"] == 1


def test_attempts_are_counted_across_the_sessions_of_a_server(release: Release) -> None:
    ledger = Attempts(2)  # pass^2
    first, second = (EpisodeSession(ToyEnv(release=release, split="heldout"), attempts=ledger) for _ in range(2))
    for s in (first, second):
        s.reset(task_id="TOY-H0003")
        s.call("bump", {"counter_id": "C-1"})
        s.call("submit", {})
    for s in (first, second, EpisodeSession(ToyEnv(release=release, split="heldout"), attempts=ledger)):
        assert s.dispatch("reset", {"task_id": "TOY-H0003"})[1]["code"] == "attempts_exhausted"
    # an abandoned episode that took a step counts too
    first.reset(task_id="TOY-H0004")
    first.call("get_counter", {"counter_id": "C-1"})
    first.reset(task_id="TOY-H0004")
    first.call("get_counter", {"counter_id": "C-1"})
    assert first.dispatch("reset", {"task_id": "TOY-H0004"})[1]["code"] == "attempts_exhausted"
    train = EpisodeSession(ToyEnv(release=release, split="train"))  # training split: unlimited by default
    for _ in range(3):
        train.reset(task_id="TOY-T0001")
        train.call("submit", {})
    with pytest.raises(ValueError, match="attempts must be"):
        Attempts(0)


@pytest.mark.parametrize("domain", domain_params())
def test_retry_until_pass_gets_one_graded_episode_per_heldout_task(domain: str) -> None:
    """The rehearsal attacker: submit at once, read the grade, reset to the same task (on the same
    session, or a new session of the same server) to try again. Every retry is refused, and the
    one grade it saw names no check, detail or expected value."""
    ids = load_release(domain).split_ids["heldout"][:5]
    pool = make_pool(domain, split="heldout")
    for i, task_id in enumerate(ids):
        session = pool.get(f"client-{i}")
        session.dispatch("reset", {"task_id": task_id})
        session.dispatch("submit", {})
        text, grade, _ = session.dispatch("grade", {})
        assert grade["final"] and set(grade) == {"final", "steps", *PUBLIC_GRADE_FIELDS}
        assert "expected" not in text and "checks" not in text and "detail" not in text
        for other in (session, pool.get(f"other-{i}")):
            assert other.dispatch("reset", {"task_id": task_id})[1]["code"] == "attempts_exhausted"


# -- toy domain, over stdio ---------------------------------------------------------------------
SERVE_TOY = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from toy_domain import ToyEnv
    from backoffice.envs.core.release import Release
    from backoffice.training.agents.mcp import EpisodeSession, serve_stdio
    serve_stdio(EpisodeSession(ToyEnv(release=Release("toy", Path(sys.argv[2])), split="heldout"), task_id=sys.argv[3]))
""")


def test_stdio_server_gives_the_native_grade(release: Release, tmp_path: Path) -> None:
    script = tmp_path / "serve_toy.py"
    script.write_text(SERVE_TOY)
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(TESTS), str(release.path.parent), "TOY-H0005"])
    native = ToyEnv(release=release, split="heldout")
    native.reset(seed=release.task("TOY-H0005").seed, options={"task_id": "TOY-H0005"})
    for call in TOY_CALLS:
        *_, info = native.step(call)

    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert names == ["get_counter", "bump", "submit", "reset", "grade"]
                _, grade = await play(client, "TOY-H0005", TOY_CALLS)
                return grade

    grade = anyio.run(main)
    assert grade == agent_grade(info, len(TOY_CALLS))


# -- installed domains ----------------------------------------------------------------------------
@pytest.mark.parametrize("domain", domain_params())
def test_oracle_calls_over_mcp_grade_like_the_native_env(domain: str, tmp_path: Path) -> None:
    ids = load_release(domain).split_ids["heldout"][:8]
    native = make_native(domain, split="heldout")
    trace = tmp_path / "mcp.jsonl"
    session = make_session(domain, task_id=ids[0], trace_path=str(trace))

    async def main() -> None:
        async with Client(build_server(session)) as client:
            for task_id in ids:
                calls, observations, info = native_calls(native, get_policy(domain, "oracle"), task_id)
                results, grade = await play(client, task_id, calls)
                assert [r.content[0].text for r in results] == observations
                listed = (await client.list_tools()).tools
                names = [t.name for t in listed]
                assert set(names[:-2]) == set(load_release(domain).task(task_id).allowed_tools)
                toolkit = native.domain.toolkit.tools
                for tool in listed[:-2]:  # readOnlyHint says what the tool's writes= declares
                    if toolkit[tool.name].writes is not None:
                        assert tool.annotations.read_only_hint is (not toolkit[tool.name].writes)
                assert names[-2:] == ["reset", "grade"]
                assert grade == agent_grade(info, len(calls)) and grade["pass"]

    anyio.run(main)
    session.env.close()
    records = read_trace(trace)
    assert all(r.ok for r in replay(records))
    assert [r["grade"]["checks"] for r in records if "grade" in r] == [
        native_calls(native, get_policy(domain, "oracle"), t)[2]["grade"]["checks"] for t in ids]  # the operator's record


@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain (the CLI loads releases by name)")
def test_backoffice_mcp_command_over_stdio() -> None:
    domain = DOMAINS[0]
    task_id = load_release(domain).split_ids["heldout"][0]
    native = make_native(domain, split="heldout")
    calls, _, info = native_calls(native, get_policy(domain, "oracle"), task_id)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "backoffice.training.cli", "mcp", "--env", domain, "--task-id", task_id])

    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {*native.task.allowed_tools, "reset", "grade"}
                _, grade = await play(client, task_id, calls)
                again = await client.call_tool("reset", {"task_id": task_id})  # one graded attempt (no --attempts)
                assert again.is_error and loads(again.content[0].text)["code"] == "attempts_exhausted"
                return grade

    grade = anyio.run(main)
    assert grade == agent_grade(info, len(calls)) and grade["pass"]
