"""TRL's environment_factory: the tool class of every installed domain, seen the way TRL sees it.

- The schema transformers' own ``get_json_schema`` derives from each generated method (the one
  TRL renders into the prompt) equals the native spec: name, description, every argument's
  type, enum, description, required, nullability. The keywords ``get_json_schema`` cannot emit
  (``UNEXPRESSIBLE``: lengths, ranges, item counts, defaults, ``additionalProperties``; the
  argument model's own description) are removed from the native side, and nothing else; a
  nullable argument is compared in its ``{"type": X, "nullable": true}`` form.
- Those constraints still bind: a call breaking one through the method is the native
  ``invalid_args`` error; with ``constraints_in_descriptions`` they are in the text the model reads.
- The oracle's calls made through the methods reproduce the native observations and grade,
  and the reward is the final score, 0.0 before the end (no grade leaks before it).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

pytest.importorskip("transformers")
from transformers.utils import get_json_schema  # noqa: E402

from backoffice.envs import make_native  # noqa: E402
from backoffice.envs.core.canonical import loads  # noqa: E402
from backoffice.training.agents.trl import (  # noqa: E402
    RESERVED,
    UNEXPRESSIBLE,
    BackofficeToolEnv,
    fallback_description,
    final_score_reward,
    tool_env_class,
)
from backoffice.training.eval.rollout import run_episode  # noqa: E402
from backoffice.training.policies import get_policy  # noqa: E402
from conftest import DOMAINS, domain_params  # noqa: E402

pytestmark = pytest.mark.skipif(not DOMAINS, reason="needs an installed domain")


def expressible(schema: dict[str, Any], top: bool = False) -> dict[str, Any]:
    """The native schema minus what get_json_schema cannot say (see the module docstring)."""
    out = {k: v for k, v in schema.items() if k not in UNEXPRESSIBLE and not (top and k == "description")}
    if "anyOf" in out:
        branches = [b for b in out.pop("anyOf") if b != {"type": "null"}]
        assert len(branches) == 1, schema  # every nullable argument of the domains is X | None
        nullable = len(branches) < len(schema["anyOf"])
        out = {**expressible(branches[0]), **out}
        if nullable:
            out["nullable"] = True
    if "items" in out:
        out["items"] = expressible(out["items"])
    if "properties" in out:
        out["properties"] = {n: {**expressible(p), "description": p.get("description") or fallback_description(n)}
                             for n, p in out["properties"].items()}
    return out


def methods_as_trl_finds_them(env: Any) -> dict[str, Any]:
    """``trl.GRPOTrainer``'s discovery: public bound methods except ``reset`` and ``get_reward``."""
    found = {}
    for name, member in inspect.getmembers(env, predicate=inspect.ismethod):
        assert name != "grade", "a public grade() would be exposed to the model as a tool"
        if name not in RESERVED and not name.startswith("_"):
            found[name] = member
    return found


@pytest.mark.parametrize("domain", domain_params())
def test_get_json_schema_of_each_method_equals_the_native_spec(domain: str) -> None:
    cls = tool_env_class(domain)
    env = cls()
    native = {s["name"]: s for s in cls.native_tools}
    methods = methods_as_trl_finds_them(env)
    assert set(methods) == set(native)  # one method per tool, and nothing else is a tool
    dropped = set()
    for name, method in methods.items():
        got = get_json_schema(method)
        assert got["type"] == "function"
        fn = got["function"]
        spec = native[name]
        assert fn["name"] == spec["name"] and fn["description"] == spec["description"]
        assert fn["parameters"] == expressible(spec["parameters"], top=True), name
        assert fn["return"]["type"] == "string"
        assert json.dumps(got)  # plain JSON, as the chat template needs
        text = json.dumps(spec["parameters"])
        dropped |= {k for k in UNEXPRESSIBLE if f'"{k}"' in text}
    # the domains do use constraints get_json_schema cannot carry (otherwise this test proves less)
    assert {"maxLength", "additionalProperties"} <= dropped


@pytest.mark.parametrize("domain", domain_params())
def test_constraints_bind_at_call_time_and_can_be_written_for_the_model(domain: str) -> None:
    env = tool_env_class(domain, split="heldout")()
    env.reset(task_id=env._env.release.split_ids["heldout"][0])
    specs = {s["name"]: s for s in env.native_tools}
    # an allowed tool's string argument with a maxLength, one character too long: native invalid_args, traced
    allowed = set(env.session.info["allowed_tools"])
    name, field, limit = next((n, f, p["maxLength"]) for n, s in specs.items() if n in allowed
                              for f, p in s["parameters"]["properties"].items() if p.get("type") == "string" and "maxLength" in p)
    native = make_native(domain, split="heldout")
    task_id = env.session.task_id
    native.reset(seed=native.release.task(task_id).seed, options={"task_id": task_id})
    args = {field: "x" * (limit + 1)}
    obs_native = native.step({"tool": name, "args": args})[0]
    obs = getattr(env, name)(**args)
    assert obs == obs_native and loads(obs)["code"] == "invalid_args"
    assert env.session.steps == 1 and env.get_reward() == 0.0 and env.final_grade is None

    noted = tool_env_class(domain, constraints_in_descriptions=True)()
    props = get_json_schema(getattr(noted, name))["function"]["parameters"]["properties"]
    assert f"{limit} characters" in props[field]["description"]


@pytest.mark.parametrize("domain", domain_params())
def test_oracle_through_the_tool_class_reproduces_the_native_grade(domain: str) -> None:
    cls = tool_env_class(domain, split="heldout")
    env = cls()
    tasks = env._env.release.split_ids["heldout"][:3]
    for task_id in tasks:
        native_env = make_native(domain, split="heldout")
        native = run_episode(native_env, get_policy(domain, "oracle"), task_id=task_id, keep_observations=True)
        prompt = env.reset(task_id=task_id)
        assert task_id in prompt and env.get_reward() == 0.0 and env.final_grade is None
        policy = get_policy(domain, "oracle")
        obs, info = env.session.observation, dict(env.session.info)
        policy.reset(obs, info)
        seen = [obs]
        methods = methods_as_trl_finds_them(env)
        while not env.session.done:
            action = policy.act(obs)
            action = loads(action) if isinstance(action, str) else action
            assert env.get_reward() == 0.0 and env.final_grade is None  # nothing before the end
            obs = methods[action["tool"]](**action.get("args", {}))  # as TRL calls it: method(**arguments)
            seen.append(obs)
        assert seen == native.observations
        assert env.final_grade == native.grade and env.session.grade() == native.grade
        assert env.get_reward() == native.info["score"] == 1.0
        assert final_score_reward(["..."], environments=[env]) == [native.info["score"]]


def test_factory_contract() -> None:
    """Zero-argument construction, the default classes importable by name (picklable by
    reference), reset without a dataset draws a task deterministically, and unfinished
    episodes earn 0.0."""
    import pickle

    from backoffice.envs import DOMAINS as TITLES
    from backoffice.training.agents import trl

    domain = DOMAINS[0]
    cls = getattr(trl, f"{TITLES[domain]}ToolEnv")
    assert cls is tool_env_class(domain) and issubclass(cls, BackofficeToolEnv)
    assert pickle.loads(pickle.dumps(cls)) is cls
    a, b = cls(), cls()
    assert a.reset() == b.reset() and a.reset(prompt=[{"role": "user", "content": ""}]) == b.reset()
    assert a.get_reward() == 0.0 and final_score_reward(environments=[a, b]) == [0.0, 0.0]
    with pytest.raises(ValueError):
        final_score_reward(["x"])
