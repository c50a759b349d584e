"""MCP beyond one stdio episode: listChanged with notifications, the system prompt as a prompt,
the rules as resources, and streamable HTTP with one episode per MCP session, load-tested with
50 concurrent sessions on 127.0.0.1 (isolation, and every grade equals the native env's).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the `llm` extra (mcp)")
pytest.importorskip("uvicorn", reason="needs uvicorn (installed with mcp)")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402
from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402

from backoffice.envs import make_native  # noqa: E402
from backoffice.envs.core.build import build_release  # noqa: E402
from backoffice.envs.core.release import Release  # noqa: E402
from backoffice.training.agents.mcp import BRIEF_URI, RULES_URI, EpisodeSession, SessionPool, build_server, http_app, serve_http  # noqa: E402
from backoffice.training.eval.rollout import run_episode  # noqa: E402
from backoffice.training.policies import get_policy  # noqa: E402
from conftest import DOMAINS  # noqa: E402
from toy_domain import DOMAIN as TOY, ToyEnv  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    root = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return Release("toy", root)


class Notes:
    """Collects the server's notifications (a ``message_handler`` for the SDK client)."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def __call__(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None) or getattr(message, "method", None)
        if method:
            self.methods.append(str(method))


def test_list_changed_prompt_and_resources_in_process(release: Release) -> None:
    session = EpisodeSession(ToyEnv(release=release, split="heldout"), task_id="TOY-H0001")
    notes = Notes()

    async def main() -> None:
        async with Client(build_server(session), mode="legacy", message_handler=notes) as client:
            assert client.server_capabilities.tools.list_changed is True
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["system"]
            prompt = await client.get_prompt("system")
            assert prompt.messages[0].content.text == session.system_prompt and "TOY-H0001" in session.system_prompt
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert uris == [RULES_URI, BRIEF_URI]
            rules = (await client.read_resource(RULES_URI)).contents[0].text
            assert "Change only the records this task is about" in rules and "wrong_value" not in rules
            brief = (await client.read_resource(BRIEF_URI)).contents[0].text
            assert '"task_id":"TOY-H0001"' in brief
            # same tool set: no notification; the toy's tasks all allow the same tools
            await client.call_tool("reset", {"task_id": "TOY-H0002"})
            assert "notifications/tools/list_changed" not in notes.methods
            session.info["allowed_tools"] = ["bump"]  # pretend the last episode had another tool set
            await client.call_tool("reset", {"task_id": "TOY-H0003"})
            for _ in range(50):
                if "notifications/tools/list_changed" in notes.methods:
                    break
                await anyio.sleep(0.01)
            assert "notifications/tools/list_changed" in notes.methods

    anyio.run(main)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HTTPServer:
    """uvicorn serving a pool in a thread, on 127.0.0.1; stopped on exit."""

    def __init__(self, pool: SessionPool):
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(http_app(pool), host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> HTTPServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


def test_http_refuses_non_loopback_hosts(release: Release) -> None:
    with pytest.raises(ValueError, match="loopback"):
        serve_http(SessionPool(lambda: None), host="0.0.0.0")


def native_episode(env: Any, domain: str, task_id: str) -> tuple[list[dict], dict[str, Any]]:
    policy = get_policy(domain, "oracle") if domain != "toy" else None
    if policy is None:
        calls = [{"tool": "get_counter", "args": {"counter_id": "C-1"}}, {"tool": "bump", "args": {"counter_id": "C-1"}},
                 {"tool": "submit", "args": {}}]
        env.reset(seed=env.release.task(task_id).seed, options={"task_id": task_id})
        for c in calls:
            *_, info = env.step(c)
        return calls, info
    res = run_episode(env, policy, task_id=task_id)
    return [{"tool": r["tool"], "args": r["args"]} for r in env.trace], res.info


def load_test(pool: SessionPool, make_env: Any, domain: str, ids: list[str], sessions: int) -> dict[str, float]:
    """``sessions`` concurrent MCP sessions over HTTP, each playing the oracle's calls on its
    own task; every grade must equal the native one. Returns timing numbers."""
    native = make_env()
    plans = {t: native_episode(native, domain, t) for t in ids}
    grades: dict[int, dict[str, Any]] = {}
    latencies: list[float] = []

    async def one(i: int, url: str) -> None:
        task_id = ids[i % len(ids)]
        calls, _ = plans[task_id]
        async with Client(url, mode="legacy") as client:
            reset = await client.call_tool("reset", {"task_id": task_id})
            assert not reset.is_error and reset.structured_content["task_id"] == task_id
            for c in calls:
                t0 = time.perf_counter()
                res = await client.call_tool(c["tool"], c["args"])
                latencies.append(time.perf_counter() - t0)
                assert res.structured_content["steps"] == calls.index(c) + 1  # only this session's steps count
            grades[i] = (await client.call_tool("grade", {})).structured_content

    with HTTPServer(pool) as server:
        start = time.perf_counter()

        async def main() -> None:
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for i in range(sessions):
                        tg.start_soon(one, i, server.url)

        anyio.run(main)
        wall = time.perf_counter() - start
    for i, got in grades.items():
        _, info = plans[ids[i % len(ids)]]
        # the agent sees pass, score and failure codes; the full grade is the operator's
        assert got == {"final": True, "steps": len(plans[ids[i % len(ids)]][0]),
                       **{k: info["grade"][k] for k in ("pass", "score", "failure_codes")}}
    assert len(grades) == sessions and pool.created == sessions
    latencies.sort()
    return {"wall_s": wall, "calls": len(latencies), "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)]}


def test_http_fifty_concurrent_sessions_are_isolated_and_grade_like_the_native_env(release: Release) -> None:
    """On the first installed domain (the oracle's calls), else on the toy domain."""
    from backoffice.envs.core.release import load_release
    from backoffice.training.agents.mcp import make_pool

    if DOMAINS:
        domain = DOMAINS[0]
        pool = make_pool(domain, split="heldout", attempts=5)  # 50 sessions over 10 tasks: declared
        ids = list(load_release(domain).split_ids["heldout"][:10])

        def make_env() -> Any:
            return make_native(domain, split="heldout")
    else:
        domain = "toy"
        ids = list(release.split_ids["heldout"])

        def make_env() -> Any:
            return ToyEnv(release=release, split="heldout")

        pool = SessionPool(lambda: EpisodeSession(make_env(), attempts=None), domain="toy")
    numbers = load_test(pool, make_env, domain, ids, sessions=50)
    print(f"\nMCP HTTP load test ({domain}, 50 concurrent sessions):", numbers)


def test_backoffice_mcp_http_command(tmp_path) -> None:
    """``backoffice mcp --http``: serves on 127.0.0.1 (the default host), one episode per MCP
    session (two clients each get their own, traced to its own file), refuses non-loopback hosts."""
    import subprocess
    import sys

    if not DOMAINS:
        pytest.skip("needs an installed domain (the CLI loads releases by name)")
    from backoffice.envs.core.release import load_release

    domain = DOMAINS[0]
    refused = subprocess.run([sys.executable, "-m", "backoffice.training.cli", "mcp", "--env", domain, "--http",
                              "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "loopback" in refused.stderr
    ids = list(load_release(domain).split_ids["heldout"][:2])
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "backoffice.training.cli", "mcp", "--env", domain, "--http",
                             "--port", str(port), "--trace", str(tmp_path / "traces")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "backoffice mcp --http did not start"
            time.sleep(0.1)

        async def one(task_id: str) -> tuple[str, int]:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
                reset = await client.call_tool("reset", {"task_id": task_id})
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"reset", "grade", "submit"} <= names
                done = await client.call_tool("submit", {})
                grade = (await client.call_tool("grade", {})).structured_content
                return reset.structured_content["task_id"], done.structured_content["steps"] + 10 * grade["final"]

        async def main() -> list[tuple[str, int]]:
            out: list[tuple[str, int]] = []
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    async def run(t: str) -> None:
                        out.append(await one(t))
                    for t in ids:
                        tg.start_soon(run, t)
            return sorted(out)

        assert anyio.run(main) == sorted((t, 11) for t in ids)  # each session: its own task, 1 step, final grade
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    traces = sorted((tmp_path / "traces").glob("session-*.jsonl"))
    assert len(traces) == 2 and sorted(t.read_text().count('"tool":"submit"') for t in traces) == [1, 1]


def test_seeds_above_2_53_round_trip_as_text(release: Release) -> None:
    """Task seeds are 63-bit: a JavaScript client (MCP Inspector) rounds them as numbers, so the
    reset result carries ``seed_str`` and ``reset`` accepts the seed as decimal text."""
    session = EpisodeSession(ToyEnv(release=release, split="heldout"), task_id="TOY-H0001")
    big = 2**63 - 25  # not representable as a float64
    assert float(big) != big
    _, by_int, err = session.dispatch("reset", {"seed": big})
    assert not err and by_int["seed"] == big and by_int["seed_str"] == str(big)
    _, by_text, err = session.dispatch("reset", {"seed": str(big)})
    assert not err and by_text["episode_id"] == by_int["episode_id"] and by_text["brief"] == by_int["brief"]
    for bad in ("-1", "12x", "1" * 21, 1.5):
        _, out, err = session.dispatch("reset", {"seed": bad})
        assert err and out["code"] == "invalid_args"


@pytest.mark.parametrize("mode", ["auto", "legacy", *MODERN_PROTOCOL_VERSIONS])
def test_every_client_mode_keeps_one_episode_per_client_over_http(release: Release, mode: str) -> None:
    """The SDK's ``Client(url)`` negotiates 2026-07-28 by default (``mode="auto"``), which has
    no session id: the episode cookie keys it, so in every mode the SDK offers (auto, legacy,
    each modern version pinned) two concurrent clients each keep their own episode, and
    ``listChanged`` is advertised where it is delivered."""
    pool = SessionPool(lambda: EpisodeSession(ToyEnv(release=release, split="heldout")), domain="toy", max_sessions=8)
    ids = list(release.split_ids["heldout"][:2])

    async def one(url: str, task_id: str) -> tuple[str, dict[str, Any]]:
        async with Client(url, mode=mode) as client:
            if mode in ("auto", "legacy"):  # a pinned version adopts a synthesized discover result instead
                assert client.server_capabilities.tools.list_changed is True
            reset = await client.call_tool("reset", {"task_id": task_id})
            assert not reset.is_error
            for call in ({"tool": "get_counter", "args": {"counter_id": "C-1"}}, {"tool": "submit", "args": {}}):
                res = await client.call_tool(call["tool"], call["args"])
                assert not res.is_error, res.content
            grade = (await client.call_tool("grade", {})).structured_content
            return reset.structured_content["task_id"], grade

    with HTTPServer(pool) as server:
        async def main() -> list[tuple[str, dict[str, Any]]]:
            out: list[tuple[str, dict[str, Any]]] = []
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    async def run(t: str) -> None:
                        out.append(await one(server.url, t))
                    for t in ids:
                        tg.start_soon(run, t)
            return sorted(out, key=lambda x: x[0])

        got = anyio.run(main)
    assert [t for t, _ in got] == sorted(ids)
    assert all(g["final"] and g["steps"] == 2 for _, g in got)  # the reset was kept: this client's steps only
    assert pool.created == 2


def test_http_max_sessions_closes_the_least_recently_used_episode(release: Release) -> None:
    """``--max-sessions`` bounds the episodes: a client beyond it is served (its episode
    replaces the least recently used one), never refused with a 503."""
    pool = SessionPool(lambda: EpisodeSession(ToyEnv(release=release, split="heldout")), domain="toy", max_sessions=1)

    async def main(url: str) -> list[bool]:
        finals = []
        for task_id in release.split_ids["heldout"][:3]:
            async with Client(url) as client:
                await client.call_tool("reset", {"task_id": task_id})
                await client.call_tool("submit", {})
                finals.append((await client.call_tool("grade", {})).structured_content["final"])
        return finals

    with HTTPServer(pool) as server:
        assert anyio.run(main, server.url) == [True, True, True]
    assert pool.created == 3 and len(pool.sessions) == 1


def test_list_changed_reaches_only_its_client_on_2026_07_28(release: Release) -> None:
    """On the 2026-07-28 protocol (the SDK's default) notifications travel on
    ``subscriptions/listen`` streams: a reset that changes the tool set notifies that client's
    stream, never another client's."""
    pool = SessionPool(lambda: EpisodeSession(ToyEnv(release=release, split="heldout")), domain="toy", max_sessions=8)
    ids = list(release.split_ids["heldout"][:2])

    async def main(url: str) -> tuple[int, int]:
        got = {"a": 0, "b": 0}
        async with Client(url) as a, Client(url) as b:
            assert a.protocol_version in MODERN_PROTOCOL_VERSIONS and a.server_capabilities.tools.list_changed is True
            await a.call_tool("reset", {"task_id": ids[0]})
            await b.call_tool("reset", {"task_id": ids[0]})
            async with a.listen(tools_list_changed=True) as sub_a, b.listen(tools_list_changed=True) as sub_b:
                async def drain(name: str, sub: Any) -> None:
                    async for _ in sub:
                        got[name] += 1

                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain, "a", sub_a)
                    tg.start_soon(drain, "b", sub_b)
                    for session in pool.sessions.values():
                        session.info["allowed_tools"] = ["bump"]  # pretend the last episodes had another tool set
                    await a.call_tool("reset", {"task_id": ids[1]})
                    with anyio.move_on_after(3):
                        while not got["a"]:
                            await anyio.sleep(0.02)
                    await anyio.sleep(0.2)
                    tg.cancel_scope.cancel()
        return got["a"], got["b"]

    with HTTPServer(pool) as server:
        assert anyio.run(main, server.url) == (1, 0)
