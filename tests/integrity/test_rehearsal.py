"""No rehearsal through any agent-facing surface (issue 32): the retry-until-pass attacker.

The attacker plays a heldout task, reads the grade it is given, and asks for the same task again
to retry with what it learnt. Every split-locked server grades a task at most as many times as
declared when it starts (``--attempts k``, default 1) across all its clients, and the grade an
agent reads is ``pass``, ``score`` and ``failure_codes`` only: no check, detail or expected value.

Surfaces: ``backoffice mcp`` over stdio and over streamable HTTP (the shipped commands, as
subprocesses), the Python :class:`~backoffice.training.agents.session.Session`, and the chat loop
(``backoffice chat``), whose model never reads a grade at all. The in-process server pool is
``tests/agents/test_mcp.py``'s.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the `llm` extra (mcp)")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from backoffice.envs import make_native  # noqa: E402
from backoffice.envs.core.canonical import dumps, loads  # noqa: E402
from backoffice.envs.core.release import load_release  # noqa: E402
from backoffice.training.agents.chat import chat_episode, oracle_chat  # noqa: E402
from backoffice.training.agents.session import PUBLIC_GRADE_FIELDS, AttemptsExhausted, Session  # noqa: E402
from conftest import DOMAINS  # noqa: E402

pytestmark = pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")

#: what a grade an agent reads may not contain
GRADE_DETAIL = ("checks", "expected", "detail", "got")


def _assert_public(grade: dict[str, Any]) -> None:
    assert set(grade) == {"final", "steps", *PUBLIC_GRADE_FIELDS}, sorted(grade)
    text = dumps(grade).decode()
    assert not any(f'"{word}"' in text for word in GRADE_DETAIL), text


async def _attempt(client: Client, task_id: str) -> tuple[bool, dict[str, Any] | None]:
    """Reset to ``task_id``, submit at once, read the grade: ``(reset refused?, grade)``."""
    reset = await client.call_tool("reset", {"task_id": task_id})
    if reset.is_error:
        assert loads(reset.content[0].text)["code"] == "attempts_exhausted"
        return True, None
    await client.call_tool("submit", {})
    grade = (await client.call_tool("grade", {})).structured_content
    _assert_public(grade)
    return False, grade


def _served(attempts: int, clients: list[Any], task_id: str) -> list[bool]:
    """The attacker on each client in turn, twice as often as ``attempts``: which resets were refused."""

    async def main() -> list[bool]:
        refused = []
        with anyio.fail_after(120):
            for _ in range(2 * attempts):
                for make in clients:
                    async with make() as client:
                        refused.append((await _attempt(client, task_id))[0])
        return refused

    return anyio.run(main)


@pytest.mark.parametrize("attempts", [1, 2])
def test_mcp_over_stdio_grades_a_heldout_task_as_often_as_declared(attempts: int) -> None:
    domain = DOMAINS[0]
    task_id = load_release(domain).split_ids["heldout"][1]
    params = StdioServerParameters(command=sys.executable, args=["-m", "backoffice.training.cli", "mcp", "--env", domain,
                                                                 "--task-id", task_id, "--attempts", str(attempts)])

    async def main() -> list[bool]:
        refused = []
        with anyio.fail_after(120):
            async with Client(params) as client:  # one server process: one ledger for its client
                for _ in range(2 * attempts):
                    refused.append((await _attempt(client, task_id))[0])
        return refused

    assert anyio.run(main) == [False] * attempts + [True] * attempts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_mcp_over_http_grades_a_heldout_task_once_across_every_client() -> None:
    """Two clients (new connections, new MCP sessions) take turns: one graded episode in all."""
    domain = DOMAINS[0]
    task_id = load_release(domain).split_ids["heldout"][2]
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "backoffice.training.cli", "mcp", "--env", domain, "--http",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "backoffice mcp --http did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = _served(1, [lambda: Client(url, mode="legacy"), lambda: Client(url, mode="legacy")], task_id)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert refused == [False, True, True, True]


def test_a_heldout_session_grades_a_task_once_and_shows_the_public_grade_only() -> None:
    domain = DOMAINS[0]
    task_id = load_release(domain).split_ids["heldout"][3]
    s = Session(domain, task_id=task_id, split="heldout")
    s.call("submit", {})
    assert set(s.public_grade()) == set(PUBLIC_GRADE_FIELDS)
    with pytest.raises(AttemptsExhausted):
        s.reset(task_id=task_id)


def test_the_chat_model_never_reads_a_grade() -> None:
    """``backoffice chat`` ends the conversation at the terminal call: the model's last message
    is the one before the grade exists, so there is nothing to learn for a retry."""
    domain = DOMAINS[0]
    task_id = load_release(domain).split_ids["heldout"][4]
    seen: list[list[dict[str, Any]]] = []
    oracle = oracle_chat()

    def recording(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        seen.append([dict(m) for m in messages])
        return oracle(messages, tools)

    result = chat_episode(make_native(domain, split="heldout"), recording, task_id=task_id)
    assert result.grade["pass"]
    shown = dumps(seen).decode()
    assert '"failure_codes"' not in shown and '"checks"' not in shown and '"score"' not in shown
