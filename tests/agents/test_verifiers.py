"""verifiers (0.4, ``verifiers.v1``): the oracle through verifiers' own eval runner, no model.

verifiers 0.4.0 pins ``mcp==2.0.0`` and ``openai<3`` while the ``llm`` extra pins mcp 2.3 and
openai 3, so verifiers cannot live in the project's venv. This test builds a separate venv once
(``.venv-extra/verifiers``, reused while the pins below and ``constraints.txt`` are unchanged) with
the project installed editable without its extras, its core dependencies pinned from
``constraints.txt``, and ``verifiers==0.4.0``; then, in that venv, it runs
``verifiers.v1.cli.eval.runner.run_eval`` (the in-process path of ``vf-eval``) over
:mod:`backoffice.training.agents.verifiers` for a few held-out tasks of two domains:

- the model is :class:`backoffice.training.agents.fake_openai.FakeOpenAI` on 127.0.0.1 (verifiers'
  ``EvalClient`` talks to it as to any OpenAI-compatible endpoint): ``oracle_chat`` replays each
  domain's oracle from the conversation, ``text_only_chat`` never calls a tool;
- everything between is verifiers': the interception server, the ``null`` harness's chat program
  (the MCP client loop), the task's tool server (``python -m`` this module, a subprocess speaking
  MCP over HTTP), the state channel and the scoring. The one substitution: the chat program runs
  with this venv's Python instead of a ``uv``-provisioned one (no ``uv`` here, and no network at
  rollout time); verifiers itself requires every package the program declares.

It asserts reward 1.0 for every oracle rollout, that the tool results the model saw are the native
observations call by call and that the rollout stopped at the episode's end, and reward 0.0 for a
no-op rollout (a model that only writes text: the episode never ends). Skipped only when PyPI cannot be reached to
build the venv.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import REPO

pytestmark = pytest.mark.xdist_group("verifiers")

VERIFIERS = "verifiers==0.4.0"
CORE = ("gymnasium", "numpy", "pydantic", "pydantic_core", "orjson", "typer", "rich", "matplotlib")
DOMAINS = {"approvals": 2, "registration": 2}  # domain -> held-out tasks the oracle plays (the no-op: the first)


def _core_pins() -> list[str]:
    pins = [line.strip() for line in (REPO / "constraints.txt").read_text().splitlines()
            if line.split("==")[0].strip().replace("-", "_").lower() in CORE]
    assert len(pins) == len(CORE), pins
    return pins


def _pypi_reachable() -> bool:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    host = urlparse(index).hostname or "pypi.org"
    try:
        socket.create_connection((host, 443), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def verifiers_python() -> Path:
    """The separate venv's python (built on first use; see the module docstring)."""
    pins = _core_pins()
    key = hashlib.sha256("\n".join([VERIFIERS, *pins, sys.version]).encode()).hexdigest()[:12]
    venv = REPO / ".venv-extra" / "verifiers"
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{key}"
    if stamp.exists():
        return python
    if not _pypi_reachable():
        pytest.skip("PyPI is unreachable: cannot build the verifiers venv (verifiers 0.4.0 cannot share the project's venv)")
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    constraints = venv / "core-constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-c", str(constraints), VERIFIERS, *(p.split("==")[0] for p in pins)], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(REPO)], check=True)
    stamp.write_text(f"built in {time.monotonic() - started:.0f}s\n")
    return python


HARNESS = r'''
"""verifiers' null harness, its chat program run by this venv's Python (no uv)."""
import hashlib, sys, tempfile
from pathlib import Path

from verifiers.v1.harnesses.null.harness import NullHarness


class LocalChatHarness(NullHarness):
    async def setup(self, runtime):
        pass

    async def launch(self, ctx, trace, runtime, *args, **kwargs):
        async def prepare(script, env=None, *, activate=True):
            data = script.encode() if isinstance(script, str) else script
            path = Path(tempfile.gettempdir()) / f"vf-chat-{hashlib.sha256(data).hexdigest()[:16]}.py"
            if not path.exists():
                path.write_bytes(data)
            return [sys.executable, str(path)]

        runtime.prepare_uv_script = prepare  # this rollout's runtime only
        return await super().launch(ctx, trace, runtime, *args, **kwargs)


__all__ = ["LocalChatHarness"]
'''

