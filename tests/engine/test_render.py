"""``render_mode="ansi"`` returns a readable text view of the last step, ``"human"`` prints it."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import backoffice.envs  # noqa: F401  (registers the ids)
from backoffice.envs import DOMAINS as TITLES, make_native
from conftest import DOMAINS, domain_params


def test_render_modes_are_listed_and_check_env_passes_with_the_render_check() -> None:
    env = gym.make(f"backoffice/{TITLES[DOMAINS[0]]}-v0", render_mode="ansi").unwrapped
    assert env.metadata["render_modes"] == ["ansi", "human"]
    check_env(env)  # no skip_render_check: it also builds the env in every other listed mode
    env.close()


@pytest.mark.parametrize("domain", domain_params())
def test_ansi_shows_the_last_call_its_result_and_the_step_count(domain: str) -> None:
    env = gym.make(f"backoffice/{TITLES[domain]}-v0", render_mode="ansi")
    _, info = env.reset(seed=3)
    text = env.render()
    assert isinstance(text, str) and text.startswith(f"{domain} {info['task_id']}: step 0/{info['max_steps']}")
    assert "tools: " + ", ".join(info["allowed_tools"]) in text
    tool = next(t for t in info["allowed_tools"] if t.startswith(("list_", "get_")))
    env.step({"tool": tool, "args": {}})
    text = env.render()
    assert f"step 1/{info['max_steps']}" in text and f"> {tool}(" in text
    assert "< ok" in text or "< error " in text
    assert not text.lstrip().startswith("{")  # not the raw observation
    env.step({"tool": "no_such_tool", "args": {"x": 1}})
    text = env.render()
    assert "step 2/" in text and '> no_such_tool({"x":1})' in text and "< error unknown_tool: " in text
    env.step("not json")
    assert "(invalid action)" in env.render() and "error invalid_action" in env.render()
    env.step({"tool": "submit", "args": {}})
    assert "step 4/" in env.render() and "(episode over)" in env.render()
    env.close()


def test_human_prints_every_reset_and_step(capsys: pytest.CaptureFixture[str]) -> None:
    env = make_native(DOMAINS[0], render_mode="human")
    env.reset(seed=1)
    env.step({"tool": "submit", "args": {}})
    assert env.render() is None
    out = capsys.readouterr().out
    assert "step 0/" in out and "> submit({})" in out and out.count("> submit({})") == 2
    env.close()


def test_no_render_mode_renders_nothing() -> None:
    env = make_native(DOMAINS[0])
    env.reset(seed=1)
    assert env.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        make_native(DOMAINS[0], render_mode="rgb_array")
