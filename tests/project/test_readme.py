"""Every command the README shows runs as written from a fresh clone (issue 35).

The fenced ``bash`` and ``python`` blocks of README.md are extracted and run, in order, in an
empty folder laid out like a fresh clone after ``make install`` (``.venv`` and the shipped
``models/`` linked in; no ``runs/``), with the venv activated as the README's first lines say
(``.venv/bin`` first on ``PATH``). Cheap commands run exactly as written; the long ones run as
written plus flags that shrink their budget (:data:`SHRINK`, each naming what it adds), and the
few that cannot run here are listed in :data:`NOT_RUN` with the reason (``make demo`` and
``make test`` are measured by themselves). A README line that is in neither table and does not
run is a failure, so a new command in the README is covered as soon as it is written.

The MCP snippet runs with the venv's interpreter and *without* the venv on ``PATH``: it works
without activation. Total: about a minute on two cores.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DOMAINS, REPO

README = REPO / "README.md"

#: README lines not run here, and why (the test checks each is still in the README)
NOT_RUN = {
    "make demo": "3 minutes on 2 cores: measured by itself, never from inside the suite",
    "make test": "the suite itself",
    "make install && source .venv/bin/activate": "the test runs inside the installed venv, activated",
    "make results": "retrains every domain x tier (hours); resumable, measured by itself",
    "backoffice view runs/x.jsonl --serve": "serves until interrupted; tests/eval/test_view.py serves a page and reads it",
    "backoffice play --env approvals --trace runs/play.jsonl": "interactive: tests/eval/test_play.py plays it in a pseudo-terminal",
    "backoffice play --env approvals --split heldout --attempts 1": "interactive: tests/eval/test_play.py plays it in a pseudo-terminal",
    "backoffice replay runs/play.jsonl": "replays what the person played above; tests/eval/test_play.py replays its traces",
}

#: (a README command's start, flags appended to shrink its budget, or ``=`` and the start it is
#: replaced with); the rest of the line runs as written
SHRINK = [
    ("backoffice eval --env approvals --policy oracle --policy random --split heldout", " --limit 10"),
    ("backoffice eval --env all --workers 2", " --limit 2"),
    ("backoffice eval --env all --attempts 4 --ray", " --limit 1"),
    ("backoffice eval --env sufficiency --limit 20", " --limit 5"),
    ("backoffice seeds verify", " --env approvals"),
    ("backoffice seeds build", " --env approvals --out seeds-copy"),
    ("backoffice audit --env all", "=backoffice audit --env approvals"),
    ("backoffice new-domain refunds", " --package packages"),
    ("backoffice train --env approvals", " --timesteps 256 --n-envs 2 --n-steps 64 --validation-size 3 --eval-freq 256 --no-heldout"),
    ("backoffice eval --env approvals --policy sb3:", " --limit 3"),
    ("backoffice eval --env approvals --policy openai:fake", " --limit 2"),
]

#: README commands whose documented behaviour here (no endpoint configured) is a one-line error
EXPECTED_FAILURES = {
    "backoffice eval --env registration --judge model:gpt-4o-mini": (2, "$BACKOFFICE_JUDGE_ENDPOINT"),
}


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def command(line: str) -> str:
    """The command of a README line: the text before its trailing ``#`` comment."""
    return re.split(r"\s+#\s", line, maxsplit=1)[0].strip()


def shrunk(cmd: str) -> str:
    for start, flags in SHRINK:
        if cmd.startswith(start):
            return flags[1:] + cmd[len(start):] if flags.startswith("=") else cmd + flags
    return cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_clone(parent: Path, name: str) -> Path:
    """An empty folder laid out like a fresh clone after ``make install``."""
    root = parent / name
    root.mkdir()
    (root / ".venv").symlink_to(REPO / ".venv" if (REPO / ".venv").exists() else Path(sys.executable).resolve().parent.parent)
    (root / "models").symlink_to(REPO / "models")
    return root


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    return make_clone(tmp_path, "fresh-clone")


