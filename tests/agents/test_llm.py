"""LLM agents: system prompt, the chat loop, the OpenAI-compatible adapter and the fake endpoint.

Every behaviour is checked on the toy domain (always present); the acceptance runs (oracle chat
passes every heldout task, text-only chat fails them) also run over every installed domain.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import build_release
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.release import Release, load_release
from backoffice.envs.core.trace import read_trace
from backoffice.training.agents import chat as llm
from backoffice.training.agents.chat import ChatAgent, ChatReply, ToolCall
from backoffice.training.agents.fake_openai import FakeOpenAI
from backoffice.training.agents.openai_chat import OpenAIChat
from backoffice.training.eval.rollout import run_episode
from backoffice.training.policies import get_policy
from backoffice.training.policies.base import ScriptedPolicy, call
from conftest import DOMAINS, domain_params
from toy_domain import DOMAIN as TOY, ToyEnv


class ToyOracle(ScriptedPolicy):
    """Reads counter C-1 and bumps it up to the target named in the brief."""

    def plan(self, brief: dict[str, Any], info: dict[str, Any]):
        row = yield call("get_counter", counter_id="C-1")
        for _ in range(brief["params"]["target"] - row["result"]["value"]):
            yield call("bump", counter_id="C-1")


def toy_policy(domain: str) -> ScriptedPolicy:
    assert domain == "toy"
    return ToyOracle()


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    root = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return Release("toy", root)


def toy_env(release: Release, **kw: Any) -> ToyEnv:
    return ToyEnv(release=release, split="heldout", **kw)


def scripted(*replies: Any):
    """A chat function returning ``replies`` in order, then ``submit`` forever; it logs its inputs."""
    seen: list[tuple[list[dict], list[dict]]] = []

    def chat(messages: list[dict], tools: list[dict]) -> Any:
        seen.append((messages, tools))
        turn = len(seen) - 1
        return replies[turn] if turn < len(replies) else ChatReply(None, (ToolCall(f"s{turn}", "submit", "{}"),))

    chat.seen = seen  # type: ignore[attr-defined]
    return chat


def key_strings(key: Any) -> set[str]:
    """String leaves of an answer key (ids, expected values, failure codes ...)."""
    out: set[str] = set()
    if isinstance(key, dict):
        for _k, v in key.items():
            out |= key_strings(v)
    elif isinstance(key, (list, tuple)):
        for v in key:
            out |= key_strings(v)
    elif isinstance(key, str):
        out.add(key)
    return out


# -- system prompt ---------------------------------------------------------------------------
def test_system_prompt_has_instructions_tools_and_rules_but_no_key(release: Release) -> None:
    env = toy_env(release)
    env.reset(options={"task_id": "TOY-H0001"})
    prompt = llm.system_prompt(env)
    task = env.task
    assert task.instructions in prompt and "TOY-H0001" in prompt
    for name in task.allowed_tools:
        assert f"- {name}: " in prompt
    assert "cut off at 8 steps" in prompt and "call `submit`" in prompt
    key = release.answer_key("TOY-H0001")
    assert "wrong_value" not in prompt and "counters:C-1" not in prompt and "plain" not in prompt
    assert not any(s in prompt for s in key_strings(key["checks"]) if len(s) > 3 and s not in dumps(task.brief()).decode())


def test_system_prompt_requires_reset(release: Release) -> None:
    with pytest.raises(RuntimeError):
        llm.system_prompt(toy_env(release))


@pytest.mark.parametrize("domain", domain_params())
def test_domain_prompts_hold_no_answer_key_content(domain: str) -> None:
    env = make_native(domain, split="heldout")
    rel = load_release(domain)
    for task_id in rel.split_ids["heldout"][:25]:
        obs, info = env.reset(options={"task_id": task_id})
        prompt = llm.system_prompt(env)
        assert env.task.instructions.strip() in prompt
        public = obs + dumps(info["tools"]).decode() + (llm.domain_description(domain) or "")
        leaked = [s for s in key_strings(rel.answer_key(task_id)) if len(s) >= 6 and s not in public and s in prompt]
        assert not leaked, f"{task_id}: answer-key strings in the prompt: {leaked[:5]}"
        agent = ChatAgent(llm.text_only_chat)
        agent.reset(obs, info)  # the eval path builds its prompt from (obs, info): same text
        assert agent.messages[0]["content"] == prompt


def test_description_section_is_extracted() -> None:
    doc = """Approvals env.

    ## Description
    Decide pending requests
    against the rules.

    ## Action Space
    A tool call.
    """
    import inspect

    assert llm._description_section(inspect.cleandoc(doc)) == "Decide pending requests against the rules."
    assert llm._description_section("no sections") is None


# -- the chat loop ---------------------------------------------------------------------------
def test_oracle_chat_passes_every_toy_heldout_task_with_the_native_calls(release: Release) -> None:
    env, native = toy_env(release), toy_env(release)
    chat = llm.policy_chat(toy_policy)
    for task_id in release.split_ids["heldout"]:
        res = llm.chat_episode(env, chat, task_id=task_id)
        ref = run_episode(native, ToyOracle(), task_id=task_id)
        assert res.grade["pass"] and res.grade == ref.grade
        assert [(r["tool"], r["args"]) for r in env.trace] == [(r["tool"], r["args"]) for r in native.trace]
        assert res.steps == ref.steps and res.info["end_state_hash"] == ref.info["end_state_hash"]


def test_text_only_chat_fails_every_toy_task_and_every_reply_is_a_step(release: Release) -> None:
    env = toy_env(release)
    for task_id in release.split_ids["heldout"]:
        res = llm.chat_episode(env, llm.text_only_chat, task_id=task_id)
        assert not res.grade["pass"] and res.steps == 8
        assert [r["error_code"] for r in env.trace] == ["invalid_action"] * 8 and env.state.diff() == {}
    roles = [m["role"] for m in res.transcript]
    assert roles == ["system", "user"] + ["assistant", "user"] * 8
    assert res.transcript[2]["content"].startswith("I would") and "invalid_action" in res.transcript[3]["content"]
    assert [m.get("step") for m in res.transcript if m["role"] == "user"][1:] == list(range(1, 9))


def test_several_tool_calls_in_one_reply_are_applied_in_order(release: Release) -> None:
    bump = '{"counter_id": "C-1"}'
    chat = scripted(ChatReply("Reading then bumping.", (
        ToolCall("a", "bump", bump), ToolCall("b", "get_counter", bump), ToolCall("c", "bump", bump))))
    env = toy_env(release)
    res = llm.chat_episode(env, chat, task_id="TOY-H0001")
    assert [r["tool"] for r in env.trace] == ["bump", "get_counter", "bump", "submit"]
    tool_msgs = [m for m in res.transcript if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["a", "b", "c", "s1"]
    assert loads(tool_msgs[1]["content"])["result"]["value"] == 1  # read between the two bumps
    assert [m["step"] for m in tool_msgs] == [1, 2, 3, 4]
    # the second request saw the whole first reply and its three results, in order
    messages, tools = chat.seen[1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert messages[2]["content"] == "Reading then bumping." and len(messages[2]["tool_calls"]) == 3
    assert tools == env.tool_specs(format="openai")
    assert res.grade["pass"] == (release.task("TOY-H0001").params["target"] == 2)


def test_tool_errors_go_back_as_tool_messages_and_leave_state_alone(release: Release) -> None:
    chat = scripted(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "bump", "arguments": "{not json"}},
            {"id": "x2", "type": "function", "function": {"name": "bump", "arguments": "[1, 2]"}},
            {"id": "x3", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
            {"id": "x4", "type": "function", "function": {"name": "bump", "arguments": {"counter_id": "C-1", "by": "many"}}},
            {"id": "x5", "type": "function", "function": {"name": "get_counter", "arguments": '{"counter_id": "C-9"}'}},
        ]},
    )
    env = toy_env(release)
    res = llm.chat_episode(env, chat, task_id="TOY-H0002")
    codes = [r["error_code"] for r in env.trace]
    assert codes == ["invalid_action", "invalid_action", "unknown_tool", "invalid_args", "not_found", None]
    assert [r["tool"] for r in env.trace[:3]] == ["bump", "bump", "nope"]
    results = [loads(m["content"]) for m in res.transcript if m["role"] == "tool"][:5]
    assert [r["status"] for r in results] == ["error"] * 5 and [r["code"] for r in results] == codes[:5]
    assert res.info["diff"] == {}


def test_calls_after_the_terminal_call_are_skipped(release: Release) -> None:
    chat = scripted(ChatReply(None, (ToolCall("t1", "submit", ""), ToolCall("t2", "bump", '{"counter_id": "C-1"}'))))
    env = toy_env(release)
    res = llm.chat_episode(env, chat, task_id="TOY-H0000")
    assert [r["tool"] for r in env.trace] == ["submit"] and res.steps == 1
    assert res.transcript[-1] == {**res.transcript[-1], "role": "tool", "tool_call_id": "t2", "skipped": True, "content": None}


def test_replies_of_every_shape_are_normalized() -> None:
    r = llm.normalize_reply({"content": "hi", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, 3)
    assert r == ChatReply("hi", (ToolCall("call_3_0", "f", '{"a":1}'),))
    assert llm.normalize_reply("just text", 0) == ChatReply("just text", ())
    assert llm.normalize_reply(None, 0) == ChatReply(None, ())
    assert llm.normalize_reply(ChatReply(None, (ToolCall("", "g"),)), 2).tool_calls[0].id == "call_2_0"
    assert llm.call_to_action(ToolCall("i", "g", "")) == {"tool": "g", "args": {}}
    assert llm.call_to_action(ToolCall("i", "g", "oops")) == {"tool": "g", "args": "oops"}


def test_transcript_is_written_beside_the_trace_and_is_deterministic(release: Release, tmp_path: Path) -> None:
    outputs = []
    for run in ("a", "b"):
        trace = tmp_path / run / "episodes.jsonl"
        env = toy_env(release, trace_path=str(trace))
        chat = llm.policy_chat(toy_policy)
        for task_id in ("TOY-H0003", "TOY-H0004"):
            res = llm.chat_episode(env, chat, task_id=task_id)
            assert res.transcript_path == tmp_path / run / "episodes.transcript.jsonl"
        llm.chat_episode(env, scripted("thinking", ChatReply(None, (ToolCall("z", "submit", "{}"),))), task_id="TOY-H0005")
        env.close()
        outputs.append((trace.read_bytes(), res.transcript_path.read_bytes()))
    assert outputs[0] == outputs[1]
    lines = [json.loads(x) for x in outputs[0][1].splitlines()]
    trace_lines = read_trace(tmp_path / "a" / "episodes.jsonl")
    assert {ln["episode_id"] for ln in lines} == {t["episode_id"] for t in trace_lines}
    for t in trace_lines:  # every trace step has exactly one transcript line that answers it
        answers = [ln for ln in lines if ln["episode_id"] == t["episode_id"] and ln.get("step") == t["step"]]
        assert len(answers) == 1
        if answers[0]["role"] == "tool":
            assert loads(answers[0]["content"])["status"] == t["result_status"]
        else:
            assert t["error_code"] == "invalid_action"


def test_explicit_transcript_path_and_chat_errors_keep_the_transcript(release: Release, tmp_path: Path) -> None:
    def broken(messages: list[dict], tools: list[dict]) -> Any:
        if len(messages) > 2:
            raise ConnectionError("endpoint down")
        return ChatReply(None, (ToolCall("k", "get_counter", '{"counter_id": "C-1"}'),))

    path = tmp_path / "t.jsonl"
    with pytest.raises(llm.EndpointError) as err:
        llm.chat_episode(toy_env(release), broken, task_id="TOY-H0000", transcript_path=path)
    assert isinstance(err.value.cause, ConnectionError) and err.value.step == 1
    roles = [json.loads(x)["role"] for x in path.read_bytes().splitlines()]
    assert roles == ["system", "user", "assistant", "tool"]


def test_chat_agent_is_a_policy_for_the_native_rollout(release: Release) -> None:
    env = toy_env(release)
    agent = ChatAgent(llm.policy_chat(toy_policy), name="toy-chat")
    for task_id in release.split_ids["heldout"][:5]:
        res = run_episode(env, agent, task_id=task_id)
        assert res.grade["pass"]
    assert agent.transcript[0]["role"] == "system"


# -- acceptance over the installed domains ----------------------------------------------------
@cache
def heldout(domain: str) -> tuple[str, ...]:
    return load_release(domain).split_ids["heldout"]


@pytest.mark.parametrize("domain", domain_params())
def test_oracle_chat_passes_every_heldout_task(domain: str) -> None:
    env = make_native(domain, split="heldout")
    chat = llm.oracle_chat()
    failed = [t for t in heldout(domain) if not llm.chat_episode(env, chat, task_id=t).grade["pass"]]
    assert not failed, f"{domain}: oracle chat failed {failed[:10]}"


@pytest.mark.parametrize("domain", domain_params())
def test_oracle_chat_makes_the_oracles_calls(domain: str) -> None:
    env, native = make_native(domain, split="heldout"), make_native(domain, split="heldout")
    for task_id in heldout(domain)[:10]:
        res = llm.chat_episode(env, llm.oracle_chat(), task_id=task_id)
        ref = run_episode(native, get_policy(domain, "oracle"), task_id=task_id)
        assert [(r["tool"], r["args"]) for r in env.trace] == [(r["tool"], r["args"]) for r in native.trace]
        assert res.grade == ref.grade and res.info["end_state_hash"] == ref.info["end_state_hash"]


@pytest.mark.parametrize("domain", domain_params())
def test_text_only_chat_fails_every_heldout_task(domain: str) -> None:
    env = make_native(domain, split="heldout")
    for task_id in heldout(domain):
        res = llm.chat_episode(env, llm.text_only_chat, task_id=task_id)
        assert not res.grade["pass"], f"{task_id}: a text-only agent passed"
        assert res.steps == res.info["grade"]["process_metrics"]["steps"] == env._limit
        assert all(r["error_code"] == "invalid_action" for r in env.trace)


# -- the OpenAI-compatible adapter against the fake endpoint -----------------------------------
requires_openai = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="needs the `llm` extra (openai)")


@requires_openai
def test_openai_adapter_plays_the_oracle_through_the_fake_endpoint(release: Release) -> None:
    env = toy_env(release)
    with FakeOpenAI(llm.policy_chat(toy_policy)) as server:
        chat = OpenAIChat(model="fake-oracle", base_url=server.base_url, api_key="test-key", seed=3, temperature=0.0)
        for task_id in release.split_ids["heldout"][:6]:
            res = llm.chat_episode(env, chat, task_id=task_id)
            assert res.grade["pass"]
            assert server.requests >= res.steps
        assert chat.request([{"role": "user", "content": "x", "turn": 0}], [])["seed"] == 3
    with FakeOpenAI(llm.text_only_chat) as server:
        chat = OpenAIChat(model="fake-text", base_url=server.base_url)
        res = llm.chat_episode(env, chat, task_id="TOY-H0001")
        assert not res.grade["pass"] and res.steps == 8 and server.requests == 8


@requires_openai
def test_openai_adapter_reads_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("BACKOFFICE_LLM_MODEL", "from-env")
    monkeypatch.setenv("BACKOFFICE_LLM_TEMPERATURE", "0.5")
    chat = OpenAIChat()
    assert chat.model == "from-env" and chat.base_url == "http://127.0.0.1:9/v1" and chat.temperature == 0.5
    assert OpenAIChat(model="m", base_url="http://127.0.0.1:8/v1").model == "m"
    monkeypatch.delenv("BACKOFFICE_LLM_MODEL")
    with pytest.raises(ValueError):
        OpenAIChat()


def test_fake_endpoint_speaks_chat_completions(release: Release) -> None:
    import urllib.request

    with FakeOpenAI(llm.text_only_chat) as server:
        body = dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        req = urllib.request.Request(server.base_url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            out = json.loads(resp.read())
        assert out["object"] == "chat.completion" and out["choices"][0]["finish_reason"] == "stop"
        assert out["choices"][0]["message"]["content"].startswith("I would")
        bad = urllib.request.Request(server.base_url + "/chat/completions", data=b"{", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(bad, timeout=5)
        assert err.value.code == 400


@requires_openai
def test_openai_policy_name_builds_a_chat_agent(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    env = toy_env(release)
    with FakeOpenAI(llm.policy_chat(toy_policy)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        policy = get_policy("toy", "openai:fake-model", seed=1)
        assert isinstance(policy, ChatAgent) and policy.name == "openai:fake-model" and policy.chat.seed == 1
        res = run_episode(env, policy, task_id="TOY-H0007")
        assert res.grade["pass"]


@requires_openai
@pytest.mark.parametrize("domain", domain_params())
def test_openai_adapter_passes_domain_tasks_through_the_fake_endpoint(domain: str) -> None:
    env = make_native(domain, split="heldout")
    with FakeOpenAI() as server:
        chat = OpenAIChat(model="fake-oracle", base_url=server.base_url)
        for task_id in heldout(domain)[:3]:
            assert llm.chat_episode(env, chat, task_id=task_id).grade["pass"]


@requires_openai
@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain (the CLI loads releases by name)")
def test_cli_eval_with_an_openai_policy_reports_pass_hat_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from backoffice.training.cli.main import app

    domain = DOMAINS[0]
    out = tmp_path / "llm.jsonl"
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        result = CliRunner().invoke(app, ["eval", "--env", domain, "--policy", "openai:fake", "--limit", "2",
                                          "--attempts", "2", "--out", str(out)])
        assert result.exit_code == 0, result.output
        chat_trace = tmp_path / "chat.jsonl"
        result = CliRunner().invoke(app, ["chat", "--env", domain, "--model", "fake", "--limit", "2", "--trace", str(chat_trace)])
        assert result.exit_code == 0, result.output
        assert "2/2 passed" in result.output
    records = [json.loads(x) for x in out.read_bytes().splitlines()]
    assert sorted((r["task_id"], r["attempt"]) for r in records) == sorted((t, a) for t in heldout(domain)[:2] for a in (0, 1))
    assert all(r["pass"] and r["agent"] == "openai:fake" and r["agent_version"] == "fake" for r in records)
    report = CliRunner().invoke(app, ["report", str(out), "--json", "--no-plots"])
    assert report.exit_code == 0, report.output
    assert "pass_hat_k" in report.output
    assert (tmp_path / "chat.transcript.jsonl").exists() and read_trace(chat_trace)


# -- surviving the endpoint ------------------------------------------------------------------------
def no_null_content(bodies: list[dict]) -> None:
    """No request ever sends an assistant message with content null (and no tool calls) or a null tool result."""
    for body in bodies:
        for m in body["messages"]:
            if m.get("content") is None:
                assert m["role"] == "assistant" and m.get("tool_calls") and "content" not in m, m


@requires_openai
def test_empty_choices_and_empty_replies_are_never_sent_back_as_null(release: Release) -> None:
    env = toy_env(release)
    with FakeOpenAI(llm.policy_chat(toy_policy), fault=lambda req: (200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []})
            if sum(m["role"] == "assistant" for m in req["messages"]) in (0, 2) else None) as server:
        chat = OpenAIChat(model="fake", base_url=server.base_url, max_retries=0)
        agent = ChatAgent(chat)
        res = llm.chat_episode(env, agent, task_id="TOY-H0001")
        no_null_content(server.bodies)
        empties = [m for m in res.transcript if m["role"] == "assistant" and not m.get("tool_calls")]
        assert empties and all(m["content"] == "" and m["finish_reason"] == "no_choices" for m in empties)
        assert agent.stats()["finish_reasons"]["no_choices"] == 2
    wire = [m for m in server.bodies[-1]["messages"] if m["role"] == "assistant"]
    assert wire[0] == {"role": "assistant", "content": ""}


@requires_openai
def test_usage_and_finish_reasons_are_counted(release: Release) -> None:
    env = toy_env(release)
    with FakeOpenAI(llm.policy_chat(toy_policy)) as server:
        agent = ChatAgent(OpenAIChat(model="fake", base_url=server.base_url))
        res = llm.chat_episode(env, agent, task_id="TOY-H0002")
    stats = agent.stats()
    assert stats["requests"] == res.steps == stats["finish_reasons"]["tool_calls"]
    assert stats["usage"]["completion_tokens"] == res.steps and stats["usage"]["total_tokens"] > res.steps
    assert all("usage" in m for m in res.transcript if m["role"] == "assistant")


def test_unparsable_arguments_are_named_as_such(release: Release) -> None:
    env = toy_env(release)
    res = llm.chat_episode(env, scripted(ChatReply(None, (ToolCall("u", "bump", "{counter_id: C-1"),))), task_id="TOY-H0001")
    first = loads(next(m for m in res.transcript if m["role"] == "tool")["content"])
    assert first["code"] == "invalid_action" and "unparsable" in first["message"]


def faulty(domain_task: str, status: int, message: str):
    """Answer every request of the episode on ``domain_task`` with ``status``."""
    def fault(request: dict) -> Any:
        if domain_task in request["messages"][1]["content"]:
            return status, {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error"}}
        return None
    return fault


@requires_openai
@pytest.mark.skipif(not DOMAINS, reason="needs an installed domain (the CLI loads releases by name)")
@pytest.mark.parametrize("status,message", [(500, "internal error"), (400, "context length exceeded")])
def test_cli_eval_survives_endpoint_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, message: str) -> None:
    from typer.testing import CliRunner

    from backoffice.training.cli.main import app

    domain = DOMAINS[0]
    ids = heldout(domain)[:3]
    out, trace = tmp_path / "llm.jsonl", tmp_path / "trace.jsonl"
    with FakeOpenAI(fault=faulty(ids[1], status, message)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        result = CliRunner().invoke(app, ["eval", "--env", domain, "--policy", "openai:fake", "--limit", "3", "--out", str(out),
                                          "--retries", "1", "--timeout", "10", "--trace", str(trace), "--concurrency", "2"])
        no_null_content(server.bodies)
    assert result.exit_code == 1, result.output
    assert "1 of 3 episodes errored (endpoint)" in " ".join(result.output.split())
    summary = [line for line in result.output.splitlines() if "episodes errored (endpoint)" in line]
    assert len(summary) == 1 and "first:" in summary[0]  # one line, never wrapped (issue 35)
    records = {r["task_id"]: r for r in map(json.loads, out.read_bytes().splitlines())}
    assert set(records) == set(ids)
    bad = records[ids[1]]
    assert bad["error"]["status_code"] == status and message in bad["error"]["message"] and bad["error"]["step"] == 0
    assert bad["pass"] is False and bad["llm"]["requests"] == 1  # retries happen inside the client
    for tid in (ids[0], ids[2]):
        good = records[tid]
        assert good["pass"] and "error" not in good
        assert good["llm"]["finish_reasons"]["tool_calls"] == good["steps"] and good["llm"]["usage"]["total_tokens"] > 0
    transcript = [json.loads(x) for x in (tmp_path / "trace.transcript.jsonl").read_bytes().splitlines()]
    assert {t["task_id"] for t in transcript} == set(ids)
    assert all(r["transcript_path"] == str(tmp_path / "trace.transcript.jsonl") for r in records.values())


def test_eval_help_lists_every_policy_kind() -> None:
    from typer.testing import CliRunner

    from backoffice.training.cli.main import app
    from backoffice.training.policies import CATALOG_POLICIES

    text = " ".join(CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "300"}).output.split())
    for kind in ("oracle", "random", "noop", "wrong:", "sb3:", "openai:", "--timeout", "--retries", "--concurrency", *CATALOG_POLICIES):
        assert kind in text, kind
