"""``backoffice play`` as a person uses it: a pseudo-terminal session (pexpect) that plays an
oracle task to its pass and a wrong one to its failure code, errors shown as the agent gets
them; the trace it writes replays with ``backoffice replay``; a heldout task is graded once."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pexpect
import pytest

from backoffice.envs import make_native
from backoffice.envs.core.canonical import dumps, loads
from backoffice.training.agents.play import ArgsError, parse_call
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy

pytestmark = pytest.mark.xdist_group("play")

DOMAIN = "approvals"
CLI = [sys.executable, "-m", "backoffice.training.cli"]
PROMPT = r"\[step (\d+)/\d+\] > "


@cache
def _calls(task_id: str, policy: str, split: str = "train") -> tuple[tuple[tuple[str, Any], ...], dict[str, Any]]:
    env = make_native(DOMAIN, split=split)
    res = run_episode(env, get_policy(DOMAIN, policy), task_id=task_id)
    return tuple((r["tool"], r["args"]) for r in env.trace), res.grade


@cache
def _wrong_task(code: str) -> str:
    """A train task that ``wrong:<code>`` fails with ``code``."""
    for tid in make_native(DOMAIN).release.split_ids["train"][:40]:
        if code in _calls(tid, f"wrong:{code}")[1]["failure_codes"]:
            return tid
    raise AssertionError(f"no train task among the first 40 fails with {code}")


def _spawn(*args: str) -> pexpect.spawn:
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    return pexpect.spawn(CLI[0], [*CLI[1:], "play", "--env", DOMAIN, *args], encoding="utf-8", timeout=60,
                         dimensions=(50, 200), env=env)


def _type(child: pexpect.spawn, calls: Any, key_value_first: bool = True) -> None:
    """Type every call at its prompt: the first with flat arguments as key=value, the rest as JSON."""
    used_kv = not key_value_first
    for n, (tool, args) in enumerate(calls, 1):
        child.expect(PROMPT)
        assert int(child.match.group(1)) == n
        flat = bool(args) and all(isinstance(v, str) and v and not _is_json(v) and not set(v) & set(" \"'=") for v in args.values())
        if not used_kv and flat:
            child.sendline(f"{tool} " + " ".join(f"{k}={v}" for k, v in args.items()))
            used_kv = True
        else:
            child.sendline(f"{tool} {dumps(args).decode()}" if args else tool)
    assert used_kv, "no call was typed as key=value"


def _is_json(text: str) -> bool:
    try:
        loads(text)
        return True
    except Exception:
        return False


def _replay(trace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "replay", str(trace)], capture_output=True, text=True, timeout=120)


def test_parse_call() -> None:
    assert parse_call("submit") == ("submit", {})
    assert parse_call('get_request {"request_id": "R-1"}') == ("get_request", {"request_id": "R-1"})
    assert parse_call('find_people name="Greta Jansen" limit=5 flags=[1,2] x=null') == (
        "find_people", {"name": "Greta Jansen", "limit": 5, "flags": [1, 2], "x": None})
    for bad in ('get {"a": 1', "get [1]", "get a", "get a=1 b"):
        with pytest.raises(ArgsError):
            parse_call(bad)


def test_play_an_oracle_task_to_pass_and_replay_its_trace(tmp_path: Path) -> None:
    tid = make_native(DOMAIN).release.split_ids["train"][0]
    calls, grade = _calls(tid, "oracle")
    assert grade["pass"]
    trace = tmp_path / "oracle.jsonl"
    child = _spawn("--task-id", tid, "--trace", str(trace))  # split defaults to train
    child.expect(f"=== {DOMAIN} {tid} \\(train;")
    child.expect("instructions: ")
    child.expect(r"record_decision\(request_id: string, outcome: proceed\|hold\|reject")
    # a line the prompt cannot read is not sent and is no step
    child.expect(PROMPT)
    child.sendline('get_request {"request_id": ')
    child.expect(r"\(not sent\) the arguments are not valid JSON")
    child.sendline("/tool submit")
    child.expect('"name": "submit"')
    _type(child, calls)
    child.expect(r"pass: true\s+score: 1\.000\s+failure_codes: -")
    child.expect(r"Checks")
    for c in grade["checks"]:
        child.expect(f"pass  {c['id']} \\(")
    child.expect("Diff")
    child.expect(f"trace: {trace}")
    _quit_and_replay(child, trace)


def _quit_and_replay(child: Any, trace: Path) -> None:
    """Decline another task, see the session end cleanly, and replay the trace it wrote."""
    child.expect("another task")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    out = _replay(trace)
    assert out.returncode == 0 and "1/1 episodes reproduced" in out.stdout, out.stdout + out.stderr


def test_play_a_wrong_task_to_its_failure_code_errors_as_the_agent_gets_them(tmp_path: Path) -> None:
    code = "self_approval"
    tid = _wrong_task(code)
    calls, grade = _calls(tid, f"wrong:{code}")
    trace = tmp_path / "wrong.jsonl"
    child = _spawn("--task-id", tid, "--trace", str(trace))
    child.expect(PROMPT)
    child.sendline("no_such_tool {}")  # an error is a step, shown as the agent gets it
    child.expect(r"error unknown_tool: no tool named 'no_such_tool'")
    child.expect(r'\(what the agent gets: \{"code":"unknown_tool"')
    child.expect(PROMPT)
    assert child.match.group(1) == "2"
    child.sendline("get_request request_id=NO-SUCH-REQUEST")
    child.expect(r"error not_found: ")
    # the wrong policy's calls, from step 3 on
    for n, (tool, args) in enumerate(calls, 3):
        child.expect(PROMPT)
        assert int(child.match.group(1)) == n
        child.sendline(f"{tool} {dumps(args).decode()}")
    child.expect(r"pass: false\s+score: \d\.\d{3}\s+failure_codes: ([^\r\n]+)")
    codes = child.match.group(1).strip().split(", ")
    assert code in codes and codes == grade["failure_codes"]
    child.expect(f"FAIL  \\S+ \\((work|gate)\\)  {code}")
    _quit_and_replay(child, trace)


def test_a_heldout_task_is_graded_once_per_session_unless_declared(tmp_path: Path) -> None:
    tid = make_native(DOMAIN, split="heldout").release.split_ids["heldout"][0]
    trace = tmp_path / "heldout.jsonl"
    child = _spawn("--split", "heldout", "--task-id", tid, "--trace", str(trace))
    child.expect(PROMPT)
    child.sendline("submit")
    child.expect(r"pass: false\s+score: \d\.\d{3}\s+failure_codes: \S+")
    child.expect(r"heldout: graded attempt 1 of 1; the checks' details are not shown")
    before = child.before
    assert "Checks" not in before
    child.expect("another task")
    child.sendline(tid)
    child.expect(f"{tid} \\(heldout\\) was played 1 time\\(s\\) in this session")
    child.expect("another task")
    child.sendline(make_native(DOMAIN).release.split_ids["train"][0])  # a train task is not in this session's split
    child.expect("is not in the heldout split")
    child.expect("another task")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert _replay(trace).returncode == 0
    # declared attempts: the same task twice
    child = _spawn("--split", "heldout", "--task-id", tid, "--attempts", "2", "--trace", str(tmp_path / "k2.jsonl"))
    for attempt in (1, 2):
        child.expect(PROMPT)
        child.sendline("submit")
        child.expect(f"graded attempt {attempt} of 2")
        child.expect("another task")
        child.sendline(tid)
    child.expect("was played 2 time")
    child.expect("another task")
    child.sendline("")
    child.expect(pexpect.EOF)