def activated_env(clone: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "BACKOFFICE_JUDGE_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    return env


def run(script: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(set(DOMAINS) != {"approvals", "registration", "remittance", "schedules", "sufficiency"},
                    reason="the README's commands name the five released domains")
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    """Each bash block runs in its own fresh clone (a block's commands build on each other: the
    report reads the evaluations above it), the blocks side by side (they wait on startup far
    more than they compute)."""
    from concurrent.futures import ThreadPoolExecutor

    bash = blocks("bash")
    lines = [line for block in bash for line in block.splitlines() if line.strip()]
    for cmd in NOT_RUN:
        assert any(command(line) == cmd for line in lines), f"NOT_RUN names {cmd!r}, which the README no longer shows"
    for start, _ in SHRINK:
        assert any(command(line).startswith(start) for line in lines), f"SHRINK names {start!r}, which the README no longer shows"
    clones = [make_clone(tmp_path, f"clone-{i}") for i in range(len(bash))]
    with ThreadPoolExecutor(max_workers=len(bash)) as pool:
        results = list(pool.map(run_block, bash, clones))
    failures = [f for fails, _ in results for f in fails]
    timings = sorted((t for _, ts in results for t in ts), reverse=True)
    print("\nREADME commands, seconds:", timings)
    assert not failures, "README commands that fail as written:\n\n" + "\n\n".join(failures)
    made = {p.relative_to(c).as_posix() for c in clones for p in c.rglob("*") if p.is_file()}
    # what the commands promised to write
    for promised in ("runs/x.jsonl", "runs/all.jsonl", "runs/t/trace.jsonl", "runs/approvals/model.zip", "runs/llm.jsonl",
                     "runs/chat.jsonl", "runs/chat.transcript.jsonl"):
        assert promised in made, promised


def run_block(block: str, clone: Path) -> tuple[list[str], list[tuple[float, str]]]:
    """Run one README bash block in ``clone``; ``(failures, (seconds, command) timings)``."""
    env = activated_env(clone)
    failures: list[str] = []
    timings: list[tuple[float, str]] = []
    if "&" in block and "kill %1" in block:  # a session: a background server, exports, then commands
        script = "set -e\n" + "\n".join(shrunk(command(line)) for line in block.splitlines() if command(line))
        script = script.replace("8011", str(free_port()))
        started = time.perf_counter()
        res = run(script, clone, env)
        timings.append((round(time.perf_counter() - started, 1), "the LLM session block"))
        if res.returncode != 0:
            failures.append(f"{script}\n-> exit {res.returncode}\n{res.stdout[-1500:]}\n{res.stderr[-1500:]}")
        return failures, timings
    for line in block.splitlines():
        cmd = command(line)
        if not cmd or cmd in NOT_RUN:
            continue
        started = time.perf_counter()
        res = run(shrunk(cmd), clone, env)
        timings.append((round(time.perf_counter() - started, 1), cmd))
        expected = next((v for k, v in EXPECTED_FAILURES.items() if cmd.startswith(k)), None)
        if expected is not None:
            code, text = expected
            one = [x for x in res.stderr.splitlines() if x.startswith("backoffice: ")]
            if res.returncode != code or len(one) != 1 or text not in one[0]:
                failures.append(f"{cmd}\n-> exit {res.returncode}, expected {code} and one line naming {text}\n{res.stderr[-1500:]}")
        elif res.returncode != 0:
            failures.append(f"{shrunk(cmd)}\n-> exit {res.returncode}\n{res.stdout[-800:]}\n{res.stderr[-1500:]}")
    return failures, timings


@pytest.mark.skipif("approvals" not in DOMAINS, reason="the snippets use the approvals release")
def test_every_readme_python_snippet_runs(clone: Path) -> None:
    """Each ``python`` block, with the venv's interpreter; with the venv *not* on ``PATH`` (as
    when a newcomer runs ``.venv/bin/python snippet.py`` without activating it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p).resolve() != Path(sys.executable).parent.resolve())
    snippets = blocks("python")
    assert len(snippets) >= 3
    for i, code in enumerate(snippets):
        path = clone / f"snippet_{i}.py"
        path.write_text(code)
        res = subprocess.run([sys.executable, str(path)], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"README python block {i}:\n{code}\n-> {res.stderr[-2000:]}"