DRIVER = r'''
import asyncio, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig

from backoffice.training.agents.fake_openai import completion
from backoffice.training.agents.verifiers import register_plugin, task_ids
from backoffice.training.agents.chat import oracle_chat, text_only_chat
from backoffice.training.agents.session import Session

domains = json.loads(sys.argv[1])
out = Path(sys.argv[2])
os.environ["BACKOFFICE_FAKE_KEY"] = "unused"
TASKSET_ID = register_plugin()


class StreamingFake:
    """backoffice's fake chat-completions endpoint (``completion``), answering the streamed
    requests verifiers' chat program sends: the whole reply as one SSE chunk, then the finish
    reason and the usage."""

    def __init__(self, brain):
        lock, state = threading.Lock(), {"n": 0}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with lock:
                    state["n"] += 1
                    body = completion(request, brain, state["n"])
                if request.get("stream"):
                    choice = body["choices"][0]
                    message = choice["message"]
                    delta = {"role": "assistant", "content": message.get("content")}
                    if message.get("tool_calls"):
                        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
                    head = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
                    events = [head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                              head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
                              head | {"choices": [], "usage": body["usage"]}]
                    data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data, kind = json.dumps(body).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


async def run(domain, ids, brain):
    with StreamingFake(brain) as server:
        config = EvalConfig(
            env={"taskset": {"id": TASKSET_ID, "domain": domain,
                             "split": "heldout", "task_ids": ids},
                 "agent": {"harness": {"id": "vf_local_chat"}, "runtime": {"type": "subprocess"}, "max_turns": 200,
                           "timeout": {"rollout": 300, "scoring": 60}}},
            model="fake", client={"base_url": server.base_url, "api_key_var": "BACKOFFICE_FAKE_KEY"},
            num_rollouts=1, max_concurrent=1, rich=None,
            output_dir=out, run={"dir": f"{domain}-{len(ids)}-{id(brain)}"}, push=False)
        records = await run_eval(config)
    return [t for r in records for t in r.traces]


def tool_results(trace):
    from verifiers.v1.types import content_text
    return [content_text(m.content) for m in trace.tool_messages]


result = {}
for domain, n in domains.items():
    ids = task_ids(domain, "heldout")[:n]
    rows = []
    for kind, brain, chosen in (("oracle", oracle_chat(), ids), ("noop", text_only_chat, ids[:1])):
        for trace in asyncio.run(run(domain, chosen, brain)):
            rows.append({"kind": kind, "task_id": trace.task.data.id, "reward": trace.reward,
                         "rewards": {k: None if v is None else v.score for k, v in trace.rewards.items()},
                         "metrics": trace.metrics, "errors": [str(e) for e in trace.errors],
                         "tool_results": tool_results(trace)})
    # the native observations of the oracle's own run, to compare with what the model saw
    native = {}
    for task_id in ids:
        from backoffice.training.policies import get_policy
        s = Session(domain, task_id=task_id)
        policy = get_policy(domain, "oracle")
        policy.reset(s.observation, s.info)
        obs = s.observation
        seen = []
        while not s.done:
            action = policy.act(obs)
            if isinstance(action, str):
                action = json.loads(action)
            obs = s.call(action["tool"], action.get("args", {})).observation
            seen.append(obs)
        native[task_id] = {"observations": seen, "score": s.reward}
    result[domain] = {"rows": rows, "native": native}
print("RESULT " + json.dumps(result, default=str))
'''


def test_oracle_and_noop_through_verifiers_rollouts(verifiers_python: Path, tmp_path: Path) -> None:
    (tmp_path / "vf_local_chat.py").write_text(textwrap.dedent(HARNESS))
    (tmp_path / "driver.py").write_text(textwrap.dedent(DRIVER))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONPATH"] = str(tmp_path)
    env["PATH"] = f"{verifiers_python.parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([str(verifiers_python), str(tmp_path / "driver.py"), json.dumps(DOMAINS), str(tmp_path / "runs")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"driver failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert set(result) == set(DOMAINS)
    for domain, n in DOMAINS.items():
        rows, native = result[domain]["rows"], result[domain]["native"]
        oracle = [r for r in rows if r["kind"] == "oracle"]
        noop = [r for r in rows if r["kind"] == "noop"]
        assert sorted(r["task_id"] for r in oracle) == sorted(native) and len(native) == n, rows
        assert len(noop) == 1, rows
        for row in oracle:
            observations = native[row["task_id"]]["observations"]
            assert row["errors"] == [], row
            assert native[row["task_id"]]["score"] == 1.0
            assert row["reward"] == 1.0 and row["rewards"] == {"score_final": 1.0}, row
            assert row["metrics"]["finished"] == 1.0 and row["metrics"]["steps"] == len(observations), row
            # the model saw exactly the native observations, call by call; the rollout stopped
            # at the episode's end (the @stop refuses the model call after submit, so the last
            # result, submit's, is in no model request)
            assert row["tool_results"] == observations[:-1], row["task_id"]
        for row in noop:
            assert row["errors"] == [], row
            assert row["reward"] == 0.0 and row["metrics"]["finished"] == 0.0, row
            assert row["tool_results"] == []
